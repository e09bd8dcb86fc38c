#!/bin/sh
# The transport plugin loader: the example plugin is found by its versioned entry point and
# carries the world communicator; a missing file and a library that is not a plugin make
# gcoll_init fail with a message naming GCOLL_TRANSPORT_PLUGIN. (The collective tests over the
# plugin run from tests/run.sh.)
set -u
BINDIR=${BINDIR:-build/default/bin}
LIBDIR=${LIBDIR:-lib}
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
PLUGIN="$BINDIR/libgcoll_example_plugin.so"
run() { # run PLUGIN_PATH: the README example on 2 ranks, everything over the plugin
    # shellcheck disable=SC2086 # $MPIRUN is a command and its options: split on purpose
    GCOLL_TRANSPORT_PLUGIN=$1 GCOLL_TRANSPORT_INTRA=inter GCOLL_LOG_LEVEL=info timeout 120 \
        $MPIRUN -np 2 -x GCOLL_TRANSPORT_PLUGIN -x GCOLL_TRANSPORT_INTRA -x GCOLL_LOG_LEVEL "$BINDIR/readme_example" 2>&1
}
out=$(run "$PLUGIN") || { echo "the example plugin failed:"; printf '%s\n' "$out"; exit 1; }
# shellcheck disable=SC2015 # A && B || fail: fail unless both hold, as meant
printf '%s\n' "$out" | grep -q "transport plugin 'example-mpi' loaded" &&
    printf '%s\n' "$out" | grep -q "ready: 2 ranks over plugin:example-mpi" || {
    echo "the plugin was not loaded or not used:"; printf '%s\n' "$out"; exit 1; }
out=$(run /nonexistent/plugin.so) && { echo "gcoll_init accepted a missing plugin"; exit 1; }
printf '%s\n' "$out" | grep -q "GCOLL_TRANSPORT_PLUGIN='/nonexistent/plugin.so' cannot be loaded" || {
    echo "no message naming GCOLL_TRANSPORT_PLUGIN for a missing file:"; printf '%s\n' "$out"; exit 1; }
out=$(run "$LIBDIR/libgcoll.so") && { echo "gcoll_init accepted a library that is not a plugin"; exit 1; }
printf '%s\n' "$out" | grep -q "exports no gcoll_transport_plugin_v1" || {
    echo "no message about the missing entry point:"; printf '%s\n' "$out"; exit 1; }
echo "example plugin loaded and used; a missing file and a non-plugin refused, naming the variable"
