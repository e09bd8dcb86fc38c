#!/bin/bash
# make bench-cluster: allreduce 8 B..64 MiB on a 4-host x 1-rank namespace cluster
# (tests/cluster/cluster.sh), gcoll beside Open MPI over TCP, on unshaped and tbf-shaped links, for
# each inter-node transport; writes build/bench/cluster-<rate>-<transport>.{csv,json,png}.
# Exit: 0, 1 when a run failed (a transport not built yet fails visibly), 77 where the cluster
# cannot be made here.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
# Environment: CLUSTER_BENCH_TRANSPORTS ("tcp ofi"), CLUSTER_BENCH_RATES ("none 1gbit"),
# CLUSTER_BENCH_HOSTS (4), BINDIR (build/default/bin), OUTDIR (build/bench).
OUTDIR=${OUTDIR:-build/bench}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
transports=${CLUSTER_BENCH_TRANSPORTS:-tcp ofi}
rates=${CLUSTER_BENCH_RATES:-none 1gbit}
hosts=${CLUSTER_BENCH_HOSTS:-4}

if [ "${1:-}" != --inner ]; then
    [ -x "$BINDIR/gcoll_bench" ] || { echo "no $BINDIR/gcoll_bench: make first"; exit 1; }
    unset GCOLL_TCP_IFNAME GCOLL_OFI_PROVIDER GCOLL_TRANSPORT_INTER
    export BINDIR OUTDIR CLUSTER_BENCH_TRANSPORTS="$transports" CLUSTER_BENCH_RATES="$rates"
    exec bash "$here/cluster.sh" --hosts "$hosts" --exec bash "$0" --inner
fi

B=$BINDIR/gcoll_bench
# link rate in GB/s (10^9 bytes), from tc units; empty when unshaped
gbps() {
    echo "$1" | awk '{ v = $0 + 0; u = tolower($0); sub(/^[0-9.]+/, "", u);
        m = (u ~ /^gbit/) ? 1e9 : (u ~ /^mbit/) ? 1e6 : (u ~ /^kbit/) ? 1e3 : 1;
        if (u ~ /bps$/) m *= 8; printf "%.4f", v * m / 8 / 1e9 }'
}
# the busbw of column COL (14 gcoll, 19 MPI) at 64 MiB in a CSV
busbw64() { awk -F, -v c="$2" '$6 == 67108864 { print $c }' "$1"; }
# sum of the tx bytes of every host's interface
txsum() { "$CLUSTER_COUNTERS" | sed 's/.*tx_bytes=//' | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

status=0
summary=()
for rate in $rates; do
    "$CLUSTER_SHAPE" "$rate" || { echo "cannot shape to $rate"; exit 1; }
    if [ "$rate" = none ]; then
        label=unshaped link="unshaped veth (bounded by CPU and memory only)" cap=""
    else
        label=$rate cap=$(gbps "$rate")
        link="$rate each way = $cap GB/s: a ring allreduce's bus bandwidth cannot exceed it"
        # tbf check: MPI's own allreduce (gcoll over its MPI transport beside it) at 64 MiB must
        # stay within 30-100 % of the link rate
        out=$(GCOLL_TRANSPORT_INTER=mpi timeout 300 "$CLUSTER_MPIRUN" --baseline-tcp "$B" allreduce \
            -m 64M:64M -i 3 -x 1 --csv "$CLUSTER_DIR/tbf.csv" 2>&1)
        mpi=$(busbw64 "$CLUSTER_DIR/tbf.csv" 19 2>/dev/null)
        if [ -n "$mpi" ] && awk -v b="$mpi" -v c="$cap" 'BEGIN { exit !(b <= c && b >= 0.3 * c) }'; then
            echo "# tbf check at $rate: MPI allreduce 64 MiB bus bandwidth $mpi GB/s, within 30-100% of the $cap GB/s link: ok"
        else
            echo "# tbf check at $rate: FAILED: MPI allreduce 64 MiB bus bandwidth '${mpi}' GB/s against a $cap GB/s link"
            printf '%s\n' "$out" | tail -5
            status=1
        fi
    fi
    for t in $transports; do
        base=$OUTDIR/cluster-$label-$t
        echo
        echo "### $hosts hosts x 1 rank, GCOLL_TRANSPORT_INTER=$t, link: $link"
        tx0=$(txsum)
        s0=$(date +%s)
        # fewer iterations as calls get longer (up to 1 s at 64 MiB on a shaped link): three
        # parts, the first with the header and the last with the footer, merged into one CSV/JSON
        parts=("8:64K -i 200 -x 10" "128K:512K -i 40 -x 4" "1M:64M -i 6 -x 1")
        ok=1
        for k in 0 1 2; do
            read -r -a part <<< "${parts[k]}"
            GCOLL_TRANSPORT_INTER=$t timeout 600 "$CLUSTER_MPIRUN" --baseline-tcp "$B" allreduce \
                -m "${part[@]}" --csv "$base.$k.csv" --json "$base.$k.json" 2>&1 |
                if [ $k = 0 ]; then grep -v '^# average'; else grep -v '^ *bytes\|^#'; fi
            { [ "${PIPESTATUS[0]}" = 0 ] && [ -s "$base.$k.csv" ]; } || { ok=0; break; }
        done
        echo "# link: $link; all hosts sent $(( ($(txsum) - tx0) / 1000000 )) MB over their $CLUSTER_IF in $(( $(date +%s) - s0 )) s"
        if [ $ok = 0 ]; then
            echo "# FAILED: GCOLL_TRANSPORT_INTER=$t at $label (gcoll_bench -m ${parts[k]})"
            summary+=("$(printf '%-10s %-9s %10s' "$label" "$t" FAILED)")
            rm -f "$base".*
            status=1
            continue
        fi
        # one CSV and one JSON per rate and transport: the rows of the three parts in order
        { cat "$base.0.csv"; tail -n +2 "$base.1.csv"; tail -n +2 "$base.2.csv"; } > "$base.csv"
        { sed '$d' "$base.0.json" | sed '$d' | sed '$s/}$/},/'
          sed -n '/"rows": \[/,$p' "$base.1.json" | sed 1d | sed '$d' | sed '$d' | sed '$s/}$/},/'
          sed -n '/"rows": \[/,$p' "$base.2.json" | sed 1d; } > "$base.json"
        rm -f "$base".[012].*
        awk -F, 'NR > 1 { n++; g += $14; m += $19 } END {
            printf "# average bus bandwidth over %d sizes: gcoll %.3f GB/s, MPI %.3f GB/s\n", n, g / n, m / n }' "$base.csv"
        [ -f "$here/../../bench/plot" ] && command -v gnuplot >/dev/null &&
            sh "$here/../../bench/plot" "$base.csv" "$base.png" >/dev/null 2>&1
        g=$(busbw64 "$base.csv" 14) m=$(busbw64 "$base.csv" 19)
        summary+=("$(printf '%-10s %-9s %10s %10s %10s' "$label" "$t" "$g" "$m" "${cap:-n/a}")")
        echo "# wrote $base.csv, $base.json"
    done
done
"$CLUSTER_SHAPE" none

echo
echo "### allreduce 64 MiB bus bandwidth, GB/s ($hosts hosts x 1 rank; link GB/s = the shaped rate each way)"
printf '%-10s %-9s %10s %10s %10s\n' link transport gcoll "MPI (tcp)" "link rate"
printf '%s\n' "${summary[@]}"
exit $status
