"""Priorities on the gcoll torch.distributed backend, read back from gcoll's own timeline
(GCOLL_TIMELINE, set here before gcoll starts): bucket priorities (each gradient reduction started
while others are in flight one above the newest, 0 again once none is), gcoll.torch.priority
and bucket_priorities(False); and a work whose future completes while a work started before it
still waits (the completion thread does not complete works in start order), and a future's
callback that waits for another work the completion thread took (it completes that one itself).
  mpirun -np 3 /usr/bin/python3 tests/python/torch_priorities.py"""
import datetime
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

TRACES = tempfile.mkdtemp(prefix="gcoll-prio-")
os.environ["GCOLL_TIMELINE"] = os.path.join(TRACES, "trace.%r.json")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gcoll.torch  # noqa: E402
import harness as h  # noqa: E402
from harness import check, raises  # noqa: E402

GLOO = None
LABEL = re.compile(r"^(\w+) #(\d+) (\w+)$")


def started_ahead(me, held, ops):
    """Every rank but held starts ops (a list of callables returning works) before held starts
    any: held waits in a gloo barrier that the others join once they started theirs, so on them
    none of ops can complete before the last is started."""
    if me == held:
        dist.barrier(group=GLOO)
        works = [op() for op in ops]
    else:
        works = [op() for op in ops]
        dist.barrier(group=GLOO)
    for w in works:
        w.wait()


def reductions(n):
    """Four gradient reductions of different kinds, in a list of callables."""
    a, b, d = torch.ones(1000), torch.ones(77), torch.ones(5)
    rs_in, rs_out = torch.ones(3 * n), torch.empty(3)
    return [lambda: dist.all_reduce(a, async_op=True),
            lambda: dist.reduce_scatter_tensor(rs_out, rs_in, async_op=True),
            lambda: dist.all_reduce(b, async_op=True),
            lambda: dist.all_reduce_coalesced([d], async_op=True)]


def backend_ops(me):
    """The backend's operations in this rank's timeline, in start order: (collective, priority)."""
    with open(os.path.join(TRACES, "trace.%d.json" % me)) as f:
        events = json.load(f)
    ops = []
    for e in events:
        m = LABEL.match(e.get("name", "")) if e.get("cat") == "operation" else None
        # the backend names each operation after torch's call (gcoll.init's own are unnamed);
        # the tensors of a coalesced call are fused into its one operation
        if m and e["args"]["algorithm"] != "fused":
            ops.append((int(m.group(2)), m.group(3), e["args"]["priority"]))
    return [(name, prio) for _, name, prio in sorted(ops)]


def test_priorities(n, me):
    """Which priority each call reached gcoll with, held rank by held rank (on a rank held back,
    the ones it started first may complete before the last starts: its priorities are not known)."""
    want = []
    for held in range(n):
        started_ahead(me, held, reductions(n))
        want.append([("allreduce", 0), ("_reduce_scatter_base", 1), ("allreduce", 2), ("allreduce_coalesced", 3)]
                    if me != held else None)
    x = torch.ones(8)
    dist.all_reduce(x)  # none in flight: 0 again
    want.append([("allreduce", 0)])
    with gcoll.torch.priority(7):
        dist.all_reduce(x)
        out = torch.empty(8 * n)
        dist.all_gather_into_tensor(out, x)  # any operation, not only reductions
        with gcoll.torch.priority(None):
            dist.all_reduce(x)
        dist.barrier()
    want.append([("allreduce", 7), ("_allgather_base", 7), ("allreduce", 0), ("barrier", 7)])
    check(gcoll.torch.bucket_priorities(False) is True, "bucket priorities are on by default")
    started_ahead(me, (me + 1) % n if n > 1 else -1, reductions(n))
    want.append([("allreduce", 0), ("_reduce_scatter_base", 0), ("allreduce", 0), ("allreduce_coalesced", 0)])
    check(gcoll.torch.bucket_priorities(True) is False, "bucket_priorities returns the setting before")
    raises(ValueError, lambda: gcoll.torch.priority(1.5), "priority", "int")
    raises(ValueError, lambda: gcoll.torch.bucket_priorities(True, GLOO), "not a gcoll process group")

    got = backend_ops(me)
    flat = [w for part in want for w in (part or [None] * 4)]
    check(len(got) == len(flat), "%d operations in the timeline, %d started: %s" % (len(got), len(flat), got))
    for i, (g, w) in enumerate(zip(got, flat)):
        if w is not None:
            check(g == w, "operation %d: %s with priority %d, expected %s with %d" % (i, g[0], g[1], w[0], w[1]))


def test_completion_order(n, me):
    """Rank 1 starts a receive whose message rank 0 sends only after every rank saw the
    allreduce started after it complete: its future must complete first."""
    if n < 2:
        return
    box = torch.zeros(4)
    recv = dist.irecv(box, src=0) if me == 1 else None
    x = torch.full((1000,), float(me + 1))
    fut = dist.all_reduce(x, async_op=True).get_future()
    deadline = time.monotonic() + 30
    while not fut.done() and time.monotonic() < deadline:
        time.sleep(0.001)
    check(fut.done(), "the allreduce's future is not complete 30 s on, behind a receive started before it")
    if recv is not None:
        check(not recv.is_completed(), "the receive completed before its message was sent")
    dist.barrier(group=GLOO)
    if me == 0:
        dist.send(torch.arange(4, dtype=torch.float32), dst=1)
    if recv is not None:
        recv.wait()
        check(torch.equal(box, torch.arange(4, dtype=torch.float32)), "the receive's data: %s" % box)
    fut.wait()
    check(torch.equal(x, torch.full((1000,), n * (n + 1) / 2.0)), "the allreduce's sum")


def test_wait_in_callback(n, me):
    """On rank 1, the callback of an allreduce's future waits for a receive whose future was asked
    for (so the completion thread took it) and whose message rank 0 sends only once the callback
    runs: the completion thread, which runs the callback, must complete the receive itself."""
    if n < 2:
        return
    box = torch.zeros(3)
    recv = dist.irecv(box, src=0) if me == 1 else None
    entered = threading.Event()

    def callback(fut):
        entered.set()
        if recv is not None:
            recv.wait()
        return fut.value()

    if recv is not None:
        recv.get_future()
    x = torch.ones(100)
    chained = dist.all_reduce(x, async_op=True).get_future().then(callback)
    check(entered.wait(30), "the allreduce's callback did not run within 30 s")
    dist.barrier(group=GLOO)
    if me == 0:
        dist.send(torch.full((3,), 5.0), dst=1)
    deadline = time.monotonic() + 30
    while not chained.done() and time.monotonic() < deadline:
        time.sleep(0.001)
    check(chained.done(), "a callback that waits for a work the completion thread took never returned")
    if recv is not None:
        check(torch.equal(box, torch.full((3,), 5.0)), "the receive's data: %s" % box)
    check(torch.equal(x, torch.full((100,), float(n))), "the allreduce's sum")


def main():
    global GLOO
    torch.set_num_threads(1)
    dist.init_process_group("gcoll", timeout=datetime.timedelta(seconds=60))
    n, me = dist.get_world_size(), dist.get_rank()
    h.set_rank(me)
    GLOO = dist.new_group(backend="gloo")
    # test_priorities first: it reads back every operation of the process group
    rc = h.run_torch("torch-priorities", [test_priorities, test_completion_order, test_wait_in_callback], n, me, GLOO)
    shutil.rmtree(TRACES, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
