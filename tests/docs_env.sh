#!/bin/sh
# docs/env.md is generated from the configuration registry: it must be exactly what
# `gcoll-info --markdown` prints. Prints a diff and how to regenerate when the two disagree.
set -u
BINDIR=${BINDIR:-build/default/bin}
want=$(mktemp)
trap 'rm -f "$want"' EXIT
"$BINDIR/gcoll-info" --markdown > "$want" || { echo "gcoll-info --markdown failed (exit $?)"; exit 1; }
if [ ! -f docs/env.md ]; then
    echo "docs/env.md is missing: run 'make docs' ($BINDIR/gcoll-info --markdown > docs/env.md)"
    exit 1
fi
if diff -u "$want" docs/env.md; then
    echo "docs/env.md matches the registry ($(grep -c '^| `GCOLL_' "$want") variables)"
else
    echo "docs/env.md differs from gcoll-info --markdown (- registry, + docs/env.md):" \
        "regenerate it with 'make docs' ($BINDIR/gcoll-info --markdown > docs/env.md); do not edit it by hand"
    exit 1
fi
