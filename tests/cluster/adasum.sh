#!/bin/bash
# Adasum across network-namespace hosts (tests/cluster/cluster.sh): test_adasum (TEST_QUICK=1) on
# 3 hosts x 2 ranks over tcp: the hierarchical variant (GCOLL_ADASUM's auto choice here) and the
# flat halving, checked against a reference from the hosts MPI reports. Prints "RESULT adasum np=6
# passed=N failed=M"; exit 77 with a "SKIP cluster:" line where namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
if [ "${1:-}" = --inner ]; then
    GCOLL_TRANSPORT_INTER=tcp TEST_QUICK=1 timeout "${CLUSTER_TIMEOUT:-300}" "$CLUSTER_MPIRUN" \
        --ranks-per-host 2 "$BINDIR/test_adasum"
    exit $?
fi
[ -x "$BINDIR/test_adasum" ] || { echo "no $BINDIR/test_adasum: make tests first"; exit 1; }
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER GCOLL_ADASUM
export BINDIR
exec bash "$here/cluster.sh" --hosts 3 --exec bash "$0" --inner
