"""PyTorch DistributedDataParallel communication hooks over gcoll (torch 1.13 and later):
ddp.register_comm_hook(comm, gcoll.torch.allreduce_hook) averages, adasum_hook applies Adasum.
A hook starts a nonblocking operation on the bucket in place and returns its Future; the futures
complete when DDP hands over its last bucket, so every gcoll call stays on the backward thread.
"""
import socket

import torch

import gcoll

def gloo_init_method(comm):
    """tcp://127.0.0.1:PORT with a port free on rank 0, sent to every rank with gcoll bcast."""
    port = torch.zeros(1, dtype=torch.int64)
    if comm.rank == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port[0] = s.getsockname()[1]
    comm.bcast(port, 0)
    return "tcp://127.0.0.1:%d" % int(port[0])


# (request, future, result) of the buckets started and not yet completed, in start order.
_pending = []


def _comm(state):
    if state is None:
        return gcoll.comm_world()
    if isinstance(state, gcoll.Comm):
        return state
    raise TypeError("gcoll.torch hooks take a gcoll.Comm (or None) as state, not %s" % type(state).__name__)


def _settle(req, fut, result):
    try:
        req.wait()
    except gcoll.GcollError as e:
        fut.set_exception(e)
        return
    fut.set_result(result)


def _complete(all_of_them):
    """Completes the futures of finished operations (all of them when all_of_them)."""
    global _pending
    still = []
    for entry in _pending:
        req = entry[0]
        if all_of_them or req.test():
            _settle(*entry)
        else:
            still.append(entry)
    _pending = still


def _launch(start, bucket):
    buf = bucket.buffer()
    fut = torch.futures.Future()
    try:
        # Later DDP buckets hold earlier layers, which the next forward pass needs first.
        req = start(buf, priority=bucket.index(), name="ddp-bucket-%d" % bucket.index())
    except gcoll.GcollError as e:
        fut.set_exception(e)
        return fut
    _pending.append((req, fut, buf))
    _complete(bucket.is_last())
    return fut


def allreduce_hook(state, bucket):
    """Averages the bucket across the ranks of state (gcoll iallreduce with AVG, in place)."""
    comm = _comm(state)
    return _launch(lambda buf, **kw: comm.iallreduce(buf, gcoll.AVG, out=buf, **kw), bucket)


def adasum_hook(state, bucket):
    """Adasum of the bucket across the ranks of state, each gradient its own tensor (dots and
    norms never cross a gradient's boundary)."""
    comm = _comm(state)
    counts = [g.numel() for g in bucket.gradients()]
    return _launch(lambda buf, **kw: comm.iadasum(buf, counts, out=buf, **kw), bucket)
