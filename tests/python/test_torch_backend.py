"""torch.distributed on the gcoll backend (dist.init_process_group("gcoll")): every operation of
torch 1.13's ProcessGroup on every dtype gcoll shares with torch, in place and not, sizes 0, 1,
odd and large, each result checked against a reference every rank computes from all ranks'
inputs and, where 1.13's gloo has the call, against the same call on a gloo group of the same
job; asynchronous works waited out of order; errors for what gcoll cannot serve; new_group; DDP
for some steps on the default path and with each gcoll hook, its gradients against references.
Run under mpirun (or with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set, tests/torch_launch.sh):
  mpirun -np 3 /usr/bin/python3 tests/python/test_torch_backend.py"""
import datetime
import json
import os
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gcoll.torch  # noqa: E402
import harness as h  # noqa: E402
from harness import check, raises  # noqa: E402
from test_torch import TDTYPES, as_np, close, np_dtype, tensors  # noqa: E402

SIZES = [0, 1, 7, 1031, 262147]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "PREMUL_SUM"]
GLOO_OPS = {"SUM", "PRODUCT", "MIN", "MAX"}
PREMUL = 0.75
GLOO = None  # the gloo group of every rank: the second opinion


def redop(op):
    return dist._make_nccl_premul_sum(PREMUL) if op == "PREMUL_SUM" else getattr(dist.ReduceOp, op)


def gloo_has(t, op="SUM", size=1):
    """1.13's gloo has no bfloat16, AVG or PREMUL_SUM, and divides by zero on empty gathers."""
    return t != torch.bfloat16 and op in GLOO_OPS and size > 0


def ref_reduce(xs, op, t):
    """The reduction of xs in float64 (floats) or the dtype (integers), from harness.reduce_ref."""
    wide = np.float64 if t.is_floating_point else np_dtype(t)
    if op == "PREMUL_SUM":
        return PREMUL * h.reduce_ref([as_np(x) for x in xs], "SUM", wide)
    r = h.reduce_ref([as_np(x) for x in xs], "PROD" if op == "PRODUCT" else op, wide)
    return r if t.is_floating_point else r.astype(np_dtype(t))


EPS = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -23, torch.float64: 2.0 ** -52}


def agree(got, ref, t, n, what, xs=None):
    """Integers exactly; floats within a few roundings per term of the largest magnitude among the
    result and the inputs (a result that cancels out must not ask for the impossible)."""
    check(got.dtype == t, "%s: dtype %s" % (what, got.dtype))
    ref = np.asarray(ref).reshape(-1)
    if not t.is_floating_point or ref.size == 0:
        check(close(got.reshape(-1), ref, t, n), what)
        return
    scale = max(float(np.max(np.abs(ref))), sum(float(x.double().abs().max()) for x in xs) if xs else 0.0, 1e-30)
    err = float(np.max(np.abs(got.double().reshape(-1).numpy() - ref)))
    check(err <= 4 * (n + 1) * EPS[t] * scale, "%s: off by %.3g of %.3g" % (what, err, scale))


def same_as_gloo(got, fn, t, n, what):
    """fn(group) runs the call on a group; the gloo group's result must match gcoll's."""
    other = fn(GLOO)
    ref = other.double().numpy() if t.is_floating_point else other.numpy()
    check(close(got.reshape(-1), ref.reshape(-1), t, 2 * n), what + " (vs gloo)")


def case_sizes(k):
    return SIZES[k % len(SIZES)]


def test_allreduce(n, me):
    k = 0
    for t in TDTYPES:
        for op in OPS:
            if op == "PREMUL_SUM" and not t.is_floating_point:
                continue
            size = case_sizes(k)
            k += 1
            xs = tensors(n, size, t, 1000 + k, "prod" if op == "PRODUCT" else "any")
            what = "all_reduce %s %s %d" % (t, op, size)
            if k % 3 == 0 and size > 1:  # a strided view: written back through a contiguous copy
                base = torch.zeros(2 * size, dtype=t)
                x = base[::2]
                x.copy_(xs[me])
                dist.all_reduce(x, op=redop(op))
                check(torch.all(base[1::2] == 0).item(), what + ": the gaps of the strided view were written")
                what += " strided"
            else:
                x = xs[me].clone()
                dist.all_reduce(x, op=redop(op))
            agree(x, ref_reduce(xs, op, t), t, n, what, xs)
            if gloo_has(t, op, size):
                def on(g, x0=xs[me], op=op):
                    y = x0.clone()
                    dist.all_reduce(y, op=redop(op), group=g)
                    return y
                same_as_gloo(x, on, t, n, what)


