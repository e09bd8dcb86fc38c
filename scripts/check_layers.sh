#!/bin/sh
# The layering check (docs/design.md, "Layers"): every quoted #include in the library's sources
# is written from the one include root (src/, or include/ for the public headers), never with
# "../", and crosses no forbidden boundary. Prints each violation as FILE:LINE: why, exits 1 if any.
# Usage: scripts/check_layers.sh [ROOT] (ROOT: the repository, default the current directory).
set -u
root=${1:-.}
cd "$root" || exit 2
[ -d src ] || { echo "check_layers: no src/ under $root" >&2; exit 2; }

find src -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' -o -name '*.cu' \) | sort |
while read -r f; do
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
        sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2/' | sed "s|^|$f |"
done | awk -v root="$root" '
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
    if (from == "node") return to == "base" || to == "node" || to == "channel"
    if (from == "collectives") return to == "base" || to == "collectives" || to == "node"
    if (from == "front") return to != "unknown"
    return 0
}
function bad(f, n, why) { printf "%s:%s: %s\n", f, n, why; nbad++ }
function exists(p,   r) { r = (system("test -f \"" p "\"") == 0); return r }
{
    f = $1; n = $2; inc = $3
    if (inc ~ /(^|\/)\.\.\//) { bad(f, n, "\"" inc "\" climbs with ../: write it from the include root (src/)"); next }
    if (exists("src/" inc)) t = "src/" inc
    else if (exists("include/" inc)) t = "include/" inc
    else { bad(f, n, "\"" inc "\" is not a path from the include root (src/ or include/)"); next }
    lf = layer(f); lt = layer(t)
    # A transport folder is entered only through its interface header, X/X.h; the node
    # channel (shm) offers the node algorithms a narrower one, shm/channel.h.
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
