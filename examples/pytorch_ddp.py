#!/usr/bin/python3
"""PyTorch DDP on the gcoll backend (dist.init_process_group("gcoll")): trains a small MLP from the
same weights with DDP's default path on gcoll, with gcoll.torch.allreduce_hook and adasum_hook, and
on a gloo group for comparison; checks that every rank's parameters agree, that the loss fell and
that gcoll's averaging follows gloo's, and prints each one's time per iteration.
Usage: mpirun -np 2 /usr/bin/python3 examples/pytorch_ddp.py [--iters N] [--hidden H] [--batch B]
   or: RANK=r WORLD_SIZE=n MASTER_ADDR=host MASTER_PORT=port /usr/bin/python3 examples/pytorch_ddp.py
"""
import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import gcoll.torch

IN, OUT = 32, 8


def make_model(hidden):
    torch.manual_seed(0)  # the same initial weights on every rank and for every run
    return torch.nn.Sequential(torch.nn.Linear(IN, hidden), torch.nn.Tanh(),
                               torch.nn.Linear(hidden, hidden), torch.nn.Tanh(),
                               torch.nn.Linear(hidden, OUT))


def make_data(rank, batch, iters):
    """This rank's shard of a synthetic regression: y = tanh(x A) B plus noise."""
    g = torch.Generator().manual_seed(12345)
    a, b = torch.randn(IN, 16, generator=g) / IN ** 0.5, torch.randn(16, OUT, generator=g)
    g.manual_seed(1 + rank)
    xs = torch.randn(iters, batch, IN, generator=g)
    ys = torch.tanh(xs @ a) @ b + 0.01 * torch.randn(iters, batch, OUT, generator=g)
    return xs, ys


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).contiguous()


def train(group, hook, args, data):
    model = DDP(make_model(args.hidden), process_group=group)
    if hook is not None:
        model.register_comm_hook(None, hook)  # None: the default group, gcoll's
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    xs, ys = data
    losses, times = [], []
    for it in range(args.iters):
        dist.barrier()  # every rank starts the iteration together, so the times compare
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs[it]), ys[it])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    return model.module, losses, times


def reduced(values, op):
    t = torch.as_tensor(values, dtype=torch.float64).clone()
    dist.all_reduce(t, op=op)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    torch.set_num_threads(1)  # ranks share the cores; one compute thread each
    dist.init_process_group("gcoll")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")  # only for the comparison run
    data = make_data(rank, args.batch, args.iters)
    ok = True
    results = {}
    runs = [("gloo (DDP default)", gloo, None), ("gcoll (DDP default)", None, None),
            ("gcoll allreduce_hook", None, gcoll.torch.allreduce_hook),
            ("gcoll adasum_hook", None, gcoll.torch.adasum_hook)]
    for name, group, hook in runs:
        model, losses, times = train(group, hook, args, data)
        p = flat_params(model)
        agreed = torch.equal(reduced(p, dist.ReduceOp.MAX), p.double()) and \
            torch.equal(reduced(p, dist.ReduceOp.MIN), p.double())
        agreed = reduced([float(agreed)], dist.ReduceOp.MIN)[0] == 1.0
        loss = reduced(losses, dist.ReduceOp.SUM) / size
        head, tail = loss[:5].mean(), loss[-5:].mean()
        fell = tail < 0.5 * head
        # The median iteration on the slowest rank: a step ends when every rank's gradients are in.
        med = reduced([statistics.median(times[len(times) // 4:])], dist.ReduceOp.MAX)[0].item()
        results[name] = (p, med)
        ok &= bool(agreed and fell)
        if rank == 0:
            print("%-22s %8.3f ms/iter   loss %.4f -> %.4f   params identical on %d ranks: %s   loss fell: %s"
                  % (name, med * 1e3, head, tail, size, "yes" if agreed else "NO", "yes" if fell else "NO"),
                  flush=True)
    # DDP over gloo is the independent reference for gcoll's averaging: same data, same steps.
    ref = results[runs[0][0]][0]
    for name, _, _ in runs[1:3]:
        diff = float((results[name][0] - ref).abs().max() / ref.abs().max())
        follows = diff < 1e-4
        ok &= follows
        if rank == 0:
            print("%s vs gloo: largest parameter difference %.2e of the largest parameter: %s"
                  % (name, diff, "ok" if follows else "TOO LARGE"))
    if rank == 0:
        base = results[runs[0][0]][1]
        print("time per iteration relative to gloo: " + ", ".join(
            "%s %.2fx" % (n, results[n][1] / base) for n, _, _ in runs[1:]))
        print("PASS" if ok else "FAIL", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
