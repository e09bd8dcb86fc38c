#!/bin/bash
# The allreduce algorithm sweep of the README's "Selection targets, measured", on a namespace
# cluster (tests/cluster/cluster.sh): per size, the median over runs of gcoll_bench's median call
# for every algorithm forced and for the automatic choice, as markdown tables and CSVs.
# Exit: 0; 1 when a run failed; 77 where the cluster cannot be made here.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Environment:
#   SWEEP_HOSTS (2), SWEEP_RANKS ranks per host (2), SWEEP_RATE tbf rate of every link (1gbit; none)
#   SWEEP_SIZES MIN:MAX in bytes with K/M/G (4:64M), SWEEP_FACTOR size step (4)
#   SWEEP_ALGOS forced algorithms ("ring recursive_doubling rabenseifner direct hierarchical");
#               the automatic choice always runs
#   SWEEP_REPS runs (5), SWEEP_ITERS timed iterations per algorithm up to 256 KiB and above ("2000 5": a
#               rare millisecond-long call moves an average of 2000 by under a microsecond)
#   SWEEP_TRANSPORT GCOLL_TRANSPORT_INTER (tcp), BINDIR (build/default/bin),
#   SWEEP_CSV (build/bench/sweep-HOSTSxRANKS-RATE.csv)
hosts=${SWEEP_HOSTS:-2} ranks=${SWEEP_RANKS:-2} rate=${SWEEP_RATE:-1gbit}
sizes=${SWEEP_SIZES:-4:64M} factor=${SWEEP_FACTOR:-4} reps=${SWEEP_REPS:-5}
algos=${SWEEP_ALGOS:-ring recursive_doubling rabenseifner direct hierarchical}
iters=${SWEEP_ITERS:-2000 5} transport=${SWEEP_TRANSPORT:-tcp}

die() { echo "sweep.sh: $*" >&2; exit 1; }
to_bytes() { # 64K -> 65536; empty on a malformed size
    case $1 in
    *[!0-9KMG]* | '' | [KMG]* | *[KMG]?*) ;;
    *K) echo $((${1%K} << 10)) ;; *M) echo $((${1%M} << 20)) ;; *G) echo $((${1%G} << 30)) ;;
    *) echo "$1" ;;
    esac
}
for v in "$hosts" "$ranks" "$factor" "$reps"; do
    case $v in '' | *[!0-9]* | 0) die "SWEEP_HOSTS, SWEEP_RANKS, SWEEP_FACTOR and SWEEP_REPS take integers >= 1 ('$v')" ;; esac
done
[ "$factor" -ge 2 ] || die "SWEEP_FACTOR must be at least 2"
lo=$(to_bytes "${sizes%%:*}") hi=$(to_bytes "${sizes#*:}")
{ [ -n "$lo" ] && [ -n "$hi" ] && [ "$lo" -ge 1 ] && [ "$lo" -le "$hi" ]; } ||
    die "SWEEP_SIZES='$sizes': accepts MIN:MAX in bytes with K/M/G suffixes, 1 <= MIN <= MAX"
