"""The gcoll Python package's vector collectives, point-to-point, groups, int16/uint16, float8
(raw uint8 arrays with dtype= named) and PREMUL_SUM on NumPy arrays, under mpirun at any rank
count, against references each rank computes from every rank's regenerated input: uneven counts
with zeros and a single non-zero peer, displacements with gaps, in place, every root, and groups
whose sends and receives are listed in opposite orders on the two sides.
Run: mpirun -np 3 /usr/bin/python3 tests/python/test_v.py [SECTION...]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gcoll  # noqa: E402
import harness as h  # noqa: E402
from harness import check, raises  # noqa: E402

FP8 = ("float8_e4m3", "float8_e5m2")
# the element types the data-moving collectives are tried on; float8 as uint8 codes
MOVE_DTYPES = [np.int32, np.float64, np.int16, np.uint16, np.uint8, "float8_e4m3"]
SENTINEL = 77  # where no block lands


def count_sets(n, seed):
    """Per-rank counts: random with zeros, one non-zero rank, all zero, all equal."""
    rng = np.random.default_rng([seed, n])
    single = [0] * n
    single[n - 1] = 9
    return [list(rng.integers(0, 7, size=n)), single, [0] * n, [4] * n, list(rng.integers(0, 40, size=n))]


def gapped(counts, rng):
    """Displacements with gaps between blocks, in reversed rank order."""
    d, off = [0] * len(counts), 0
    for r in reversed(range(len(counts))):
        off += int(rng.integers(0, 3))
        d[r] = off
        off += counts[r]
    return d


def offsets(counts, displs):
    return displs if displs is not None else list(np.cumsum([0] + list(counts))[:-1])


def block(owner, n, dt, seed):
    """A block of n elements: (the array to pass, dtype= to name, the numpy values); float8 as
    uint8 codes of small integers, which both formats hold exactly."""
    if isinstance(dt, str):
        v = h.data(owner, n, np.int8, seed).astype(np.float64) % 5 - 2
        return h.fp8_codes(v, dt), dt, v
    x = h.data(owner, n, dt, seed)
    return x, None, x


def empty(n, dt):
    return np.full(n, SENTINEL, dtype=np.uint8 if isinstance(dt, str) else dt)


def expect_out(total, pieces, dt):
    """The receiver's whole output: sentinels where no block lands, each (offset, array)."""
    want = empty(total, dt)
    for off, arr in pieces:
        want[off:off + arr.size] = arr
    return want


def dname(dt):
    return dt if isinstance(dt, str) else np.dtype(dt).name


def test_allgatherv(c):
    n, me = c.size, c.rank
    rng = np.random.default_rng(5)
    seed = 0
    for dt in MOVE_DTYPES:
        for counts in count_sets(n, 11):
            seed += 1
            blocks = [block(r, counts[r], dt, seed) for r in range(n)]
            x, named = blocks[me][0], blocks[me][1]
            what = "allgatherv %s %s" % (dname(dt), counts)
            got = c.allgatherv(x, counts, dtype=named)
            check(np.array_equal(got, np.concatenate([b[0] for b in blocks])), what)
            displs = gapped(counts, rng)
            ext = max([d + k for d, k in zip(displs, counts)] + [0])
            want = expect_out(ext + 2, [(displs[r], blocks[r][0]) for r in range(n)], dt)
            out = empty(ext + 2, dt)
            c.allgatherv(x, np.array(counts, dtype=np.int64), displs, out=out, dtype=named)
            check(np.array_equal(out, want), what + " displs %s" % displs)
            buf = empty(ext + 2, dt)
            buf[displs[me]:displs[me] + counts[me]] = x
            got = c.allgatherv(buf, counts, displs, out=buf, dtype=named)
            check(got is buf and np.array_equal(buf, want), what + " in place")
            got = c.iallgatherv(x, counts, dtype=named, priority=1, name="agv").wait()
            check(np.array_equal(got, np.concatenate([b[0] for b in blocks])), what + " nonblocking")