def test_coalesced_and_rooted(n, me):
    for k, t in enumerate(TDTYPES):
        op = [o for o in OPS if o != "PREMUL_SUM" or t.is_floating_point][k % 5]
        size = case_sizes(k + 1)
        shapes = [(size,), (3, 2), (1,)]
        xs = [tensors(n, int(np.prod(s)), t, 2000 + 10 * k + j, "prod" if op == "PRODUCT" else "any")
              for j, s in enumerate(shapes)]
        mine = [xs[j][me].clone().reshape(s) for j, s in enumerate(shapes)]
        dist.all_reduce_coalesced(mine, op=redop(op))
        for j in range(len(shapes)):
            agree(mine[j], ref_reduce(xs[j], op, t), t, n, "all_reduce_coalesced %s %s part %d" % (t, op, j), xs[j])
        if gloo_has(t, op, size):
            def on(g):
                y = [xs[j][me].clone().reshape(s) for j, s in enumerate(shapes)]
                dist.all_reduce_coalesced(y, op=redop(op), group=g)
                return torch.cat([a.reshape(-1) for a in y])
            same_as_gloo(torch.cat([a.reshape(-1) for a in mine]), on, t, n, "all_reduce_coalesced %s" % t)

        root = k % n
        x = tensors(n, size, t, 3000 + k, "prod" if op == "PRODUCT" else "any")
        y = x[me].clone()
        dist.reduce(y, dst=root, op=redop(op))
        if me == root:
            agree(y, ref_reduce(x, op, t), t, n, "reduce %s %s %d to %d" % (t, op, size, root), x)
        if gloo_has(t, op, size):
            z = x[me].clone()
            dist.reduce(z, dst=root, op=redop(op), group=GLOO)
            if me == root:
                check(close(y, z.double().numpy() if t.is_floating_point else z.numpy(), t, 2 * n),
                      "reduce %s vs gloo" % t)

        root = (k + 1) % n
        x = tensors(n, case_sizes(k + 2), t, 4000 + k)
        y = x[me].clone()
        dist.broadcast(y, src=root)
        check(torch.equal(y, x[root]), "broadcast %s %d from %d" % (t, y.numel(), root))
        if gloo_has(t, size=y.numel()):
            z = x[me].clone()
            dist.broadcast(z, src=root, group=GLOO)
            check(torch.equal(y, z), "broadcast %s vs gloo" % t)


def test_gathers(n, me):
    for k, t in enumerate(TDTYPES):
        size = case_sizes(k + 2)
        xs = tensors(n, size, t, 5000 + k)
        outs = [torch.empty(size, dtype=t) for _ in range(n)]
        dist.all_gather(outs, xs[me])
        check(all(torch.equal(outs[r], xs[r]) for r in range(n)), "all_gather %s %d" % (t, size))
        if gloo_has(t, size=size):
            g = [torch.empty(size, dtype=t) for _ in range(n)]
            dist.all_gather(g, xs[me], group=GLOO)
            check(all(torch.equal(outs[r], g[r]) for r in range(n)), "all_gather %s vs gloo" % t)

        out = torch.full((n * size,), 7, dtype=t)
        if k % 2:  # in place, as FSDP calls it: the input is this rank's block of the output
            inp = out.narrow(0, me * size, size)
            inp.copy_(xs[me])
        else:
            inp = xs[me]
        dist.all_gather_into_tensor(out, inp)
        check(torch.equal(out, torch.cat(xs)), "all_gather_into_tensor %s %d%s" % (t, size, " in place" * (k % 2)))

        ins = [xs[me], tensors(n, 6, t, 5100 + k)[me].reshape(2, 3)]
        lists = [[torch.empty_like(a) for a in ins] for _ in range(n)]
        dist.all_gather_coalesced(lists, ins)
        second = tensors(n, 6, t, 5100 + k)
        check(all(torch.equal(lists[r][0], xs[r]) and torch.equal(lists[r][1].reshape(-1), second[r])
                  for r in range(n)), "all_gather_coalesced %s" % t)
        if gloo_has(t, size=size):
            glists = [[torch.empty_like(a) for a in ins] for _ in range(n)]
            dist.all_gather_coalesced(glists, ins, group=GLOO)
            check(all(torch.equal(lists[r][j], glists[r][j]) for r in range(n) for j in range(2)),
                  "all_gather_coalesced %s vs gloo" % t)

        root = (k + 2) % n
        glist = [torch.empty(size, dtype=t) for _ in range(n)] if me == root else None
        dist.gather(xs[me], glist, dst=root)
        if me == root:
            check(all(torch.equal(glist[r], xs[r]) for r in range(n)), "gather %s %d to %d" % (t, size, root))
        if gloo_has(t, size=size):
            g2 = [torch.empty(size, dtype=t) for _ in range(n)] if me == root else None
            dist.gather(xs[me], g2, dst=root, group=GLOO)
            if me == root:
                check(all(torch.equal(glist[r], g2[r]) for r in range(n)), "gather %s vs gloo" % t)

        blocks = tensors(n, size, t, 5200 + k)  # the root's block for each rank
        out = torch.empty(size, dtype=t)
        dist.scatter(out, blocks if me == root else None, src=root)
        check(torch.equal(out, blocks[me]), "scatter %s %d from %d" % (t, size, root))
        if gloo_has(t, size=size):
            o2 = torch.empty(size, dtype=t)
            dist.scatter(o2, blocks if me == root else None, src=root, group=GLOO)
            check(torch.equal(out, o2), "scatter %s vs gloo" % t)


