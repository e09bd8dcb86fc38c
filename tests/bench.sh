#!/bin/sh
# gcoll_bench end to end: every collective (the vector ones under the skews), sendrecv, group,
# adasum, --compress, iallreduce and train validated against the reference at 1 to 3 ranks;
# CSV, JSON and the plot written; membw's table printed; bad command lines exit non-zero with a
# usage message.
set -u
BINDIR=${BINDIR:-build/default/bin}
# mpi SECONDS MPIRUN-ARGS...: mpirun on this host, ended after SECONDS
mpi() {
    t=$1
    shift
    timeout "$t" mpirun --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 "$@"
}
B=$BINDIR/gcoll_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

np=3 # gcoll_bench on one rank runs in the adasum loop below
for coll in allreduce reduce_scatter allgather bcast reduce alltoall barrier; do
    out=$(mpi 300 -np "$np" "$B" "$coll" -m 3:100K -f 3 -i 6 -x 1 -c -d int32 -r $((np - 1)) 2>&1) ||
        fail "np=$np $coll exited $?: $out"
    rows=$(printf '%s\n' "$out" | grep -c ' ok$')
    bad=$(printf '%s\n' "$out" | grep -c 'FAIL')
    [ "$bad" = 0 ] || fail "np=$np $coll: a row failed validation: $out"
    # sizes 3, 9, ..., 59049: those that hold one element per rank
    if [ "$coll" = barrier ]; then want=1; else
        want=$(awk -v np="$np" -v c="$coll" 'BEGIN { n = 0; for (s = 3; s <= 102400; s *= 3) {
            e = int(s / 4); if (c == "reduce_scatter" || c == "allgather" || c == "alltoall") e = int(e / np);
            if (e > 0) n++ } print n }')
    fi
    [ "$rows" = "$want" ] || fail "np=$np $coll: $rows validated rows, want $want: $out"
done
echo "every collective validated at 3 ranks on sizes 3..100K by 3"

# the vector collectives at 3 ranks: each under two of the skews and placements, so that every
# skew and in place meet every kind (reducing, gathering, scattering, all to all); point-to-point
for run in "allgatherv --skew half" "allgatherv --inplace --skew zipf:1.1 --seed 5" \
           "reduce_scatterv --skew zipf:1.1 --seed 5" "reduce_scatterv --inplace --skew half" \
           "alltoallv --skew zipf:1.1 --seed 5" "alltoallv --inplace" "gather --inplace" "scatter" \
           "gatherv --skew zipf:1.1 --seed 5" "gatherv --inplace --skew half" "scatterv --skew half" \
           "scatterv --inplace --skew zipf:1.1 --seed 5" "sendrecv"; do
    root="-r 2"
    [ "$run" = sendrecv ] && root=""
    # shellcheck disable=SC2086 # $run and $root are a subcommand and options, split into words
    out=$(mpi 300 -np 3 "$B" $run -m 3:100K -f 9 -i 4 -x 1 -c -d int32 $root 2>&1) ||
        fail "np=3 $run exited $?: $out"
    rows=$(printf '%s\n' "$out" | grep -c ' ok$')
    { [ "$rows" = 4 ] && ! printf '%s\n' "$out" | grep -q FAIL; } ||
        fail "np=3 $run: $rows validated rows, want 4: $out"
done
# alltoall and alltoallv --skew even: the same bytes and counts in every row
a=$(mpi 120 -np 3 "$B" alltoall -m 1K:64K -f 8 -i 4 -x 1 --baseline none 2>&1 | awk '/^ *[0-9]/ { print $1, $2 }')
v=$(mpi 120 -np 3 "$B" alltoallv --skew even -m 1K:64K -f 8 -i 4 -x 1 --baseline none 2>&1 | awk '/^ *[0-9]/ { print $1, $2 }')
{ [ -n "$a" ] && [ "$a" = "$v" ]; } || fail "alltoall and alltoallv --skew even sizes differ: '$a' vs '$v'"
out=$(mpi 120 -np 3 "$B" group --batch 8 -m 1K:4K -f 4 -i 4 -x 1 -c -o max 2>&1) || fail "group exited $?: $out"
{ [ "$(printf '%s\n' "$out" | grep -c '^ .* group x8 .* ok$')" = 2 ] &&
    [ "$(printf '%s\n' "$out" | grep -c '^ .* separate x8 .* ok$')" = 2 ] &&
    [ "$(printf '%s\n' "$out" | grep -c '^# group at .* separate / group = ')" = 2 ]; } || fail "group: $out"
echo "v collectives (even, half, zipf, in place), gather, scatter, sendrecv and group validated at 3 ranks"