read -r -a it <<< "$iters"
[ ${#it[@]} = 2 ] || die "SWEEP_ITERS='$iters': accepts two counts, e.g. '200 5'"
small_iters=${it[0]} large_iters=${it[1]}

if [ -z "${SWEEP_INNER:-}" ]; then
    BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || die "no BINDIR: build first"
    [ -x "$BINDIR/gcoll_bench" ] || die "no $BINDIR/gcoll_bench: make first"
    csv=${SWEEP_CSV:-build/bench/sweep-${hosts}x${ranks}-$rate.csv}
    mkdir -p "$(dirname "$csv")" && csv=$(cd "$(dirname "$csv")" && pwd)/$(basename "$csv")
    unset GCOLL_ALLREDUCE GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER GCOLL_LOG_LEVEL
    export BINDIR SWEEP_CSV=$csv SWEEP_INNER=1
    exec bash "$here/cluster.sh" --hosts "$hosts" --exec bash "$0"
fi

# the sizes gcoll_bench -m LO:HI -f FACTOR runs, in two parts: up to 256 KiB (many iterations)
# and above (few: a call takes up to seconds on a shaped link)
small=() large=()
for ((s = lo; s <= hi; s *= factor)); do
    if [ $s -le 262144 ]; then small+=("$s"); else large+=("$s"); fi
done
parts=()
[ ${#small[@]} -gt 0 ] && parts+=("${small[0]}:${small[-1]} -i $small_iters")
[ ${#large[@]} -gt 0 ] && parts+=("${large[0]}:${large[-1]} -i $large_iters")

"$CLUSTER_SHAPE" "$rate" || die "cannot shape the links to $rate"
export GCOLL_TRANSPORT_INTER=$transport
B=$BINDIR/gcoll_bench
# run PART CSV: one gcoll_bench run of every algorithm, `gcoll_bench --algo auto,ALGOS`: they take
# turns block by block in one process, each forced through the communicator's selection table, so
# that how the ranks share the cores, and any change of load, touch every column alike
run() {
    local out=$2 list part a
    read -r -a part <<< "$1" # LO:HI -i ITERS
    read -r -a a <<< "$algos"
    list=$(IFS=,; echo "auto,${a[*]}")
    timeout 900 "$CLUSTER_MPIRUN" --ranks-per-host "$ranks" "$B" allreduce -m "${part[@]}" -f "$factor" -x 2 \
        --algo "$list" --baseline none --csv "$out" > "$out.log" 2>&1
}

echo "# sweep: $hosts hosts x $ranks ranks, links ${rate}, GCOLL_TRANSPORT_INTER=$transport, sizes $sizes x$factor," \
    "$reps runs each of auto $algos; $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
GCOLL_LOG_LEVEL=info timeout 300 "$CLUSTER_MPIRUN" --ranks-per-host "$ranks" "$B" allreduce -m 4:4 -i 1 -x 1 \
    --baseline none 2>&1 | grep -m1 -o 'links measured: .*' | sed 's/^/# /'

raw=$CLUSTER_DIR/sweep.raw
: > "$raw"
status=0
t0=$(date +%s)
for ((rep = 1; rep <= reps; rep++)); do
    for part in "${parts[@]}"; do
        out=$CLUSTER_DIR/run.csv
        rm -f "$out"
        if ! run "$part" "$out" || [ ! -s "$out" ]; then
            echo "# FAILED: -m $part, run $rep:" >&2
            tail -5 "$out.log" >&2
            status=1
            continue
        fi
        # rows: algo,rep,bytes,pick,median us,average us (gcoll_bench's CSV: bytes $6, algorithm
        # $8 with auto's as auto:PICK, gcoll_avg_us $10, gcoll_med_us $22)
        awk -F, -v r="$rep" 'NR > 1 { a = $8; p = $8; if (sub(/^auto:/, "", p)) a = "auto"
                                     print a "," r "," $6 "," p "," $22 "," $10 }' "$out" >> "$raw"
    done
    echo "# run $rep of $reps done after $(($(date +%s) - t0)) s; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
"$CLUSTER_SHAPE" none

# medians per algorithm and size of one statistic (column 5: the median call, 6: the average);
# the auto column's picks (several if runs disagreed). CSV columns: bytes, auto_pick, auto_us,
# one <algo>_us per forced algorithm, best, auto_over_best.
table() { # COLUMN CSV
awk -F, -v algos="auto $algos" -v col="$1" -v csv="$2" '
function median(key,   n, i, j, t, v) {
    n = split(vals[key], v, " ")
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n ? (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : -1
}
function fmt(x) { return x < 0 ? "-" : x < 1000 ? sprintf("%.1f", x) : sprintf("%.0f", x) }
function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }
{
    key = $1 SUBSEP $3
    vals[key] = vals[key] (vals[key] == "" ? "" : " ") $col
    if (!($3 in seen)) { seen[$3] = 1; sizes[++nsizes] = $3 }
    if ($1 == "auto" && index("/" picks[$3] "/", "/" $4 "/") == 0)
        picks[$3] = picks[$3] (picks[$3] == "" ? "" : "/") $4
}
END {
    na = split(algos, a, " ")
    head = "| bytes | auto: pick | auto us |"; sep = "|---|---|---|"; chead = "bytes,auto_pick,auto_us"
    for (k = 2; k <= na; k++) { head = head " " a[k] " |"; sep = sep "---|"; chead = chead "," a[k] "_us" }
    print head " best forced | auto / best |"; print sep "---|---|"
    print chead ",best,auto_over_best" > csv
    for (i = 1; i <= nsizes; i++) {
        b = sizes[i]; auto = median("auto" SUBSEP b); best = ""; bt = -1
        row = "| " human(b) " | " picks[b] " | " fmt(auto) " |"; crow = b "," picks[b] "," auto
        for (k = 2; k <= na; k++) {
            t = median(a[k] SUBSEP b)
            row = row " " fmt(t) " |"; crow = crow "," t
            if (t >= 0 && (bt < 0 || t < bt)) { bt = t; best = a[k] }
        }
        ratio = bt > 0 && auto >= 0 ? sprintf("%.2f", auto / bt) : "-"
        print row " " best " | " ratio " |"; print crow "," best "," ratio > csv
    }
}' "$raw"
}
echo "# by the median call (us; each call as long as its slowest rank), the median of $reps runs:"
table 5 "$SWEEP_CSV"
echo "# by OSU's average (us; the mean of the ranks' average calls), the median of $reps runs:"
table 6 "${SWEEP_CSV%.csv}-avg.csv"
echo "# wrote $SWEEP_CSV (median call) and ${SWEEP_CSV%.csv}-avg.csv (average)"
exit $status
