#!/bin/sh
# gcoll-info runs without an MPI job and prints its four sections (topology, transports,
# variables, selection) with what each must say; a malformed variable is named and fails it (exit 1), a bad
# argument gets the usage (exit 2).
set -u
BINDIR=${BINDIR:-build/default/bin}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "gcoll-info: $*"; sed 's/^/  | /' "$out" | head -60; exit 1; }

env -u GCOLL_LOG_LEVEL "$BINDIR/gcoll-info" > "$out" 2>&1 || fail "exit $? with the default configuration"
for want in '^gcoll [0-9]' '^== topology' '^== transports' '^== variables' '^NICs: [0-9]' \
    '^this process is bound to PUs ' '^between hosts: ' '^tcp: IPv4 interfaces up:' \
    'GCOLL_TCP_IFNAME=auto takes ' '^ofi: ' '^shm: ' 'cross-memory attach: ' '^mpi: .*[0-9]' '^cuda: \(on\|off\): '; do
    grep -q -- "$want" "$out" || fail "no line matching '$want'"
done
pus=$(getconf _NPROCESSORS_ONLN)
grep -Eq "(PUs|logical CPUs) $pus\$" "$out" || fail "the PU count is not $pus"
nvars=$("$BINDIR/gcoll-info" --markdown | wc -l)
nlisted=$(grep -c '^GCOLL_[A-Z_]*=.* (default)$' "$out")
[ "$nvars" = "$nlisted" ] || fail "$nlisted variables listed with their default, $nvars registered"

# the selection table: on 2 hosts x 2 ranks over a slow link the ring is not the pick at 64 MiB
# (hierarchical and Rabenseifner's send 1.5x fewer bytes between hosts); one host has no
# hierarchical column
grep -q '^== selection' "$out" || fail "no selection section"
grep -q '^2 hosts x 2 ranks; links: ' "$out" || fail "the selection's layout line is missing"
GCOLL_COST_INTER=50:0.125 "$BINDIR/gcoll-info" > "$out" 2>&1 || fail "exit $? with GCOLL_COST_INTER=50:0.125"
row=$(sed -n '/^allreduce (/,/^$/p' "$out" | grep '^ *64M ')
head=$(sed -n '/^allreduce (/,/^$/p' "$out" | grep '^ *bytes')
rcol=$(echo "$head" | tr -s ' ' '\n' | grep -v '^$' | grep -n '^ring$' | cut -d: -f1)
echo "$head" | grep -qw hierarchical || fail "no hierarchical column at 2x2: '$head'"
[ -n "$rcol" ] && echo "$row" | grep -q '\*' && ! echo "$row" | tr -s ' ' '\n' | grep -v '^$' | sed -n "${rcol}p" | grep -q '\*$' ||
    fail "the ring is the 64M allreduce pick at 2x2 over 1 Gbit/s (or nothing is): '$row'"
# a burst rate shows on the layout line (and without one, the bandwidth stands for it)
GCOLL_COST_INTER=50:0.125:1.5 "$BINDIR/gcoll-info" > "$out" 2>&1 || fail "exit $? with GCOLL_COST_INTER=50:0.125:1.5"
grep -q '^2 hosts x 2 ranks; links: .*between hosts tcp 50.0 us 0.125 GB/s (burst 1.500 GB/s)' "$out" ||
    fail "the burst rate of GCOLL_COST_INTER=50:0.125:1.5 is not on the layout line"
GCOLL_COST_INTER=50:0.125 "$BINDIR/gcoll-info" 2>&1 | grep -q 'between hosts tcp 50.0 us 0.125 GB/s (burst 0.125 GB/s)' ||
    fail "without a burst rate, the layout line does not show the bandwidth as the burst rate"
"$BINDIR/gcoll-info" --layout 1x4 > "$out" 2>&1 || fail "exit $? with --layout 1x4"
sed -n '/^allreduce (/,/^$/p' "$out" | grep -q hierarchical && fail "hierarchical offered on one host"
"$BINDIR/gcoll-info" --layout 0x4 > /dev/null 2>&1 && fail "--layout 0x4 accepted"

GCOLL_TCP_NSOCKS=3 GCOLL_NO_SUCH_THING=1 "$BINDIR/gcoll-info" > "$out" 2>&1 || fail "exit $? with a valid setting"
grep -q '^GCOLL_TCP_NSOCKS=3 (environment)$' "$out" || fail "GCOLL_TCP_NSOCKS=3 not shown as from the environment"
grep -q '^GCOLL_NO_SUCH_THING=1 (environment; unknown, ignored)$' "$out" || fail "the unknown variable is not listed"

GCOLL_TCP_IFNAME='eth0,,x' "$BINDIR/gcoll-info" > "$out" 2>&1
rc=$?
[ $rc = 1 ] || fail "exit $rc with a malformed GCOLL_TCP_IFNAME, want 1"
grep -q "^invalid: GCOLL_TCP_IFNAME='eth0,,x' is not valid" "$out" || fail "the malformed variable is not named"
grep -q '^== variables' "$out" || fail "no variables section after a malformed variable"

"$BINDIR/gcoll-info" --no-such-option > "$out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q '^usage: ' "$out" || fail "exit $rc and no usage for a bad argument"
echo "gcoll-info: sections present, $nvars variables with their sources, bad input refused"
