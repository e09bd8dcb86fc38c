#!/bin/sh
# The README names a few GCOLL_* variables (its short table of the ones people change most, and
# others in the text); each must be a registered variable (gcoll-info --markdown) or a C name of
# include/*.h, and each default the README's table states must be the registry's. The full list
# is docs/env.md, which tests/docs_env.sh compares with the registry.
set -u
BINDIR=${BINDIR:-build/default/bin}
README=${README:-README.md}
md=$(mktemp) reg=$(mktemp) bad=$(mktemp)
trap 'rm -f "$md" "$reg" "$bad"' EXIT
# the registry as NAME DEFAULT lines, from the rows of the generated page
"$BINDIR/gcoll-info" --markdown > "$md" || { echo "gcoll-info --markdown failed"; exit 1; }
awk -F'|' '/^\| `GCOLL_/ { n = $2; d = $3; gsub(/[ `]/, "", n); gsub(/^ *`|` *$/, "", d); print n, d }' \
    "$md" > "$reg"
[ -s "$reg" ] || { echo "no variables in gcoll-info --markdown"; exit 1; }

named=0
while read -r name; do
    if grep -q "^$name " "$reg"; then
        named=$((named + 1))
    elif [ -n "$name" ] && ! grep -qw "$name" include/*.h; then
        echo "$README names $name, which is neither a registered variable nor a name in include/" >> "$bad"
    fi
done <<NAMES
$(grep -o 'GCOLL_[A-Z0-9_]*[A-Z0-9]' "$README" | sort -u)
NAMES

rows=0
while read -r name def; do
    [ -n "$name" ] || continue
    rows=$((rows + 1))
    want=$(awk -v n="$name" '$1 == n { print substr($0, length(n) + 2) }' "$reg")
    if ! grep -q "^$name " "$reg"; then
        echo "$README's table lists $name, which is not registered" >> "$bad"
    elif [ "$def" != "$want" ]; then
        echo "$README's table gives $name the default '$def'; the registry's is '$want'" >> "$bad"
    fi
done <<ROWS
$(awk -F'|' '/^\| `GCOLL_[A-Z0-9_]*` *\|/ { n = $2; d = $3; gsub(/[ `]/, "", n); gsub(/^ *`|` *$/, "", d); print n, d }' "$README")
ROWS
[ "$rows" -gt 0 ] || echo "$README has no table of variables (rows starting | \`GCOLL_...\` |)" >> "$bad"

if [ -s "$bad" ]; then
    cat "$bad"
    echo "README variables: $(wc -l < "$bad") problem(s); the registry is src/base/config.c (all of it: docs/env.md)"
    exit 1
fi
echo "README variables: $rows in its table with the registry's defaults, $named named in all, every one registered"
