"""The gcoll Python package on NumPy arrays, under mpirun at any rank count: every collective,
blocking and nonblocking, in place and not, on every dtype numpy has, against references each
rank computes from every rank's regenerated input; communicators, requests, the gradient
session, introspection, and errors raised with the C library's message.
Run: mpirun -np 3 /usr/bin/python3 tests/python/test_gcoll.py"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gcoll  # noqa: E402
import harness as h  # noqa: E402
from harness import check, raises  # noqa: E402

DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]
OPS = ["SUM", "PROD", "MIN", "MAX", "AVG"]
COUNTS = [0, 1, 13, 4099]


def all_inputs(n, count, dtype, seed, kind="any"):
    return [h.data(r, count, dtype, seed, kind) for r in range(n)]


def test_allreduce(c):
    n, me = c.size, c.rank
    seed = 0
    for dt in DTYPES:
        for op in OPS:
            for count in COUNTS:
                seed += 1
                kind = "prod" if op == "PROD" else "any"
                xs = all_inputs(n, count, dt, seed, kind)
                ref = h.reduce_ref(xs, op, dt)
                what = "allreduce %s %s n=%d" % (np.dtype(dt).name, op, count)
                x = xs[me].copy()
                got = c.allreduce(x, getattr(gcoll, op))
                check(got.dtype == x.dtype and got.shape == x.shape, what + ": shape/dtype")
                check(h.close(got, ref, dt, n), what)
                check(np.array_equal(x, xs[me]), what + ": input untouched")
                y = xs[me].copy()
                got = c.allreduce(y, getattr(gcoll, op), out=y)  # in place
                check(got is y and h.close(y, ref, dt, n), what + " in place")
                req = c.iallreduce(xs[me].copy(), getattr(gcoll, op), priority=me, name="t%d" % seed)
                check(h.close(req.wait(), ref, dt, n), what + " nonblocking")


def test_others(c):
    n, me = c.size, c.rank
    seed = 1000
    for dt in [np.int32, np.uint8, np.float16, np.float32, np.float64, np.int64]:
        for count in [0, 1, 5, 1031]:
            seed += 1
            name = np.dtype(dt).name
            # reduce-scatter: block r of the sum goes to rank r
            xs = all_inputs(n, count * n, dt, seed)
            full = h.reduce_ref(xs, "SUM", dt)
            mine = full[me * count:(me + 1) * count]
            got = c.reduce_scatter(xs[me].reshape(n, count) if count else xs[me], gcoll.SUM)
            check(h.close(got.reshape(-1), mine, dt, n), "reduce_scatter %s %d" % (name, count))
            buf = xs[me].copy()
            got = c.reduce_scatter(buf, gcoll.SUM, out=buf)
            check(got.size == count and h.close(got, mine, dt, n), "reduce_scatter in place %s %d" % (name, count))
            got = c.ireduce_scatter(xs[me], gcoll.MAX, algorithm="ring").wait()
            check(np.array_equal(got.reshape(-1), np.maximum.reduce(xs)[me * count:(me + 1) * count]),
                  "ireduce_scatter ring MAX %s %d" % (name, count))
            # allgather: out[r] is rank r's input
            xs = all_inputs(n, count, dt, seed + 500)
            got = c.allgather(xs[me])
            check(got.shape == (n, count) and np.array_equal(got, np.stack(xs)), "allgather %s %d" % (name, count))
            buf = np.zeros(n * count, dtype=dt)
            buf[me * count:(me + 1) * count] = xs[me]
            c.allgather(buf, out=buf)
            check(np.array_equal(buf, np.concatenate(xs)), "allgather in place %s %d" % (name, count))
            got = c.iallgather(xs[me], priority=2).wait()
            check(np.array_equal(got, np.stack(xs)), "iallgather %s %d" % (name, count))
            # bcast and reduce from every root
            for root in range(n):
                buf = xs[me].copy()
                c.bcast(buf, root)
                check(np.array_equal(buf, xs[root]), "bcast root %d %s %d" % (root, name, count))
                buf = xs[me].copy()
                c.ibcast(buf, root).wait()
                check(np.array_equal(buf, xs[root]), "ibcast root %d %s %d" % (root, name, count))
                got = c.reduce(xs[me], gcoll.MIN, root)
                if me == root:
                    check(np.array_equal(got, np.minimum.reduce(xs)), "reduce root %d %s %d" % (root, name, count))
                else:
                    check(got is None, "reduce away from root returns None")
                buf = xs[me].copy()
                c.ireduce(buf, gcoll.SUM, root, out=buf).wait()
                ref = h.reduce_ref(xs, "SUM", dt) if me == root else xs[me]
                check(h.close(buf, ref, dt, n), "ireduce in place root %d %s %d" % (root, name, count))
            # alltoall: block p of rank q's input lands in block q of rank p's output
            xs = all_inputs(n, count * n, dt, seed + 900)
            expect = np.concatenate([xs[q][me * count:(me + 1) * count] for q in range(n)])
            got = c.alltoall(xs[me])
            check(np.array_equal(got, expect), "alltoall %s %d" % (name, count))
            buf = xs[me].copy()
            c.ialltoall(buf, out=buf).wait()
            check(np.array_equal(buf, expect), "ialltoall in place %s %d" % (name, count))
    c.barrier()
    c.ibarrier(priority=1, name="b").wait()


def test_adasum(c):
    n, me = c.size, c.rank
    tols = {np.float16: 5e-3, np.float32: 1e-5, np.float64: 1e-10}
    for dt, tol in tols.items():
        for counts in [[7], [5, 0, 40, 3, 300]]:
            total = sum(counts)
            xs = all_inputs(n, total, dt, 77 + total)
            ref = h.adasum_ref(xs, counts)
            name = "adasum %s %s" % (np.dtype(dt).name, counts)
            got = c.adasum(xs[me], counts)
            check(h.adasum_close(got, ref, xs, counts, tol), name)
            buf = xs[me].copy()
            c.iadasum(buf, counts, out=buf, name="ada").wait()
            check(np.array_equal(buf, got), name + " nonblocking in place, same bits")
            if len(counts) == 1:
                check(np.array_equal(c.allreduce(xs[me], gcoll.ADASUM), got), name + " = allreduce ADASUM")
    # identical inputs give their mean exactly; orthogonal ones their sum
    same = np.full(64, 0.5, dtype=np.float32)
    check(np.array_equal(c.adasum(same), same), "adasum of identical inputs is the mean")
    orth = np.zeros(8 * n, dtype=np.float64)
    orth[me * 8:(me + 1) * 8] = me + 1
    check(np.array_equal(c.adasum(orth), np.repeat(np.arange(1, n + 1, dtype=np.float64), 8)),
          "adasum of orthogonal inputs is their sum")


def test_requests(c):
    n, me = c.size, c.rank
    xs = all_inputs(n, 20000, np.float64, 4242)
    ref = h.reduce_ref(xs, "SUM", np.float64)
    reqs = [c.iallreduce(xs[me], gcoll.SUM, priority=k) for k in range(6)]
    # test() until each is done; the input of a pending one may be dropped by the caller
    for r in reqs:
        while not r.test():
            pass
        check(r.done, "request done after test")
        check(h.close(r.wait(), ref, np.float64, n), "request result after test()")
    outs = gcoll.wait_all([c.iallgather(np.full(3, me + k, dtype=np.int32)) for k in range(4)])
    for k, o in enumerate(outs):
        check(np.array_equal(o[:, 0], np.arange(n) + k), "wait_all result %d" % k)
    # a request dropped while pending completes before its buffers go
    c.iallreduce(np.ones(100000, dtype=np.float32), gcoll.SUM)
    check(np.array_equal(c.allreduce(np.ones(3, dtype=np.int64)), np.full(3, n)), "after a dropped request")


def test_compress(c):
    """iallreduce(compress=...) against numpy: fp16/bf16 on the wire with integer values that both
    carry exactly; top-k as the sum of each rank's own largest-magnitude entries."""
    n, me = c.size, c.rank
    for kind in ("fp16", "bf16"):
        xs = [np.arange(1001, dtype=np.float32) % 61 - 30 + r for r in range(n)]
        got = c.iallreduce(xs[me], gcoll.SUM, compress=kind).wait()
        check(np.array_equal(got, np.sum(xs, axis=0, dtype=np.float32)), "allreduce compress=" + kind)
    count, density = 2003, 0.05
    keep = int(density * count)
    # k - 1001 + 0.25 for k a permutation of 0..2002: every magnitude distinct, no tie to break
    xs = [np.random.default_rng(77 + r).permutation(count).astype(np.float32) - 1000.75 for r in range(n)]
    want = np.zeros(count, dtype=np.float64)
    for x in xs:
        top = np.argsort(-np.abs(x.astype(np.float64)))[:keep]
        want[top] += x[top]
    got = c.iallreduce(xs[me], gcoll.SUM, compress="topk", topk_density=density).wait()
    check(np.array_equal(got.astype(np.float64), want), "allreduce compress=topk density %.2f" % density)
    # fp16 halves what the ring hands to the transport (n > 1)
    big = np.ones(1 << 16, dtype=np.float32)
    before = c.bytes_sent
    c.iallreduce(big, gcoll.SUM, algorithm="ring").wait()
    dense = c.bytes_sent - before
    c.iallreduce(big, gcoll.SUM, algorithm="ring", compress="fp16").wait()
    half = c.bytes_sent - before - dense
    check(n == 1 or half * 2 == dense, "fp16 sends half the bytes: %d vs %d" % (half, dense))
    # a session set with top-k and error feedback: over iterations everything arrives
    s = c.session()
    sid = s.add("w", count, gcoll.DType.FLOAT32, gcoll.SUM)
    s.set_compress(sid, "topk", density)
    s.commit()
    g = np.zeros(count, dtype=np.float32)
    total = np.zeros(count, dtype=np.float64)
    for it in range(25):  # every entry's residual is sent within count / keep = 20 iterations
        g[:] = xs[me] if it == 0 else 0
        s.start(sid, g)
        s.wait(sid)
        total += g
    check(np.array_equal(total, np.sum(xs, axis=0, dtype=np.float64)), "session topk with error feedback")
    s.free()
    raises(gcoll.InvalidArgError, lambda: c.iallreduce(np.ones(4, dtype=np.int32), compress="fp16"), "compress")
    raises(gcoll.InvalidArgError, lambda: c.iallreduce(np.ones(4, dtype=np.float32), compress="zip"), "compress")