def test_reduce_scatterv(c):
    n, me = c.size, c.rank
    seed = 100
    for dt in [np.int32, np.float32, np.float64, np.int16, np.uint16]:
        for op in ["SUM", "PROD", "MIN", "MAX", "AVG"]:
            for counts in count_sets(n, 12)[:3]:
                seed += 1
                total = sum(counts)
                kind = "prod" if op == "PROD" else "any"
                xs = [h.data(r, total, dt, seed, kind) for r in range(n)]
                full = h.reduce_ref(xs, op, dt)
                lo = sum(counts[:me])
                mine = full[lo:lo + counts[me]]
                what = "reduce_scatterv %s %s %s" % (np.dtype(dt).name, op, counts)
                got = c.reduce_scatterv(xs[me], counts, getattr(gcoll, op))
                check(got.size == counts[me] and h.close(got, mine, dt, n), what)
                buf = xs[me].copy()
                got = c.reduce_scatterv(buf, counts, getattr(gcoll, op), out=buf)
                check(got.size == counts[me] and h.close(got, mine, dt, n), what + " in place")
                got = c.ireduce_scatterv(xs[me], counts, getattr(gcoll, op), name="rsv").wait()
                check(h.close(got, mine, dt, n), what + " nonblocking")


def test_alltoallv(c):
    n, me = c.size, c.rank
    rng = np.random.default_rng(7)
    seed = 200
    for dt in MOVE_DTYPES:
        mats = [np.random.default_rng([13, k, n]).integers(0, 6, size=(n, n)) for k in range(2)]
        one = np.zeros((n, n), dtype=np.int64)
        one[:, n - 1] = 5  # every rank sends to the last only
        for m in mats + [one, np.zeros((n, n), dtype=np.int64)]:
            seed += 1
            sc, rc = [int(v) for v in m[me]], [int(v) for v in m[:, me]]
            blocks = {(q, p): block(q * 64 + p, int(m[q, p]), dt, seed) for q in range(n) for p in range(n)}
            named = blocks[(me, 0)][1]
            x = np.concatenate([blocks[(me, p)][0] for p in range(n)])
            what = "alltoallv %s %s" % (dname(dt), m.tolist())
            got = c.alltoallv(x, sc, rc, dtype=named)
            check(np.array_equal(got, np.concatenate([blocks[(q, me)][0] for q in range(n)])), what)
            # gaps on both sides, the receive side in reversed order
            sd, rd = gapped(sc[::-1], rng)[::-1], gapped(rc, rng)
            xs = empty(max([a + b for a, b in zip(sd, sc)] + [0]), dt)
            for p in range(n):
                xs[sd[p]:sd[p] + sc[p]] = blocks[(me, p)][0]
            ext = max([a + b for a, b in zip(rd, rc)] + [0])
            out = empty(ext + 1, dt)
            req = c.ialltoallv(xs, np.array(sc), np.array(rc), sd, rd, out=out, dtype=named)
            req.wait()
            want = expect_out(ext + 1, [(rd[q], blocks[(q, me)][0]) for q in range(n)], dt)
            check(np.array_equal(out, want), what + " displs, nonblocking")
            # in place: a symmetric matrix, the same displacements
            s = m + m.T
            cnt = [int(v) for v in s[me]]
            sym = {(q, p): block(q * 64 + p + 4096, int(s[q, p]), dt, seed) for q in range(n) for p in range(n)}
            buf = np.concatenate([sym[(me, p)][0] for p in range(n)])
            c.alltoallv(buf, cnt, cnt, out=buf, dtype=named)
            check(np.array_equal(buf, np.concatenate([sym[(q, me)][0] for q in range(n)])), what + " in place")


