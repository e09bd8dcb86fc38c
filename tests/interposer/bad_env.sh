#!/bin/sh
# A malformed GCOLL_MPI_COLLS makes MPI_Init fail through MPI_COMM_WORLD's error handler (fatal by
# default) with a message naming the variable and what it accepts; the program never runs.
set -u
BINDIR=${BINDIR:-build/default/bin}
LIBDIR=${LIBDIR:-lib}
out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    -x LD_PRELOAD="$(cd "$LIBDIR" && pwd)/libgcoll_mpi.so" -x GCOLL_MPI_COLLS=allreduce,bogus \
    "$BINDIR/test_interposer" 2>&1)
rc=$?
msg="GCOLL_MPI_COLLS='allreduce,bogus' is not valid: 'bogus' is not a call it takes over; accepts all, none"
if [ $rc = 0 ] || ! printf '%s\n' "$out" | grep -q "gcoll ERROR: gcoll_init failed: $msg" ||
    printf '%s\n' "$out" | grep -q '^RESULT'; then
    printf '%s\n' "$out" | tail -20
    echo "want: exit status not 0, the message naming GCOLL_MPI_COLLS, no RESULT line (exit $rc)"
    exit 1
fi
echo "exit $rc: $(printf '%s\n' "$out" | grep -m1 'gcoll ERROR' | sed 's/^\[[^]]*\] //')"
