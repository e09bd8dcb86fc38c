#!/bin/sh
# Runs the tests that tests/manifest lists, each under its time limit so that a hang names
# itself, and ends with "N passed, N failed, N skipped": checks summed over the programs, and
# every manifest line (or rank count) that did not run here, with the reason on a SKIP line.
usage() {
    cat <<'EOF'
usage: tests/run.sh [-a] [-l LABEL]... [-n MAXRANKS] [--list] [NAME...]
  NAME...      the manifest lines of these names (shell patterns: 'cuda-fake*')
  -l LABEL     the lines with this label (quick, core, transport, docs, python, torch, c10d,
               interposer, cluster, cuda, gpu, ofi, nosan, san, full, slow); repeatable
  -a           every line, those labelled full too (make test-full)
  -n MAXRANKS  leave out rank counts above MAXRANKS
  --list       print the lines chosen, run nothing
  With neither names nor labels: every line but those labelled full (make test).
Manifest fields: NAME RANKS TIMEOUT LABELS KIND ARGS...; RANKS is a list (1,3,8) or - for one
run; KIND is unit, mpi PROGRAM [VAR=VALUE...], py FILE RESULT [VAR=VALUE...], sh COMMAND, gpu
PROGRAM [VAR=VALUE...] or cluster SCRIPT. A line labelled nosan is skipped under the sanitizers
(SAN set), where a line of more than three rank counts runs at its smallest, largest and
largest odd one between; a line labelled san runs only there, one labelled ofi needs OFI=1, torch needs
/usr/bin/python3 to import torch, c10d the torch backend built; gpu lines skip where no GPU is visible, cluster scripts where
network namespaces cannot be made (exit 77).
EOF
}
set -u
BINDIR=${BINDIR:-build/default/bin}
LIBDIR=${LIBDIR:-lib}
MANIFEST=${MANIFEST:-tests/manifest}
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
PLUGIN="GCOLL_TRANSPORT_PLUGIN=$BINDIR/libgcoll_example_plugin.so"
PYENV="-x GCOLL_LIBRARY=$(pwd)/$LIBDIR/libgcoll.so.1 -x PYTHONPATH=$(pwd)/bindings/python"
export BINDIR LIBDIR MPIRUN PLUGIN PYENV

all=0 labels="" maxnp=1000 list=0 names=""
while [ $# -gt 0 ]; do
    case $1 in
    -a) all=1 ;;
    -l) [ $# -ge 2 ] || { usage >&2; exit 2; }; labels="$labels $2"; shift ;;
    -n) [ $# -ge 2 ] || { usage >&2; exit 2; }; maxnp=$2; shift ;;
    --list) list=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) names="$names $1" ;;
    esac
    shift
done
# every name must match some line, or the run would pass having run nothing
for n in $names; do
    awk -v pat="$n" '!/^#/ && NF { print $1 }' "$MANIFEST" | while read -r m; do
        # shellcheck disable=SC2254 # the name is a pattern on purpose
        case $m in $n) echo yes; break ;; esac
    done | grep -q yes || { echo "run.sh: no test in $MANIFEST is named $n" >&2; exit 2; }
done

if [ -n "${SAN:-}" ]; then
    # Open MPI's allocations kept until exit are not ours to report: its components stay mapped
    # (keep_loaded.c), so that leak reports name them and the suppressions match with the fast
    # unwinder (the slow one, which reached a named module, made every malloc cost a full unwind).
    LD_PRELOAD="$(pwd)/$BINDIR/libkeep_loaded.so${LD_PRELOAD:+:$LD_PRELOAD}"
    export LD_PRELOAD
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:verify_asan_link_order=0"
    LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0"
    export LSAN_OPTIONS
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export TEST_QUICK=1 # the 1 Mi+3 case takes minutes under the sanitizers
fi

LOG=${TEST_LOG:-$BINDIR/../test.log}
[ $list = 1 ] || : >"$LOG"
passed=0 failed=0 skipped=0 failures="" t0=$(date +%s)