def test_gather_scatter(c):
    n, me = c.size, c.rank
    seed = 300
    for dt in [np.int32, np.float32, np.int16, "float8_e5m2"]:
        for count in [0, 1, 7, 1000]:
            for root in range(n):
                seed += 1
                blocks = [block(r, count, dt, seed) for r in range(n)]
                x, named = blocks[me][0], blocks[me][1]
                what = "%s count %d root %d" % (dname(dt), count, root)
                got = c.gather(x, root, dtype=named)
                if me == root:
                    check(got.shape == (n, count) and np.array_equal(got.reshape(-1),
                                                                     np.concatenate([b[0] for b in blocks])),
                          "gather " + what)
                    buf = empty(n * count, dt)
                    buf[me * count:(me + 1) * count] = x
                    c.gather(buf, root, out=buf, dtype=named)
                    check(np.array_equal(buf, np.concatenate([b[0] for b in blocks])), "gather in place " + what)
                else:
                    check(got is None, "gather away from the root returns None")
                    c.gather(x, root, dtype=named)
                req = c.igather(x, root, dtype=named)
                got = req.wait()
                check(me != root or np.array_equal(got.reshape(-1), np.concatenate([b[0] for b in blocks])),
                      "igather " + what)
                # scatter: the root's n blocks, block r to rank r
                whole = np.concatenate([b[0] for b in blocks]) if me == root else None
                out = empty(count, dt)
                got = c.scatter(whole, root, out=out if me != root else None, dtype=named)
                check(np.array_equal(got, blocks[me][0]), "scatter " + what)
                if me == root:
                    buf = whole.copy()
                    got = c.scatter(buf, root, out=buf, dtype=named)
                    check(np.array_equal(got, x) and np.array_equal(buf, whole), "scatter in place " + what)
                else:
                    out = empty(count, dt)
                    c.scatter(None, root, out=out, dtype=named)
                    check(np.array_equal(out, x), "scatter (again) " + what)
                out = empty(count, dt)
                got = c.iscatter(whole, root, out=out, dtype=named).wait()
                check(np.array_equal(got, blocks[me][0]), "iscatter " + what)


def test_gatherv_scatterv(c):
    n, me = c.size, c.rank
    rng = np.random.default_rng(9)
    seed = 400
    for dt in [np.float64, np.uint16, "float8_e4m3"]:
        for counts in count_sets(n, 14):
            for root in range(n):
                seed += 1
                blocks = [block(r, counts[r], dt, seed) for r in range(n)]
                x, named = blocks[me][0], blocks[me][1]
                displs = gapped(counts, rng)
                ext = max([d + k for d, k in zip(displs, counts)] + [0])
                want = expect_out(ext, [(displs[r], blocks[r][0]) for r in range(n)], dt)
                what = "%s %s root %d" % (dname(dt), counts, root)
                # counts and displs are read at the root only
                mine = (counts, displs) if me == root else (None, None)
                out = empty(ext, dt) if me == root else None
                got = c.gatherv(x, *mine, root=root, out=out, dtype=named)
                check((got is None) if me != root else np.array_equal(got, want), "gatherv " + what)
                got = c.igatherv(x, counts, root=root, dtype=named).wait()
                check(me != root or np.array_equal(got, np.concatenate([b[0] for b in blocks])), "igatherv " + what)
                if me == root:
                    buf = empty(ext, dt)
                    buf[displs[me]:displs[me] + counts[me]] = x
                    c.gatherv(buf, counts, displs, root, out=buf, dtype=named)
                    check(np.array_equal(buf, want), "gatherv in place " + what)
                else:
                    c.gatherv(x, root=root, dtype=named)
                # scatterv: the same layout, the other way
                out = empty(counts[me], dt)
                got = c.scatterv(want if me == root else None, *mine, root=root, out=out, dtype=named)
                check(np.array_equal(got, x), "scatterv " + what)
                if me == root:
                    buf = want.copy()
                    got = c.scatterv(buf, counts, displs, root, out=buf, dtype=named)
                    check(np.array_equal(got, x) and np.array_equal(buf, want), "scatterv in place " + what)
                else:
                    c.scatterv(None, root=root, out=empty(counts[me], dt), dtype=named)
                got = c.iscatterv(want if me == root else None, *mine, root=root,
                                  out=empty(counts[me], dt), dtype=named).wait()
                check(np.array_equal(got, x), "iscatterv " + what)


