#!/bin/sh
# GCOLL_TIMELINE: the Chrome trace of a run with messages (3 ranks over the network transport,
# small slices of the pipelined ring) parses as JSON on every rank and holds operations, message slices with their
# peer and reductions, with sane times; a run killed by SIGKILL in the middle still leaves valid
# JSON on both ranks. Parsed by Python's json module, not by anything of gcoll's.
set -eu
BINDIR=${BINDIR:-build/default/bin}
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gcoll-timeline.XXXXXX")
trap 'rm -rf "$dir"' EXIT

$MPIRUN -np 3 -x GCOLL_TIMELINE="$dir/trace-%r.json" -x GCOLL_TRANSPORT_INTRA=inter -x GCOLL_CHUNK_BYTES=16K -x GCOLL_ALLREDUCE=ring \
    "$BINDIR/backprop_overlap" > "$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
for rank in range(3):
    ev = json.load(open(f"{d}/trace-{rank}.json"))
    assert isinstance(ev, list) and ev, f"rank {rank}: no events"
    names = [e for e in ev if e.get("ph") == "M"]
    assert any(e["name"] == "process_name" and e["args"]["name"] == f"rank {rank}" for e in names), "process name"
    x = [e for e in ev if e.get("ph") == "X"]
    for e in x:
        assert e["pid"] == rank and e["dur"] >= 0 and e["ts"] >= 0, e
    ops = [e for e in x if e["cat"] == "operation"]
    msgs = [e for e in x if e["cat"] == "transfer"]
    red = [e for e in x if e["cat"] == "reduction" and e["name"] == "reduce"]
    assert any(o["name"].startswith("allreduce #") and o["args"]["status"] == "GCOLL_SUCCESS" for o in ops), "no allreduce"
    assert all(m["name"] in ("send", "recv") and 0 <= m["args"]["peer"] < 3 and m["args"]["peer"] != rank
               and m["args"]["bytes"] <= 16384 for m in msgs), "message slices"
    assert len(msgs) >= 4 and red, f"rank {rank}: {len(msgs)} slices, {len(red)} reductions"
    print(f"rank {rank}: {len(ops)} operations, {len(msgs)} message slices, {len(red)} reductions")
PY

# killed mid-run: every rank's file still parses. The kill comes 2 s after the start, later
# (4, 8 s) where a loaded machine had not finished an operation by then on every rank.
for secs in 2 4 8; do
    rm -f "$dir"/early.json.*
    $MPIRUN -np 2 -x GCOLL_TIMELINE="$dir/early.json" -x GCOLL_TRANSPORT_INTRA=inter \
        timeout -s KILL "$secs" "$BINDIR/gcoll_bench" allreduce -m 1M:1M -i 1000000 -x 0 > /dev/null 2>&1 || true
    grep -q '"operation"' "$dir/early.json.0" 2>/dev/null && grep -q '"operation"' "$dir/early.json.1" 2>/dev/null &&
        break
done
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
for rank in range(2):
    ev = json.load(open(f"{d}/early.json.{rank}"))
    n = sum(1 for e in ev if e.get("cat") == "operation")
    assert n > 0, f"rank {rank}: no operation recorded before the kill"
    print(f"killed run, rank {rank}: valid JSON with {n} operations")
PY
echo "timeline: traces valid and complete"