has_label() { case ",$1," in *",$2,"*) return 0 ;; esac; return 1; }

# chosen NAME LABELS: whether the command line asks for this line
chosen() {
    if [ -n "$names" ]; then
        for n in $names; do
            # shellcheck disable=SC2254
            case $1 in $n) return 0 ;; esac
        done
        return 1
    fi
    if [ -n "$labels" ]; then
        for l in $labels; do has_label "$2" "$l" && return 0; done
        return 1
    fi
    [ $all = 1 ] || ! has_label "$2" full
}

note_fail() {
    failed=$((failed + 1))
    failures="$failures
  $1"
}

skip() {
    skipped=$((skipped + 1))
    echo "SKIP $1: $2"
}

# add_result NAME OUTPUT RC: the RESULT line of OUTPUT named NAME joins the totals
add_result() {
    line=$(printf '%s\n' "$2" | grep "^RESULT $1 " | tail -1)
    if [ -z "$line" ]; then
        note_fail "$label: no result (exit $3); see $LOG"
        printf '%s\n' "$2" | grep -v '^\(---\|$\)' | tail -15
        return
    fi
    p=$(printf '%s' "$line" | sed 's/.*passed=\([0-9]*\).*/\1/')
    f=$(printf '%s' "$line" | sed 's/.*failed=\([0-9]*\).*/\1/')
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$f" = 0 ] && [ "$3" = 0 ]; then
        echo "ok   $label ($secs s): $line"
        return
    fi
    [ "$f" = 0 ] && note_fail "$label: exit $3" || failures="$failures
  $label: $f failed"
    echo "FAIL $label ($secs s): $line"
    printf '%s\n' "$2" | grep -E 'FAIL|ERROR|Sanitizer|runtime error' | head -15
}

# run_mpi NP RESULT CMD [VAR=VALUE...]: one multi-rank program; its RESULT line gives the counts
run_mpi() {
    np=$1 res=$2 cmd=$3
    shift 3
    envs=""
    for e in "$@"; do envs="$envs -x $e"; done
    t=$(date +%s)
    # shellcheck disable=SC2086 # MPIRUN, the -x list and cmd are word lists
    out=$(timeout "$limit" $MPIRUN -np "$np" $envs $cmd 2>&1 </dev/null)
    rc=$? secs=$(($(date +%s) - t))
    printf '=== %s rc=%s %ss\n%s\n' "$label$envs" "$rc" "$secs" "$out" >>"$LOG"
    add_result "$res" "$out" "$rc"
}

# run_sh COMMAND: a check that passes or fails as a whole
run_sh() {
    t=$(date +%s)
    out=$(timeout "$limit" sh -c "$1" 2>&1 </dev/null)
    rc=$? secs=$(($(date +%s) - t))
    printf '=== %s rc=%s %ss\n%s\n' "$label" "$rc" "$secs" "$out" >>"$LOG"
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
        echo "ok   $label ($secs s): $(printf '%s' "$out" | tail -1)"
    else
        note_fail "$label"
        echo "FAIL $label ($secs s)"
        printf '%s\n' "$out" | tail -20
    fi
}

