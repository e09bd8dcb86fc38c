#!/bin/sh
# The documentation points at things that exist: every relative link in README.md and docs/**/*.md
# names an existing file or folder (the #anchor aside; http(s) and mailto links are not followed),
# every `make TARGET` in README.md is a target of the Makefile, and every repository path that
# README.md names in code (`src/base/config.c`, `tests/run.sh`, `docs/perf/`) exists. Lists each broken
# item and exits 1; otherwise prints one summary line.
set -u
README=${README:-README.md}
bad=$(mktemp) list=$(mktemp) found=$(mktemp)
trap 'rm -f "$bad" "$list" "$found"' EXIT

# Prose of a markdown file: fenced code blocks and inline code spans left out.
prose() {
    awk '/^ *(```|~~~)/ { fenced = !fenced; next }
         !fenced { n = split($0, part, "`"); line = ""
                   for (i = 1; i <= n; i += 2) line = line part[i] " "
                   print line }' "$1"
}

# Code of a markdown file: the lines of fenced blocks and the inline code spans, one a line.
code() {
    awk '/^ *(```|~~~)/ { fenced = !fenced; next }
         fenced { print; next }
         { n = split($0, part, "`"); for (i = 2; i < n; i += 2) print part[i] }' "$1"
}

# 1. relative links: [text](target), ![alt](target), and [label]: target definitions
links=0
{ echo "$README"; find docs -name '*.md' 2>/dev/null | sort; } > "$list"
while read -r md; do
    dir=$(dirname "$md")
    prose "$md" | grep -o '\]([^)]*)' | sed -e 's/^](//' -e 's/)$//' -e 's/ .*//' > "$found"
    prose "$md" | sed -n 's/^ *\[[^]]*\]: *\([^ ]*\).*/\1/p' >> "$found"
    while read -r target; do
        target=${target#<}
        target=${target%>}
        case $target in
            '' | '#'* | http://* | https://* | mailto:*) continue ;;
        esac
        links=$((links + 1))
        [ -e "$dir/${target%%#*}" ] || echo "$md: link to $target: no such file" >> "$bad"
    done < "$found"
done < "$list"

# 2. make targets named in README.md's code: `make run`, `make install PREFIX=...`, "make test  # ..."
targets=0
code "$README" | awk '
    { gsub(/[;&|()]/, " ")
      for (i = 1; i <= NF; i++) if ($i == "make") {
          for (j = i + 1; j <= NF && ($j ~ /^-/ || $j ~ /=/); j++) ;
          if (j <= NF && $j ~ /^[a-z][a-zA-Z0-9_.\/-]*$/) print $j
      } }' | sort -u > "$list"
while read -r t; do
    targets=$((targets + 1))
    grep -Eq "^([^:#=]* )?$t( [^:#=]*)?:" Makefile ||
        grep -Eq "^\.PHONY:(.* )?$t( |\$)" Makefile ||
        echo "$README: make $t: no such target in the Makefile" >> "$bad"
done < "$list"

# 3. repository paths in README.md's code: words under the tracked top-level folders (build
# outputs such as build/ and lib/ aside), without globs or placeholders
paths=0
code "$README" | awk '{ for (i = 1; i <= NF; i++) print $i }' | grep -E '^[("'\'']*(src|tests|examples|bench|reference|docs|scripts|include|tools|transports|collectives|bindings|interposer)/' |
    sed -e 's/^[("'\'']*//' -e 's/[)"'\'',;.:]*$//' -e 's/:[0-9][0-9]*$//' |
    grep -v '[*{}<>$]\|\.\.\.' | sort -u > "$list"
while read -r p; do
    paths=$((paths + 1))
    [ -e "$p" ] || echo "$README: path $p: no such file or folder" >> "$bad"
done < "$list"

if [ -s "$bad" ]; then
    awk '!seen[$0]++' "$bad"
    echo "docs check: $(sort -u "$bad" | wc -l) broken of $links links, $targets make targets and $paths paths" \
        "in the README and docs/"
    exit 1
fi
echo "docs check: $links relative links, $targets make targets and $paths paths in the README and docs/ all resolve"