def test_p2p(c):
    n, me = c.size, c.rank
    right, left = (me + 1) % n, (me - 1) % n
    for dt in [np.float32, np.int16, np.uint16, "float8_e4m3"]:
        for count in [0, 1, 333, 70000]:
            seed = 500 + count
            x, named, _ = block(me, count, dt, seed)
            want = block(left, count, dt, seed)[0]
            what = "%s %d" % (dname(dt), count)
            # ring, nonblocking: receive from the left, send to the right
            buf = empty(count, dt)
            rr = c.irecv(buf, left, dtype=named, name="ring")
            rs = c.isend(x, right, priority=1, dtype=named)
            check(rr.wait() is buf and np.array_equal(buf, want), "ring isend/irecv " + what)
            check(rs.wait() is None, "isend's result is None")
            # blocking, in an order that cannot deadlock: even ranks send first
            if n > 1:
                buf = empty(count, dt)
                if me % 2 == 0:
                    c.send(x, right, dtype=named)
                    c.recv(buf, left, dtype=named)
                else:
                    c.recv(buf, left, dtype=named)
                    c.send(x, right, dtype=named)
                check(np.array_equal(buf, want), "ring send/recv " + what)
    # messages between a pair match in order, whatever their sizes
    if n > 1:
        sizes = [5, 0, 1000, 3]
        if me == 0:
            for k, sz in enumerate(sizes):
                c.send(np.full(sz, k, dtype=np.int64), 1)
        elif me == 1:
            for k, sz in enumerate(sizes):
                got = c.recv(np.zeros(sz, dtype=np.int64), 0)
                check(np.all(got == k), "message %d of a pair in order" % k)
    # a message to oneself, in a group
    x = np.arange(10, dtype=np.float64) + me
    buf = np.zeros(10)
    with gcoll.group():
        c.send(x, me)
        c.recv(buf, me)
    check(np.array_equal(buf, x), "a message to oneself")
    raises(gcoll.InvalidArgError, lambda: c.send(x, n + 2), "peer")


