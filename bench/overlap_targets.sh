#!/bin/bash
# The overlap targets in the namespace cluster (2 hosts x 1 rank, tcp, links shaped to 1 Gbit/s):
# gcoll_bench iallreduce and train (resnet50, bert) with compute equal to communication; writes
# $OUTDIR/overlap-*-1gbit.{csv,json} and prints a TARGET line per target (met / not met).
#   tests/cluster/cluster.sh --hosts 2 --exec bench/overlap_targets.sh
# Exit: 0 when every run validated (whether or not a target was met), 1 otherwise.
set -u
[ -n "${CLUSTER_MPIRUN:-}" ] || { echo "run under tests/cluster/cluster.sh --hosts 2 --exec $0"; exit 2; }
# Environment: BINDIR (build/default/bin), OUTDIR (build/bench), BENCH_COMPUTE (spin or sleep;
# spin), BENCH_ITERS (10; bert runs half as many steps), BENCH_MODELS ("resnet50 bert"),
# BENCH_SIZES (1M:64M; a smaller range is for smoke runs, the target is stated for 1M:64M),
# BENCH_FORWARD (train's --forward: the forward pass's part of a step's compute; gcoll_bench's
# default 1/3 when unset).
B=$(cd "${BINDIR:-build/default/bin}" && pwd)/gcoll_bench
OUTDIR=${OUTDIR:-build/bench}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
compute=${BENCH_COMPUTE:-spin} iters=${BENCH_ITERS:-10}
export GCOLL_TRANSPORT_INTER=tcp
"$CLUSTER_SHAPE" 1gbit || { echo "cannot shape the links to 1gbit"; exit 1; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uptime | sed 's/.*load/load/'), links 1gbit, compute $compute"
status=0

f=$OUTDIR/overlap-iallreduce-1gbit
"$CLUSTER_MPIRUN" "$B" iallreduce -m "${BENCH_SIZES:-1M:64M}" -i "$iters" --compute "$compute" --csv "$f.csv" --json "$f.json" ||
    status=1
# gcoll_overlap_pct is column 13 of the CSV
awk -F, 'NR > 1 { n++; if (min == "" || $13 < min) { min = $13; at = $6 } }
    END { if (!n) { print "TARGET iallreduce overlap: no rows"; exit }
          printf "TARGET iallreduce overlap >= 90%% from 1 MiB to 64 MiB: lowest of these sizes %.1f%% (at %d bytes): %s\n",
                 min, at, (min >= 90 ? "met" : "not met") }' "$f.csv"

for model in ${BENCH_MODELS:-resnet50 bert}; do
    f=$OUTDIR/overlap-train-$model-1gbit
    n=$iters
    [ "$model" = bert ] && n=$(( (iters + 1) / 2 ))
    out=$("$CLUSTER_MPIRUN" "$B" train --model "$model" -i "$n" --compute "$compute" \
        ${BENCH_FORWARD:+--forward "$BENCH_FORWARD"} --csv "$f.csv" --json "$f.json" 2>&1) ||
        status=1
    printf '%s\n' "$out"
    printf '%s\n' "$out" | awk -v m="$model" '
        /^# session step \/ max\(compute alone/ { b = $9 }
        /^# session step \/ max\(its own/ { bo = $NF }
        /^# after \/ session/ { a = $6; sub(/,$/, "", a); af = $11; sub(/,$/, "", af) }
        END { if (b == "" || a == "") { print "TARGET train " m ": no figures"; exit }
              printf "TARGET train %s: session step / max(compute alone, comm) %.3f <= 1.15: %s", m, b,
                     (b <= 1.15 ? "met" : "not met")
              printf " (with the session'"'"'s own compute: %.3f)\n", bo
              printf "TARGET train %s: after / session %.3f >= 1.5: %s (after-fused / session %.3f)\n", m, a,
                     (a >= 1.5 ? "met" : "not met"), af }'
    # every host of the cluster shares this machine's cores: the ranks' CPU per session step
    # (computation and communication) cannot take less than its share of them
    awk -F, -v c="$(nproc)" -v m="$model" '
        $9 == "after-fused" { alone = $11 } $9 == "session" { n = $4; comm = $8; cpu = $14; busy = $15 }
        END { if (cpu == "") exit; b = alone > comm ? alone : comm; f = n * cpu / c
              printf "# %s: %d ranks share %d cores; the session used %.1f ms of CPU per step a rank (%.1f%% of the " \
                     "machine busy): a step takes at least %.1f ms on these cores, %.3f x max(compute alone, comm)\n",
                     m, n, c, cpu, busy, f, f / b }' "$f.csv"
done
exit $status