run_unit() {
    t=$(date +%s)
    out=$(timeout "$limit" "$BINDIR/unit_tests" 2>&1 </dev/null)
    rc=$? secs=$(($(date +%s) - t))
    printf '=== unit rc=%s %ss\n%s\n' "$rc" "$secs" "$out" >>"$LOG"
    line=$(printf '%s\n' "$out" | grep 'Checks:' | tail -1)
    printf '%s\n' "$out" | grep -E ':[FE]:|SKIP' | head -20
    if [ -z "$line" ]; then
        note_fail "unit tests: no summary (exit $rc)"
        return
    fi
    c=$(printf '%s' "$line" | sed 's/.*Checks: \([0-9]*\).*/\1/')
    f=$(printf '%s' "$line" | sed 's/.*Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2/')
    nf=$((${f% *} + ${f#* }))
    passed=$((passed + c - nf))
    failed=$((failed + nf))
    { [ $nf = 0 ] && [ $rc = 0 ]; } || note_fail "unit tests: $nf failed (exit $rc)"
    echo "$([ $nf = 0 ] && echo ok || echo FAIL)   unit ($secs s): $line"
}

# run_cluster SCRIPT: every RESULT line it prints joins the totals; exit 77 is a skip
run_cluster() {
    t=$(date +%s)
    out=$(timeout "$limit" bash "$1" 2>&1 </dev/null)
    rc=$? secs=$(($(date +%s) - t))
    printf '=== %s rc=%s %ss\n%s\n' "$label" "$rc" "$secs" "$out" >>"$LOG"
    if [ $rc = 77 ]; then
        skip "$label" "$(printf '%s\n' "$out" | grep '^SKIP' | head -1 | sed 's/^SKIP //')"
        return
    fi
    printf '%s\n' "$out" | grep -v '^#   ' | grep -E '^# .*(no result|exit|sent only)' | head -10
    nres=0 before=$failed
    for r in $(printf '%s\n' "$out" | sed -n 's/^RESULT \([^ ]*\) .*passed=\([0-9]*\) failed=\([0-9]*\).*/\1:\2:\3/p'); do
        nres=$((nres + 1))
        n=${r%%:*} f=${r##*:} p=${r#*:}
        p=${p%:*}
        passed=$((passed + p))
        failed=$((failed + f))
        [ "$f" = 0 ] || failures="$failures
  $label $n: $f failed"
        echo "$([ "$f" = 0 ] && echo ok || echo FAIL)   $label: RESULT $n passed=$p failed=$f"
        # what failed, where the CI log shows only this output
        [ "$f" = 0 ] || printf '%s\n' "$out" | grep -E '^# (FAIL|log:|rank )' | head -20
    done
    if [ $nres = 0 ]; then
        note_fail "$label: no result (exit $rc); see $LOG"
        printf '%s\n' "$out" | tail -n 20
    elif [ $rc != 0 ] && [ "$failed" = "$before" ]; then
        note_fail "$label: exit $rc"
    fi
    echo "     $label: $secs s"
}

gpu_probe="" # the reason no GPU test runs here, once asked
gpu_absent() {
    if [ -z "$gpu_probe" ]; then
        # shellcheck disable=SC2086 # MPIRUN is a word list
        out=$(timeout 120 $MPIRUN -np 1 -x TEST_PROBE=1 "$BINDIR/$1" 2>&1 </dev/null)
        printf '=== gpu probe\n%s\n' "$out" >>"$LOG"
        gpu_probe=$(printf '%s\n' "$out" | grep '^SKIP' | head -1 | sed 's/^SKIP:* *//')
        [ -n "$gpu_probe" ] || gpu_probe=present
    fi
    [ "$gpu_probe" != present ]
}

torch_probe=""
torch_absent() {
    [ -n "$torch_probe" ] || { /usr/bin/python3 -c 'import torch' 2>/dev/null && torch_probe=yes || torch_probe=no; }
    [ $torch_probe = no ]
}

section="" shown=""
while read -r name ranks limit tags kind rest; do
    case $name in
    '##') section=$(printf '%s %s %s %s %s' "$ranks" "$limit" "$tags" "$kind" "$rest" | sed 's/ *$//'); continue ;;
    '' | '#'*) continue ;;
    esac
    chosen "$name" "$tags" || continue
    # the rank counts at most -n
    nps=""
    if [ "$ranks" != - ]; then
        for np in $(printf '%s' "$ranks" | tr ',' ' '); do
            [ "$np" -le "$maxnp" ] && nps="$nps $np"
        done
        [ -n "$nps" ] || continue
    fi
    # under the sanitizers a line of more than three rank counts runs at three of them: its
    # smallest, its largest and the largest odd one between (make test runs every count)
    dropped=""
    # shellcheck disable=SC2086 # $nps is a list of numbers, split into one a line
    if [ -n "${SAN:-}" ] && [ "$(printf '%s\n' $nps | wc -l)" -gt 3 ]; then
        # shellcheck disable=SC2086 # likewise
        keep=$(printf '%s\n' $nps | sort -n | awk '{ a[NR] = $1 } END { o = 0
            for (i = 2; i < NR; i++) if (a[i] % 2) o = a[i]
            printf "%s%s %s", a[1], o ? " " o : "", a[NR] }')
        for np in $nps; do
            case " $keep " in *" $np "*) ;; *) dropped="$dropped $np" ;; esac
        done
        nps=" $keep"
    fi
    if has_label "$tags" san && [ -z "${SAN:-}" ] && [ -z "$names" ]; then
        continue # the sanitizer run's variant of another line
    fi
    if [ $list = 1 ]; then
        printf '%-30s %-16s %s\n' "$name" "${nps:-"-"}" "$tags"
        continue
    fi
    if [ "$section" != "$shown" ]; then
        echo "--- $section (at $(($(date +%s) - t0)) s)"
        shown=$section
    fi
    if has_label "$tags" nosan && [ -n "${SAN:-}" ]; then
        skip "$name" "not run under the sanitizers (SAN=$SAN)"
        continue
    fi
    if has_label "$tags" san && [ -z "${SAN:-}" ]; then
        skip "$name" "runs only under the sanitizers (make check-san)"
        continue
    fi
    [ -z "$dropped" ] || skip "$name np=${dropped# }" "under the sanitizers a line runs at its smallest, largest and largest odd rank count"
    if has_label "$tags" ofi && [ "${OFI:-0}" != 1 ]; then
        skip "$name" "built without libfabric (OFI=${OFI:-0})"
        continue
    fi
    if has_label "$tags" torch && torch_absent; then
        skip "$name" "/usr/bin/python3 cannot import torch (scripts/install-deps.sh installs python3-torch)"
        continue
    fi
    if has_label "$tags" c10d && [ ! -e "$LIBDIR/gcoll_c10d.so" ]; then
        skip "$name" "the torch.distributed backend $LIBDIR/gcoll_c10d.so was not built (make builds it where libtorch-dev, pybind11-dev and python3-dev are)"
        continue
    fi
    set -f # an environment value may hold ';' or '*'
    # shellcheck disable=SC2046 # rest is the line's word list
    set -- $(printf '%s' "$rest" | sed "s|\\\$PLUGIN|$PLUGIN|g; s|\\\$BINDIR|$BINDIR|g")
    set +f
    case $kind in
    unit) label=unit; run_unit ;;
    sh)
        if [ -z "$nps" ]; then
            label=$name; run_sh "$rest"
        else
            for NP in $nps; do
                export NP
                label="$name np=$NP"
                run_sh "$rest"
            done
        fi
        ;;
    mpi | gpu)
        prog=$1
        shift
        if [ "$kind" = gpu ] && gpu_absent "$prog"; then
            skip "$name" "$gpu_probe"
            continue
        fi
        res=${prog#tp_test_}
        res=${res#test_}
        for np in $nps; do label="$name np=$np"; run_mpi "$np" "$res" "$BINDIR/$prog" "$@"; done
        ;;
    py)
        file=$1 res=$2
        shift 2
        for np in $nps; do
            label="$name np=$np"
            run_mpi "$np" "$res" "/usr/bin/python3 $file" "GCOLL_LIBRARY=$(pwd)/$LIBDIR/libgcoll.so.1" \
                "PYTHONPATH=$(pwd)/bindings/python" "$@"
        done
        ;;
    cluster)
        label=$name
        if [ -n "${SAN:-}" ]; then
            skip "$name" "not run under the sanitizers"
        else
            run_cluster "$1"
        fi
        ;;
    *) note_fail "$name: unknown kind '$kind' in $MANIFEST" ;;
    esac
done <"$MANIFEST"
[ $list = 1 ] && exit 0

if [ -n "$failures" ]; then
    echo "failures:$failures"
    echo "(full output: $LOG)"
fi
echo "--- done (at $(($(date +%s) - t0)) s)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
