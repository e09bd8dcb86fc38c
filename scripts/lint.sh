#!/bin/sh
# scripts/lint.sh: cppcheck over the C sources, shellcheck over the shell scripts, clang-format
# --dry-run against .clang-format (the C sources and the torch binding's C++). One line per tool;
# exits 1 if any of them finds something.
# LINT_ONLY="cppcheck shellcheck" runs a subset. The tools come from scripts/install-deps.sh.
set -u
cd "$(dirname "$0")/.." || exit 1

C_DIRS="src include interposer tools bench reference examples tests"
ONLY=${LINT_ONLY:-cppcheck shellcheck clang-format}
JOBS=$(nproc 2>/dev/null || echo 2)
LOG=${TMPDIR:-/tmp}/gcoll-lint.$$
mkdir -p "$LOG" || exit 1
trap 'rm -rf "$LOG"' EXIT
fail=0

# The tracked files (a clone), else what find sees (an exported tree); never build/ or lib/.
files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --cached --others --exclude-standard
    else
        find . -path ./.git -prune -o -path ./build -prune -o -path ./lib -prune -o -path ./.dev -prune -o \
            -type f -print | sed 's|^\./||'
    fi
}

c_sources() {
    files | grep -E '\.(c|h|inc|cu)$' | while read -r f; do
        for d in $C_DIRS; do
            case $f in "$d"/*) [ -f "$f" ] && echo "$f" && break ;; esac
        done
    done
}

# *.sh, and files without the suffix that start with a sh/bash/dash shebang (.ci/run, bench/plot).
shell_scripts() {
    files | while read -r f; do
        [ -f "$f" ] || continue
        case $f in
        *.sh) echo "$f" ;;
        *.*) ;;
        *) head -n 1 "$f" 2>/dev/null | grep -qE '^#!.*[/ ](ba|da)?sh( |$)' && echo "$f" ;;
        esac
    done
}

# report NAME RC COUNT: the tool's one line; its findings (in $LOG/NAME) follow on failure.
report() {
    if [ "$2" = 0 ]; then
        echo "lint: $1: ok ($3 files)"
    else
        echo "lint: $1: FAILED ($3 files)"
        sed 's/^/    /' "$LOG/$1"
        fail=1
    fi
}

missing() {
    echo "lint: $1: FAILED (not installed; scripts/install-deps.sh installs it as root)"
    fail=1
}

for tool in $ONLY; do
    case $tool in
    cppcheck)
        command -v cppcheck >/dev/null 2>&1 || { missing cppcheck; continue; }
        c_sources | grep -v '\.cu$' >"$LOG/cppcheck.files"
        # The defines are the Makefile's FEATURES with every optional part on, so that all of the
        # code is read; the include paths are the union of the Makefile's -I flags. System headers
        # (libc, MPI, libfabric, hwloc, check) are not read: cppcheck needs no more than their names.
        cppcheck -q -j "$JOBS" --std=c11 --platform=unix64 --error-exitcode=1 --inline-suppr \
            --enable=warning,style,portability,performance --suppress=missingIncludeSystem \
            -D_GNU_SOURCE -DGCOLL_HAVE_OFI=1 -DGCOLL_HAVE_HWLOC=1 -DGCOLL_HAVE_CUDA=1 \
            -Iinclude -Isrc -Ibench -Ireference -Itests/mpi -Itests/cuda \
            --template='{file}:{line}: {severity}: {message} [{id}]' \
            --file-list="$LOG/cppcheck.files" >"$LOG/cppcheck" 2>&1
        report cppcheck $? "$(wc -l <"$LOG/cppcheck.files")"
        ;;
    shellcheck)
        command -v shellcheck >/dev/null 2>&1 || { missing shellcheck; continue; }
        shell_scripts >"$LOG/shellcheck.files"
        # -x follows the files a script sources where shellcheck can find them.
        xargs shellcheck -x -f gcc <"$LOG/shellcheck.files" >"$LOG/shellcheck" 2>&1
        report shellcheck $? "$(wc -l <"$LOG/shellcheck.files")"
        ;;
    clang-format)
        command -v clang-format >/dev/null 2>&1 || { missing clang-format; continue; }
        { c_sources; files | grep -E '^bindings/.*\.cpp$'; } >"$LOG/clang-format.files"
        xargs clang-format --dry-run --Werror <"$LOG/clang-format.files" >"$LOG/clang-format" 2>&1
        rc=$?
        # one line per place that would change, not the whole diagnostic
        grep -E '^[^ ]+:[0-9]+:[0-9]+: error' "$LOG/clang-format" >"$LOG/clang-format.short" &&
            mv "$LOG/clang-format.short" "$LOG/clang-format"
        report clang-format $rc "$(wc -l <"$LOG/clang-format.files")"
        ;;
    *)
        echo "lint: unknown tool '$tool' in LINT_ONLY" >&2
        fail=1
        ;;
    esac
done
exit $fail
