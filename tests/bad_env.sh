#!/bin/sh
# A malformed GCOLL_* value makes gcoll_init fail with a message that names the variable and
# what it accepts; an unknown GCOLL_* name is only warned about.
set -u
BINDIR=${BINDIR:-build/default/bin}
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
# shellcheck disable=SC2086 # $MPIRUN is a command and its options: split on purpose
out=$(GCOLL_TIMEOUT=soon timeout 120 $MPIRUN -np 1 -x GCOLL_TIMEOUT "$BINDIR/readme_example" 2>&1)
rc=$?
[ $rc != 0 ] || { echo "gcoll_init accepted GCOLL_TIMEOUT=soon"; exit 1; }
printf '%s\n' "$out" | grep -q "GCOLL_TIMEOUT='soon' is not valid: accepts a number of seconds" || {
    echo "no message naming GCOLL_TIMEOUT:"; printf '%s\n' "$out"; exit 1; }
# shellcheck disable=SC2086 # $MPIRUN is a command and its options: split on purpose
out=$(GCOLL_NO_SUCH_THING=1 timeout 120 $MPIRUN -np 1 -x GCOLL_NO_SUCH_THING "$BINDIR/readme_example" 2>&1)
rc=$?
[ $rc = 0 ] || { echo "an unknown variable made the run fail:"; printf '%s\n' "$out"; exit 1; }
printf '%s\n' "$out" | grep -q "unknown variable GCOLL_NO_SUCH_THING" || {
    echo "no warning about GCOLL_NO_SUCH_THING:"; printf '%s\n' "$out"; exit 1; }
# shellcheck disable=SC2086 # $MPIRUN is a command and its options: split on purpose
out=$(GCOLL_LOG_LEVEL=info timeout 120 $MPIRUN -np 1 -x GCOLL_LOG_LEVEL "$BINDIR/readme_example" 2>&1)
# shellcheck disable=SC2015 # A && B || fail: fail unless both hold, as meant
printf '%s\n' "$out" | grep -q "GCOLL_LOG_LEVEL = info (environment)" && \
    printf '%s\n' "$out" | grep -q "GCOLL_TIMEOUT = 300 (default)" || {
    echo "info level does not list the variables with their source:"; printf '%s\n' "$out"; exit 1; }
echo "malformed value refused with a message naming it; unknown name warned; info dump lists sources"