def test_groups(c):
    n, me = c.size, c.rank
    peers = [p for p in range(n)]
    xs = {p: np.arange(100, dtype=np.int32) * (me + 1) + p for p in peers}
    bufs = {p: np.zeros(100, dtype=np.int32) for p in peers}
    # every pair both ways, blocking calls; even ranks list sends first, odd ones receives first,
    # and the peers in opposite orders
    with gcoll.group():
        if me % 2 == 0:
            for p in peers:
                c.send(xs[p], p)
            for p in reversed(peers):
                c.recv(bufs[p], p)
        else:
            for p in reversed(peers):
                c.recv(bufs[p], p)
            for p in peers:
                c.send(xs[p], p)
    for p in peers:
        check(np.array_equal(bufs[p], np.arange(100, dtype=np.int32) * (p + 1) + me),
              "group of opposite orders: from %d" % p)
    # the same with nonblocking calls, waited for after the end, and nested groups
    bufs = {p: np.zeros(100, dtype=np.int32) for p in peers}
    gcoll.group_start()
    reqs = []
    gcoll.group_start()
    for p in (reversed(peers) if me % 2 else peers):
        reqs.append(c.isend(xs[p], p))
    gcoll.group_end()  # the inner end launches nothing
    for p in (peers if me % 2 else reversed(peers)):
        reqs.append(c.irecv(bufs[p], p))
    held = c.iallreduce(np.ones(4, dtype=np.float32))  # a small allreduce waits for the end, to be fused
    if n > 1:  # alone, nothing to fuse: it starts at once
        raises(gcoll.InvalidUsageError, held.wait, "group")
    gcoll.group_end()
    check(np.array_equal(held.wait(), np.full(4, n, dtype=np.float32)), "a held allreduce after the end")
    gcoll.wait_all(reqs)
    for p in peers:
        check(np.array_equal(bufs[p], np.arange(100, dtype=np.int32) * (p + 1) + me), "nested group from %d" % p)
    # 64 small allreduces in a group (fused), blocking and nonblocking ones mixed
    ins = [h.data(me, 1024, np.float32, 600 + k) for k in range(64)]
    refs = [h.reduce_ref([h.data(r, 1024, np.float32, 600 + k) for r in range(n)], "SUM", np.float32)
            for k in range(64)]
    outs = [np.empty(1024, dtype=np.float32) for _ in range(64)]
    reqs = {}
    with gcoll.group():
        for k in range(64):
            if k % 3 == 0:
                reqs[k] = c.iallreduce(ins[k], gcoll.SUM, out=outs[k])
            else:
                c.allreduce(ins[k], gcoll.SUM, out=outs[k])
    for k, r in reqs.items():
        r.wait()
    check(all(h.close(outs[k], refs[k], np.float32, n) for k in range(64)), "64 allreduces in a group")
    # a collective and point-to-point in one group
    got = np.zeros(3, dtype=np.int64)
    with gcoll.group():
        total = c.allreduce(np.full(3, me, dtype=np.int64))
        c.send(np.full(3, me, dtype=np.int64), (me + 1) % n)
        c.recv(got, (me - 1) % n)
    check(np.all(total == n * (n - 1) // 2) and np.all(got == (me - 1) % n), "allreduce and p2p in a group")
    # the body raises: the group still ends, and the exception is the body's
    try:
        with gcoll.group():
            c.allreduce(np.ones(4, dtype=np.float32))
            raise KeyError("body")
    except KeyError:
        check(True, "a group body's exception comes through")
    check(np.array_equal(c.allreduce(np.ones(2, dtype=np.int32)), np.full(2, n)), "usable after a failed group body")
    raises(gcoll.InvalidUsageError, gcoll.group_end, "group")


def test_dtypes(c):
    n, me = c.size, c.rank
    check(gcoll.DType.INT16.itemsize == 2 and gcoll.DType.UINT16.itemsize == 2, "int16 sizes")
    check(gcoll.DType.FLOAT8_E4M3.itemsize == 1 and gcoll.DType.FLOAT8_E5M2.itemsize == 1, "float8 sizes")
    check(gcoll.DType.FLOAT8_E4M3.c_name == "float8_e4m3" and gcoll.dtype_of("float8_e5m2") == 13, "float8 names")
    check(gcoll.dtype_of(np.int16) == gcoll.DType.INT16 and gcoll.dtype_of(np.uint16) == gcoll.DType.UINT16,
          "numpy int16/uint16")
    seed = 700
    for dt in [np.int16, np.uint16]:
        for op in ["SUM", "PROD", "MIN", "MAX", "AVG"]:
            for count in [0, 1, 13, 4099]:
                seed += 1
                kind = "prod" if op == "PROD" else "any"
                xs = [h.data(r, count, dt, seed, kind) for r in range(n)]
                ref = h.reduce_ref(xs, op, dt)
                got = c.allreduce(xs[me], getattr(gcoll, op))
                check(got.dtype == dt and np.array_equal(got, ref), "allreduce %s %s %d" % (np.dtype(dt).name, op, count))
    # float8: small integers, whose sums over 4 ranks every format holds exactly; the codes
    # decoded through the table built from the formats' definition
    for fmt in FP8:
        table = h.fp8_table(fmt)
        for op in ["SUM", "MIN", "MAX"]:
            vals = [np.random.default_rng([800, r]).integers(-2, 3, size=257).astype(np.float64) for r in range(n)]
            ref = h.reduce_ref(vals, op, np.float64)
            codes = h.fp8_codes(vals[me], fmt)
            got = c.allreduce(codes, getattr(gcoll, op), dtype=fmt)
            check(got.dtype == np.uint8 and np.array_equal(table[got], ref), "allreduce %s %s" % (fmt, op))
            req = c.iallreduce(codes, getattr(gcoll, op), out=codes, dtype=fmt)
            check(np.array_equal(table[req.wait()], ref), "iallreduce in place %s %s" % (fmt, op))
        x = h.fp8_codes(np.arange(8) % 5 - 2, fmt)
        got = c.allgather(x, dtype=fmt)
        check(np.array_equal(got, np.stack([x] * n)), "allgather %s" % fmt)
        buf = x.copy() if me == 0 else np.zeros(8, dtype=np.uint8)
        c.bcast(buf, 0, dtype=fmt)
        check(np.array_equal(buf, x), "bcast %s" % fmt)
    # bfloat16 from NumPy: raw uint16 with the type named
    v = (np.arange(16, dtype=np.float32) + me).view(np.uint32)
    raw = (v >> 16).astype(np.uint16)  # exact: small integers keep their low 16 bits zero
    got = c.allreduce(raw, dtype="bfloat16")
    want = sum(np.arange(16, dtype=np.float32) + r for r in range(n))
    check(np.array_equal((got.astype(np.uint32) << 16).view(np.float32), want), "bfloat16 as raw uint16")
    # dtype= only renames raw integers of the type's size
    raises(gcoll.InvalidArgError, lambda: c.allreduce(np.ones(4, dtype=np.float32), dtype="float8_e4m3"), "dtype")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(np.ones(4, dtype=np.uint16), dtype="float8_e4m3"), "dtype")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(np.ones(4, dtype=np.uint8), dtype="float9"), "dtype")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(np.ones(4, dtype=np.uint8), dtype="float8_e4m3",
                                                      out=np.ones(4, dtype=np.int16)), "out")


