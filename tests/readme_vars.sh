#!/bin/sh
# The README's table of GCOLL_* variables must be exactly the registry's (gcoll-info --markdown).
# Prints a diff and fails when they disagree.
set -u
BINDIR=${BINDIR:-build/default/bin}
want=$(mktemp) got=$(mktemp)
trap 'rm -f "$want" "$got"' EXIT
"$BINDIR/gcoll-info" --markdown > "$want" || exit 1
grep '^| `GCOLL_' README.md > "$got"
if diff -u "$want" "$got"; then
    echo "README variable table matches the registry ($(wc -l < "$want") variables)"
else
    echo "README variable table differs from the registry (- registry, + README)"
    exit 1
fi
