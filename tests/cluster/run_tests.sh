#!/bin/bash
# Every collective across network-namespace hosts (tests/cluster/cluster.sh): test_collectives
# (TEST_QUICK=1) over each inter-node transport at 2 and 4 hosts and 1 and 2 ranks per host (every
# pair of the three), a check that MPI sees each namespace as a node, the soak and mismatched
# calls. Prints a RESULT line per run; exit 0 all passed, 1 something failed, 77 (with "SKIP
# cluster:") where it cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
# Environment: CLUSTER_TRANSPORTS (default "tcp ofi mpi"), CLUSTER_HOST_COUNTS ("2 4"),
# CLUSTER_RPH ("1 2"), CLUSTER_FULL (1: every combination of the three, not a pairwise half),
# BINDIR (build/default/bin), CLUSTER_TIMEOUT (seconds per run, 300).
# A transport that is not built fails its runs (passed=0 failed=1) with its error shown.
transports=${CLUSTER_TRANSPORTS:-tcp ofi mpi}
host_counts=${CLUSTER_HOST_COUNTS:-2 4}
rphs=${CLUSTER_RPH:-1 2}
limit=${CLUSTER_TIMEOUT:-300}
min_bytes=1000000 # a quick test_collectives moves tens of MB through every host

# --- inside a cluster (cluster.sh --exec runs this script again with --inner)
if [ "${1:-}" = --inner ]; then
    failed=0
    for rph in $rphs; do
        tag=$CLUSTER_HOSTS"x"$rph
        out=$(timeout "$limit" "$CLUSTER_MPIRUN" --ranks-per-host "$rph" "$BINDIR/cluster_nodecheck" \
            "$CLUSTER_HOSTS" "$rph" "cluster-nodes-$tag" 2>&1)
        line=$(printf '%s\n' "$out" | grep '^RESULT ')
        [ -n "$line" ] || { line="RESULT cluster-nodes-$tag passed=0 failed=1"; printf '%s\n' "$out" | tail -5; }
        printf '%s\n' "$out" | grep -E '^(#|FAIL)'
        echo "$line"
        case $line in *" failed=0") ;; *) failed=1 ;; esac
    done
    # kill -9 of one of 2x2 ranks mid-allreduce (shm inside its host, tcp or ofi between): every
    # survivor fails with GCOLL_ERR_REMOTE within 5 s and exits 0 (tests/mpi/test_faults.c).
    # Across namespaces mpirun --enable-recovery does not return once the survivors have exited:
    # it is stopped as soon as all three have reported.
    kill_over=tcp
    case " $transports " in *" ofi "*) kill_over="tcp ofi" ;; esac
    for kt in $kill_over; do
        [ "$CLUSTER_HOSTS" = 2 ] || break
        name=cluster-kill-2x2
        [ "$kt" = tcp ] || name=cluster-kill-$kt-2x2
        stamp=$(mktemp) log=$(mktemp)
        GCOLL_TRANSPORT_INTER=$kt GCOLL_TIMEOUT=60 timeout 120 "$CLUSTER_MPIRUN" --ranks-per-host 2 \
            --enable-recovery "$BINDIR/test_faults" kill "$stamp" > "$log" 2>&1 &
        job=$!
        for _ in $(seq 240); do
            [ "$(grep -o 'FAULTS rank=' "$log" | wc -l)" -ge 3 ] && break
            sleep 0.5
        done
        kill "$job" 2>/dev/null
        wait "$job" 2>/dev/null
        out=$(cat "$log")
        rm -f "$stamp" "$log"
        printf '%s\n' "$out" | grep -E '^(DETECTED|FAIL)' | cut -c1-160 | sed 's/^/# /'
        # records by shape, not by line: mpirun may join two ranks' lines
        if [ "$(printf '%s\n' "$out" | grep -o 'FAULTS rank=[0-9]* passed=[0-9]* failed=[0-9]*' | grep -c ' failed=0$')" = 3 ]; then
            echo "RESULT $name passed=1 failed=0"
        else
            echo "RESULT $name passed=0 failed=1"
            failed=1
        fi
    done
    # the soak (tests/mpi/test_soak.c) at 2 hosts x 2 ranks: shm inside a host, tcp between;
    # its checks count, or one failure where it gave no result
    if [ "$CLUSTER_HOSTS" = 2 ]; then
        out=$(GCOLL_TRANSPORT_INTER=tcp GCOLL_TIMEOUT=60 TEST_QUICK=1 timeout "$limit" "$CLUSTER_MPIRUN" --ranks-per-host 2 \
            "$BINDIR/test_soak" 2>&1)
        rc=$?
        printf '%s\n' "$out" | grep -E '^(SOAK|FAIL)' | head -10 | cut -c1-200 | sed 's/^/# /'
        line=$(printf '%s\n' "$out" | grep '^RESULT soak ' | tail -1)
        if [ -z "$line" ]; then
            p=0 f=1
            echo "# cluster-soak-2x2: no result (exit $rc)"
        else
            p=$(printf '%s' "$line" | sed 's/.*passed=\([0-9]*\).*/\1/')
            f=$(printf '%s' "$line" | sed 's/.*failed=\([0-9]*\).*/\1/')
            [ "$rc" = 0 ] || { f=$((f + 1)); echo "# cluster-soak-2x2: exit $rc"; }
        fi
        echo "RESULT cluster-soak-2x2 passed=$p failed=$f"
        [ "$f" = 0 ] || failed=1
    fi
    # mismatched calls at 2 hosts x 2 ranks (tests/mpi/test_mismatch.c), every case on the shm
    # rings inside a host: each rank of both hosts ends in GCOLL_ERR_INVALID_USAGE naming both
    # sides, over tcp, ofi and mpi (framed, src/transports/frame/frame.c) between the hosts, before
    # GCOLL_TIMEOUT
    for mt in $kill_over mpi; do
        [ "$CLUSTER_HOSTS" = 2 ] || break
        out=$(GCOLL_TRANSPORT_INTER=$mt GCOLL_TIMEOUT=10 GCOLL_ALLREDUCE=ring GCOLL_ALLGATHER=ring \
            GCOLL_BCAST=binomial timeout "$limit" "$CLUSTER_MPIRUN" --ranks-per-host 2 "$BINDIR/test_mismatch" 2>&1)
        rc=$?
        printf '%s\n' "$out" | grep -E '^(not ok|FAIL)' | head -10 | cut -c1-200 | sed 's/^/# /'
        line=$(printf '%s\n' "$out" | grep '^RESULT mismatch ' | tail -1)
        p=$(printf '%s' "$line" | sed -n 's/.*passed=\([0-9]*\).*/\1/p')
        f=$(printf '%s' "$line" | sed -n 's/.*failed=\([0-9]*\).*/\1/p')
        [ -n "$line" ] || { p=0 f=1; echo "# cluster-mismatch-$mt-2x2: no result (exit $rc)"; }
        [ "$rc" = 0 ] || [ -z "$line" ] || { f=$((f + 1)); echo "# cluster-mismatch-$mt-2x2: exit $rc"; }
        echo "RESULT cluster-mismatch-$mt-2x2 passed=$p failed=$f"
        [ "$f" = 0 ] || failed=1
    done
    # a design that meets every pair of transport, host count and ranks per host, half of the
    # product: the sum of the three indexes is even (CLUSTER_FULL=1: every combination)
    ti=0
    for t in $transports; do
        ti=$((ti + 1))
        ri=0
        for rph in $rphs; do
            ri=$((ri + 1))
            [ "${CLUSTER_FULL:-0}" = 1 ] || [ $(((ti + ri + CLUSTER_HOST_INDEX) % 2)) = 0 ] || continue
            name=cluster-$t-$CLUSTER_HOSTS"x"$rph
            before=$("$CLUSTER_COUNTERS" | sed 's/.*tx_bytes=//')
            start=$(date +%s)
            out=$(GCOLL_TRANSPORT_INTER=$t TEST_QUICK=1 timeout "$limit" "$CLUSTER_MPIRUN" \
                --ranks-per-host "$rph" "$BINDIR/test_collectives" 2>&1)
            rc=$?
            secs=$(($(date +%s) - start))
            after=$("$CLUSTER_COUNTERS" | sed 's/.*tx_bytes=//')
            # the least any host sent during the run
            sent=$(paste <(echo "$before") <(echo "$after") | awk '{ d = $2 - $1; if (NR == 1 || d < m) m = d } END { print m }')
            line=$(printf '%s\n' "$out" | grep '^RESULT collectives ' | tail -1)
            if [ -z "$line" ]; then
                p=0 f=1
                why=$(printf '%s\n' "$out" | grep -m1 -E 'ERROR|rror|FAIL|not found|No such')
                echo "# $name: no result (exit $rc): ${why:-see below}; its output begins:"
                printf '%s\n' "$out" | grep -v '^\(---\|$\)' | head -4 | sed 's/^/#   /'
            else
                p=$(printf '%s' "$line" | sed 's/.*passed=\([0-9]*\).*/\1/')
                f=$(printf '%s' "$line" | sed 's/.*failed=\([0-9]*\).*/\1/')
                [ "$rc" = 0 ] || { f=$((f + 1)); echo "# $name: exit $rc"; }
                printf '%s\n' "$out" | grep -E 'FAIL|ERROR' | head -10 | sed 's/^/#   /'
                if [ "$sent" -ge $min_bytes ]; then p=$((p + 1)); else
                    f=$((f + 1)); echo "# $name: a host's $CLUSTER_IF sent only $sent bytes"
                fi
            fi
            echo "RESULT $name passed=$p failed=$f (${secs}s, least bytes sent by a host's $CLUSTER_IF: $sent)"
            [ "$f" = 0 ] || failed=1
        done
    done
    exit $failed
