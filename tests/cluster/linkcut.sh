#!/bin/bash
# A link cut across network-namespace hosts (tests/cluster/cluster.sh): 2 hosts x 1 rank run
# allreduces over tcp with GCOLL_TIMEOUT=5 until host 2's eth0 is set down; each rank must end
# with GCOLL_ERR_TIMEOUT (or GCOLL_ERR_REMOTE) within GCOLL_TIMEOUT plus SLACK s and exit by itself.
# Prints "RESULT cluster-linkcut passed=N failed=M"; exit 0, 1, or 77 (with "SKIP cluster:").
set -u
here=$(cd "$(dirname "$0")" && pwd)
BINDIR=$(cd "${BINDIR:-build/default/bin}" 2>/dev/null && pwd) || { echo "no BINDIR: build first"; exit 1; }
TIMEOUT=5
SLACK=5 # the clock is read every 32 progress passes; a loaded machine runs them slowly

# Once both ranks have finished 3 allreduces (32 MiB, tests/mpi/test_faults.c linkcut), the link
# goes down inside host 2's namespace. Nothing closes a socket, so no end of file or reset tells
# either side. mpirun's own out-of-band channel crosses the same link: it loses host 2's daemon
# and neither mpirun nor MPI_Finalize can finish, so the ranks write their results to files,
# leave without finalizing, and the script stops mpirun once both results are in. About 10 s.
if [ "${1:-}" = --inner ]; then
    dir=$(mktemp -d)
    GCOLL_TRANSPORT_INTER=tcp GCOLL_TIMEOUT=$TIMEOUT timeout -k 3 150 "$CLUSTER_MPIRUN" --enable-recovery \
        "$BINDIR/test_faults" linkcut "$dir" > "$dir/log" 2>&1 &
    job=$!
    done_by() { n=$(cat "$dir/progress.$1" 2>/dev/null); echo "${n:-0}"; }
    # a job that ends before its loop gets going ends the wait too
    for _ in $(seq 600); do
        [ "$(done_by 0)" -ge 3 ] && [ "$(done_by 1)" -ge 3 ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.1
    done
    passed=0 failed=0
    check() { if [ "$1" = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "# FAIL: $2"; fi; }
    check "$([ "$(done_by 0)" -ge 3 ] && [ "$(done_by 1)" -ge 3 ] && echo 1)" \
        "the loop did not get going (allreduces done: $(done_by 0), $(done_by 1))"
    host2=$(echo "$CLUSTER_HOSTNAMES" | awk '{ print $2 }')
    t0=$(date +%s.%N)
    ip netns exec "$host2" ip link set "$CLUSTER_IF" down
    for _ in $(seq $(((TIMEOUT + SLACK + 20) * 10))); do
        [ -f "$dir/result.0" ] && [ -f "$dir/result.1" ] && break
        sleep 0.1
    done
    for r in 0 1; do
        [ -f "$dir/result.$r" ] || continue
        # the time this result was written, from its file
        t=$(stat -c %.9Y "$dir/result.$r")
        secs=$(awk -v a="$t0" -v b="$t" 'BEGIN { printf "%.3f", b - a }')
        line=$(cat "$dir/result.$r")
        echo "# rank $r: $secs s after the cut: $(echo "$line" | cut -c1-200)"
        ok=$(awk -v s="$secs" -v m=$((TIMEOUT + SLACK)) 'BEGIN { print (s <= m) ? 1 : 0 }')
        check "$ok" "rank $r reported $secs s after the cut (bound $((TIMEOUT + SLACK)) s)"
        case $line in
        "status=GCOLL_ERR_TIMEOUT "* | "status=GCOLL_ERR_REMOTE "*) check 1 "" ;;
        *) check 0 "rank $r: $line" ;;
        esac
    done
    for r in 0 1; do
        [ -f "$dir/result.$r" ] || check 0 "rank $r reported nothing within $((TIMEOUT + SLACK + 20)) s"
    done
    # the ranks leave by themselves (a zombie until its daemon reaps it counts as gone); mpirun
    # cannot, having lost host 2's daemon
    gone() { [ ! -e "/proc/$1" ] || grep -q ') [ZX] ' "/proc/$1/stat" 2>/dev/null; }
    for r in 0 1; do
        pid=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$dir/result.$r" 2>/dev/null)
        [ -n "$pid" ] || continue
        for _ in $(seq 50); do gone "$pid" && break; sleep 0.1; done
        check "$(gone "$pid" && echo 1)" "rank $r (pid $pid) is still running after its result"
    done
    # mpirun may not end on TERM with a daemon lost: timeout's -k follows with KILL
    kill "$job" 2>/dev/null
    wait "$job" 2>/dev/null
    if [ "$failed" = 0 ]; then
        grep -E '^FAIL|ERROR' "$dir/log" | grep -v PMIX | head -5 | sed 's/^/# /'
    else
        tail -n 15 "$dir/log" | sed 's/^/# log: /'
    fi
    rm -rf "$dir"
    echo "RESULT cluster-linkcut passed=$passed failed=$failed"
    [ "$failed" = 0 ]
    exit
fi

[ -x "$BINDIR/test_faults" ] || { echo "no $BINDIR/test_faults: make tests first"; exit 1; }
unset GCOLL_TCP_IFNAME GCOLL_TRANSPORT_INTER
export BINDIR
bash "$here/cluster.sh" --hosts 2 --exec bash "$here/linkcut.sh" --inner
