#!/bin/bash
# A rank killed across network-namespace hosts (tests/cluster/cluster.sh), connections on demand:
# 2 hosts x 2 ranks launched without MPI (shm on each host, tcp between them,
# GCOLL_TCP_CONNECT=lazy); rank 3 SIGKILLs itself in the middle of a large allreduce
# (tests/mpi/test_faults.c kill). Every survivor must fail with GCOLL_ERR_REMOTE naming rank 3
# within FAULT_BOUND_S, though host 1's member waits only on its leader and neither ever
# connected to rank 3: the news crosses from shm to tcp on host 2 and from tcp to shm on host 1.
# Prints "RESULT cluster-kill np=4 passed=N failed=M"; exit 77 with "SKIP cluster:" where
# namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
if [ "${1:-}" = --inner ]; then
    read -r -a hosts <<< "$CLUSTER_HOSTNAMES"
    secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    out=$CLUSTER_DIR/kill
    mkdir -p "$out"
    stamp=$out/death
    r=0
    for h in 0 1; do
        for _ in 0 1; do # the host's 2 ranks, each under its host's name
            # shellcheck disable=SC2016 # $0 and $@ are the inner sh's
            ip netns exec "${hosts[h]}" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "${hosts[h]}" \
                env GCOLL_RANK=$r GCOLL_SIZE=4 GCOLL_ROOT_ADDR=10.77.0.1:29400 GCOLL_JOB_SECRET="$secret" \
                GCOLL_TIMEOUT=30 GCOLL_TCP_CONNECT=lazy FAULT_BOUND_S=5 \
                timeout 60 "$BINDIR/test_faults" kill "$stamp" > "$out/rank.$r" 2>&1 &
            r=$((r + 1))
        done
    done
    wait
    passed=0 failed=0
    for r in 0 1 2; do
        line=$(grep -o "FAULTS rank=$r passed=[0-9]* failed=[0-9]*" "$out/rank.$r")
        p=$(printf '%s' "$line" | sed -n 's/.* passed=\([0-9]*\) failed=.*/\1/p')
        f=$(printf '%s' "$line" | sed -n 's/.* failed=\([0-9]*\)$/\1/p')
        if [ -z "$p" ] || [ "$f" != 0 ]; then
            echo "# rank $r: ${line:-no result}"
            grep -E 'FAIL|ERROR' "$out/rank.$r" | head -n 5
        fi
        grep "^DETECTED" "$out/rank.$r" | cut -c1-240 | sed 's/^/# /'
        passed=$((passed + ${p:-0}))
        failed=$((failed + ${f:-1}))
    done
    echo "RESULT cluster-kill np=4 passed=$passed failed=$failed"
    [ $failed = 0 ]
    exit $?
fi
[ -x "$BINDIR/test_faults" ] || { echo "no $BINDIR/test_faults: make tests first"; exit 1; }
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER GCOLL_TRANSPORT_INTRA GCOLL_BOOT
export BINDIR
exec bash "$here/cluster.sh" --hosts 2 --exec bash "$0" --inner
