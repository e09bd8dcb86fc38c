#!/bin/sh
# The layering check (docs/design.md, "Layers"): every quoted #include in the library's sources
# is written from the one include root (src/, or include/ for the public headers), never with
# "../", and crosses no forbidden boundary. Prints each violation as FILE:LINE: why, exits 1 if any.
# Usage: scripts/check_layers.sh [ROOT] (ROOT: the repository, default the current directory).
set -u
root=${1:-.}
cd "$root" || exit 2
[ -d src ] || { echo "check_layers: no src/ under $root" >&2; exit 2; }

files=$(find src include -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' -o -name '*.cu' \) | sort)
# "FILE LINE INCLUDE" for every quoted include of src/, after the list of every file ("FILE").
{
    printf '%s\n' "$files"
    # shellcheck disable=SC2046 # one word per path: no path has spaces
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $(printf '%s\n' "$files" | grep '^src/') /dev/null |
        sed 's/^\([^:]*\):\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2 \3/'
} | awk '
# The layer of a path under src/ (or include/).
function layer(p) {
    if (p ~ /^include\//) return "public"
    if (p ~ /^src\/base\//) return "base"
    if (p ~ /^src\/collectives\//) return "collectives"
    if (p ~ /^src\/node\//) return "node"
    if (p ~ /^src\/transports\//) return "transports"
    if (p ~ /^src\/(core|cuda)\//) return "front"
    return "unknown"
}
# What each layer may include, besides its own folder rules below.
function allowed(from, to) {
    if (to == "public") return 1
    if (from == "base") return to == "base"
    if (from == "transports") return to == "base" || to == "transports"
    if (from == "node") return to == "base" || to == "collectives" || to == "node" || to == "channel"
    if (from == "collectives") return to == "base" || to == "collectives" || to == "channel"
    if (from == "front") return to != "unknown"
    return 0
}
function bad(f, n, why) { printf "%s:%s: %s\n", f, n, why; nbad++ }
NF == 1 { have[$1] = 1; next }
{
    f = $1; n = $2; inc = $3
    if (inc ~ /(^|\/)\.\.\//) { bad(f, n, "\"" inc "\" climbs with ../: write it from the include root (src/)"); next }
    if (("src/" inc) in have) t = "src/" inc
    else if (("include/" inc) in have) t = "include/" inc
    else { bad(f, n, "\"" inc "\" is not a path from the include root (src/ or include/)"); next }
    lf = layer(f); lt = layer(t)
    # A transport folder is entered only through its interface header, X/X.h; the node
    # channel (shm) offers the algorithms a narrower one, shm/channel.h.
    if (t ~ /^src\/transports\/[^\/]+\//) {
        split(t, parts, "/"); dir = "src/transports/" parts[3] "/"
        if (index(f, dir) != 1) {
            iface = dir parts[3] ".h"
            if (t == "src/transports/shm/channel.h") lt = "channel"
            else if (t != iface) { bad(f, n, "\"" inc "\" is inside " dir " : outside it, use its interface " iface); next }
        }
    }
    if (!allowed(lf, lt)) bad(f, n, lf " includes " lt " (\"" inc "\"): a forbidden boundary")
}
END {
    if (nbad) { printf "layering: %d violation(s)\n", nbad; exit 1 }
    print "layering: every include is from the root and within the layers"
}'
