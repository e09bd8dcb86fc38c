#!/bin/sh
# The layering check passes on the tree, and fails, naming the file, on each kind of violation
# planted in a copy of src/: base including an algorithm, an algorithm entering a transport's
# folder, a front file entering a transport past its interface, and a "../" include.
set -u
out=$(sh scripts/check_layers.sh .) || { printf '%s\n' "$out"; echo "the tree breaks the layering (above)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
plant() { # FILE LINE WHAT: a copy of src/ with LINE appended to FILE must fail, naming FILE
    rm -rf "$tmp/src" && cp -r src "$tmp/src"
    printf '%s\n' "$2" >> "$tmp/$1"
    if got=$(sh scripts/check_layers.sh "$tmp" 2>&1); then
        echo "# FAIL: $3 ($1: $2) passed the check"; fails=$((fails + 1))
    elif ! printf '%s\n' "$got" | grep -q "^$1:"; then
        echo "# FAIL: $3 ($1: $2) failed without naming the file: $got"; fails=$((fails + 1))
    fi
}
plant src/base/log.c '#include "collectives/select.h"' "base includes an algorithm"
plant src/base/schedule.h '#include "core/comm.h"' "base includes the front"
plant src/collectives/allreduce_ring.c '#include "transports/tcp/tcp.h"' "an algorithm includes a transport"
plant src/transports/tcp/tcp_if.c '#include "collectives/algo.h"' "a transport includes an algorithm"
plant src/core/comm.c '#include "transports/ofi/ofi_mr.h"' "the front enters a transport past its interface"
plant src/collectives/halving.c '#include "../base/log.h"' "an include climbs with ../"
plant src/collectives/halving.c '#include "algo.h"' "an include not written from the root"
[ "$fails" = 0 ] || exit 1
echo "$out; 7 planted violations each caught"