def test_comms(c):
    n, me = c.size, c.rank
    sub = c.split(me % 2, -me)  # reversed order inside each half
    members = [r for r in range(n) if r % 2 == me % 2]
    check(sub.size == len(members), "split size")
    check(sub.rank == len(members) - 1 - members.index(me), "split rank follows key")
    got = sub.allgather(np.array([me], dtype=np.int64))
    check(list(got.reshape(-1)) == sorted(members, reverse=True), "split allgather order")
    d = c.dup()
    check(d.size == n and d.rank == me, "dup")
    r1 = d.iallreduce(np.full(10, me, dtype=np.int64), name="beside")
    r2 = sub.iallreduce(np.full(10, me, dtype=np.int64))
    check(np.all(r1.wait() == sum(range(n))), "dup allreduce beside split")
    check(np.all(r2.wait() == sum(members)), "split allreduce beside dup")
    # the flight recorder: the dup's one operation, as called
    with tempfile.TemporaryDirectory() as tmp:
        d.dump(os.path.join(tmp, "fr.%r.json"))
        rec = json.load(open(os.path.join(tmp, "fr.%d.json" % me)))
        ops = [(o["seq"], o["kind"], o["name"], o["dtype"], o["count"], o["state"]) for o in rec["ops"]]
        check(rec["rank"] == me and rec["size"] == n and ops == [(0, "allreduce", "beside", "int64", 10, "done")],
              "dump: %s" % ops)
        raises(gcoll.SystemCallError, lambda: d.dump(os.path.join(tmp, "no-such-dir", "x.json")), "no-such-dir")
    none = c.split(-1 if me == 0 else 0)
    check((none is None) == (me == 0), "negative color gives None")
    if none is not None:
        none.free()
    sub.free()
    d.free()
    raises(gcoll.InvalidArgError, lambda: d.allreduce(np.ones(2)), "comm")
    check(d.rank == -1, "freed comm: rank -1")
    check(c.transport in ("shm", "mpi", "tcp", "ofi", "inter") or c.transport, "transport name")
    check(c.algorithm("allreduce", 1 << 20, np.float32) in gcoll.algorithms("allreduce"), "algorithm()")
    c.set_algorithm("allreduce", "direct:0-1K;ring:1K-max")
    check(c.algorithm("allreduce", 16, np.float32) == "direct", "set_algorithm: 64 B direct")
    check(c.algorithm("allreduce", 1 << 20, np.float32) == "ring", "set_algorithm: 4 MiB ring")
    x = np.arange(1000, dtype=np.float64) * (me + 1)
    check(np.array_equal(c.allreduce(x), np.arange(1000, dtype=np.float64) * (n * (n + 1) // 2)),
          "allreduce under set_algorithm")
    raises(gcoll.InvalidArgError, lambda: c.set_algorithm("allreduce", "fastest"), "table", "fastest")
    check(c.algorithm("allreduce", 16, np.float32) == "direct", "a refused table keeps the old one")
    c.set_algorithm("allreduce", None)


def test_session(c):
    n, me = c.size, c.rank
    s = c.session()
    sizes = [(1000, np.float32, gcoll.AVG), (37, np.float64, gcoll.SUM), (5000, np.float32, gcoll.SUM),
             (64, np.float32, gcoll.ADASUM)]
    ids = [s.add("p%d" % k, cnt, dt, op) for k, (cnt, dt, op) in enumerate(sizes)]
    check(ids == list(range(len(sizes))), "session ids in order")
    s.commit()
    check(s.buckets >= 1, "session buckets")
    check(all(0 <= s.bucket_of(i) < s.buckets for i in ids), "bucket_of in range")
    raises(gcoll.InvalidArgError, lambda: s.start(0, np.zeros(999, dtype=np.float32)), "buf", "1000")
    for it in range(3):
        xs = [[h.data(r, cnt, dt, 9000 + 10 * it + k) for r in range(n)] for k, (cnt, dt, _) in enumerate(sizes)]
        bufs = [x[me].copy() for x in xs]
        for k in reversed(ids):  # backprop order
            s.start(k, bufs[k])
        s.wait(ids[-1])
        done = s.test(ids[0]) or True
        s.wait_all()
        check(done, "session test")
        for k, (cnt, dt, op) in enumerate(sizes):
            if op == gcoll.ADASUM:
                ok = h.adasum_close(bufs[k], h.adasum_ref(xs[k], [cnt]), xs[k], [cnt], 1e-5)
            else:
                ok = h.close(bufs[k], h.reduce_ref(xs[k], op.name, dt), dt, n)
            check(ok, "session iteration %d set %d" % (it, k))
    s.free()


def test_errors(c):
    me = c.rank
    x = np.ones(8, dtype=np.float32)
    for bad in [np.complex64, np.bool_, ">f4", ">i2"]:
        arr = np.ones(8, dtype=bad)
        e = raises(gcoll.InvalidArgError, lambda: c.allreduce(arr), "dtype")
        check(e is None or e.status == 1 and e.status_name == "GCOLL_ERR_INVALID_ARG", "error status fields")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(x, out=np.ones(9, dtype=np.float32)), "out", "9", "8")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(x, out=np.ones(8, dtype=np.float64)), "out", "float64")
    raises(gcoll.InvalidArgError, lambda: c.allgather(x, out=np.ones((c.size, 7), dtype=np.float32)), "out")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(np.ones((4, 4), dtype=np.float32)[:, 1]), "contiguous")
    ro = np.ones(4, dtype=np.float32)
    ro.flags.writeable = False
    raises(gcoll.InvalidArgError, lambda: c.bcast(ro), "buf", "read-only")
    raises(gcoll.InvalidArgError, lambda: c.allreduce([1.0, 2.0]), "x", "list")
    if c.size > 1:
        raises(gcoll.InvalidArgError, lambda: c.reduce_scatter(np.ones(c.size + 1, dtype=np.float32)), "x")
    # errors the C library finds: its message comes through, and last_error() holds it
    e = raises(gcoll.InvalidArgError, lambda: c.bcast(x, root=c.size + 3), "root")
    check(e is not None and e.detail == gcoll.last_error() and e.detail in str(e), "detail is last_error()")
    raises(gcoll.InvalidArgError, lambda: c.reduce(x, gcoll.ADASUM), "op")
    raises(gcoll.InvalidArgError, lambda: c.allreduce(np.ones(4, dtype=np.int32), gcoll.ADASUM), "dtype")
    raises(gcoll.InvalidArgError, lambda: c.adasum(x, [3, 4]), "tensor_counts")
    raises(gcoll.InvalidArgError, lambda: c.iallreduce(x, algorithm="no_such_algorithm"), "no_such_algorithm")
    raises(gcoll.InvalidArgError, lambda: c.algorithm("nothing", 4, np.float32), "nothing")
    s = c.session()
    raises(gcoll.InvalidUsageError, lambda: s.start(0, x))  # before commit
    s.free()
    check(issubclass(gcoll.TimeoutError, TimeoutError) and issubclass(gcoll.InvalidArgError, ValueError),
          "error classes derive from the builtin ones")
    # one class for every status of gcoll.h's table, named after it, in its order
    names = []
    while True:
        n = gcoll._L.gcoll_status_name(len(names)).decode()
        if n == "GCOLL_STATUS_UNKNOWN":
            break
        names.append(n)
    classes = [k.__name__ for k in gcoll._ERRORS[1:]]
    want = ["".join(w.capitalize() for w in n[len("GCOLL_ERR_"):].split("_")) + "Error" for n in names[1:]]
    renamed = {"NomemError": "NoMemError", "SystemError": "SystemCallError"}  # not the builtin's name
    want = [renamed.get(w, w) for w in want]
    check(classes == want, "error classes %s for the statuses %s" % (classes, names))
    check(me >= 0, "rank")


