#!/bin/sh
# The flight recorder (tests/mpi/test_flight.c): gcoll_comm_dump's files hold the operations the
# program called (read back with Python's json module, against the list the program follows, at
# 1 and 4 ranks; the newest 256 of 300); then GCOLL_FLIGHT_RECORDER's files after a rank stays
# away from a collective (timeout), a mismatch, and a kill -9 over shm and over tcp, each read by
# gcoll-info --trace, whose verdict must name the rank and the operation.
set -eu
BINDIR=${BINDIR:-build/default/bin}
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gcoll-flight.XXXXXX")
trap 'rm -rf "$dir"' EXIT

fail() {
    echo "FAIL: $*"
    exit 1
}

# expect WHAT TEXT FILE...: gcoll-info --trace on the files prints TEXT
expect() {
    what=$1 text=$2
    shift 2
    "$BINDIR/gcoll-info" --trace "$@" > "$dir/report" 2>&1 || { cat "$dir/report"; fail "$what: gcoll-info --trace failed"; }
    grep -qF -- "$text" "$dir/report" || { cat "$dir/report"; fail "$what: the report lacks: $text"; }
    echo "ok: $what: $(grep '^verdict' "$dir/report")"
}

for np in 1 4; do
    rm -f "$dir"/*.json
    $MPIRUN -np $np "$BINDIR/test_flight" record "$dir" > "$dir/out" 2>&1 || { cat "$dir/out"; fail "record at $np ranks"; }
    grep -q "RESULT flight np=$np passed=[0-9]* failed=0" "$dir/out" || { cat "$dir/out"; fail "record at $np ranks"; }
    python3 - "$dir" $np <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
def ops(path, rank, comm, issued):
    f = json.load(open(path))
    assert f["gcoll_flight_recorder"] == 1 and f["rank"] == rank and f["size"] == n and f["comm"] == comm, path
    assert f["status"] == "GCOLL_SUCCESS" and f["why"] == "gcoll_comm_dump" and f["issued"] == issued, (path, f)
    for o in f["ops"]:
        assert o["state"] == "done" and o["status"] == "GCOLL_SUCCESS" and o["waiting_on"] == "", o
        assert o["called_s_ago"] >= o["ended_s_ago"] >= 0 and o["round"] == o["rounds"] >= (1 if n > 1 else 0), o
        assert o["posted_s_ago"] is None or o["called_s_ago"] >= o["posted_s_ago"] >= o["ended_s_ago"], o
    return [(o["seq"], o["kind"], o["name"], o.get("dtype"), o.get("count"), o.get("op"), o.get("root"), o["p2p"])
            for o in f["ops"] if not o["member"]], [o for o in f["ops"] if o["member"]]
for r in range(n):
    # the group's two allreduces: one fused operation (#3) and its member's entry on several
    # ranks; two operations (#3, #4) on one
    world, members = ops(f"{d}/rec.c0.r{r}.json", r, 0, 4 if n > 1 else 5)
    want = [(0, "allreduce", "grad.0", "float32", 1000, "sum", None, False),
            (1, "bcast", "params", "int32", 7, None, n - 1, False),
            (2, "barrier", "", None, None, None, None, False)]
    if n > 1:
        want.append((3, "allreduce", "fused.a", "int32", 2, "sum", None, False))
        assert [(m["kind"], m["name"], m["algorithm"]) for m in members] == [("allreduce", "fused.b", "fused")], members
    else:
        want += [(3, "allreduce", "fused.a", "int32", 1, "sum", None, False),
                 (4, "allreduce", "fused.b", "int32", 1, "sum", None, False)]
        assert members == [], members
    assert world == want, (r, world)
    dup, _ = ops(f"{d}/rec.c1.r{r}.json", r, 1, 2)
    pair = [(0, "p2p", "p2p", None, None, None, None, True)] * 2 if n > 1 else []
    want = [(0, "allgather", "gather", "int64", 3, None, None, False)] + pair + \
           [(1, "reduce_scatter", "", "float64", 5, "max", None, False)]
    assert dup == want, (r, dup)
    many = json.load(open(f"{d}/many.r{r}.json"))
    assert many["recorded"] == 300 and many["issued"] == 300, many["recorded"]
    assert [o["seq"] for o in many["ops"]] == list(range(44, 300)), "the newest 256"
    assert all(o["kind"] == "allreduce" and o["count"] == 1 and o["op"] == "max" for o in many["ops"])
print("ok: %d ranks: gcoll_comm_dump's files hold what was called" % n)
PY
done

# rank 1 stays away from allreduce #3; the others' GCOLL_TIMEOUT=2 fails it, rank 1 dumps later
rm -f "$dir"/*.json
$MPIRUN -np 4 -x GCOLL_TIMEOUT=2 -x GCOLL_FLIGHT_RECORDER="$dir/fr" "$BINDIR/test_flight" lag "$dir" > "$dir/out" 2>&1 ||
    { cat "$dir/out"; fail "lag"; }
grep -q "RESULT flight np=4 passed=[0-9]* failed=0" "$dir/out" || { cat "$dir/out"; fail "lag"; }
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
for r in (0, 2, 3):
    f = json.load(open(f"{d}/fr.c0.r{r}.json"))
    assert f["why"] == "failed" and f["status"] == "GCOLL_ERR_TIMEOUT" and f["issued"] == 4, f
    last = f["ops"][-1]
    assert (last["seq"], last["name"], last["state"]) == (3, "step", "failed") and "1" in last["waiting_on"], last
    assert last["ended_s_ago"] is None and last["called_s_ago"] >= 1.5, last
f = json.load(open(f"{d}/fr.c0.r1.json"))
assert f["why"] == "gcoll_comm_dump" and f["issued"] == 3 and f["status"] == "GCOLL_SUCCESS", f
print("ok: the timed-out ranks' files name allreduce #3, waiting on rank 1")
PY
expect "a rank behind" "verdict: rank 1 is behind: it called 3 collectives, the others up to 4; they wait in allreduce #3 'step'" \
    "$dir"/fr.c0.r*.json
rm "$dir/fr.c0.r1.json"
expect "a rank behind, without its file" "verdict: rank 1 left no record (dead, or never written); the others stopped in allreduce #3 'step'" \
    "$dir"/fr.c0.r*.json

rm -f "$dir"/*.json
$MPIRUN -np 3 -x GCOLL_TIMEOUT=5 -x GCOLL_FLIGHT_RECORDER="$dir/mm-%r-%c.json" "$BINDIR/test_flight" mismatch "$dir" \
    > "$dir/out" 2>&1 || { cat "$dir/out"; fail "mismatch"; }
expect "a mismatch" "verdict: the ranks called different collectives as #2: rank 0 bcast #2 (float32, count 256, root 0); rank 1 allreduce #2 (float32 sum, count 256)" \
    "$dir"/mm-*-0.json

# kill_run NAME [ENV=VAL ...]: the last of 4 ranks dies by SIGKILL before allreduce #2
kill_run() {
    name=$1
    shift
    for e in "$@"; do set -- "$@" -x "$e"; shift; done
    rm -f "$dir"/*.json
    # --enable-recovery: else mpirun ends the job when a rank dies; it may linger after the
    # survivors are done: ended once they have reported, or at the limit
    timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none --enable-recovery -np 4 -x GCOLL_TIMEOUT=30 -x GCOLL_FLIGHT_RECORDER="$dir/k" "$@" \
        "$BINDIR/test_flight" kill "$dir" > "$dir/out" 2>&1 &
    job=$!
    while kill -0 "$job" 2>/dev/null; do
        [ "$(grep -o "FLIGHT rank=[0-9]* passed=[0-9]* failed=[0-9]*" "$dir/out" | wc -l)" -ge 3 ] && break
        sleep 0.2
    done
    kill "$job" 2>/dev/null || true
    wait "$job" 2>/dev/null || true
    [ "$(grep -o "FLIGHT rank=[0-9]* passed=[0-9]* failed=0" "$dir/out" | wc -l)" = 3 ] ||
        { grep -v "PMIX ERROR" "$dir/out" | tail -20; fail "$name: expected 3 clean survivors"; }
    python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
for r in range(3):
    f = json.load(open(f"{d}/k.c0.r{r}.json"))
    assert f["status"] == "GCOLL_ERR_REMOTE" and "rank 3 failed" in f["reason"], f
    last = f["ops"][-1]
    assert (last["seq"], last["kind"], last["state"], last["count"]) == (2, "allreduce", "failed", 65536), last
PY
    expect "$name" "verdict: rank 3 left no record (dead, or never written); the others stopped in allreduce #2 (float32 sum, count 65536)" \
        "$dir"/k.c0.r*.json
}
kill_run "kill -9 over shm"
kill_run "kill -9 over tcp" GCOLL_TRANSPORT_INTRA=inter GCOLL_TRANSPORT_INTER=tcp GCOLL_TCP_IFNAME=lo

# the reader on files made here: a mismatch behind point-to-point entries, far into the run
mk() { # FILE RANK KIND DTYPE EXTRA: a two-rank record, a message then collective #300
    printf '{"gcoll_flight_recorder": 1, "rank": %s, "size": 2, "comm": 5, "status": "GCOLL_ERR_INVALID_USAGE", "reason": "",\n "issued": 301, "recorded": 2, "ops": [\n' "$2" > "$1"
    printf '  {"seq": 7, "kind": "p2p", "p2p": true, "member": false, "name": "", "state": "done", "status": "GCOLL_SUCCESS"},\n' >> "$1"
    printf '  {"seq": 300, "kind": "%s", "p2p": false, "member": false, "name": "", "state": "failed", "status": "GCOLL_ERR_INVALID_USAGE", "dtype": "%s", "count": 9%s, "round": 1, "rounds": 1, "waiting_on": ""}\n ]}\n' "$3" "$4" "$5" >> "$1"
}
mk "$dir/m0.json" 0 bcast float32 ', "root": 0'
mk "$dir/m1.json" 1 allreduce float32 ', "op": "sum"'
expect "a mismatch after messages" "verdict: the ranks called different collectives as #300: rank 0 bcast #300 (float32, count 9, root 0); rank 1 allreduce #300 (float32 sum, count 9)" \
    "$dir/m0.json" "$dir/m1.json"
"$BINDIR/gcoll-info" --trace "$dir/m0.json" "$dir/m0.json" > "$dir/report" 2>&1 && fail "--trace took one rank's file twice"
grep -q "are both rank 0's" "$dir/report" || fail "--trace on one rank twice: $(cat "$dir/report")"

# the reader's refusals
"$BINDIR/gcoll-info" --trace > "$dir/report" 2>&1 && fail "--trace without files succeeded"
grep -q "usage: gcoll-info --trace FILE" "$dir/report" || fail "--trace without files: $(cat "$dir/report")"
echo '{"something": 1}' > "$dir/other.json"
"$BINDIR/gcoll-info" --trace "$dir/other.json" > "$dir/report" 2>&1 && fail "--trace on another file succeeded"
grep -q "not a gcoll flight recorder file" "$dir/report" || fail "--trace on another file: $(cat "$dir/report")"
echo "PASS"
