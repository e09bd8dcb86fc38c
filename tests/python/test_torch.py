"""The gcoll Python package on PyTorch tensors, under mpirun: collectives on CPU tensors of every
dtype torch and gcoll share (bfloat16 included), in place and not, nonblocking, the session; and
the DDP hooks gcoll.torch.allreduce_hook and adasum_hook, whose gradients must equal the mean
(Adasum) of the gradients each rank computes itself for every rank's batch. CUDA tensors too
where torch has CUDA. Run: mpirun -np 2 /usr/bin/python3 tests/python/test_torch.py"""
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gcoll  # noqa: E402
import gcoll.torch  # noqa: E402
import harness as h  # noqa: E402
from harness import check, raises  # noqa: E402

TDTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
           torch.float32, torch.float64]


def np_dtype(t):
    """The numpy dtype of the reference inputs: bf16 inputs are generated as float32 and rounded."""
    return np.float32 if t == torch.bfloat16 else torch.empty(0, dtype=t).numpy().dtype


def tensors(n, count, t, seed, kind="any"):
    return [torch.from_numpy(h.data(r, count, np_dtype(t), seed, kind)).to(t) for r in range(n)]


def as_np(x):
    return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()


def close(got, ref, t, nterms):
    if t == torch.bfloat16:
        g = got.double().numpy()
        scale = max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)
        return bool(np.all(np.abs(g - ref) <= (nterms + 1) * 2.0 ** -8 * scale * 4))
    return h.close(got.numpy(), ref, np_dtype(t), nterms)


def test_tensors(c, device="cpu"):
    n, me = c.size, c.rank
    seed = 0
    for t in TDTYPES:
        for op in ["SUM", "MAX", "AVG", "PROD"]:
            for count in [0, 3, 1025]:
                seed += 1
                kind = "prod" if op == "PROD" else "any"
                xs = tensors(n, count, t, seed, kind)
                ref = h.reduce_ref([as_np(x) for x in xs], op, np.float64 if t.is_floating_point else np_dtype(t))
                if not t.is_floating_point:
                    ref = ref.astype(np_dtype(t))
                what = "%s allreduce %s %s %d" % (device, t, op, count)
                x = xs[me].to(device)
                got = c.allreduce(x, getattr(gcoll, op))
                check(got.dtype == t and got.device == x.device and got.shape == x.shape, what + ": tensor")
                check(close(got.cpu(), ref, t, n), what)
                y = xs[me].clone().to(device)
                c.iallreduce(y, getattr(gcoll, op), out=y, name="t").wait()
                check(close(y.cpu(), ref, t, n), what + " nonblocking in place")
        xs = tensors(n, 6, t, seed + 100)
        got = c.allgather(xs[me].to(device))
        check(got.shape == (n, 6) and torch.equal(got.cpu(), torch.stack(xs)), "%s allgather %s" % (device, t))
        buf = xs[me].clone().to(device)
        c.bcast(buf, n - 1)
        check(torch.equal(buf.cpu(), xs[n - 1]), "%s bcast %s" % (device, t))
        xs = tensors(n, 4 * n, t, seed + 200)
        got = c.reduce_scatter(xs[me].reshape(n, 4).to(device), gcoll.MIN)
        check(torch.equal(got.cpu().reshape(-1), torch.stack(xs).min(0).values[me * 4:(me + 1) * 4]),
              "%s reduce_scatter %s" % (device, t))
        got = c.alltoall(xs[me].to(device))
        expect = torch.cat([xs[q][me * 4:(me + 1) * 4] for q in range(n)])
        check(torch.equal(got.cpu(), expect), "%s alltoall %s" % (device, t))
    for t, tol in [(torch.bfloat16, 4e-2), (torch.float16, 5e-3), (torch.float32, 1e-5)]:
        counts = [5, 40, 3]
        xs = tensors(n, sum(counts), t, 300)
        xn = [as_np(x) for x in xs]
        got = c.adasum(xs[me].to(device), counts)
        check(h.adasum_close(got.cpu().double().numpy(), h.adasum_ref(xn, counts), xn, counts, tol),
              "%s adasum %s" % (device, t))


