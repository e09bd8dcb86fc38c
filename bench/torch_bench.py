#!/usr/bin/python3
"""torch.distributed on gloo and on gcoll in the same job, alternating between them so that the
machine's noise falls on both: collective latency and bus bandwidth per size (--part coll), and
DDP training of two CPU models, step time, time to the first gradient exchanged, to the first
layers' (the bucket started last) and overlap, gcoll with and without bucket priorities
(--part ddp). Medians over iterations of the slowest rank; rank 0 prints the tables.
Usage: mpirun -np 2 /usr/bin/python3 bench/torch_bench.py [--part coll|ddp|all] [--quick]
"""
import argparse
import datetime
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import gcoll.torch

GLOO = None
RANK = SIZE = 0


def say(*a):
    if RANK == 0:
        print(*a, flush=True)


def slowest_each(seconds):
    """Per entry, the largest value over the ranks (a collective ends when its slowest rank is done)."""
    t = torch.tensor(seconds, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=GLOO)
    return t.tolist()


def slowest(seconds):
    """The largest value over the ranks."""
    return slowest_each([seconds])[0]


def timed(fn, budget, least=3):
    """The median of back-to-back calls of fn for about budget seconds, after one warm-up that
    sizes the count (the same on every rank: each call is collective)."""
    t0 = time.perf_counter()
    fn()
    count = max(least, min(10000, int(budget / max(slowest(time.perf_counter() - t0), 1e-6))))
    dist.barrier(group=GLOO)
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return slowest(statistics.median(times))