def test_premul(c):
    n, me = c.size, c.rank
    scale = [0.5 * (r + 1) for r in range(n)]  # each rank its own scalar
    for dt in [np.float32, np.float64, np.float16]:
        for count in [0, 1, 1000]:
            xs = [h.data(r, count, dt, 900 + count) for r in range(n)]
            ref = sum(scale[r] * xs[r].astype(np.float64) for r in range(n)) if count else np.zeros(0)
            what = "%s %d" % (np.dtype(dt).name, count)
            got = c.iallreduce(xs[me], gcoll.PREMUL_SUM, premul=scale[me]).wait()
            check(h.close(got, ref, dt, 2 * n), "iallreduce PREMUL_SUM " + what)
            got = c.allreduce(xs[me], gcoll.PREMUL_SUM, premul=scale[me])
            check(h.close(got, ref, dt, 2 * n), "allreduce PREMUL_SUM (through the nonblocking call) " + what)
            xs2 = [h.data(r, count * n, dt, 950 + count) for r in range(n)]
            ref2 = sum(scale[r] * xs2[r].astype(np.float64) for r in range(n))
            got = c.ireduce_scatter(xs2[me], gcoll.PREMUL_SUM, premul=scale[me]).wait()
            check(h.close(got, ref2[me * count:(me + 1) * count], dt, 2 * n), "ireduce_scatter PREMUL_SUM " + what)
            got = c.ireduce(xs[me], gcoll.PREMUL_SUM, root=n - 1, premul=scale[me]).wait()
            check(me != n - 1 or h.close(got, ref, dt, 2 * n), "ireduce PREMUL_SUM " + what)
    counts = count_sets(n, 15)[0]
    xs = [h.data(r, sum(counts), np.float64, 990) for r in range(n)]
    ref = sum(scale[r] * xs[r] for r in range(n))
    lo = sum(counts[:me])
    got = c.ireduce_scatterv(xs[me], counts, gcoll.PREMUL_SUM, premul=scale[me]).wait()
    check(h.close(got, ref[lo:lo + counts[me]], np.float64, 2 * n), "ireduce_scatterv PREMUL_SUM")
    # float8: the scaled small integers stay exact
    for fmt in FP8:
        vals = [np.random.default_rng([990, r]).integers(-2, 3, size=64).astype(np.float64) for r in range(n)]
        ref = sum(0.5 * v for v in vals)
        got = c.iallreduce(h.fp8_codes(vals[me], fmt), gcoll.PREMUL_SUM, premul=0.5, dtype=fmt).wait()
        check(np.array_equal(h.fp8_table(fmt)[got], ref), "iallreduce PREMUL_SUM %s" % fmt)
    x = np.ones(4, dtype=np.float32)
    raises(gcoll.InvalidArgError, lambda: c.iallreduce(x, gcoll.PREMUL_SUM), "premul")
    raises(gcoll.InvalidArgError, lambda: c.iallreduce(x, gcoll.SUM, premul=2.0), "premul")
    raises(gcoll.InvalidArgError, lambda: c.iallreduce(np.ones(4, dtype=np.int32), gcoll.PREMUL_SUM, premul=2.0),
           "PREMUL_SUM")


