#!/usr/bin/python3
"""PyTorch DDP with gcoll: trains a small MLP from the same weights with gloo's allreduce, with
gcoll.torch.allreduce_hook and with gcoll.torch.adasum_hook, checks that every rank's parameters
agree, that the loss fell and that the allreduce hook follows gloo, and prints each one's time.
Usage: mpirun -np 2 /usr/bin/python3 examples/pytorch_ddp.py [--iters N] [--hidden H] [--batch B]
"""
import argparse
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import gcoll
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


def train(comm, args, hook, data):
    model = DDP(make_model(args.hidden))
    if hook is not None:
        model.register_comm_hook(comm, hook)
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


def mean_over_ranks(comm, values):
    return comm.allreduce(np.array(values, dtype=np.float64), gcoll.AVG)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    gcoll.init()
    comm = gcoll.comm_world()
    torch.set_num_threads(1)  # ranks share the cores; one compute thread each
    dist.init_process_group("gloo", init_method=gcoll.torch.gloo_init_method(comm),
                            rank=comm.rank, world_size=comm.size)
    data = make_data(comm.rank, args.batch, args.iters)
    ok = True
    results = {}
    runs = [("gloo (DDP default)", None), ("gcoll allreduce_hook", gcoll.torch.allreduce_hook),
            ("gcoll adasum_hook", gcoll.torch.adasum_hook)]
    for name, hook in runs:
        model, losses, times = train(comm, args, hook, data)
        p = flat_params(model)
        same = (torch.equal(comm.allreduce(p, gcoll.MAX), p) and torch.equal(comm.allreduce(p, gcoll.MIN), p))
        agreed = mean_over_ranks(comm, [same])[0] == 1.0
        loss = mean_over_ranks(comm, losses)
        head, tail = loss[:5].mean(), loss[-5:].mean()
        fell = tail < 0.5 * head
        # The median iteration on the slowest rank: a step ends when every rank's gradients are in.
        med = comm.allreduce(np.array([statistics.median(times[len(times) // 4:])]), gcoll.MAX)[0]
        results[name] = (p, med)
        ok &= agreed and fell
        if comm.rank == 0:
            print("%-22s %8.3f ms/iter   loss %.4f -> %.4f   params identical on %d ranks: %s   loss fell: %s"
                  % (name, med * 1e3, head, tail, comm.size, "yes" if agreed else "NO", "yes" if fell else "NO"),
                  flush=True)
    # DDP over gloo is the independent reference for the averaging hook: same data, same steps.
    ref, got = results[runs[0][0]][0], results[runs[1][0]][0]
    diff = float((got - ref).abs().max() / ref.abs().max())
    follows = diff < 1e-4
    ok &= follows
    if comm.rank == 0:
        print("allreduce_hook vs gloo: largest parameter difference %.2e of the largest parameter: %s"
              % (diff, "ok" if follows else "TOO LARGE"))
        base = results[runs[0][0]][1]
        print("time per iteration relative to gloo: " + ", ".join(
            "%s %.2fx" % (n.split()[1], results[n][1] / base) for n, _ in runs[1:]))
        print("PASS" if ok else "FAIL", flush=True)
    dist.destroy_process_group()
    gcoll.finalize()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