def test_session_and_errors(c):
    n, me = c.size, c.rank
    s = c.session()
    a = s.add("w", 300, torch.bfloat16, gcoll.AVG)
    b = s.add("b", 7, torch.float32, gcoll.SUM)
    s.commit()
    xa, xb = tensors(n, 300, torch.bfloat16, 500), tensors(n, 7, torch.float32, 501)
    ba, bb = xa[me].clone(), xb[me].clone()
    s.start(b, bb)
    s.start(a, ba)
    s.wait_all()
    check(close(ba, h.reduce_ref([as_np(x) for x in xa], "AVG", np.float64), torch.bfloat16, n), "session bf16 AVG")
    check(close(bb, h.reduce_ref([x.numpy() for x in xb], "SUM", np.float64), torch.float32, n), "session fp32 SUM")
    s.free()
    for bad in [torch.complex64, torch.bool, torch.complex128]:
        raises(gcoll.InvalidArgError, lambda: c.allreduce(torch.zeros(4, dtype=bad)), "dtype", str(bad).split(".")[1])
    raises(gcoll.InvalidArgError, lambda: c.allreduce(torch.zeros(4, 4)[:, 0]), "x", "contiguous")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(torch.zeros(4), out=torch.zeros(5)), "out", "5", "4")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(torch.zeros(4), out=torch.zeros(4, dtype=torch.float64)),
           "out", "float64")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(torch.zeros(4), out=np.zeros(4, dtype=np.float32)), "out")
    raises(gcoll.InvalidArgError, lambda: c.adasum(torch.zeros(4, dtype=torch.int32)), "dtype")
    check(me < n, "rank")


def batch(rank, it):
    g = torch.Generator().manual_seed(1000 * it + rank)
    return torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).double()


def local_grads(model, rank, it):
    model.zero_grad()
    x, y = batch(rank, it)
    torch.nn.functional.mse_loss(model(x.double()), y.double()).backward()
    return [p.grad.detach().numpy().reshape(-1).copy() for p in model.parameters()]


def test_hooks(c):
    n, me = c.size, c.rank
    for name, hook in [("allreduce_hook", gcoll.torch.allreduce_hook), ("adasum_hook", gcoll.torch.adasum_hook)]:
        ref_model = make_model()
        ddp = torch.nn.parallel.DistributedDataParallel(make_model())
        ddp.register_comm_hook(c, hook)
        for it in range(3):  # the first iteration also rebuilds DDP's buckets
            per_rank = [local_grads(ref_model, r, it) for r in range(n)]
            ddp.zero_grad()
            x, y = batch(me, it)
            torch.nn.functional.mse_loss(ddp(x.double()), y.double()).backward()
            for k, p in enumerate(ddp.module.parameters()):
                got = p.grad.detach().numpy().reshape(-1)
                grads = [g[k] for g in per_rank]
                if hook is gcoll.torch.allreduce_hook:
                    ok = np.allclose(got, np.mean(grads, axis=0), rtol=1e-12, atol=1e-14)
                else:
                    ok = h.adasum_close(got, h.adasum_ref(grads, [got.size]), grads, [got.size], 1e-10)
                check(ok, "%s iteration %d parameter %d" % (name, it, k))
    check(not gcoll.torch._pending, "no future left pending")
    raises(TypeError, lambda: gcoll.torch._comm("world"))


def main():
    gcoll.init()
    c = gcoll.comm_world()
    h.set_rank(c.rank)

    def body():
        test_tensors(c)
        if torch.cuda.is_available():
            test_tensors(c, "cuda")
        elif c.rank == 0:
            print("note: torch has no CUDA here; CUDA tensors not tested", flush=True)
        test_session_and_errors(c)
        dist.init_process_group("gloo", init_method=gcoll.torch.gloo_init_method(c),
                                rank=c.rank, world_size=c.size)
        test_hooks(c)
        dist.destroy_process_group()

    rc = h.run("python-torch", c, body)
    gcoll.finalize()
    sys.exit(rc)


if __name__ == "__main__":
    main()
