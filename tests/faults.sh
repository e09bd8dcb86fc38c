#!/bin/sh
# Fault injection on one host (tests/mpi/test_faults.c): kill -9 of one rank in the middle of a
# large allreduce over shm, tcp (connected at creation and on demand) and ofi (every survivor gets
# GCOLL_ERR_REMOTE within the bound and exits 0, no segment is left in /dev/shm);
# gcoll_comm_abort; stall warnings. Prints the slowest detection seen. About 25 s.
set -u
BINDIR=${BINDIR:-build/default/bin}
# count: the segments named gcoll-* in /dev/shm
count() {
    _n=0
    for _f in /dev/shm/gcoll-*; do [ -e "$_f" ] && _n=$((_n + 1)); done
    echo "$_n"
}
before=$(count)
stamp=$(mktemp)
log=$(mktemp)
trap 'rm -f "$stamp" "$log"' EXIT
worst=0

# kill_run NAME NP [ENV=VAL ...]
kill_run() {
    name=$1 np=$2
    shift 2
    # "$@": -x ENV=VAL for each ENV=VAL given
    for e in "$@"; do set -- "$@" -x "$e"; shift; done
    rm -f "$stamp"
    # --enable-recovery: without it mpirun kills the whole job when one rank dies. mpirun itself
    # often lingers after the survivors have reported and exited (Open MPI's recovery of the dead
    # rank): it is ended once every survivor has reported and no segment is left, or at the limit.
    timeout 40 mpirun --allow-run-as-root --oversubscribe --bind-to none --enable-recovery -np "$np" \
        -x GCOLL_TIMEOUT=30 "$@" "$BINDIR/test_faults" kill "$stamp" >"$log" 2>&1 &
    job=$!
    while kill -0 "$job" 2>/dev/null; do
        # by shape, not by line: mpirun may join two ranks' lines
        [ "$(grep -o "FAULTS rank=[0-9]* passed=[0-9]* failed=[0-9]*" "$log" | wc -l)" -ge $((np - 1)) ] &&
            [ "$(count)" = "$before" ] && break
        sleep 0.2
    done
    sleep 0.5 # the survivors' last lines
    kill "$job" 2>/dev/null
    wait "$job" 2>/dev/null
    out=$(cat "$log")
    good=$(printf '%s\n' "$out" | grep -o "FAULTS rank=[0-9]* passed=[0-9]* failed=[0-9]*" | grep -c " failed=0$")
    if [ "$good" != $((np - 1)) ] || printf '%s\n' "$out" | grep -q '^FAIL'; then
        echo "$name: expected $((np - 1)) clean survivors, got $good"
        printf '%s\n' "$out" | grep -v 'PMIX ERROR' | tail -20
        exit 1
    fi
    for t in $(printf '%s\n' "$out" | sed -n 's/^DETECTED rank=[0-9]* after=\([0-9.]*\) s.*/\1/p'); do
        worst=$(awk -v a="$worst" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
    done
    [ "$(count)" = "$before" ] || { echo "$name: segments left: $(cd /dev/shm && ls -d gcoll-*)"; exit 1; }
}

kill_run "kill -9 over shm" 4
kill_run "kill -9 over shm, 3 ranks, no progress thread" 3 GCOLL_WORKER_COUNT=0
kill_run "kill -9 over tcp, every connection made at creation" 4 GCOLL_TRANSPORT_INTRA=inter GCOLL_TRANSPORT_INTER=tcp \
    GCOLL_TCP_CONNECT=eager
# connections on demand: the survivors never connected to the dead rank hear of it from those that were
kill_run "kill -9 over tcp, connections on demand" 8 GCOLL_TRANSPORT_INTRA=inter GCOLL_TRANSPORT_INTER=tcp \
    GCOLL_TCP_CONNECT=lazy GCOLL_TCP_IFNAME=lo
ofi=""
if [ "${OFI:-0}" = 1 ]; then
    kill_run "kill -9 over ofi" 4 GCOLL_TRANSPORT_INTRA=inter GCOLL_TRANSPORT_INTER=ofi
    ofi=", ofi"
fi
rm -f "$stamp"

out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 3 "$BINDIR/test_faults" abort 2>&1)
printf '%s\n' "$out" | grep -q '^RESULT faults np=3 passed=[0-9]* failed=0' || { echo "abort: $out"; exit 1; }

# rank 0 comes 2.5 s late with warnings every second: each other rank warns at least twice,
# naming the operation, its sequence number and rank 0
out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 3 -x GCOLL_STALL_WARN_S=1 \
    "$BINDIR/test_faults" stall 2>&1)
printf '%s\n' "$out" | grep -q '^RESULT faults np=3 passed=[0-9]* failed=0' || { echo "stall: $out"; exit 1; }
warned="gcoll WARN: allreduce #0 .* still pending after [0-9]* s; not yet delivered by rank.* 0"
for r in 1 2; do
    n=$(printf '%s\n' "$out" | grep -c "^\[[^]]*:$r\] $warned")
    [ "$n" -ge 2 ] || { echo "stall: rank $r warned $n times"; printf '%s\n' "$out"; exit 1; }
done
printf '%s\n' "$out" | grep -q "^\[[^]]*:0\] gcoll WARN" && { echo "stall: rank 0 warned"; exit 1; }
echo "kill -9 (shm, tcp, tcp on demand$ofi): survivors failed with GCOLL_ERR_REMOTE within ${worst} s, no segment left;" \
    "abort; stall warnings"