def test_reduce_scatters(n, me):
    for k, t in enumerate(TDTYPES):
        op = [o for o in OPS if o != "PREMUL_SUM" or t.is_floating_point][(k + 2) % 5]
        kind = "prod" if op == "PRODUCT" else "any"
        size = case_sizes(k + 3)
        xs = tensors(n, n * size, t, 6000 + k, kind)
        ref = ref_reduce(xs, op, t)
        out = torch.empty(size, dtype=t)
        dist.reduce_scatter(out, list(xs[me].split(size)) if size else [torch.empty(0, dtype=t)] * n, op=redop(op))
        agree(out, ref[me * size:(me + 1) * size], t, n, "reduce_scatter %s %s %d" % (t, op, size), xs)

        inp = xs[me].clone()
        if k % 2:  # in place: the output is this rank's block of the input
            out = inp.narrow(0, me * size, size)
        else:
            out = torch.empty(size, dtype=t)
        dist.reduce_scatter_tensor(out, inp, op=redop(op))
        agree(out, ref[me * size:(me + 1) * size], t, n,
              "reduce_scatter_tensor %s %s %d%s" % (t, op, size, " in place" * (k % 2)), xs)


def test_alltoalls(n, me):
    for k, t in enumerate(TDTYPES):
        size = case_sizes(k + 4)
        xs = tensors(n, n * size, t, 7000 + k)
        out = torch.empty(n * size, dtype=t)
        dist.all_to_all_single(out, xs[me])
        expect = torch.cat([xs[r][me * size:(me + 1) * size] for r in range(n)])
        check(torch.equal(out, expect), "all_to_all_single %s %d" % (t, size))
        if gloo_has(t, size=size):
            o2 = torch.empty(n * size, dtype=t)
            dist.all_to_all_single(o2, xs[me], group=GLOO)
            check(torch.equal(out, o2), "all_to_all_single %s vs gloo" % t)

        # uneven: rank a sends rows(a, b) rows of width 3 to rank b
        def rows(a, b):
            return (a + 2 * b + k) % 4 + (size > 1000)
        ins = [tensors(n, 3 * sum(rows(a, b) for b in range(n)), t, 7100 + k)[a].reshape(-1, 3) for a in range(n)]
        insplit = [rows(me, b) for b in range(n)]
        outsplit = [rows(a, me) for a in range(n)]
        out = torch.empty(sum(outsplit), 3, dtype=t)
        dist.all_to_all_single(out, ins[me], outsplit, insplit)
        parts = []
        for a in range(n):
            first = sum(rows(a, b) for b in range(me))
            parts.append(ins[a][first:first + rows(a, me)])
        check(torch.equal(out, torch.cat(parts)), "all_to_all_single %s with splits" % t)
        if gloo_has(t, size=size):
            o2 = torch.empty(sum(outsplit), 3, dtype=t)
            dist.all_to_all_single(o2, ins[me], outsplit, insplit, group=GLOO)
            check(torch.equal(out, o2), "all_to_all_single %s with splits vs gloo" % t)

        # lists of tensors of different lengths
        src = [tensors(n, rows(me, b) + size % 5, t, 7200 + k + 10 * b)[me] for b in range(n)]
        outs = [torch.empty(rows(a, me) + size % 5, dtype=t) for a in range(n)]
        dist.all_to_all(outs, src)
        check(all(torch.equal(outs[a], tensors(n, rows(a, me) + size % 5, t, 7200 + k + 10 * me)[a])
                  for a in range(n)), "all_to_all %s" % t)


