#!/bin/sh
# The MPI interposer: runs a program with LD_PRELOAD=$LIBDIR/libgcoll_mpi.so under mpirun and
# passes if every rank's RESULT line reports no failure and its interposer report
# (GCOLL_LOG_LEVEL=info) equals the calls the program expected taken over and handed to MPI.
# Usage: run.sh c|c-threads|py NP [VAR=VALUE ...]
#   c: test_interposer; c-threads: test_interposer --threads; py: test_mpi4py.py under mpi4py
set -u
BINDIR=${BINDIR:-build/default/bin}
LIBDIR=${LIBDIR:-lib}
kind=$1 np=$2
shift 2
# mpirun's arguments after -np, in "$@": the -x options, then the program and its arguments
for e in "$@"; do set -- "$@" -x "$e"; shift; done
case $kind in
c) set -- "$@" "$BINDIR/test_interposer" ;;
c-threads) set -- "$@" "$BINDIR/test_interposer" --threads ;;
py) set -- "$@" /usr/bin/python3 tests/interposer/test_mpi4py.py ;;
*) echo "usage: run.sh c|c-threads|py NP [VAR=VALUE ...]"; exit 2 ;;
esac
set -- -x "LD_PRELOAD=$(cd "$LIBDIR" && pwd)/libgcoll_mpi.so" -x GCOLL_LOG_LEVEL=info "$@"
out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$@" 2>&1)
rc=$?
bad=0
# mpirun may join two ranks' lines (one's newline arrives after the other's line), so each record
# is picked out wherever it stands, by its own shape
counts='[a-z_]*=[0-9]*/[0-9]*\( [a-z_]*=[0-9]*/[0-9]*\)*'
for r in $(seq 0 $((np - 1))); do
    want=$(printf '%s\n' "$out" | grep -o "EXPECT rank=$r $counts" | sed "s/^EXPECT rank=$r //; s/ *$//")
    got=$(printf '%s\n' "$out" | grep -o ":$r\] gcoll INFO: mpi interposer: calls taken over/handed to MPI: $counts" |
        sed 's/.*handed to MPI: //; s/ *$//')
    res=$(printf '%s\n' "$out" | grep -o "RESULT [a-z0-9]* rank=$r passed=[0-9]* failed=[0-9]*")
    if [ -z "$want" ] || [ "$want" != "$got" ]; then
        echo "rank $r: the interposer reported '$got', the program expected '$want'"
        bad=1
    fi
    case $res in
    *" failed=0") ;;
    *) echo "rank $r: ${res:-no RESULT line}"; bad=1 ;;
    esac
done
if [ $rc != 0 ] || [ $bad != 0 ]; then
    printf '%s\n' "$out" | grep -E 'FAIL|ERROR|rror' | head -20
    echo "exit $rc"
    exit 1
fi
echo "$np ranks: $(printf '%s\n' "$out" | grep -o 'RESULT [a-z0-9]* rank=[0-9]* passed=[0-9]* failed=0' | wc -l) RESULT lines without failures; rank 0 took over: $(printf '%s\n' "$out" | grep -o "EXPECT rank=0 $counts" | sed 's/^EXPECT rank=0 //; s/ *$//')"