def test_errors(c):
    n = c.size
    x = np.ones(4, dtype=np.float32)
    raises(gcoll.InvalidArgError, lambda: c.allgatherv(x, [4] * (n + 1)), "counts", "entries")
    raises(gcoll.InvalidArgError, lambda: c.allgatherv(x, [-1] + [4] * (n - 1)), "counts[0]", "negative")
    raises(gcoll.InvalidArgError, lambda: c.allgatherv(x, np.full(n, 4.0)), "counts", "float64")
    raises(gcoll.InvalidArgError, lambda: c.allgatherv(x, [3] * n), "counts[%d]" % c.rank)
    raises(gcoll.InvalidArgError, lambda: c.allgatherv(x, [4] * n, out=np.zeros(4 * n - 1, dtype=np.float32)),
           "out", "at least")
    raises(gcoll.InvalidArgError, lambda: c.reduce_scatterv(np.ones(n + 1), [1] * n), "x", "add up")
    raises(gcoll.InvalidArgError, lambda: c.alltoallv(x, [4] * n, None), "recvcounts")
    raises(gcoll.InvalidArgError, lambda: c.alltoallv(x, [2] * n, [2] * n, sdispls=[3] * n), "x", "sdispls")
    if n > 1:
        raises(gcoll.InvalidArgError, lambda: c.scatter(None, root=(c.rank + 1) % n), "out")
    raises(gcoll.InvalidArgError, lambda: c.gatherv(x, None, root=c.rank), "counts")


SECTIONS = {"dtypes": test_dtypes, "p2p": test_p2p, "groups": test_groups, "premul": test_premul,
            "errors": test_errors, "allgatherv": test_allgatherv, "reduce_scatterv": test_reduce_scatterv,
            "alltoallv": test_alltoallv, "gather_scatter": test_gather_scatter,
            "gatherv_scatterv": test_gatherv_scatterv}


def main():
    gcoll.init()
    c = gcoll.comm_world()
    h.set_rank(c.rank)
    names = sys.argv[1:] or list(SECTIONS)

    def body():
        # each section on its own, so that one type the library lacks hides no other section
        # (a failure of that kind is the same on every rank)
        for name in names:
            try:
                SECTIONS[name](c)
            except gcoll.GcollError as e:
                check(False, "section %s: %s" % (name, e))

    rc = h.run("python-v", c, body)
    gcoll.finalize()
    sys.exit(rc)


if __name__ == "__main__":
    main()
