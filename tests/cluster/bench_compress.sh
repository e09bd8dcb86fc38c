#!/bin/bash
# Gradient compression across hosts of the namespace cluster (tests/cluster/cluster.sh), links
# shaped with tbf, over tcp: gcoll_bench allreduce dense, fp16, bf16 and top-k with the hosts' eth0
# byte counters as a cross-check, then examples/train_mlp dense, fp16 and top-k (final loss).
# Exit: non-zero if a run failed, or 77 with a "SKIP cluster:" line where namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
# Environment: HOSTS (4), RANKS_PER_HOST (1), RATE (1gbit), SIZE (64M), ITERS (5), DENSITY (0.01),
# TRAIN_ITERS (400), BINDIR (build/default/bin).
if [ "${1:-}" = --inner ]; then
    "$CLUSTER_SHAPE" "$RATE" || exit 1
    rc=0
    for c in none fp16 bf16 "topk:$DENSITY"; do
        echo "## eth0 counters before --compress $c"
        "$CLUSTER_COUNTERS"
        GCOLL_TRANSPORT_INTER=tcp "$CLUSTER_MPIRUN" --ranks-per-host "$RANKS_PER_HOST" "$BINDIR/gcoll_bench" \
            allreduce -m "$SIZE:$SIZE" -i "$ITERS" -x 1 --baseline none --compress "$c" || rc=1
        echo "## eth0 counters after (calls: 1 validation + 1 warmup + $ITERS timed)"
        "$CLUSTER_COUNTERS"
    done
    for c in none fp16 "topk:$DENSITY"; do
        GCOLL_TRANSPORT_INTER=tcp "$CLUSTER_MPIRUN" --ranks-per-host "$RANKS_PER_HOST" "$BINDIR/train_mlp" \
            --compress "$c" --iters "$TRAIN_ITERS" | tail -1 || rc=1
    done
    "$CLUSTER_SHAPE" none
    exit $rc
fi
for p in gcoll_bench train_mlp; do
    [ -x "$BINDIR/$p" ] || { echo "no $BINDIR/$p: make first"; exit 1; }
done
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER
export BINDIR RATE="${RATE:-1gbit}" RANKS_PER_HOST="${RANKS_PER_HOST:-1}" SIZE="${SIZE:-64M}" ITERS="${ITERS:-5}"
export DENSITY="${DENSITY:-0.01}" TRAIN_ITERS="${TRAIN_ITERS:-400}"
exec bash "$here/cluster.sh" --hosts "${HOSTS:-4}" --exec bash "$0" --inner