def test_p2p_and_async(n, me):
    if n > 1:
        for k, t in enumerate(TDTYPES):
            size = case_sizes(k)
            right, left = (me + 1) % n, (me - 1) % n
            xs = tensors(n, size, t, 8000 + k)
            got = torch.empty(size, dtype=t)
            reqs = [dist.isend(xs[me], right), dist.irecv(got, left)]
            for r in reqs:
                r.wait()
            check(torch.equal(got, xs[left]), "isend/irecv %s %d" % (t, size))
            if me % 2 == 0:  # blocking: even ranks send first, odd ranks receive first
                dist.send(xs[me], right)
                dist.recv(got, left)
            else:
                dist.recv(got, left)
                dist.send(xs[me], right)
            check(torch.equal(got, xs[left]), "send/recv %s %d" % (t, size))
            if gloo_has(t, size=size) and k % 3 == 0:
                g = torch.empty(size, dtype=t)
                for r in [dist.isend(xs[me], right, group=GLOO), dist.irecv(g, left, group=GLOO)]:
                    r.wait()
                check(torch.equal(got, g), "send/recv %s vs gloo" % t)
    dist.barrier()

    # asynchronous works, waited out of order
    a = tensors(n, 1031, torch.float32, 9000)
    b = tensors(n, 17, torch.int64, 9001)
    x = a[me].clone()
    gathered = torch.empty(n * 17, dtype=torch.int64)
    y = b[me].clone()
    w1 = dist.all_reduce(x, async_op=True)
    w2 = dist.all_gather_into_tensor(gathered, b[me], async_op=True)
    w3 = dist.broadcast(y, src=n - 1, async_op=True)
    w4 = dist.barrier(async_op=True)
    fut = w1.get_future()
    for w in [w4, w3, w2]:
        w.wait()
    check(w2.is_completed() and w3.is_completed(), "is_completed after wait")
    value = fut.wait()
    check(isinstance(value, list) and value[0].data_ptr() == x.data_ptr(), "the future's value is the tensor")
    check(w1.wait() and w1.is_completed(), "wait after the future")
    agree(x, ref_reduce(a, "SUM", torch.float32), torch.float32, n, "async all_reduce waited last", a)
    check(torch.equal(gathered, torch.cat(b)) and torch.equal(y, b[n - 1]), "async gather and broadcast")


def test_errors(n, me):
    raises(RuntimeError, lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND), "bitwise")
    raises(RuntimeError, lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)), "Bool", "reductions")
    raises(RuntimeError, lambda: dist.all_reduce(torch.ones(3, dtype=torch.int64), op=redop("PREMUL_SUM")),
           "floating-point")
    raises(RuntimeError, lambda: dist.all_reduce(torch.ones(3, dtype=torch.complex128), op=dist.ReduceOp.MAX))
    raises(RuntimeError, lambda: dist.all_gather_into_tensor(torch.empty(n * 3 + 1), torch.ones(3)), "holds")
    raises(RuntimeError, lambda: dist.all_to_all_single(torch.empty(4 * n, 2), torch.empty(4 * n, 2),
                                                        [4] * n, [3] * n), "split sizes")
    if n > 1:
        raises(RuntimeError, lambda: dist.recv(torch.empty(3)), "any source")
        raises(RuntimeError, lambda: dist.send(torch.ones(3), (me + 1) % n, tag=5), "tag 5")
    # a bool tensor moves as bytes
    x = torch.tensor([True, False, me % 2 == 0])
    dist.broadcast(x, src=0)
    check(x.tolist() == [True, False, True], "broadcast of a bool tensor")
    # every collective still agrees after the refusals
    one = torch.ones(1)
    dist.all_reduce(one)
    check(one.item() == n, "all_reduce after the refused calls")


def test_groups(n, me):
    ranks = sorted({0, n - 1})
    sub = dist.new_group(ranks)
    if me in ranks:
        x = torch.tensor([float(me + 1)])
        dist.all_reduce(x, group=sub)
        check(x.item() == sum(r + 1 for r in ranks), "new_group %s all_reduce" % ranks)
        check(dist.get_backend(sub) == "gcoll", "new_group's backend")
    evens = list(range(0, n, 2))
    sub2 = dist.new_group(evens)
    if me in evens:
        outs = [torch.empty(2, dtype=torch.int32) for _ in evens]
        dist.all_gather(outs, torch.tensor([me, 10 * me], dtype=torch.int32), group=sub2)
        check([o.tolist() for o in outs] == [[r, 10 * r] for r in evens], "new_group of the even ranks all_gather")
    dist.barrier()


