#!/bin/bash
# Automatic choice against the same algorithm forced (README "Auto against forced"): gcoll_bench
# allreduce with GCOLL_ALLREDUCE unset (A) and set, per size, to the algorithm A picked (B), in ABBA
# order; per size, the medians of both sides, A / B, and the runs in which A's pick changed.
# Exit: 0; 1 when a run failed; 77 where the cluster cannot be made here.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Environment:
#   AB_HOSTS (2), AB_RANKS ranks per host (2); AB_HOSTS=1 runs mpirun on this machine, with
#            GCOLL_TRANSPORT_INTRA=inter (tcp between the ranks, as between hosts) unless set
#   AB_RATE tbf rate of every cluster link (1gbit; none), AB_SIZES MIN:MAX (4:4K), AB_FACTOR (4),
#   AB_ITERS timed iterations (200), AB_WARMUP (2), AB_REPS ABBA groups (3),
#   AB_TRANSPORT GCOLL_TRANSPORT_INTER (tcp), BINDIR (build/default/bin)
# Every other GCOLL_* variable of the caller (GCOLL_COST_INTER=builtin, ...) reaches both sides.
hosts=${AB_HOSTS:-2} ranks=${AB_RANKS:-2} rate=${AB_RATE:-1gbit} sizes=${AB_SIZES:-4:4K}
factor=${AB_FACTOR:-4} iters=${AB_ITERS:-200} warmup=${AB_WARMUP:-2} reps=${AB_REPS:-3}
transport=${AB_TRANSPORT:-tcp}

die() { echo "auto_ab.sh: $*" >&2; exit 1; }
for v in "$hosts" "$ranks" "$factor" "$iters" "$reps"; do
    case $v in '' | *[!0-9]* | 0) die "AB_HOSTS, AB_RANKS, AB_FACTOR, AB_ITERS and AB_REPS take integers >= 1 ('$v')" ;; esac
done
[ -n "${GCOLL_ALLREDUCE:-}" ] && die "GCOLL_ALLREDUCE is set: the script sets it for the forced side"

if [ -z "${AB_INNER:-}" ]; then
    BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || die "no BINDIR: build first"
    [ -x "$BINDIR/gcoll_bench" ] || die "no $BINDIR/gcoll_bench: make first"
    export BINDIR AB_INNER=1
    [ "$hosts" = 1 ] && exec bash "$0"
    exec bash "$here/cluster.sh" --hosts "$hosts" --exec bash "$0"
fi

B=$BINDIR/gcoll_bench
if [ "$hosts" = 1 ]; then
    dir=$(mktemp -d) || die "no temporary directory"
    trap 'rm -rf "$dir"' EXIT
    where="one host, GCOLL_TRANSPORT_INTRA=${GCOLL_TRANSPORT_INTRA:-inter}"
    export GCOLL_TRANSPORT_INTRA=${GCOLL_TRANSPORT_INTRA:-inter}
    launch=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks")
else
    dir=$CLUSTER_DIR
    where="$hosts hosts, links $rate, GCOLL_TRANSPORT_INTER=$transport"
    "$CLUSTER_SHAPE" "$rate" || die "cannot shape the links to $rate"
    export GCOLL_TRANSPORT_INTER=$transport
    launch=("$CLUSTER_MPIRUN" --ranks-per-host "$ranks")
fi

# one run; rows "side rep bytes algorithm avg_us median_us" (gcoll_bench's CSV: bytes $6, algorithm $8,
# gcoll_avg_us $10, gcoll_med_us $22)
run() { # SIDE REP [GCOLL_ALLREDUCE table]
    local out=$dir/ab.csv
    rm -f "$out"
    if ! (if [ -n "${3:-}" ]; then export GCOLL_ALLREDUCE=$3; fi
        exec timeout 600 "${launch[@]}" "$B" allreduce -m "$sizes" -f "$factor" -i "$iters" -x "$warmup" \
            --baseline none --csv "$out") > "$out.log" 2>&1 || [ ! -s "$out" ]; then
        echo "# FAILED: side $1, run $2:" >&2
        tail -5 "$out.log" >&2
        return 1
    fi
    awk -F, -v s="$1" -v r="$2" 'NR > 1 { print s, r, $6, $8, $10, $22 }' "$out"
}

raw=$dir/ab.raw
echo "# auto against forced: $ranks ranks per host, $where; sizes $sizes x$factor, -i $iters" \
    "-x $warmup, $reps ABBA groups; $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
run A 1 > "$raw" || exit 1
# the forced side's table: each size's first pick, on a range of that size alone
table=$(awk '{ printf("%s%s:%s-%s", (NR > 1 ? ";" : ""), $4, $3, $3 + 1) }' "$raw")
echo "# forced side: GCOLL_ALLREDUCE='$table'"
status=0
for ((rep = 1; rep <= reps; rep++)); do
    [ "$rep" = 1 ] || run A "$rep" >> "$raw" || status=1
    run B "$rep" "$table" >> "$raw" || status=1
    run B "$rep" "$table" >> "$raw" || status=1
    run A "$rep" >> "$raw" || status=1
done
[ "$hosts" = 1 ] || "$CLUSTER_SHAPE" none
echo "# done; load: $(cut -d' ' -f1-3 /proc/loadavg)"

awk '
function median(list,   n, i, j, t, v) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{
    key = $1 SUBSEP $3
    avg[key] = avg[key] " " $5
    med[key] = med[key] " " $6
    if (!($3 in pick)) { pick[$3] = $4; sizes[++ns] = $3 }
    if ($1 == "A" && $4 != pick[$3]) other[$3]++
}
END {
    print "| bytes | algorithm | auto median call us | forced median call us | auto / forced | auto avg us | forced avg us | auto / forced (avg) | auto runs with another pick |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= ns; i++) {
        b = sizes[i]; ka = "A" SUBSEP b; kb = "B" SUBSEP b
        am = median(med[ka]); bm = median(med[kb]); aa = median(avg[ka]); ba = median(avg[kb])
        printf("| %d | %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %d |\n", b, pick[b], am, bm, (bm > 0 ? am / bm : 0),
            aa, ba, (ba > 0 ? aa / ba : 0), other[b])
    }
}' "$raw"
echo "# medians over the runs of each side: of gcoll_bench's median call (a call as long as its slowest rank) and of its average"
echo "# per run (auto median call):$(awk '$1 == "A" { printf " %s", $6 }' "$raw")"
echo "# per run (forced median call):$(awk '$1 == "B" { printf " %s", $6 }' "$raw")"
exit $status