out=$(mpi 300 -np 2 "$B" allreduce -m 4:64K -i 10 -d bfloat16 -o avg --inplace --algo ring \
    --csv "$tmp/r.csv" --json "$tmp/r.json" 2>&1) || fail "bf16 avg in place exited $?: $out"
printf '%s\n' "$out" | grep -q 'average bus bandwidth over 15 sizes' || fail "no footer: $out"
[ "$(grep -c ',ring,' "$tmp/r.csv")" = 15 ] || fail "CSV rows: $(cat "$tmp/r.csv")"
# the median call of both sides: the last two columns, and in the JSON each side's median_us
awk -F, 'NR > 1 && !($22 > 0 && $23 > 0) { bad = 1 } END { exit bad }' "$tmp/r.csv" ||
    fail "CSV median columns: $(cat "$tmp/r.csv")"
[ "$(grep -o '"median_us"' "$tmp/r.json" | wc -l)" = 30 ] || fail "JSON median_us: $(cat "$tmp/r.json")"
{ grep -q '"rows": \[' "$tmp/r.json" && [ "$(grep -c '"valid": "ok"' "$tmp/r.json")" = 15 ]; } || fail "JSON: $(cat "$tmp/r.json")"
{ sh bench/plot "$tmp/r.csv" "$tmp/r.png" >/dev/null && [ -s "$tmp/r.png" ]; } || fail "plot produced no PNG"
echo "CSV, JSON and PNG written for bfloat16 avg in place with --algo ring"

for np in 1 3; do
    for d in float32 bfloat16; do
        out=$(mpi 300 -np "$np" "$B" adasum -m 3:100K -f 3 -i 4 -x 1 -c -d "$d" 2>&1) ||
            fail "np=$np adasum $d exited $?: $out"
        printf '%s\n' "$out" | grep -q 'ada/sum' || fail "np=$np adasum $d: no adasum/sum column: $out"
        bad=$(printf '%s\n' "$out" | grep -c 'FAIL')
        rows=$(printf '%s\n' "$out" | grep -c ' ok$')
        if [ "$d" = float32 ]; then es=4; else es=2; fi
        want=$(awk -v es="$es" 'BEGIN { n = 0; for (s = 3; s <= 102400; s *= 3)
            if (int(s / es) > 0) n++; print n }')
        { [ "$bad" = 0 ] && [ "$rows" = "$want" ]; } || fail "np=$np adasum $d: $rows validated rows, want $want: $out"
    done
done
echo "adasum validated beside the sum allreduce at 1 and 3 ranks, float32 and bfloat16"

for c in fp16 topk:0.1; do
    set -- # the extra options: --algo ring for fp16
    [ "$c" = fp16 ] && set -- --algo ring
    out=$(mpi 300 -np 3 "$B" allreduce -m 4K:1M -f 16 -i 4 -x 1 -c --compress "$c" "$@" 2>&1) ||
        fail "allreduce --compress $c exited $?: $out"
    rows=$(printf '%s\n' "$out" | grep -c ' ok  *[0-9][0-9]*$')
    { [ "$rows" = 3 ] && ! printf '%s\n' "$out" | grep -q FAIL; } || fail "allreduce --compress $c: $rows validated rows, want 3: $out"
done
# top-k 10 % of 1 MiB (256 Ki elements) at 3 ranks: 6 (k + count/65535 + 1) (n-1) = 6 x 26219 x 2 bytes per call
printf '%s\n' "$out" | grep -q '^ *1048576 .* 314628$' || fail "top-k 10% of 1 MiB: not 314628 bytes per call: $out"
echo "allreduce --compress fp16 and topk:0.1 validated at 3 ranks, bytes on the wire per call"

# the parser's refusals are unit tests (tests/unit/test_bench.c); here, end to end, one parse
# error and those that need the running job: the rank count and the library's algorithm names
for args in "" "allreduce --bogus" "bcast -r 5" "allreduce --algo binomial" "iallreduce --algo binomial" \
            "adasum --algo ring" "alltoallv --skew zipf:0" "group --algo ring"; do
    # shellcheck disable=SC2086 # $args is a command line, split into its words
    out=$(timeout 60 "$B" $args 2>&1) # one rank without mpirun, which takes seconds to end a failed job
    rc=$?
    [ "$rc" != 0 ] || fail "'gcoll_bench $args' exited 0"
    printf '%s\n' "$out" | grep -q '^usage:' || fail "'gcoll_bench $args' printed no usage: $out"
done
echo "bad command lines exit non-zero with a usage message"