def batch(rank, it):
    g = torch.Generator().manual_seed(1000 * it + rank)
    return torch.randn(16, 8, generator=g, dtype=torch.float64), torch.randn(16, 4, generator=g, dtype=torch.float64)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).double()


def local_grads(model, rank, it):
    model.zero_grad()
    x, y = batch(rank, it)
    torch.nn.functional.mse_loss(model(x), y).backward()
    return [p.grad.detach().clone() for p in model.parameters()]


def test_flight_recorder(n, me):
    """gcoll.torch.dump: a group's last operations, as torch called them, read back as JSON."""
    sub = dist.new_group(list(range(n)))
    x = torch.ones(5)
    dist.all_reduce(x, group=sub)
    out = torch.empty(5 * n)
    dist.all_gather_into_tensor(out, x, group=sub)
    dist.barrier(group=sub)
    with tempfile.TemporaryDirectory() as tmp:
        gcoll.torch.dump(os.path.join(tmp, "fr.%r.json"), sub)
        rec = json.load(open(os.path.join(tmp, "fr.%d.json" % me)))
    got = [(o["seq"], o["kind"], o["name"], o.get("count"), o["state"]) for o in rec["ops"]]
    want = [(0, "allreduce", "allreduce", 5, "done"), (1, "allgather", "_allgather_base", 5, "done"),
            (2, "barrier", "barrier", None, "done")]
    check(rec["rank"] == me and rec["size"] == n and got == want, "dump of a group: %s" % got)
    raises(ValueError, lambda: gcoll.torch.dump("x.json", GLOO), "not a gcoll process group")


def test_ddp(n, me):
    """DDP on the gcoll group for some steps: the default path, allreduce_hook and adasum_hook;
    each step's gradients against the mean (Adasum) of every rank's gradients computed here, the
    default path's parameters also against the same training on the gloo group."""
    finals = {}
    for name, group, hook in [("default", None, None), ("gloo", GLOO, None),
                              ("allreduce_hook", None, gcoll.torch.allreduce_hook),
                              ("adasum_hook", None, gcoll.torch.adasum_hook)]:
        ref = make_model()
        ddp = torch.nn.parallel.DistributedDataParallel(make_model(), process_group=group)
        if hook is not None:
            ddp.register_comm_hook(None, hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
        for it in range(4):  # the first iteration also rebuilds DDP's buckets
            per_rank = [local_grads(ref, r, it) for r in range(n)]
            opt.zero_grad()
            x, y = batch(me, it)
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            for k, (p, q) in enumerate(zip(ddp.module.parameters(), ref.parameters())):
                got = p.grad.detach().reshape(-1).numpy()
                grads = [g[k].reshape(-1).numpy() for g in per_rank]
                if hook is gcoll.torch.adasum_hook:
                    want = h.adasum_ref(grads, [got.size])
                    ok = h.adasum_close(got, want, grads, [got.size], 1e-10)
                else:
                    want = np.mean(grads, axis=0)
                    ok = np.allclose(got, want, rtol=1e-10, atol=1e-13)
                check(ok, "DDP %s step %d parameter %d" % (name, it, k))
                q.grad = torch.from_numpy(np.array(want).reshape(q.shape))
            opt.step()
            ropt.step()
        finals[name] = torch.cat([p.detach().reshape(-1) for p in ddp.module.parameters()])
    check(torch.allclose(finals["default"], finals["gloo"], rtol=1e-10, atol=1e-13),
          "DDP's parameters after 4 steps: gcoll's default path and gloo's")


def main():
    global GLOO
    torch.set_num_threads(1)
    dist.init_process_group("gcoll", timeout=datetime.timedelta(seconds=120))
    n, me = dist.get_world_size(), dist.get_rank()
    h.set_rank(me)
    GLOO = dist.new_group(backend="gloo")
    check(dist.get_backend() == "gcoll", "the default group's backend is %s" % dist.get_backend())
    sys.exit(h.run_torch("torch-backend", [test_allreduce, test_coalesced_and_rooted, test_gathers,
                                           test_reduce_scatters, test_alltoalls, test_p2p_and_async, test_errors,
                                           test_groups, test_flight_recorder, test_ddp], n, me, GLOO))


if __name__ == "__main__":
    main()
