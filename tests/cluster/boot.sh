#!/bin/bash
# Launch without MPI across network-namespace hosts (tests/cluster/cluster.sh): test_collectives
# and test_split at 2 hosts x 2 ranks started as plain processes, rank 0 on host 1; every rank must
# pass and see 2 hosts over shm+tcp. Prints "RESULT boot-cluster np=4 passed=N failed=M"; exit 77
# with a "SKIP cluster:" line where namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
if [ "${1:-}" = --inner ]; then
    read -r -a hosts <<< "$CLUSTER_HOSTNAMES"
    secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    out=$CLUSTER_DIR/boot
    mkdir -p "$out"
    # start PROG: ranks 0, 1 on host 1 and 2, 3 on host 2, each under its host's name; waits
    start() {
        local r=0 h
        for h in 0 1; do
            for _ in 0 1; do # the host's 2 ranks
                # a fresh namespace: the port is free there
                # shellcheck disable=SC2016 # $0 and $@ are the inner sh's
                ip netns exec "${hosts[h]}" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "${hosts[h]}" \
                    env GCOLL_RANK=$r GCOLL_SIZE=4 GCOLL_ROOT_ADDR=10.77.0.1:29400 GCOLL_JOB_SECRET="$secret" \
                    GCOLL_TIMEOUT=60 GCOLL_LOG_LEVEL=info TEST_QUICK=1 \
                    timeout "${CLUSTER_TIMEOUT:-300}" "$BINDIR/$1" > "$out/$1.$r.out" 2>&1 &
                r=$((r + 1))
            done
        done
        wait
    }
    start test_collectives
    # sub-communicators whose new rank 0 is on either host (even and odd ranks, keys reversed)
    start test_split
    passed=0 failed=0
    for r in 0 1 2 3; do
        line=$(grep "^RESULT split rank=$r np=4 " "$out/test_split.$r.out")
        p=$(printf '%s' "$line" | sed -n 's/.* passed=\([0-9]*\) failed=\([0-9]*\)$/\1/p')
        f=$(printf '%s' "$line" | sed -n 's/.* failed=\([0-9]*\)$/\1/p')
        [ -n "$p" ] || { echo "# test_split rank $r: no result"; grep -E 'ERROR|FAIL' "$out/test_split.$r.out" | head -n 5; }
        passed=$((passed + ${p:-0}))
        failed=$((failed + ${f:-1}))
    done
    for r in 0 1 2 3; do
        line=$(grep "^RESULT collectives rank=$r np=4 " "$out/test_collectives.$r.out")
        p=$(printf '%s' "$line" | sed -n 's/.* passed=\([0-9]*\) failed=\([0-9]*\)$/\1/p')
        f=$(printf '%s' "$line" | sed -n 's/.* failed=\([0-9]*\)$/\1/p')
        if [ -z "$p" ]; then
            echo "# rank $r: no result"
            grep -E 'ERROR|FAIL' "$out/test_collectives.$r.out" | head -n 5
            failed=$((failed + 1))
            continue
        fi
        passed=$((passed + p))
        failed=$((failed + f))
        if grep -q "comm 0: 2 hosts" "$out/test_collectives.$r.out" &&
            grep -q "ready: 4 ranks over shm+tcp" "$out/test_collectives.$r.out"; then
            passed=$((passed + 1))
        else
            echo "# rank $r: not 2 hosts with shm+tcp:"
            grep -E "hosts|ready" "$out/test_collectives.$r.out" | head -n 3
            failed=$((failed + 1))
        fi
    done
    echo "RESULT boot-cluster np=4 passed=$passed failed=$failed"
    [ $failed = 0 ]
    exit $?
fi
[ -x "$BINDIR/test_collectives" ] || { echo "no $BINDIR/test_collectives: make tests first"; exit 1; }
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER GCOLL_TRANSPORT_INTRA GCOLL_BOOT
export BINDIR
exec bash "$here/cluster.sh" --hosts 2 --exec bash "$0" --inner
