#!/bin/bash
# Gradient compression across network-namespace hosts (tests/cluster/cluster.sh): test_compress
# on 2 hosts x 2 ranks over tcp, where the fp16/bf16 allreduce picks the hierarchical algorithm
# (the wire format inside each host and between hosts), and top-k and the session's error
# feedback run over the network. Prints "RESULT compress np=4 passed=N failed=M"; exit 77 with a
# "SKIP cluster:" line where namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
if [ "${1:-}" = --inner ]; then
    GCOLL_TRANSPORT_INTER=tcp timeout "${CLUSTER_TIMEOUT:-300}" "$CLUSTER_MPIRUN" \
        --ranks-per-host 2 "$BINDIR/test_compress"
    exit $?
fi
[ -x "$BINDIR/test_compress" ] || { echo "no $BINDIR/test_compress: make tests first"; exit 1; }
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER
export BINDIR
exec bash "$here/cluster.sh" --hosts 2 --exec bash "$0" --inner
