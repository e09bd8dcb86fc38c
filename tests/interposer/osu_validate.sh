#!/bin/sh
# OSU Micro-Benchmarks' own validation (-c) through the MPI interposer: each collective benchmark
# at 2, 3 and 4 ranks, with MPI_FLOAT and MPI_INT, in place (-l) or not. A run passes when every
# message size reports Pass and every rank's interposer report (GCOLL_LOG_LEVEL=info) says it took
# the benchmark's call over each time, none handed to MPI. OSU is not part of gcoll: OSU_DIR names
# its build or install tree (built with the same MPI); without it the script skips (exit 77, as
# tests/run.sh's cluster kind reads it). Prints "# FAIL ..." per failed run, then one RESULT line.
# Usage: OSU_DIR=DIR sh tests/interposer/osu_validate.sh [BENCHMARK...]
#   NPS (default "2 3 4"), TYPES ("mpi_float mpi_int"), PLACES ("out in"), OSU_ARGS (default
#   "-m 1:1048576 -i 5 -x 1": sizes 1 B..1 MiB, 5 timed iterations) adjust the runs.
set -u
LIBDIR=${LIBDIR:-lib}
NPS=${NPS:-2 3 4}
TYPES=${TYPES:-mpi_float mpi_int}
PLACES=${PLACES:-out in}
OSU_ARGS=${OSU_ARGS:--m 1:1048576 -i 5 -x 1}
if [ $# -gt 0 ]; then
    BENCHES="$*"
else
    BENCHES="osu_allgatherv osu_alltoall osu_alltoallv osu_gather osu_scatter osu_reduce_scatter osu_gatherv
        osu_scatterv osu_iallgatherv osu_ialltoall osu_ialltoallv osu_igather osu_iscatter osu_ireduce_scatter
        osu_igatherv osu_iscatterv"
fi

if [ -z "${OSU_DIR:-}" ] || [ ! -d "$OSU_DIR" ]; then
    echo "SKIP OSU Micro-Benchmarks not found: set OSU_DIR to their build or install tree (OSU_DIR='${OSU_DIR:-}')"
    exit 77
fi
lib="$(cd "$LIBDIR" && pwd)/libgcoll_mpi.so"
[ -f "$lib" ] || { echo "# FAIL no $lib: build it with make"; exit 1; }

# The benchmark's executable anywhere under OSU_DIR (build trees and installs differ in layout).
find_bench() {
    find "$OSU_DIR" -name "$1" -type f -perm -u+x 2>/dev/null | head -1
}

passed=0 failed=0
fail() {
    failed=$((failed + 1))
    echo "# FAIL $*"
}

for b in $BENCHES; do
    exe=$(find_bench "$b")
    if [ -z "$exe" ]; then
        fail "$b: not found under $OSU_DIR"
        continue
    fi
    call=${b#osu_}
    for np in $NPS; do
        for t in $TYPES; do
            for place in $PLACES; do
                l=""
                [ "$place" = in ] && l=-l
                what="$b np=$np -T $t${l:+ -l}"
                # shellcheck disable=SC2086 # OSU_ARGS is a word list
                out=$(timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
                    -x LD_PRELOAD="$lib" -x GCOLL_LOG_LEVEL=info "$exe" -c -T "$t" $l $OSU_ARGS 2>&1 </dev/null)
                rc=$?
                sizes=$(printf '%s\n' "$out" | grep -cE '^[0-9]+ .*(Pass|Fail)[[:space:]]*$')
                bad=$(printf '%s\n' "$out" | grep -cE '^[0-9]+ .*Fail[[:space:]]*$')
                reason=""
                [ "$rc" = 0 ] || reason="exit $rc"
                [ "$sizes" -gt 0 ] || reason="${reason:+$reason, }no validated size"
                [ "$bad" = 0 ] || reason="${reason:+$reason, }$bad sizes failed validation"
                for r in $(seq 0 $((np - 1))); do
                    got=$(printf '%s\n' "$out" | grep -o ":$r\] gcoll INFO: mpi interposer: calls taken over.*" |
                        grep -o " $call=[0-9]*/[0-9]*" | sed 's/.*=//')
                    case $got in
                    0/* | */[1-9]* | "") reason="${reason:+$reason, }rank $r took over/handed to MPI ${got:-?} of $call" ;;
                    esac
                done
                if [ -n "$reason" ]; then
                    fail "$what: $reason"
                    printf '%s\n' "$out" | grep -E 'Fail|ERROR|rror' | head -5 | sed 's/^/#   /'
                else
                    passed=$((passed + 1))
                    echo "# ok $what: $sizes sizes, $call taken over $(printf '%s\n' "$out" |
                        grep -o ":0\] gcoll INFO: mpi interposer: calls taken over.*" | grep -o " $call=[0-9]*" |
                        sed 's/.*=//') times on rank 0"
                fi
            done
        done
    done
done
echo "RESULT osu-interposer passed=$passed failed=$failed"
[ "$failed" = 0 ]
