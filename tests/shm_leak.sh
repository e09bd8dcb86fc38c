#!/bin/sh
# Shared-memory segments leave nothing in /dev/shm: after a normal run, and after a run whose
# rank 1 is killed with SIGKILL. Also: GCOLL_TRANSPORT_INTRA=mpi keeps collectives off shm.
set -u
BINDIR=${BINDIR:-build/default/bin}
# mpi MPIRUN-ARGS...: mpirun on this host, ended after 120 s
mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none "$@"; }
# count: the segments named gcoll-* in /dev/shm
count() {
    n=0
    for f in /dev/shm/gcoll-*; do [ -e "$f" ] && n=$((n + 1)); done
    echo "$n"
}
before=$(count)
out=$(mpi -np 3 "$BINDIR/test_shm" 2>&1) || { echo "normal run failed: $out"; exit 1; }
printf '%s\n' "$out" | grep -q 'RESULT shm np=3 passed=[0-9]* failed=0' || { echo "$out"; exit 1; }
[ "$(count)" = "$before" ] || { echo "segments left after a normal exit: $(ls /dev/shm)"; exit 1; }
if out=$(mpi -np 3 "$BINDIR/test_shm" kill 2>&1); then
    echo "the run with a killed rank exited 0"
    exit 1
fi
sleep 1
[ "$(count)" = "$before" ] || { echo "segments left after kill -9: $(ls /dev/shm)"; exit 1; }
out=$(GCOLL_TRANSPORT_INTRA=mpi mpi -np 2 -x GCOLL_TRANSPORT_INTRA "$BINDIR/test_shm" 2>&1)
printf '%s\n' "$out" | grep -q 'RESULT shm np=2 passed=[0-9]* failed=0' || { echo "intra=mpi: $out"; exit 1; }
echo "no segment named in /dev/shm during, after a normal exit, or after kill -9; intra=mpi honoured"
