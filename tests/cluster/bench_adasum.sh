#!/bin/bash
# gcoll_bench adasum (Adasum beside gcoll's sum allreduce on the same buffers) across hosts of the
# namespace cluster (tests/cluster/cluster.sh), links shaped with tbf, over tcp:
#   tests/cluster/bench_adasum.sh [GCOLL_BENCH_OPTIONS...]   (default: -m 1M:64M -f 4 -i 6 -x 1)
# Environment: HOSTS (4), RANKS_PER_HOST (1), RATE (1gbit), BINDIR (build/default/bin).
# Exit: gcoll_bench's status, or 77 with a "SKIP cluster:" line where namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
if [ "${1:-}" = --inner ]; then
    shift
    "$CLUSTER_SHAPE" "${RATE:-1gbit}" || exit 1
    GCOLL_TRANSPORT_INTER=tcp "$CLUSTER_MPIRUN" --ranks-per-host "${RANKS_PER_HOST:-1}" "$BINDIR/gcoll_bench" adasum "$@"
    rc=$?
    "$CLUSTER_SHAPE" none
    exit $rc
fi
[ -x "$BINDIR/gcoll_bench" ] || { echo "no $BINDIR/gcoll_bench: make first"; exit 1; }
[ $# -gt 0 ] || set -- -m 1M:64M -f 4 -i 6 -x 1
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER
export BINDIR RATE="${RATE:-1gbit}" RANKS_PER_HOST="${RANKS_PER_HOST:-1}"
exec bash "$here/cluster.sh" --hosts "${HOSTS:-4}" --exec bash "$0" --inner "$@"
