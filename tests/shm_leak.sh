#!/bin/sh
# Shared-memory segments leave nothing in /dev/shm: after a normal run, and after a run whose
# rank 1 is killed with SIGKILL. Also: GCOLL_TRANSPORT_INTRA=mpi keeps collectives off shm.
set -u
BINDIR=${BINDIR:-build/default/bin}
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
count() { ls /dev/shm 2>/dev/null | grep -c '^gcoll-'; }
before=$(count)
out=$(timeout 120 $MPIRUN -np 3 "$BINDIR/test_shm" 2>&1) || { echo "normal run failed: $out"; exit 1; }
printf '%s\n' "$out" | grep -q 'RESULT shm np=3 passed=[0-9]* failed=0' || { echo "$out"; exit 1; }
[ "$(count)" = "$before" ] || { echo "segments left after a normal exit: $(ls /dev/shm)"; exit 1; }
out=$(timeout 120 $MPIRUN -np 3 "$BINDIR/test_shm" kill 2>&1)
[ $? != 0 ] || { echo "the run with a killed rank exited 0"; exit 1; }
sleep 1
[ "$(count)" = "$before" ] || { echo "segments left after kill -9: $(ls /dev/shm)"; exit 1; }
out=$(GCOLL_TRANSPORT_INTRA=mpi timeout 120 $MPIRUN -np 2 -x GCOLL_TRANSPORT_INTRA "$BINDIR/test_shm" 2>&1)
printf '%s\n' "$out" | grep -q 'RESULT shm np=2 passed=[0-9]* failed=0' || { echo "intra=mpi: $out"; exit 1; }
echo "no segment named in /dev/shm during, after a normal exit, or after kill -9; intra=mpi honoured"
