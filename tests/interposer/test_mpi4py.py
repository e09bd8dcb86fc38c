"""The MPI interposer under mpi4py (run by tests/interposer/run.sh with LD_PRELOAD): mpi4py's
buffer calls on numpy arrays, in place or not, on the world, a split and a dup, checked against
closed forms computed here. Prints, per rank, the calls it expects taken over (all of them, none
handed to MPI) in the interposer's report format ("EXPECT rank=R ...") and
"RESULT mpi4py rank=R passed=N failed=N"."""
import sys

import numpy as np
from mpi4py import MPI

CALLS = ["allreduce", "iallreduce", "reduce_scatter_block", "allgather", "bcast", "reduce", "barrier"]
taken = dict.fromkeys(CALLS, 0)
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL rank {MPI.COMM_WORLD.rank}: {what}", file=sys.stderr)


def val(dtype, rank, n):
    """Elements of rank: 1..3, negative at odd positions for signed types."""
    v = 1 + (rank * 7 + np.arange(n)) % 3
    if np.issubdtype(dtype, np.signedinteger) or np.issubdtype(dtype, np.floating):
        v = np.where(np.arange(n) % 2 == 1, -v, v)
    return v.astype(dtype)


OPS = {"SUM": (MPI.SUM, np.add), "PROD": (MPI.PROD, np.multiply), "MIN": (MPI.MIN, np.minimum),
       "MAX": (MPI.MAX, np.maximum)}
DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64]


def ref(dtype, op, size, n, offset=0):
    acc = val(dtype, 0, offset + n)[offset:]
    for r in range(1, size):
        acc = OPS[op][1](acc, val(dtype, r, offset + n)[offset:])
    return acc


def run(comm, label):
    rank, size = comm.rank, comm.size
    for dtype in DTYPES:
        for op in OPS:
            mop = OPS[op][0]
            n = 1000
            out = np.empty(n, dtype)
            comm.Allreduce(val(dtype, rank, n), out, op=mop)
            taken["allreduce"] += 1
            check(np.array_equal(out, ref(dtype, op, size, n)), f"{label} Allreduce {dtype.__name__} {op}")
            buf = val(dtype, rank, n)
            comm.Allreduce(MPI.IN_PLACE, buf, op=mop)
            taken["allreduce"] += 1
            check(np.array_equal(buf, ref(dtype, op, size, n)), f"{label} Allreduce in place {dtype.__name__} {op}")
            bufs = [val(dtype, rank, n - k) for k in range(3)]
            reqs = [comm.Iallreduce(MPI.IN_PLACE, b, op=mop) for b in bufs]
            taken["iallreduce"] += 3
            MPI.Request.Waitall(reqs)
            check(all(np.array_equal(b, ref(dtype, op, size, n - k)) for k, b in enumerate(bufs)),
                  f"{label} Iallreduce {dtype.__name__} {op}")
            rc = 17
            out = np.empty(rc, dtype)
            comm.Reduce_scatter_block(val(dtype, rank, rc * size), out, op=mop)
            taken["reduce_scatter_block"] += 1
            check(np.array_equal(out, ref(dtype, op, size, rc, rank * rc)),
                  f"{label} Reduce_scatter_block {dtype.__name__} {op}")
            root = size - 1
            out = np.empty(n, dtype) if rank == root else None
            comm.Reduce(val(dtype, rank, n), out, op=mop, root=root)
            taken["reduce"] += 1
            check(rank != root or np.array_equal(out, ref(dtype, op, size, n)), f"{label} Reduce {dtype.__name__} {op}")
    req = comm.Iallreduce(MPI.IN_PLACE, np.ones(10), op=MPI.SUM)
    taken["iallreduce"] += 1
    while not req.Test():
        pass
    mine = np.arange(5, dtype=np.float64) + 100 * rank
    allv = np.empty(5 * size)
    comm.Allgather(mine, allv)
    taken["allgather"] += 1
    check(np.array_equal(allv, np.concatenate([np.arange(5) + 100 * r for r in range(size)])), f"{label} Allgather")
    for root in range(size):
        b = np.arange(3000, dtype=np.int32) * (root + 1) if rank == root else np.zeros(3000, np.int32)
        comm.Bcast(b, root=root)
        taken["bcast"] += 1
        check(np.array_equal(b, np.arange(3000, dtype=np.int32) * (root + 1)), f"{label} Bcast root {root}")
    comm.Barrier()
    taken["barrier"] += 1


world = MPI.COMM_WORLD
run(world, "world")
split = world.Split(world.rank % 2, -world.rank)
run(split, "split")
dup = split.Dup()
run(dup, "dup")
dup.Free()
split.Free()
print(f"EXPECT rank={world.rank} " + " ".join(f"{c}={taken[c]}/0" for c in CALLS), flush=True)
print(f"RESULT mpi4py rank={world.rank} passed={passed} failed={failed}", flush=True)
