"""Shared pieces of the Python tests (run under mpirun): check counting, the RESULT line that
tests/run.sh reads, inputs every rank can regenerate for any rank, and the numpy references.
The references never call gcoll: each rank recomputes every rank's input from the seed."""
import math
import sys
import traceback

import numpy as np

passed = 0
failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL rank %s: %s" % (RANK, what), flush=True)


def raises(cls, fn, *words):
    """fn() must raise cls, and its message must contain every word (the C message's naming)."""
    try:
        fn()
    except cls as e:
        msg = str(e)
        for w in words:
            check(w in msg, "message %r lacks %r" % (msg, w))
        return e
    except Exception as e:  # noqa: BLE001 (a wrong exception is a failure, reported)
        check(False, "expected %s, got %s: %s" % (cls.__name__, type(e).__name__, e))
        return None
    check(False, "expected %s, nothing raised" % cls.__name__)
    return None


RANK = -1


def set_rank(r):
    global RANK
    RANK = r


def run(name, comm, body):
    """Runs body(), counts an escaped exception as a failure, prints the summed RESULT on rank 0
    and exits nonzero on a rank that failed."""
    import gcoll
    try:
        body()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        check(False, "exception escaped the test body")
    sys.stdout.flush()
    mine = np.array([passed, failed], dtype=np.int64)
    total = comm.allreduce(mine, gcoll.SUM)
    if comm.rank == 0:
        print("RESULT %s np=%d passed=%d failed=%d" % (name, comm.size, total[0], total[1]), flush=True)
    return 1 if failed else 0


def run_torch(name, tests, n, me, group):
    """The torch.distributed tests' run: each of tests(n, me), an escaped exception counted as a
    failure; the counts summed over group (a gloo group), rank 0's RESULT line; the process
    group destroyed. Returns the exit code."""
    import torch
    import torch.distributed as dist
    try:
        for test in tests:
            test(n, me)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        check(False, "exception escaped the test body")
    sys.stdout.flush()
    total = torch.tensor([passed, failed], dtype=torch.int64)
    dist.all_reduce(total, group=group)
    if me == 0:
        print("RESULT %s np=%d passed=%d failed=%d" % (name, n, total[0], total[1]), flush=True)
    dist.destroy_process_group()
    return 1 if failed else 0


def data(rank, n, dtype, seed, kind="any"):
    """Rank rank's input of n elements: small integers (so sums and products of up to 8 ranks
    stay in range), floats near 1 for products, else normal floats."""
    rng = np.random.default_rng([seed, rank, n])
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -3
        hi = 4 if kind != "prod" else 3
        v = rng.integers(lo, hi, size=n)
        if kind == "prod":
            v = np.where(v == 0, 1, v)
        return v.astype(dt)
    if kind == "prod":
        return (1 + rng.uniform(-0.1, 0.1, size=n)).astype(dt)
    return rng.standard_normal(n).astype(dt)


def reduce_ref(xs, op, dtype):
    """The reduction of the inputs xs (in rank order) as gcoll defines it, computed in float64
    for floats and in the dtype (wrapping) for integers."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = [x.astype(np.float64) for x in xs]
    else:
        a = list(xs)
    n = len(a)
    if op == "SUM" or op == "AVG":
        r = a[0].copy()
        for x in a[1:]:
            r = r + x
        if op == "AVG":
            if dt.kind == "f":
                r = r / n
            else:  # truncating division, as C's
                wide = r.astype(np.int64) if dt.kind == "i" else r.astype(np.uint64)
                q = np.abs(wide) // n if dt.kind == "i" else wide // n
                r = (np.sign(wide) * q if dt.kind == "i" else q).astype(dt)
        return r
    if op == "PROD":
        r = a[0].copy()
        for x in a[1:]:
            r = r * x
        return r
    if op == "MIN":
        return np.minimum.reduce(a)
    if op == "MAX":
        return np.maximum.reduce(a)
    raise ValueError(op)


def close(got, ref, dtype, n_terms):
    """Integers exactly; floats within n_terms roundings of the dtype (relative to the largest
    magnitude in the result, so cancellation does not ask for the impossible)."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        return np.array_equal(got, ref)
    if got.size == 0:
        return True
    eps = {2: 2.0 ** -10, 4: 2.0 ** -23, 8: 2.0 ** -52}[dt.itemsize]
    g = got.astype(np.float64)
    scale = max(np.max(np.abs(ref)), 1e-30)
    return bool(np.all(np.abs(g - ref) <= (n_terms + 1) * eps * scale * 4))


def _pair(a, b, counts):
    out = np.empty_like(a)
    off = 0
    for c in counts:
        x, y = a[off:off + c], b[off:off + c]
        dot, na, nb = float(x @ y), float(x @ x), float(y @ y)
        ca = 1 - dot / (2 * na) if na >= math.sqrt(sys.float_info.min) else 1.0
        cb = 1 - dot / (2 * nb) if nb >= math.sqrt(sys.float_info.min) else 1.0
        out[off:off + c] = ca * x + cb * y
        off += c
    return out


def adasum_ref(xs, counts):
    """docs/adasum.md's Adasum in float64: fold ranks >= P into r - P, then a tree of adjacent pairs."""
    v = [x.astype(np.float64) for x in xs]
    n = len(v)
    p = 1
    while p * 2 <= n:
        p *= 2
    level = v[:p]
    for r in range(p, n):
        level[r - p] = _pair(level[r - p], v[r], counts)
    while len(level) > 1:
        level = [_pair(level[k], level[k + 1], counts) for k in range(0, len(level), 2)]
    return level[0]


def adasum_close(got, ref, xs, counts, tol):
    """reference/adasum_ref.c's criterion: per tensor |got - ref| <= tol * max(|ref|, largest input)."""
    g = got.astype(np.float64)
    off = 0
    for c in counts:
        sl = slice(off, off + c)
        bound = max([np.linalg.norm(ref[sl])] + [np.linalg.norm(x[sl].astype(np.float64)) for x in xs])
        if np.linalg.norm(g[sl] - ref[sl]) > tol * bound:
            return False
        off += c
    return True


def fp8_table(fmt):
    """The value of each of the 256 codes of an OCP 8-bit float, from the format's definition:
    e4m3 (bias 7, no infinities, S.1111.111 the NaN) or e5m2 (bias 15, IEEE-like)."""
    ebits, mbits = (4, 3) if fmt == "float8_e4m3" else (5, 2)
    bias = (1 << (ebits - 1)) - 1
    out = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e, m = (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
        if fmt == "float8_e4m3" and e == 15 and m == 7:
            v = math.nan
        elif fmt == "float8_e5m2" and e == 31:
            v = math.inf if m == 0 else math.nan
        elif e == 0:
            v = m / (1 << mbits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
        out[code] = sign * v
    return out


def fp8_codes(values, fmt):
    """The uint8 codes of values that the format holds exactly (+0 for zero)."""
    table = fp8_table(fmt)
    where = {}
    for code in range(255, -1, -1):  # the lower code wins: +0 before -0
        if not math.isnan(table[code]):
            where[float(table[code])] = code
    return np.array([where[float(v)] for v in np.asarray(values).reshape(-1)], dtype=np.uint8)
