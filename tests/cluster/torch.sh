#!/bin/bash
# dist.init_process_group("gcoll") across network-namespace hosts (tests/cluster/cluster.sh),
# launched the torchrun way: 2 hosts x 2 ranks as plain processes with RANK, WORLD_SIZE,
# MASTER_ADDR (host 1's address) and MASTER_PORT, the backend's whole test
# (tests/python/test_torch_backend.py) over shm+tcp (Adasum flat: the test's reference is the flat
# tree, not the hierarchical variant over hosts' sums); then under mpirun, 1 rank per host whose
# host name resolves nowhere, examples/pytorch_ddp.py. Prints "RESULT torch-cluster np=4 passed=N
# failed=M"; exit 77 with a "SKIP cluster:" line where namespaces cannot be made.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
LIBDIR=$(cd "${LIBDIR:-$top/lib}" 2>/dev/null && pwd) || { echo "no LIBDIR: build first"; exit 1; }
if [ "${1:-}" = --inner ]; then
    read -r -a hosts <<< "$CLUSTER_HOSTNAMES"
    out=${TORCH_CLUSTER_OUT:-$CLUSTER_DIR/torch}
    mkdir -p "$out"
    r=0
    for h in 0 1; do
        for _ in 0 1; do # the host's 2 ranks
            # shellcheck disable=SC2016 # $0 and $@ are the inner sh's
            ip netns exec "${hosts[h]}" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "${hosts[h]}" \
                env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) MASTER_ADDR=10.77.0.1 MASTER_PORT=29500 \
                GLOO_SOCKET_IFNAME="$CLUSTER_IF" GCOLL_ADASUM=flat \
                PYTHONPATH="$top/bindings/python" GCOLL_LIBRARY="$LIBDIR/libgcoll.so.1" GCOLL_LOG_LEVEL=info \
                timeout "${CLUSTER_TIMEOUT:-120}" /usr/bin/python3 -W ignore "$top/tests/python/test_torch_backend.py" \
                > "$out/rank.$r" 2>&1 &
            r=$((r + 1))
        done
    done
    wait
    line=$(grep "^RESULT torch-backend np=4 " "$out/rank.0")
    p=$(printf '%s' "$line" | sed -n 's/.* passed=\([0-9]*\) failed=\([0-9]*\)$/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.* failed=\([0-9]*\)$/\1/p')
    if [ -z "$p" ]; then
        echo "# no result from rank 0; the ends of the logs:"
        tail -n 8 "$out"/rank.* | sed 's/^/#   /'
        p=0 f=1
    fi
    # every rank's default group spans the 2 hosts over shm+tcp
    for r in 0 1 2 3; do
        if grep -q "ready: 4 ranks over shm+tcp" "$out/rank.$r"; then
            p=$((p + 1))
        else
            echo "# rank $r: its communicators are not over shm+tcp:"
            grep -E "ready|hosts" "$out/rank.$r" | head -n 3 | sed 's/^/#   /'
            f=$((f + 1))
        fi
    done
    # mpirun: gcoll.torch finds RANK and WORLD_SIZE, and rank 0's address on the interface named
    # for gloo, without the host name (it does not resolve in these namespaces)
    if PYTHONPATH="$top/bindings/python" GCOLL_LIBRARY="$LIBDIR/libgcoll.so.1" timeout "${CLUSTER_TIMEOUT:-120}" \
        "$CLUSTER_MPIRUN" -x PYTHONPATH -x GLOO_SOCKET_IFNAME="$CLUSTER_IF" /usr/bin/python3 -W ignore \
        "$top/examples/pytorch_ddp.py" > "$out/mpirun" 2>&1 && grep -q "^PASS" "$out/mpirun"; then
        p=$((p + 1))
    else
        echo "# under mpirun across the hosts, examples/pytorch_ddp.py failed; the end of its output:"
        grep -v "^-*$" "$out/mpirun" | tail -n 16 | sed 's/^/#   /'
        f=$((f + 1))
    fi
    echo "RESULT torch-cluster np=4 passed=$p failed=$f"
    [ "$f" = 0 ]
    exit $?
fi
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIP cluster: /usr/bin/python3 cannot import torch"; exit 77; }
[ -e "$LIBDIR/gcoll_c10d.so" ] || { echo "SKIP cluster: $LIBDIR/gcoll_c10d.so was not built"; exit 77; }
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER GCOLL_TRANSPORT_INTRA GCOLL_BOOT
export LIBDIR
exec bash "$here/cluster.sh" --hosts 2 --exec bash "$0" --inner
