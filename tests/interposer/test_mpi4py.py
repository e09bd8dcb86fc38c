"""The MPI interposer under mpi4py (run by tests/interposer/run.sh with LD_PRELOAD): mpi4py's
buffer calls on numpy arrays, in place or not, on the world, a split and a dup, checked against
closed forms computed here. Prints, per rank, the calls it expects taken over (all of them, none
handed to MPI) in the interposer's report format ("EXPECT rank=R ...") and
"RESULT mpi4py rank=R passed=N failed=N"."""
import sys

import numpy as np
from mpi4py import MPI

CALLS = ["allreduce", "iallreduce", "reduce_scatter_block", "allgather", "bcast", "reduce", "barrier",
         "ireduce_scatter_block", "iallgather", "ibcast", "ireduce", "ibarrier", "allgatherv", "iallgatherv",
         "alltoall", "ialltoall", "alltoallv", "ialltoallv", "reduce_scatter", "ireduce_scatter", "gather", "igather",
         "gatherv", "igatherv", "scatter", "iscatter", "scatterv", "iscatterv"]
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
    run_vector(comm, label)


def run_vector(comm, label):
    """The vector and rooted calls with uneven counts (rank r owns r % 3 * 5 + 1 elements, one
    rank none) and mpi4py's buffer specifications [array, counts, displacements, type]."""
    rank, size = comm.rank, comm.size
    own = [0 if r == size - 1 and size > 1 else r % 3 * 5 + 1 for r in range(size)]
    displs = list(np.cumsum([0] + own[:-1]))

    def block(r):
        return np.arange(own[r], dtype=np.float64) + 1000 * r

    whole = np.concatenate([block(r) for r in range(size)])
    out = np.full(sum(own), -1.0)
    comm.Allgatherv(block(rank), [out, own, displs, MPI.DOUBLE])
    taken["allgatherv"] += 1
    check(np.array_equal(out, whole), f"{label} Allgatherv")
    # alltoallv: r sends (r + p) % 4 elements to p, values 100 * r + p
    sc = [(rank + p) % 4 for p in range(size)]
    rcnt = [(p + rank) % 4 for p in range(size)]
    send = np.concatenate([np.full(sc[p], 100 * rank + p, np.int32) for p in range(size)] + [np.zeros(0, np.int32)])
    recv = np.full(sum(rcnt), -1, np.int32)
    comm.Alltoallv([send, sc, list(np.cumsum([0] + sc[:-1])), MPI.INT],
                   [recv, rcnt, list(np.cumsum([0] + rcnt[:-1])), MPI.INT])
    taken["alltoallv"] += 1
    want = np.concatenate([np.full(rcnt[p], 100 * p + rank, np.int32) for p in range(size)] + [np.zeros(0, np.int32)])
    check(np.array_equal(recv, want), f"{label} Alltoallv")
    root = size // 2
    out = np.full(sum(own), -1.0) if rank == root else None
    comm.Gatherv(block(rank), [out, own, displs, MPI.DOUBLE] if rank == root else None, root=root)
    taken["gatherv"] += 1
    check(rank != root or np.array_equal(out, whole), f"{label} Gatherv")
    mine = np.full(own[rank], -1.0)
    comm.Scatterv([whole, own, displs, MPI.DOUBLE] if rank == root else None, mine, root=root)
    taken["scatterv"] += 1
    check(np.array_equal(mine, block(rank)), f"{label} Scatterv")
    vals = np.arange(sum(own), dtype=np.int16) + rank
    red = np.zeros(own[rank], np.int16)
    comm.Reduce_scatter(vals, red, recvcounts=own, op=MPI.SUM)
    taken["reduce_scatter"] += 1
    start = sum(own[:rank])
    want = (np.arange(start, start + own[rank]) * size + size * (size - 1) // 2).astype(np.int16)
    check(np.array_equal(red, want), f"{label} Reduce_scatter int16")
    a2a = np.repeat(np.arange(size, dtype=np.float32) + 10 * rank, 3)
    got = np.empty_like(a2a)
    req = comm.Ialltoall(a2a, got)
    taken["ialltoall"] += 1
    req.Wait()
    check(np.array_equal(got, np.repeat(np.arange(size, dtype=np.float32) * 10 + rank, 3)), f"{label} Ialltoall")


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