out=$(mpi 120 -np 1 "$B" membw 2>&1) || fail "membw exited $?"
{ printf '%s\n' "$out" | grep -q '^memcpy ' && printf '%s\n' "$out" | grep -q '^reduce sum bfloat16'; } || fail "membw: $out"
echo "membw table printed"

for np in 2 3; do
    out=$(mpi 120 -np "$np" "$B" iallreduce -m 4:64K -f 4 -i 4 -x 1 -c 2>&1) || fail "np=$np iallreduce exited $?: $out"
    printf '%s\n' "$out" | grep -q 'FAIL' && fail "np=$np iallreduce: a row failed validation: $out"
    rows=$(printf '%s\n' "$out" | grep -c ' ok$')
    [ "$rows" = 8 ] || fail "np=$np iallreduce: $rows validated rows, want 8 (4 B..64 KiB by 4): $out"
    for model in resnet50 bert; do
        out=$(mpi 120 -np "$np" "$B" train --model "$model" --scale 0.001 -i 2 -x 0 2>&1) ||
            fail "np=$np train $model exited $?: $out"
        for mode in after after-fused per-tensor session; do
            printf '%s\n' "$out" | grep -q "^$mode .* ok$" || fail "np=$np train $model: mode $mode not validated: $out"
        done
        printf '%s\n' "$out" | grep -q '^# after / session = ' || fail "np=$np train $model: no ratios: $out"
    done
done
echo "iallreduce and train (resnet50, bert at --scale 0.001) validated at 2 and 3 ranks"

out=$(mpi 120 -np 2 "$B" iallreduce -m 1K:16K -i 3 -d bfloat16 -o avg --compute sleep \
    --csv "$tmp/o.csv" --json "$tmp/o.json" 2>&1) || fail "iallreduce bf16 avg sleep exited $?: $out"
printf '%s\n' "$out" | grep -q '^# average overlap over 5 sizes' || fail "iallreduce: no footer: $out"
[ "$(grep -c ',sleep,.*,ok$' "$tmp/o.csv")" = 5 ] || fail "iallreduce CSV: $(cat "$tmp/o.csv")"
[ "$(grep -o '"overlap_pct"' "$tmp/o.json" | wc -l)" = 10 ] || fail "iallreduce JSON: $(cat "$tmp/o.json")"
out=$(mpi 120 -np 2 "$B" train --scale 0.002 -i 2 -x 0 -o avg --compute sleep --compute-ms 3 --forward 0.5 \
    --csv "$tmp/t.csv" --json "$tmp/t.json" 2>&1) || fail "train avg sleep exited $?: $out"
printf '%s\n' "$out" | grep -q '3.00 ms per step (--compute-ms), .* 0.500 of it in the forward pass' ||
    fail "train: --compute-ms or --forward not used: $out"
[ "$(grep -c '^resnet50,.*,avg,sleep,.*,ok,0.500$' "$tmp/t.csv")" = 4 ] || fail "train CSV: $(cat "$tmp/t.csv")"
{ grep -q '"after_over_session"' "$tmp/t.json" && grep -q '"forward": 0.500,' "$tmp/t.json" &&
    [ "$(grep -c '"valid": "ok"' "$tmp/t.json")" = 4 ]; } || fail "train JSON: $(cat "$tmp/t.json")"
# backprop-only steps (--forward 0) wait for every gradient before the next step's backprop
out=$(mpi 120 -np 3 "$B" train --model bert --scale 0.001 -i 3 -x 1 --forward 0 2>&1) ||
    fail "train --forward 0 exited $?: $out"
[ "$(printf '%s\n' "$out" | grep -c ' ok$')" = 4 ] || fail "train --forward 0: not every mode validated: $out"
# a busy-looping computation is CPU time of the process: every mode's cpu (column 14) holds at
# least most of its compute (column 11), and busy (column 15) is a percentage
out=$(mpi 120 -np 2 "$B" train --scale 0.002 -i 2 -x 0 --compute spin --compute-ms 20 \
    --csv "$tmp/s.csv" 2>&1) || fail "train spin exited $?: $out"
awk -F, 'NR > 1 && !($14 >= 0.8 * $11 && $11 > 10 && $15 >= 0 && $15 <= 100) { bad = 1 } END { exit bad || NR != 5 }' \
    "$tmp/s.csv" || fail "train spin: cpu or busy columns wrong: $(cat "$tmp/s.csv")"
if command -v python3 >/dev/null; then
    { python3 -m json.tool "$tmp/o.json" >/dev/null && python3 -m json.tool "$tmp/t.json" >/dev/null; } ||
        fail "iallreduce or train JSON does not parse"
fi
echo "iallreduce and train CSV and JSON written (bfloat16 and fp32 avg, --compute sleep)"
