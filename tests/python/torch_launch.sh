#!/bin/sh
# dist.init_process_group("gcoll") launched the torchrun way, as plain processes with RANK,
# WORLD_SIZE, MASTER_ADDR and MASTER_PORT (no mpirun, no second port): the backend's whole test at
# 3 ranks, then a rank killed mid-training over shm and over tcp, where every survivor must get a
# RuntimeError naming the dead rank (tests/python/torch_fault.py). Prints the summed RESULT line.
set -u
top=$(pwd)
export PYTHONPATH="$top/bindings/python" GCOLL_LIBRARY="$top/${LIBDIR:-lib}/libgcoll.so.1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# launch TAG N SCRIPT [VAR=VALUE...]: N ranks of SCRIPT, each one's output in $tmp/TAG.R
launch() {
    tag=$1 n=$2 script=$3
    shift 3
    port=$(free_port) r=0
    while [ $r -lt "$n" ]; do
        env "$@" RANK=$r WORLD_SIZE="$n" LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
            timeout 240 /usr/bin/python3 -W ignore "$script" > "$tmp/$tag.$r" 2>&1 &
        r=$((r + 1))
    done
    wait
}

passed=0 failed=0
count() { # count FILE PATTERN: adds the passed/failed of the RESULT lines matching PATTERN in FILE
    line=$(grep "$2" "$1")
    if [ -z "$line" ]; then
        echo "# $1: no RESULT line; its end:"
        tail -n 15 "$1" | sed 's/^/#   /'
        failed=$((failed + 1))
        return
    fi
    passed=$((passed + $(printf '%s' "$line" | sed -n 's/.* passed=\([0-9]*\) .*/\1/p')))
    failed=$((failed + $(printf '%s' "$line" | sed -n 's/.* failed=\([0-9]*\)$/\1/p')))
}

launch backend 3 tests/python/test_torch_backend.py
count "$tmp/backend.0" "^RESULT torch-backend np=3 "
for tp in shm tcp; do
    if [ $tp = tcp ]; then set -- GCOLL_TRANSPORT_INTRA=inter GCOLL_TRANSPORT_INTER=tcp GCOLL_TCP_IFNAME=lo; else set --; fi
    launch fault-$tp 3 tests/python/torch_fault.py "$@"
    for r in 0 1; do
        count "$tmp/fault-$tp.$r" "^RESULT torch-fault rank=$r np=3 "
        grep "RuntimeError after" "$tmp/fault-$tp.$r" | sed "s/^/# $tp: /"
    done
done
echo "RESULT torch-launch np=3 passed=$passed failed=$failed"
[ "$failed" = 0 ]