fi

# --- outside: build the node check, then one cluster per host count
nodecheck=$BINDIR/cluster_nodecheck
common=$here/../common # the test harness: check.c and check.h
if [ ! -x "$nodecheck" ] || [ "$here/nodecheck.c" -nt "$nodecheck" ] || [ "$common/check.c" -nt "$nodecheck" ] ||
    [ "$common/check.h" -nt "$nodecheck" ]; then
    ${MPICC:-mpicc} -O2 -std=c11 -Wall -Wextra -Werror -I"$common" "$here/nodecheck.c" "$common/check.c" \
        -o "$nodecheck" || exit 1
fi
[ -x "$BINDIR/test_collectives" ] || { echo "no $BINDIR/test_collectives: make tests first"; exit 1; }
unset GCOLL_TCP_IFNAME GCOLL_OFI_PROVIDER GCOLL_TRANSPORT_INTER
export BINDIR CLUSTER_TRANSPORTS="$transports" CLUSTER_RPH="$rphs" CLUSTER_TIMEOUT="$limit"
status=0 CLUSTER_HOST_INDEX=0
for h in $host_counts; do
    echo "# cluster of $h hosts, transports: $transports"
    CLUSTER_HOST_INDEX=$((CLUSTER_HOST_INDEX + 1))
    export CLUSTER_HOST_INDEX
    bash "$here/cluster.sh" --hosts "$h" --exec bash "$here/run_tests.sh" --inner
    rc=$?
    [ $rc = 77 ] && exit 77
    [ $rc = 0 ] || status=1
done
exit $status