def coll(args):
    n = SIZE
    sizes = [s for s in [8, 64, 1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
             if s <= args.max_bytes]
    gcoll.init()  # nests: gcoll's own call through the Python binding, for the backend's overhead
    world = gcoll.comm_world() if SIZE == gcoll.comm_world().size else None
    busf = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
            "all_to_all": (n - 1) / n}
    rows = []
    for nbytes in sizes:
        count = max(n, nbytes // 4 // n * n)
        x = torch.ones(count)
        part = torch.ones(count // n)
        outs = [torch.empty(count // n) for _ in range(n)]
        y = torch.empty(count)
        calls = {
            "all_reduce": (lambda g: dist.all_reduce(x, group=g), True),
            # 1.13's gloo has no _allgather_base: it gathers into a list of tensors
            "all_gather": (lambda g: dist.all_gather_into_tensor(y, part) if g is None
                           else dist.all_gather(outs, part, group=g), True),
            "reduce_scatter": (lambda g: dist.reduce_scatter_tensor(part, x), False),
            "all_to_all": (lambda g: dist.all_to_all_single(y, x, group=g), True),
        }
        budget = args.budget if nbytes < (16 << 20) else 3 * args.budget
        res = {}
        for _ in range(args.rounds):
            for name, (fn, on_gloo) in calls.items():
                if on_gloo:
                    res.setdefault((name, "gloo"), []).append(timed(lambda: fn(GLOO), budget))
                res.setdefault((name, "gcoll"), []).append(timed(lambda: fn(None), budget))
            if world is not None:
                res.setdefault(("all_reduce", "c"), []).append(
                    timed(lambda: world.allreduce(x, gcoll.SUM, out=x), budget))
        rows.append((count * 4, {k: statistics.median(v) for k, v in res.items()}))
    say("\nmedian us per call (slowest rank); gloo/gcoll > 1: gcoll faster; busbw GB/s as nccl-tests")
    say("all_gather on gloo: dist.all_gather into a list (1.13's gloo has no _allgather_base); "
        "reduce_scatter: gloo has none; 'py' is gcoll's own allreduce through the Python binding")
    head = "%10s" % "bytes"
    for name in busf:
        head += " | %-38s" % name
    say(head)
    for nbytes, r in rows:
        line = "%10d" % nbytes
        for name, f in busf.items():
            g, c = r.get((name, "gloo")), r[(name, "gcoll")]
            bw = nbytes * f / c / 1e9
            if name == "all_reduce" and ("all_reduce", "c") in r:
                line += " | gloo %9.1f gcoll %8.1f py %7.1f %5.2fx %5.2f" % (g * 1e6, c * 1e6, r[("all_reduce", "c")]
                                                                           * 1e6, g / c, bw)
            elif g is not None:
                line += " | gloo %9.1f gcoll %8.1f %6.2fx %5.2f   " % (g * 1e6, c * 1e6, g / c, bw)
            else:
                line += " | gloo %9s gcoll %8.1f %6s  %5.2f   " % ("n/a", c * 1e6, "", bw)
        say(line)
    gcoll.finalize()


class Conv(torch.nn.Module):
    """ResNet-50's stages of channels on small images: about its parameter count with modest compute."""

    def __init__(self, scale):
        super().__init__()
        layers, c = [], 3
        for width, blocks in [(64, 3), (128, 4), (256, 6), (512, 3)]:
            w = max(4, int(width * scale))
            for _ in range(blocks):
                layers += [torch.nn.Conv2d(c, w, 1), torch.nn.ReLU(), torch.nn.Conv2d(w, w, 3, padding=1),
                           torch.nn.ReLU(), torch.nn.Conv2d(w, 4 * w, 1), torch.nn.ReLU()]
                c = 4 * w
        self.body = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(c, 1000)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


class Transformer(torch.nn.Module):
    """A large embedding, two encoder layers and a head: gradients dominated by the embedding."""

    def __init__(self, scale):
        super().__init__()
        vocab, d = int(50000 * scale), 256
        self.emb = torch.nn.Embedding(vocab, d)
        self.enc = torch.nn.Sequential(*[torch.nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True)
                                         for _ in range(2)])
        self.head = torch.nn.Linear(d, vocab)
        self.vocab = vocab

    def forward(self, x):
        return self.head(self.enc(self.emb(x)))


def model_and_batch(kind, scale, batch, seq):
    torch.manual_seed(0)  # the same start for both backends
    g = torch.Generator().manual_seed(RANK)
    if kind == "conv":
        m = Conv(scale)
        x = torch.randn(batch or 8, 3, 8, 8, generator=g)
        return m, x, torch.randint(0, 1000, (batch or 8,), generator=g), torch.nn.functional.cross_entropy
    m = Transformer(scale)
    x = torch.randint(0, m.vocab, (batch or 4, seq), generator=g)
    y = torch.randint(0, m.vocab, (batch or 4, seq), generator=g)
    return m, x, y, lambda out, t: torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), t.reshape(-1))


class Trainer:
    """One model's training steps: plain (backprop alone) or under DDP on a group."""

    def __init__(self, args, kind, group=None, ddp=True):
        self.model, self.x, self.y, self.loss_fn = model_and_batch(kind, args.scale, args.batch, args.seq)
        if ddp:
            self.model = DDP(self.model, process_group=group)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def step(self):
        dist.barrier(group=GLOO)
        t0 = time.perf_counter()
        self.opt.zero_grad()
        self.loss_fn(self.model(self.x), self.y).backward()
        self.opt.step()
        return time.perf_counter() - t0


def first_gradient(args, kind, group, n):
    """Seconds from the start of backward to the completion of the first bucket's allreduce, and
    from the start of the bucket started last (the first layers', which the next forward pass
    needs first) to its completion, through a hook that runs the group's own allreduce (so this
    pass is not the default path). Medians of the slowest rank."""
    model, x, y, loss_fn = model_and_batch(kind, args.scale, args.batch, args.seq)
    ddp = DDP(model, process_group=group)
    mark = {}

    def hook(state, bucket):
        last = bucket.is_last()
        if last:
            mark["issued"] = time.perf_counter()

        def done(fut):
            t = time.perf_counter()
            mark.setdefault("first", t)
            if last:
                mark["last"] = t
            return fut.value()[0].div_(SIZE)
        return dist.all_reduce(bucket.buffer(), group=group, async_op=True).get_future().then(done)

    ddp.register_comm_hook(None, hook)
    first, last = [], []
    for i in range(n + 1):  # the first pass builds DDP's buckets: not counted
        mark.clear()
        loss = loss_fn(ddp(x), y)
        dist.barrier(group=GLOO)
        t0 = time.perf_counter()
        loss.backward()
        if i:
            first.append(mark["first"] - t0)
            last.append(mark["last"] - mark["issued"])
    return slowest_each([statistics.median(first), statistics.median(last)])


def ddp(args):
    """Steps of backprop alone, of DDP on gloo, on gcoll and on gcoll without bucket priorities,
    interleaved one step at a time (the order turning each step) from the same weights, so the
    machine's drift falls on all of them."""
    fifo = dist.new_group(backend="gcoll")
    gcoll.torch.bucket_priorities(False, fifo)
    groups = [("gloo", GLOO), ("gcoll", None), ("gcoll fifo", fifo)]
    for kind in args.models.split(","):
        runs = {"alone": Trainer(args, kind, ddp=False)}
        runs.update((name, Trainer(args, kind, group)) for name, group in groups)
        names = list(runs)
        nparam = sum(p.numel() for p in runs["alone"].model.parameters())
        grads = torch.ones(nparam)
        for name in names:  # warm-up: DDP's first steps build its buckets
            for _ in range(2):
                runs[name].step()
        times = {name: [] for name in names}
        for i in range(args.steps * args.rounds):
            for j in range(len(names)):
                name = names[(i + j) % len(names)]
                times[name].append(runs[name].step())
        step = {name: statistics.median(slowest_each(v)) for name, v in times.items()}
        comm, first, layers = {}, {}, {}
        for _ in range(args.rounds):
            for name, group in groups:
                comm.setdefault(name, []).append(timed(lambda: dist.all_reduce(grads, group=group), args.budget, 2))
                f, last = first_gradient(args, kind, group, 3)
                first.setdefault(name, []).append(f)
                layers.setdefault(name, []).append(last)
        compute = step["alone"]
        shape = "%s%s" % (args.batch or "default", " x %d tokens" % args.seq if kind == "transformer" else "")
        say("\nDDP %s: %.1f M parameters (%.0f MB of gradients), %d ranks, batch %s, backprop step alone %.1f ms "
            "(median of %d steps each, interleaved)" % (kind, nparam / 1e6, nparam * 4 / 1e6, SIZE, shape,
                                                        compute * 1e3, len(times["gloo"])))
        say("%-10s %12s %14s %16s %18s %9s" % ("", "step ms", "allreduce ms", "first grad ms", "first layers ms",
                                                 "overlap"))  # first layers: from its bucket's start
        for name, _ in groups:
            c = statistics.median(comm[name])
            # the share of the gradients' exchange hidden behind backprop: what the step adds to
            # the step without communication, against the exchange's time alone
            overlap = min(1.0, max(0.0, 1 - (step[name] - compute) / c)) if c > 0 else 0.0
            say("%-10s %12.1f %14.1f %16.1f %18.1f %8.0f%%" % (
                name, step[name] * 1e3, c * 1e3, statistics.median(first[name]) * 1e3,
                statistics.median(layers[name]) * 1e3, 100 * overlap))
        say("gloo's allreduce of all gradients is %.0f%% of its step; step time gloo/gcoll: %.2fx"
            % (100 * statistics.median(comm["gloo"]) / step["gloo"], step["gloo"] / step["gcoll"]))


def main():
    global GLOO, RANK, SIZE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["coll", "ddp", "all"], default="all")
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of gloo and gcoll")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of calls per size, backend and round")
    ap.add_argument("--models", default="conv,transformer")
    ap.add_argument("--scale", type=float, default=1.0, help="model width factor")
    ap.add_argument("--batch", type=int, default=0,
                    help="samples per rank and step (default: 8 images for conv, 4 sequences for transformer)")
    ap.add_argument("--seq", type=int, default=32, help="transformer: tokens per sequence")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, models and rounds")
    args = ap.parse_args()
    if args.quick:
        args.max_bytes, args.rounds, args.steps, args.budget, args.scale = 1 << 20, 1, 4, 0.02, 0.1
    local = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1")))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))
    dist.init_process_group("gcoll")
    RANK, SIZE = dist.get_rank(), dist.get_world_size()
    GLOO = dist.new_group(backend="gloo")
    say("torch_bench: %d ranks, torch %s, gcoll over %s, host %s, %s UTC" % (
        SIZE, torch.__version__, dist.distributed_c10d._get_default_group().transport(), socket.gethostname(),
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")))
    if args.part in ("coll", "all"):
        coll(args)
    if args.part in ("ddp", "all"):
        ddp(args)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