def test_introspection():
    v = gcoll.version()
    check(v.split(".")[0].isdigit() and v == gcoll.__version__, "version %s" % v)
    names = {cv.name: cv for cv in gcoll.config_vars()}
    check("GCOLL_TIMEOUT" in names and names["GCOLL_TIMEOUT"].default == "300", "config_vars")
    env = os.environ.get("GCOLL_TIMEOUT")
    want = (env, "environment") if env is not None else ("300", "default")
    got = gcoll.config_get("GCOLL_TIMEOUT")
    check(got == want, "config_get %r, want %r" % (got, want))
    check(gcoll.config_get("GCOLL_LIBRARY")[0] == os.environ.get("GCOLL_LIBRARY", "none"),
          "config_get GCOLL_LIBRARY")
    raises(gcoll.InvalidArgError, lambda: gcoll.config_get("GCOLL_NO_SUCH"), "GCOLL_NO_SUCH")
    check("ring" in gcoll.algorithms("allreduce") and "topk" not in gcoll.algorithms("allreduce"), "algorithms")
    # Adasum's algorithms as docs/adasum.md lists them; top-k's (picked by compress) under no name
    ada = gcoll.algorithms("adasum")
    check(ada == ["halving", "shm_slots", "shm_cma", "hierarchical"], "adasum algorithms %s" % ada)
    raises(gcoll.InvalidArgError, lambda: gcoll.algorithms("nope"), "nope")
    raises(gcoll.InvalidArgError, lambda: gcoll.algorithms("topk"), "topk")
    check(gcoll.DType.FLOAT16.itemsize == 2 and gcoll.DType.BFLOAT16.itemsize == 2, "dtype sizes")
    check(gcoll.dtype_of(np.float16) == gcoll.DType.FLOAT16 and gcoll.dtype_of(np.uint64) == gcoll.DType.UINT64,
          "numpy dtype map")
    a = np.arange(10, dtype=np.float64)
    b = np.arange(10, dtype=np.float64)[::-1].copy()
    ref = np.maximum(a, b)
    gcoll.reduce_local(a, b, gcoll.MAX)
    check(np.array_equal(a, ref), "reduce_local MAX")


def main():
    gcoll.init()
    c = gcoll.comm_world()
    h.set_rank(c.rank)

    def body():
        test_introspection()
        test_allreduce(c)
        test_others(c)
        test_adasum(c)
        test_requests(c)
        test_compress(c)
        test_comms(c)
        test_session(c)
        test_errors(c)

    rc = h.run("python", c, body)
    gcoll.finalize()
    sys.exit(rc)


if __name__ == "__main__":
    main()
