#!/bin/sh
# The dynamic checkers beside ASan: valgrind memcheck on the unit tests and on multi-rank tests
# (errors, and threads on sub-communicators), and ThreadSanitizer on the threaded test and the
# overlap example. TOOL=valgrind or TOOL=tsan. Ends with "N passed, N failed".
set -u
# mpi MPIRUN-ARGS...: mpirun on this host, ended after 600 s
mpi() { timeout 600 mpirun --allow-run-as-root --oversubscribe --bind-to none "$@"; }
passed=0
failed=0
step() {
    name=$1
    shift
    if out=$("$@" 2>&1); then
        passed=$((passed + 1))
        echo "ok   $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
        printf '%s\n' "$out" | grep -v '^--' | tail -30
    fi
}
case ${TOOL:-} in
valgrind)
    B=build/default/bin
    # valgrind's command line, in "$@"
    set -- valgrind -q --num-callers=40 --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
        --suppressions=/usr/share/openmpi/openmpi-valgrind.supp "--suppressions=$(pwd)/tests/valgrind.supp"
    step "unit tests under valgrind" env CK_FORK=no timeout 900 "$@" "$B/unit_tests"
    step "test_errors np=2 under valgrind" mpi -np 2 "$@" "$B/test_errors"
    step "test_split np=2 under valgrind" mpi -np 2 "$@" "$B/test_split"
    step "gradient_session np=2 under valgrind" mpi -np 2 "$@" "$B/gradient_session"
    ;;
tsan)
    B=build/tsan/bin
    TSAN_OPTIONS="halt_on_error=1:exitcode=66:report_signal_unsafe=0:suppressions=$(pwd)/tests/tsan.supp"
    export TSAN_OPTIONS
    step "test_split np=2 under TSan" mpi -np 2 -x TSAN_OPTIONS "$B/test_split"
    step "test_split np=3 under TSan" mpi -np 3 -x TSAN_OPTIONS "$B/test_split"
    step "backprop_overlap np=2 under TSan" mpi -np 2 -x TSAN_OPTIONS "$B/backprop_overlap"
    # over tcp: waits sleep on the transport's epoll set without the engine lock
    step "backprop_overlap np=2 over tcp under TSan" mpi -np 2 -x TSAN_OPTIONS \
        -x GCOLL_TRANSPORT_INTRA=inter -x GCOLL_TRANSPORT_INTER=tcp "$B/backprop_overlap"
    # progress threads beside the application's: several lanes, a small budget, the session
    step "test_overlap np=3, 2 progress threads, under TSan" mpi -np 3 -x TSAN_OPTIONS \
        -x TEST_QUICK=1 -x GCOLL_WORKER_COUNT=2 -x GCOLL_INFLIGHT_BYTES=64K "$B/test_overlap"
    step "test_session np=2 over tcp under TSan" mpi -np 2 -x TSAN_OPTIONS \
        -x GCOLL_TRANSPORT_INTRA=inter "$B/test_session"
    # mixed collectives, several outstanding, random priorities, two progress threads
    step "test_soak np=3, 2 progress threads, under TSan" mpi -np 3 -x TSAN_OPTIONS \
        -x SOAK_ITERS=150 -x TEST_QUICK=1 -x GCOLL_WORKER_COUNT=2 "$B/test_soak"
    # the same over tcp: its communicators, on different lanes, share the process's sockets, which
    # open on demand and, past a limit of one peer, close when idle and open again
    step "test_soak np=3 over tcp, lazy, 2 progress threads, under TSan" mpi -np 3 -x TSAN_OPTIONS \
        -x SOAK_ITERS=100 -x TEST_QUICK=1 -x GCOLL_WORKER_COUNT=2 -x GCOLL_TRANSPORT_INTRA=inter \
        -x GCOLL_TRANSPORT_INTER=tcp -x GCOLL_TCP_CONNECT=lazy -x GCOLL_TCP_MAX_CONNS=1 "$B/test_soak"
    # over ofi: the communicators, on different lanes, share the process's libfabric endpoint
    if [ "${OFI:-0}" = 1 ]; then
        step "test_soak np=3 over ofi, 2 progress threads, under TSan" mpi -np 3 -x TSAN_OPTIONS \
            -x SOAK_ITERS=100 -x TEST_QUICK=1 -x GCOLL_WORKER_COUNT=2 -x GCOLL_TRANSPORT_INTRA=inter \
            -x GCOLL_TRANSPORT_INTER=ofi "$B/test_soak"
    fi
    # two ranks fail and wait in MPI while the late third dials them: the idle progress thread's
    # service answers it beside the application's thread
    step "test_cuda_fake placement over lazy tcp, a rank late, under TSan" mpi -np 3 -x TSAN_OPTIONS \
        -x TEST_PLACEMENT=1 -x GCOLL_TIMEOUT=20 -x GCOLL_TRANSPORT_INTRA=inter -x GCOLL_TCP_CONNECT=lazy "$B/test_cuda_fake"
    # gcoll_comm_abort from the application's thread while the progress thread drives the lane
    step "test_faults abort np=3 under TSan" mpi -np 3 -x TSAN_OPTIONS "$B/test_faults" abort
    ;;
*)
    echo "usage: TOOL=valgrind|tsan sh tests/check_tools.sh" >&2
    exit 2
    ;;
esac
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
