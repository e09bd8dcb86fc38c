"""gcoll for Python: communicators, every collective (vector ones too), point-to-point and
groups on NumPy arrays and PyTorch tensors, nonblocking requests and the gradient session, over
libgcoll's C ABI through ctypes. A failing call raises the GcollError subclass of its status,
with gcoll_last_error() in its message; include/gcoll.h is the reference for semantics.
"""
import atexit
import collections
import contextlib
import ctypes
import enum
import numbers
import os
import sys
import threading

from . import _lib

_L = _lib.lib
library_path = _lib.path


# ---- errors: one class per gcoll_status_t ----------------------------------------------------

class GcollError(Exception):
    """A gcoll call failed: status (int), status_name ("GCOLL_ERR_..."), detail (last_error)."""

    def __init__(self, status, detail):
        self.status = status
        self.status_name = _L.gcoll_status_name(status).decode()
        self.detail = detail
        super().__init__("%s: %s" % (self.status_name, detail or _L.gcoll_strerror(status).decode()))


class InvalidArgError(GcollError, ValueError):
    pass


class InvalidUsageError(GcollError):
    pass


class NoMemError(GcollError, MemoryError):
    pass


class SystemCallError(GcollError, OSError):
    pass


class TransportError(GcollError):
    pass


class RemoteError(GcollError):
    pass


class TimeoutError(GcollError, TimeoutError):  # noqa: A001 (the builtin is its base)
    pass


class UnsupportedError(GcollError):
    pass


class AbortedError(GcollError):
    pass


class InternalError(GcollError):
    pass


_ERRORS = [None, InvalidArgError, InvalidUsageError, NoMemError, SystemCallError, TransportError,
           RemoteError, TimeoutError, UnsupportedError, AbortedError, InternalError]
INVALID_ARG = 1


def _missing(name):
    raise UnsupportedError(_lib.UNSUPPORTED, "%s: the libgcoll at %s predates it" % (name, library_path))


_lib.on_missing = _missing


def _check(status):
    if status != 0:
        detail = _L.gcoll_last_error().decode(errors="replace")
        cls = _ERRORS[status] if 0 < status < len(_ERRORS) else GcollError
        raise cls(status, detail)


def _bad(msg):
    """An argument error found on the Python side, shaped like the library's own."""
    return InvalidArgError(INVALID_ARG, msg)


def last_error():
    """This thread's detail of its last failed gcoll call, or ""."""
    return _L.gcoll_last_error().decode(errors="replace")


# ---- types and ops ---------------------------------------------------------------------------

class DType(enum.IntEnum):
    INT8 = 0
    UINT8 = 1
    INT32 = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    BFLOAT16 = 7
    FLOAT32 = 8
    FLOAT64 = 9
    INT16 = 10
    UINT16 = 11
    FLOAT8_E4M3 = 12
    FLOAT8_E5M2 = 13

    @property
    def itemsize(self):
        return _L.gcoll_dtype_size(self)

    @property
    def c_name(self):
        name = _L.gcoll_dtype_name(self)  # NULL from a libgcoll older than the type
        return name.decode() if name else self.name.lower()


class Op(enum.IntEnum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4
    ADASUM = 5
    PREMUL_SUM = 6

    @property
    def c_name(self):
        name = _L.gcoll_op_name(self)
        return name.decode() if name else self.name.lower()


SUM, PROD, MIN, MAX, AVG, ADASUM, PREMUL_SUM = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG, Op.ADASUM, Op.PREMUL_SUM

# gcoll_compress_t by the names iallreduce's compress= takes (docs/compression.md)
_COMPRESS = {None: 0, "none": 0, "fp16": 1, "bf16": 2, "topk": 3}

# NumPy dtypes by (kind, itemsize); numpy itself has no bfloat16 or float8, ml_dtypes' are by name.
_NP_DTYPES = {("i", 1): DType.INT8, ("u", 1): DType.UINT8, ("i", 2): DType.INT16, ("u", 2): DType.UINT16,
              ("i", 4): DType.INT32, ("u", 4): DType.UINT32, ("i", 8): DType.INT64, ("u", 8): DType.UINT64,
              ("f", 2): DType.FLOAT16, ("f", 4): DType.FLOAT32, ("f", 8): DType.FLOAT64}
_NP_NAMED = {"bfloat16": DType.BFLOAT16, "float8_e4m3fn": DType.FLOAT8_E4M3, "float8_e5m2": DType.FLOAT8_E5M2}
# torch's names; uint16..uint64 and float8 exist from torch 2.1 (e4m3fn is OCP's e4m3)
_TORCH_DTYPE_NAMES = {"int8": DType.INT8, "uint8": DType.UINT8, "int16": DType.INT16, "uint16": DType.UINT16,
                      "int32": DType.INT32, "uint32": DType.UINT32, "int64": DType.INT64, "uint64": DType.UINT64,
                      "float16": DType.FLOAT16, "bfloat16": DType.BFLOAT16, "float32": DType.FLOAT32,
                      "float64": DType.FLOAT64, "float8_e4m3fn": DType.FLOAT8_E4M3,
                      "float8_e5m2": DType.FLOAT8_E5M2}
# gcoll's own names ("float8_e4m3", "int16", ...), which dtype= takes as strings
_GCOLL_NAMES = {m.name.lower(): m for m in DType}


def _is_torch(x):
    return type(x).__module__.startswith("torch") and "torch" in sys.modules


def dtype_of(d, argname="dtype"):
    """The DType for a DType, a gcoll type name ("float8_e4m3"), a NumPy dtype (or type) or a
    torch dtype; InvalidArgError (naming argname) if none."""
    if isinstance(d, DType):
        return d
    if isinstance(d, int) and not isinstance(d, bool) and 0 <= d < len(DType):
        return DType(d)
    if isinstance(d, str) and d.lower() in _GCOLL_NAMES:
        return _GCOLL_NAMES[d.lower()]
    if _is_torch(d):
        code = _TORCH_DTYPE_NAMES.get(str(d).replace("torch.", ""))
        if code is None:
            raise _bad("%s: dtype %s has no gcoll type (int8, uint8, int16, int32, int64, float16, bfloat16, "
                       "float32, float64; float8 as uint8 with dtype= named)" % (argname, d))
        return code
    import numpy as np
    try:
        nd = np.dtype(d)
    except TypeError:
        raise _bad("%s: %r is not a data type" % (argname, d)) from None
    code = _NP_DTYPES.get((nd.kind, nd.itemsize)) if nd.kind in "iuf" else _NP_NAMED.get(nd.name)
    if code is None or not nd.isnative:
        raise _bad("%s: dtype %s has no gcoll type (int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
                   "float16, float32, float64 in native byte order; bfloat16 and float8 as raw integers with "
                   "dtype= named)" % (argname, nd))
    return code


# ---- buffers ---------------------------------------------------------------------------------

def _named(x, argname, named):
    """The DType of x's elements, or the type named by dtype= when x's elements are its raw
    bytes: integers of the same size (uint8 for float8, uint16 for bfloat16 in NumPy) or that
    type itself."""
    if named is None:
        return dtype_of(x.dtype, argname)
    code = dtype_of(named, "dtype")
    size = x.element_size() if _is_torch(x) else x.itemsize
    raw = not x.dtype.is_floating_point and not x.dtype.is_complex and x.dtype != _torch_bool() \
        if _is_torch(x) else x.dtype.kind in "iu"
    if code.itemsize != size or not (raw or _natural(x) == code):
        raise _bad("dtype: %s is held in raw integers of %d byte%s (e.g. uint%d); %s holds %s" % (
            code.c_name, code.itemsize, "" if code.itemsize == 1 else "s", 8 * code.itemsize, argname, x.dtype))
    return code


def _natural(x):
    try:
        return dtype_of(x.dtype)
    except InvalidArgError:
        return None


def _torch_bool():
    import torch
    return torch.bool


class _Buf:
    """One array or tensor as the C call sees it: address, element count, dtype (its own, or the
    one named by dtype= that its bytes hold). A CUDA tensor goes through a host copy (gcoll reads
    host memory); finish() writes it back."""

    __slots__ = ("obj", "host", "ptr", "count", "dtype", "writable", "named")

    def __init__(self, x, argname, writable, named=None):
        self.obj = x
        self.host = None
        self.writable = writable
        self.named = named
        if _is_torch(x):
            import torch
            if not isinstance(x, torch.Tensor):
                raise _bad("%s: a NumPy array or torch tensor, not %s" % (argname, type(x).__name__))
            self.dtype = _named(x, argname, named)
            if not x.is_contiguous():
                raise _bad("%s: the tensor is not contiguous (call .contiguous())" % argname)
            if x.device.type == "cuda":
                self.host = x.detach().to("cpu")
                t = self.host
            elif x.device.type == "cpu":
                t = x
            else:
                raise _bad("%s: tensors on %s are not supported (cpu, cuda)" % (argname, x.device))
            self.ptr = t.data_ptr()
            self.count = t.numel()
            return
        import numpy as np
        if not isinstance(x, np.ndarray):
            raise _bad("%s: a NumPy array or torch tensor, not %s" % (argname, type(x).__name__))
        self.dtype = _named(x, argname, named)
        if not x.flags.c_contiguous:
            raise _bad("%s: the array is not C-contiguous (use numpy.ascontiguousarray)" % argname)
        if writable and not x.flags.writeable:
            raise _bad("%s: the array is read-only" % argname)
        self.ptr = x.ctypes.data
        self.count = x.size

    def finish(self):
        if self.host is not None and self.writable:
            self.obj.copy_(self.host)


def _empty_like(x, shape):
    if _is_torch(x):
        import torch
        return torch.empty(shape, dtype=x.dtype, device=x.device)
    import numpy as np
    return np.empty(shape, dtype=x.dtype)


def _same(a, b):
    """True when b is the very buffer a (C's in-place: sendbuf == recvbuf)."""
    if a is b:
        return True
    if _is_torch(a) and _is_torch(b):
        return a.data_ptr() == b.data_ptr() and a.device == b.device
    if _is_torch(a) or _is_torch(b):
        return False
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def _flat_view(x, first, n):
    """Elements first..first+n-1 of x, flat (an in-place result inside x)."""
    return x.reshape(-1)[first:first + n]


def _finish(bufs, keep):
    del keep  # held until here, with the buffers
    for b in bufs:
        b.finish()


def _sizes(v, n, argname, required=True):
    """Counts or displacements, one per rank, from a sequence or NumPy integer array: (a C
    size_t array, the list), or (None, None) for v None where that is allowed."""
    if v is None:
        if required:
            raise _bad("%s: one entry per rank is needed" % argname)
        return None, None
    kind = getattr(getattr(v, "dtype", None), "kind", None)
    if kind is not None and kind not in "iu":
        raise _bad("%s: integers, not %s" % (argname, v.dtype))
    try:
        vals = list(v)
    except TypeError:
        raise _bad("%s: a sequence of integers, not %s" % (argname, type(v).__name__)) from None
    if len(vals) != n:
        raise _bad("%s: %d entries, but the communicator has %d ranks" % (argname, len(vals), n))
    for k, e in enumerate(vals):
        if isinstance(e, bool) or not isinstance(e, numbers.Integral):
            raise _bad("%s[%d]: %r is not an integer" % (argname, k, e))
        if e < 0:
            raise _bad("%s[%d]: %d is negative" % (argname, k, e))
    vals = [int(e) for e in vals]
    return (ctypes.c_size_t * max(n, 1))(*vals), vals


def _extent(counts, displs):
    """How many elements the blocks reach: their sum when packed, else the furthest end."""
    if displs is None:
        return sum(counts)
    return max([d + c for c, d in zip(counts, displs) if c] + [0])


def _reaches(b, ext, argname, what):
    if b.count < ext:
        raise _bad("%s: %d elements, but %s reach element %d" % (argname, b.count, what, ext))


def _receiver(out, dt):
    if out is None:
        raise _bad("out: away from the root, out receives this rank's block and is needed")
    return _Buf(out, "out", True, dt)


def _out_buf(out, send, count, argname="out", writable=True, at_least=False):
    """out as the output of the input send: same kind, dtype (named alike), count elements (at
    least that many with at_least: a vector collective's displacements may leave room)."""
    b = _Buf(out, argname, writable, send.named)
    if _is_torch(out) != _is_torch(send.obj):
        raise _bad("%s: a %s like the input" % (argname, "torch tensor" if _is_torch(send.obj) else "NumPy array"))
    if b.dtype != send.dtype:
        raise _bad("%s: dtype %s differs from the input's %s" % (argname, b.dtype.c_name,
                                                                 send.dtype.c_name))
    if b.count != count and not (at_least and b.count > count):
        raise _bad("%s: %d elements, expected %s%d" % (argname, b.count, "at least " if at_least else "", count))
    return b


# ---- requests --------------------------------------------------------------------------------

class Request:
    """A nonblocking operation. wait() returns its result (the output array or tensor);
    test() says whether it is done. The buffers stay referenced until it completes; a Request
    dropped while pending waits for it first, so that no buffer is freed under the transfer."""

    def __init__(self, bufs, result, keep=()):
        self._h = _lib.c_req()
        self._bufs = bufs
        self._result = result
        self._keep = keep  # attribute strings, tensor counts: alive while the C side may read them

    def _complete(self, status):
        bufs, self._bufs, self._keep = self._bufs, (), ()
        if status == 0:
            for b in bufs:
                b.finish()
        _check(status)

    @property
    def done(self):
        return not self._h

    def _after_finalize(self):
        # gcoll_finalize aborted the operation and tore down the lanes and communicators the
        # request points into: the handle must not reach the C side any more.
        if self._h and _finalized:
            self._h = _lib.c_req()
            self._bufs, self._keep = (), ()
            raise AbortedError(9, "the request was pending at gcoll.finalize(), which aborted it")

    def wait(self):
        self._after_finalize()
        if self._h:
            st = _L.gcoll_wait(ctypes.byref(self._h))
            if self._h:  # not taken: posted in a group still open, it has not started
                _check(st)
            self._complete(st)
        return self._result

    def test(self):
        self._after_finalize()
        if not self._h:
            return True
        done = ctypes.c_int(0)
        st = _L.gcoll_test(ctypes.byref(self._h), ctypes.byref(done))
        if st != 0 and self._h and not done.value and _group_depth():
            _check(st)  # posted in a group still open: not started, still held
        if st != 0 or done.value:
            self._h = _lib.c_req()
            self._complete(st)
            return True
        return False

    def __del__(self):
        # The status is dropped: there is no caller left to raise it to.
        if getattr(self, "_h", None) and _L is not None and not _finalized:
            _L.gcoll_wait(ctypes.byref(self._h))


def wait_all(requests):
    """Waits for every request in order; returns their results."""
    return [r.wait() for r in requests]


def _attr(priority, name, algorithm, compress=None, topk_density=0.01, premul=None, op=None):
    if compress not in _COMPRESS:
        raise _bad("compress: %r is not one of none, fp16, bf16, topk" % (compress,))
    if (op == PREMUL_SUM) != (premul is not None):
        raise _bad("premul: op PREMUL_SUM takes its scalar as premul=, and only it" if op == PREMUL_SUM or
                   op is None else "premul: given with op %s; it belongs to op PREMUL_SUM" % Op(op).name)
    return _lib.Attr(priority=int(priority), name=name.encode() if name is not None else None,
                     algorithm=algorithm.encode() if algorithm is not None else None,
                     compress=_COMPRESS[compress], topk_density=float(topk_density),
                     premul=float(premul) if premul is not None else 0.0)


# ---- groups ----------------------------------------------------------------------------------

class _GroupState(threading.local):
    """This thread's open groups (gcoll's are per thread too): what the calls posted in them
    need kept alive, and the CUDA copies to write back, until the outermost group_end."""

    def __init__(self):
        self.depth = 0
        self.after = []  # what completes each blocking call after the end (finish, or a wait)
        self.reqs = []  # requests posted in the group: alive until it starts them


_group = _GroupState()


def _group_depth():
    return _group.depth


def group_start():
    """gcoll_group_start: the calls until the matching group_end are posted together; blocking
    ones return at once and complete at the end (their results are valid after it)."""
    _check(_L.gcoll_group_start())
    _group.depth += 1


def group_end():
    """gcoll_group_end: the outermost one launches what the group posted and waits for its
    blocking calls; nonblocking ones complete through their requests, waited for after it."""
    st = _L.gcoll_group_end()
    if _group.depth == 0:
        _check(st)
        return
    _group.depth -= 1
    if _group.depth == 0:
        after, _group.after, _group.reqs = _group.after, [], []
        if st == 0:
            for done in after:
                done()
    _check(st)


@contextlib.contextmanager
def group():
    """with gcoll.group(): ...  -- group_start() and group_end(), which runs even when the body
    raises (so that the calls already posted are not left behind)."""
    group_start()
    try:
        yield
    except BaseException:
        try:
            group_end()
        except GcollError:
            pass  # the body's exception is the one to see
        raise
    group_end()


# ---- communicators ---------------------------------------------------------------------------

def _counts_array(tensor_counts):
    if tensor_counts is None:
        return None, 0
    counts = [int(c) for c in tensor_counts]
    if any(c < 0 for c in counts):
        raise _bad("tensor_counts: negative count")
    return (ctypes.c_size_t * max(len(counts), 1))(*counts), len(counts)


class Comm:
    """A communicator. Collectives must be called in the same order on every rank.

    Output arguments: out=None allocates the result like the input; out=x (the input itself)
    is C's in-place form (sendbuf == recvbuf, docs/api.md). Nonblocking twins (i...) take
    priority, name and algorithm (gcoll_attr_t) and return a Request."""

    def __init__(self, handle):
        self._h = handle

    def _handle(self):
        return self._h

    @property
    def rank(self):
        return _L.gcoll_comm_rank(self._h)

    @property
    def size(self):
        return _L.gcoll_comm_size(self._h)

    def split(self, color, key=0):
        """A new communicator of the ranks with the same color, ordered by key; None for a
        negative color."""
        h = _lib.c_comm()
        _check(_L.gcoll_comm_split(self._h, int(color), int(key), ctypes.byref(h)))
        return Comm(h) if h else None

    def dup(self):
        h = _lib.c_comm()
        _check(_L.gcoll_comm_dup(self._h, ctypes.byref(h)))
        return Comm(h)

    def free(self):
        _check(_L.gcoll_comm_free(ctypes.byref(self._h)))

    def abort(self):
        _check(_L.gcoll_comm_abort(self._h))

    def dump(self, path):
        """Writes this communicator's flight recorder, its last operations, to path as JSON (%r
        becomes the rank, %c the communicator's number); works on a failed communicator.
        gcoll-info --trace reads the ranks' files together."""
        _check(_L.gcoll_comm_dump(self._h, os.fsencode(path)))

    def algorithm(self, collective, count, dtype):
        """The algorithm the selection table picks for collective of count elements of dtype."""
        out = ctypes.c_char_p()
        _check(_L.gcoll_comm_algorithm(self._h, collective.encode(), int(count),
                                       dtype_of(dtype), ctypes.byref(out)))
        return out.value.decode()

    def set_algorithm(self, collective, table):
        """This communicator's own selection table for collective, in GCOLL_<COLLECTIVE>'s syntax
        ("ring", "direct:0-1K;ring:1K-max", "auto"); None goes back to the variable's. Every rank
        sets the same table before the same call."""
        _check(_L.gcoll_comm_set_algorithm(self._h, collective.encode(),
                                           None if table is None else table.encode()))

    @property
    def transport(self):
        out = ctypes.c_char_p()
        _check(_L.gcoll_comm_transport(self._h, ctypes.byref(out)))
        return out.value.decode()

    @property
    def bytes_sent(self):
        """Payload bytes this rank handed to the transport for this communicator so far."""
        out = ctypes.c_ulonglong()
        _check(_L.gcoll_comm_bytes_sent(self._h, ctypes.byref(out)))
        return out.value

    # Each collective is built once as (C arguments, buffers, result, keep) and then run blocking
    # or nonblocking, so the two forms cannot drift apart. Every buffer the C side touches is in
    # the list, inputs too, and keep holds the C arrays of counts, so that a Request (or an open
    # group) keeps each one alive until the operation completes. dt is dtype= (None: the
    # buffer's own).

    def _allreduce(self, x, op, out, dt):
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True, dt)
            return (s.ptr, s.ptr, s.count, s.dtype, int(op)), [s], x, ()
        s = _Buf(x, "x", False, dt)
        if out is None:
            out = _empty_like(x, tuple(x.shape))
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count, s.dtype, int(op)), [s, r], out, ()

    def _reduce_scatter(self, x, op, out, dt):
        n = self.size
        inplace = out is not None and _same(x, out)
        s = _Buf(x, "x", inplace, dt)
        if s.count % n:
            raise _bad("x: %d elements do not split into %d equal blocks" % (s.count, n))
        count = s.count // n
        if inplace:
            return (s.ptr, s.ptr, count, s.dtype, int(op)), [s], _flat_view(x, 0, count), ()
        if out is None:
            shape = tuple(x.shape)
            shape = (shape[0] // n,) + shape[1:] if shape and shape[0] % n == 0 else (count,)
            out = _empty_like(x, shape)
        r = _out_buf(out, s, count)
        return (s.ptr, r.ptr, count, s.dtype, int(op)), [s, r], out, ()

    def _allgather(self, x, out, dt):
        n = self.size
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True, dt)
            if s.count % n:
                raise _bad("x: in place, %d elements do not split into %d blocks" % (s.count, n))
            return (s.ptr, s.ptr, s.count // n, s.dtype), [s], x, ()
        s = _Buf(x, "x", False, dt)
        if out is None:
            out = _empty_like(x, (n,) + tuple(x.shape))
        r = _out_buf(out, s, s.count * n)
        return (s.ptr, r.ptr, s.count, s.dtype), [s, r], out, ()

    def _bcast(self, buf, root, dt):
        b = _Buf(buf, "buf", True, dt)
        return (b.ptr, b.count, b.dtype, int(root)), [b], buf, ()

    def _reduce(self, x, op, root, out, dt):
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True, dt)
            return (s.ptr, s.ptr, s.count, s.dtype, int(op), int(root)), [s], x, ()
        s = _Buf(x, "x", False, dt)
        if self.rank == int(root) and out is None:
            out = _empty_like(x, tuple(x.shape))
        if out is None:
            return (s.ptr, None, s.count, s.dtype, int(op), int(root)), [s], None, ()
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count, s.dtype, int(op), int(root)), [s, r], out, ()

    def _alltoall(self, x, out, dt):
        n = self.size
        inplace = out is not None and _same(x, out)
        s = _Buf(x, "x", inplace, dt)
        if s.count % n:
            raise _bad("x: %d elements do not split into %d equal blocks" % (s.count, n))
        if inplace:
            return (s.ptr, s.ptr, s.count // n, s.dtype), [s], x, ()
        if out is None:
            out = _empty_like(x, tuple(x.shape))
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count // n, s.dtype), [s, r], out, ()

    def _adasum(self, x, tensor_counts, out):
        counts, nt = _counts_array(tensor_counts)
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True)
            return (s.ptr, s.ptr, s.count, s.dtype, counts, nt), [s], x, (counts,)
        s = _Buf(x, "x", False)
        if out is None:
            out = _empty_like(x, tuple(x.shape))
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count, s.dtype, counts, nt), [s, r], out, (counts,)

    # The vector collectives: counts and displacements are one per rank, in elements; displs
    # None packs the blocks in rank order. Outputs are flat, as long as the blocks reach.

    def _allgatherv(self, x, counts, displs, out, dt):
        me = self.rank
        rc, rcl = _sizes(counts, self.size, "counts")
        rd, rdl = _sizes(displs, self.size, "displs", required=False)
        ext = _extent(rcl, rdl)
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True, dt)
            _reaches(s, ext, "x", "counts and displs")
            return (s.ptr, rcl[me], s.ptr, rc, rd, s.dtype), [s], x, (rc, rd)
        s = _Buf(x, "x", False, dt)
        if s.count != rcl[me]:
            raise _bad("counts: counts[%d] is %d, but x holds %d elements" % (me, rcl[me], s.count))
        if out is None:
            out = _empty_like(x, (ext,))
        r = _out_buf(out, s, ext, at_least=True)
        return (s.ptr, s.count, r.ptr, rc, rd, s.dtype), [s, r], out, (rc, rd)

    def _reduce_scatterv(self, x, counts, op, out, dt):
        rc, rcl = _sizes(counts, self.size, "counts")
        total, mine = sum(rcl), rcl[self.rank]
        inplace = out is not None and _same(x, out)
        s = _Buf(x, "x", inplace, dt)
        if s.count != total:
            raise _bad("x: %d elements, but counts add up to %d" % (s.count, total))
        if inplace:
            return (s.ptr, s.ptr, rc, s.dtype, int(op)), [s], _flat_view(x, 0, mine), (rc,)
        if out is None:
            out = _empty_like(x, (mine,))
        r = _out_buf(out, s, mine)
        return (s.ptr, r.ptr, rc, s.dtype, int(op)), [s, r], out, (rc,)

    def _alltoallv(self, x, sendcounts, recvcounts, sdispls, rdispls, out, dt):
        n = self.size
        sc, scl = _sizes(sendcounts, n, "sendcounts")
        rc, rcl = _sizes(recvcounts, n, "recvcounts")
        sd, sdl = _sizes(sdispls, n, "sdispls", required=False)
        rd, rdl = _sizes(rdispls, n, "rdispls", required=False)
        inplace = out is not None and _same(x, out)
        s = _Buf(x, "x", inplace, dt)
        _reaches(s, _extent(scl, sdl), "x", "sendcounts and sdispls")
        keep = (sc, rc, sd, rd)
        if inplace:
            _reaches(s, _extent(rcl, rdl), "x", "recvcounts and rdispls")
            return (s.ptr, sc, sd, s.ptr, rc, rd, s.dtype), [s], x, keep
        ext = _extent(rcl, rdl)
        if out is None:
            out = _empty_like(x, (ext,))
        r = _out_buf(out, s, ext, at_least=True)
        return (s.ptr, sc, sd, r.ptr, rc, rd, s.dtype), [s, r], out, keep

    def _gather(self, x, root, out, dt):
        n, root = self.size, int(root)
        if self.rank == root and out is not None and _same(x, out):
            s = _Buf(x, "x", True, dt)
            if s.count % n:
                raise _bad("x: in place at the root, %d elements do not split into %d blocks" % (s.count, n))
            return (s.ptr, s.ptr, s.count // n, s.dtype, root), [s], x, ()
        s = _Buf(x, "x", False, dt)
        if self.rank != root:
            return (s.ptr, None, s.count, s.dtype, root), [s], None, ()
        if out is None:
            out = _empty_like(x, (n,) + tuple(x.shape))
        r = _out_buf(out, s, s.count * n)
        return (s.ptr, r.ptr, s.count, s.dtype, root), [s, r], out, ()

    def _scatter(self, x, root, out, dt):
        n, root = self.size, int(root)
        if self.rank != root:
            r = _receiver(out, dt)
            return (None, r.ptr, r.count, r.dtype, root), [r], out, ()
        s = _Buf(x, "x", False, dt)
        if s.count % n:
            raise _bad("x: %d elements do not split into %d equal blocks" % (s.count, n))
        count = s.count // n
        if out is not None and _same(x, out):  # the root's block stays where it is
            return (s.ptr, s.ptr, count, s.dtype, root), [s], _flat_view(x, root * count, count), ()
        if out is None:
            shape = tuple(x.shape)
            out = _empty_like(x, shape[1:] if len(shape) > 1 and shape[0] == n else (count,))
        r = _out_buf(out, s, count)
        return (s.ptr, r.ptr, count, s.dtype, root), [s, r], out, ()

    def _gatherv(self, x, counts, displs, root, out, dt):
        root = int(root)
        if self.rank != root:  # counts and displs are the root's
            s = _Buf(x, "x", False, dt)
            return (s.ptr, s.count, None, None, None, s.dtype, root), [s], None, ()
        rc, rcl = _sizes(counts, self.size, "counts")
        rd, rdl = _sizes(displs, self.size, "displs", required=False)
        ext = _extent(rcl, rdl)
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True, dt)
            _reaches(s, ext, "x", "counts and displs")
            return (s.ptr, rcl[root], s.ptr, rc, rd, s.dtype, root), [s], x, (rc, rd)
        s = _Buf(x, "x", False, dt)
        if s.count != rcl[root]:
            raise _bad("counts: counts[%d] is %d, but the root's x holds %d elements" % (root, rcl[root], s.count))
        if out is None:
            out = _empty_like(x, (ext,))
        r = _out_buf(out, s, ext, at_least=True)
        return (s.ptr, s.count, r.ptr, rc, rd, s.dtype, root), [s, r], out, (rc, rd)

    def _scatterv(self, x, counts, displs, root, out, dt):
        root = int(root)
        if self.rank != root:
            r = _receiver(out, dt)
            return (None, None, None, r.ptr, r.count, r.dtype, root), [r], out, ()
        sc, scl = _sizes(counts, self.size, "counts")
        sd, sdl = _sizes(displs, self.size, "displs", required=False)
        s = _Buf(x, "x", False, dt)
        _reaches(s, _extent(scl, sdl), "x", "counts and displs")
        mine = scl[root]
        if out is not None and _same(x, out):  # the root's block stays where it is
            off = sdl[root] if sdl is not None else sum(scl[:root])
            return (s.ptr, sc, sd, s.ptr, mine, s.dtype, root), [s], _flat_view(x, off, mine), (sc, sd)
        if out is None:
            out = _empty_like(x, (mine,))
        r = _out_buf(out, s, mine)
        return (s.ptr, sc, sd, r.ptr, mine, s.dtype, root), [s, r], out, (sc, sd)

    def _send(self, x, peer, dt):
        s = _Buf(x, "x", False, dt)
        return (s.ptr, s.count, s.dtype, int(peer)), [s], None, ()

    def _recv(self, buf, peer, dt):
        b = _Buf(buf, "buf", True, dt)
        return (b.ptr, b.count, b.dtype, int(peer)), [b], buf, ()

    def _run(self, fn, args, bufs, result, keep=()):
        _check(fn(*args, self._h))
        if _group.depth:  # only posted: it runs at the outermost group_end
            _group.after.append(lambda: _finish(bufs, keep))
        else:
            _finish(bufs, keep)
        return result

    def _start(self, fn, args, bufs, result, keep=(), attr=None):
        req = Request(bufs, result, (attr,) + tuple(keep))
        _check(fn(*args, self._h, ctypes.byref(attr), ctypes.byref(req._h)))
        if _group.depth:  # posted, not started: alive until the group starts it
            _group.reqs.append(req)
        return req

    def _blocking(self, fn, ifn, built, op, premul):
        """The blocking call; with PREMUL_SUM (which only the nonblocking C calls take, in
        attr.premul) the nonblocking twin and its wait (at the group's end inside a group)."""
        if premul is None and op != PREMUL_SUM:
            return self._run(fn, *built)
        req = self._start(ifn, *built, attr=_attr(0, None, None, premul=premul, op=op))
        if _group.depth:
            _group.after.append(req.wait)
            return built[2]
        return req.wait()

    def allreduce(self, x, op=SUM, out=None, dtype=None, premul=None):
        """premul: the scalar of op PREMUL_SUM (each rank's x is multiplied by its own)."""
        return self._blocking(_L.gcoll_allreduce, _L.gcoll_iallreduce, self._allreduce(x, op, out, dtype), op,
                              premul)

    def iallreduce(self, x, op=SUM, out=None, priority=0, name=None, algorithm=None, compress=None,
                   topk_density=0.01, premul=None, dtype=None):
        """compress: None, "fp16", "bf16" (16-bit on the wire) or "topk" (the topk_density share of
        largest-magnitude entries of each rank); fp32 SUM/AVG only."""
        attr = _attr(priority, name, algorithm, compress, topk_density, premul, op)
        return self._start(_L.gcoll_iallreduce, *self._allreduce(x, op, out, dtype), attr=attr)

    def reduce_scatter(self, x, op=SUM, out=None, dtype=None, premul=None):
        """x holds size blocks; this rank gets the reduction of block rank."""
        return self._blocking(_L.gcoll_reduce_scatter, _L.gcoll_ireduce_scatter,
                              self._reduce_scatter(x, op, out, dtype), op, premul)

    def ireduce_scatter(self, x, op=SUM, out=None, priority=0, name=None, algorithm=None, premul=None,
                        dtype=None):
        return self._start(_L.gcoll_ireduce_scatter, *self._reduce_scatter(x, op, out, dtype),
                           attr=_attr(priority, name, algorithm, premul=premul, op=op))

    def allgather(self, x, out=None, dtype=None):
        """Every rank's x, stacked: out[r] is rank r's (in place: x holds every block)."""
        return self._run(_L.gcoll_allgather, *self._allgather(x, out, dtype))

    def iallgather(self, x, out=None, priority=0, name=None, algorithm=None, dtype=None):
        return self._start(_L.gcoll_iallgather, *self._allgather(x, out, dtype),
                           attr=_attr(priority, name, algorithm))

    def bcast(self, buf, root=0, dtype=None):
        """buf from root to every rank, in place."""
        return self._run(_L.gcoll_bcast, *self._bcast(buf, root, dtype))

    def ibcast(self, buf, root=0, priority=0, name=None, algorithm=None, dtype=None):
        return self._start(_L.gcoll_ibcast, *self._bcast(buf, root, dtype), attr=_attr(priority, name, algorithm))

    def reduce(self, x, op=SUM, root=0, out=None, dtype=None, premul=None):
        """The reduction at root (returned there; None elsewhere unless out is given)."""
        return self._blocking(_L.gcoll_reduce, _L.gcoll_ireduce, self._reduce(x, op, root, out, dtype), op, premul)

    def ireduce(self, x, op=SUM, root=0, out=None, priority=0, name=None, algorithm=None, premul=None,
                dtype=None):
        return self._start(_L.gcoll_ireduce, *self._reduce(x, op, root, out, dtype),
                           attr=_attr(priority, name, algorithm, premul=premul, op=op))

    def alltoall(self, x, out=None, dtype=None):
        """x holds size blocks; block p goes to rank p, and out's block p comes from rank p."""
        return self._run(_L.gcoll_alltoall, *self._alltoall(x, out, dtype))

    def ialltoall(self, x, out=None, priority=0, name=None, algorithm=None, dtype=None):
        return self._start(_L.gcoll_ialltoall, *self._alltoall(x, out, dtype), attr=_attr(priority, name, algorithm))

    def barrier(self):
        self._run(_L.gcoll_barrier, (), [], None)

    def ibarrier(self, priority=0, name=None):
        return self._start(_L.gcoll_ibarrier, (), [], None, attr=_attr(priority, name, None))

    def adasum(self, x, tensor_counts=None, out=None):
        """Adasum (docs/adasum.md) over the tensors whose element counts tensor_counts lists,
        back to back in x (None: one tensor)."""
        return self._run(_L.gcoll_adasum, *self._adasum(x, tensor_counts, out))

    def iadasum(self, x, tensor_counts=None, out=None, priority=0, name=None, algorithm=None):
        return self._start(_L.gcoll_iadasum, *self._adasum(x, tensor_counts, out),
                           attr=_attr(priority, name, algorithm))

    def allgatherv(self, x, counts, displs=None, out=None, dtype=None):
        """Rank r's x (counts[r] elements) lands at displs[r] of every rank's output (packed in
        rank order without displs); in place (out=x): rank r's block is already there."""
        return self._run(_L.gcoll_allgatherv, *self._allgatherv(x, counts, displs, out, dtype))

    def iallgatherv(self, x, counts, displs=None, out=None, priority=0, name=None, algorithm=None, dtype=None):
        return self._start(_L.gcoll_iallgatherv, *self._allgatherv(x, counts, displs, out, dtype),
                           attr=_attr(priority, name, algorithm))

    def reduce_scatterv(self, x, counts, op=SUM, out=None, dtype=None, premul=None):
        """x holds the blocks back to back, counts[r] elements for rank r; this rank gets the
        reduction of its block (in place: the first counts[rank] elements of x)."""
        return self._blocking(_L.gcoll_reduce_scatterv, _L.gcoll_ireduce_scatterv,
                              self._reduce_scatterv(x, counts, op, out, dtype), op, premul)

    def ireduce_scatterv(self, x, counts, op=SUM, out=None, priority=0, name=None, algorithm=None, premul=None,
                         dtype=None):
        return self._start(_L.gcoll_ireduce_scatterv, *self._reduce_scatterv(x, counts, op, out, dtype),
                           attr=_attr(priority, name, algorithm, premul=premul, op=op))

    def alltoallv(self, x, sendcounts, recvcounts, sdispls=None, rdispls=None, out=None, dtype=None):
        """sendcounts[p] elements of x (from sdispls[p]) go to rank p; recvcounts[p] from rank p
        land at rdispls[p]. In place (out=x) needs sendcounts == recvcounts and sdispls ==
        rdispls on every rank."""
        return self._run(_L.gcoll_alltoallv,
                         *self._alltoallv(x, sendcounts, recvcounts, sdispls, rdispls, out, dtype))

    def ialltoallv(self, x, sendcounts, recvcounts, sdispls=None, rdispls=None, out=None, priority=0, name=None,
                   algorithm=None, dtype=None):
        return self._start(_L.gcoll_ialltoallv,
                           *self._alltoallv(x, sendcounts, recvcounts, sdispls, rdispls, out, dtype),
                           attr=_attr(priority, name, algorithm))

    def gather(self, x, root=0, out=None, dtype=None):
        """Every rank's x, stacked at root (None elsewhere); in place at the root (out=x): x
        holds every block, the root's already in place."""
        return self._run(_L.gcoll_gather, *self._gather(x, root, out, dtype))

    def igather(self, x, root=0, out=None, priority=0, name=None, algorithm=None, dtype=None):
        return self._start(_L.gcoll_igather, *self._gather(x, root, out, dtype), attr=_attr(priority, name, algorithm))

    def scatter(self, x, root=0, out=None, dtype=None):
        """Block r of the root's x to rank r. Away from the root x is not read (None will do)
        and out, which receives the block, is needed."""
        return self._run(_L.gcoll_scatter, *self._scatter(x, root, out, dtype))

    def iscatter(self, x, root=0, out=None, priority=0, name=None, algorithm=None, dtype=None):
        return self._start(_L.gcoll_iscatter, *self._scatter(x, root, out, dtype),
                           attr=_attr(priority, name, algorithm))

    def gatherv(self, x, counts=None, displs=None, root=0, out=None, dtype=None):
        """Rank r's x (counts[r] elements) at displs[r] of the root's output; counts and displs
        are read at the root only."""
        return self._run(_L.gcoll_gatherv, *self._gatherv(x, counts, displs, root, out, dtype))

    def igatherv(self, x, counts=None, displs=None, root=0, out=None, priority=0, name=None, algorithm=None,
                 dtype=None):
        return self._start(_L.gcoll_igatherv, *self._gatherv(x, counts, displs, root, out, dtype),
                           attr=_attr(priority, name, algorithm))

    def scatterv(self, x, counts=None, displs=None, root=0, out=None, dtype=None):
        """counts[r] elements of the root's x (from displs[r]) to rank r's out; counts and
        displs are read at the root only, out is needed away from it."""
        return self._run(_L.gcoll_scatterv, *self._scatterv(x, counts, displs, root, out, dtype))

    def iscatterv(self, x, counts=None, displs=None, root=0, out=None, priority=0, name=None, algorithm=None,
                  dtype=None):
        return self._start(_L.gcoll_iscatterv, *self._scatterv(x, counts, displs, root, out, dtype),
                           attr=_attr(priority, name, algorithm))

    def send(self, x, peer, dtype=None):
        """x to rank peer, matched by peer's n-th recv from this rank. It may wait for that
        receive: pair opposite sends and receives in a group, or use isend."""
        self._run(_L.gcoll_send, *self._send(x, peer, dtype))

    def recv(self, buf, peer, dtype=None):
        """Into buf (of the sender's count and dtype) from rank peer; returns buf."""
        return self._run(_L.gcoll_recv, *self._recv(buf, peer, dtype))

    def isend(self, x, peer, priority=0, name=None, dtype=None):
        return self._start(_L.gcoll_isend, *self._send(x, peer, dtype), attr=_attr(priority, name, None))

    def irecv(self, buf, peer, priority=0, name=None, dtype=None):
        """A Request whose wait() returns buf."""
        return self._start(_L.gcoll_irecv, *self._recv(buf, peer, dtype), attr=_attr(priority, name, None))

    def session(self):
        return Session(self)


# ---- the gradient session --------------------------------------------------------------------

class Session:
    """The gradient session (docs/overlap.md): add() the parameter sets in forward
    order, commit() (collective), then each iteration start() each set as its gradient is ready
    and wait() or wait_all() before using it; the result replaces the buffer."""

    def __init__(self, comm):
        self._h = _lib.c_session()
        self._sets = []  # (count, dtype) per id, to check start()'s buffer
        self._pending = {}  # id -> _Buf, alive until the set completes
        _check(_L.gcoll_session_create(comm._handle(), ctypes.byref(self._h)))

    def add(self, name, count, dtype, op=SUM):
        """Registers a set of count elements of dtype reduced with op (SUM, AVG, ADASUM,
        PREMUL_SUM with set_premul); returns its id (0, 1, ... in order)."""
        code = dtype_of(dtype)
        sid = ctypes.c_size_t()
        _check(_L.gcoll_session_add(self._h, name.encode() if name is not None else None,
                                    int(count), code, int(op), ctypes.byref(sid)))
        self._sets.append((int(count), code))
        return sid.value

    def set_compress(self, sid, compress, topk_density=0.01):
        """Before commit: set sid (fp32, SUM or AVG) goes as "fp16", "bf16" or "topk" (with error
        feedback: what a rank did not send joins its next gradient), or None."""
        if compress not in _COMPRESS:
            raise _bad("compress: %r is not one of none, fp16, bf16, topk" % (compress,))
        _check(_L.gcoll_session_set_compress(self._h, int(sid), _COMPRESS[compress], float(topk_density)))

    def set_premul(self, sid, premul):
        """Before commit: the scalar of PREMUL_SUM set sid (sets fused in one bucket share it)."""
        _check(_L.gcoll_session_set_premul(self._h, int(sid), float(premul)))

    def commit(self):
        _check(_L.gcoll_session_commit(self._h))

    def start(self, sid, buf, dtype=None):
        """buf holds set sid's gradient (dtype=: the type its raw bytes hold, as for float8)."""
        b = _Buf(buf, "buf", True, dtype)
        if 0 <= sid < len(self._sets):
            count, code = self._sets[sid]
            if b.count != count or b.dtype != code:
                raise _bad("buf: %d elements of %s, but set %d holds %d of %s"
                           % (b.count, b.dtype.c_name, sid, count, code.c_name))
        _check(_L.gcoll_session_start(self._h, int(sid), b.ptr))
        self._pending[sid] = b

    def _finish(self, sid, status):
        b = self._pending.pop(sid, None)
        if b is not None and status == 0:
            b.finish()
        _check(status)

    def test(self, sid):
        done = ctypes.c_int(0)
        st = _L.gcoll_session_test(self._h, int(sid), ctypes.byref(done))
        if st != 0 or done.value:
            self._finish(sid, st)
        return bool(done.value)

    def wait(self, sid):
        self._finish(sid, _L.gcoll_session_wait(self._h, int(sid)))

    def wait_all(self):
        st = _L.gcoll_session_wait_all(self._h)
        pending, self._pending = self._pending, {}
        if st == 0:
            for b in pending.values():
                b.finish()
        _check(st)

    @property
    def buckets(self):
        n = ctypes.c_size_t()
        _check(_L.gcoll_session_buckets(self._h, ctypes.byref(n)))
        return n.value

    def bucket_of(self, sid):
        b = ctypes.c_size_t()
        _check(_L.gcoll_session_bucket_of(self._h, int(sid), ctypes.byref(b)))
        return b.value

    def free(self):
        _check(_L.gcoll_session_free(ctypes.byref(self._h)))
        self._pending.clear()


# ---- library lifetime and introspection ------------------------------------------------------

_inits = 0  # gcoll_init calls not yet matched by gcoll_finalize (they nest)
_finalized = False  # gcoll_finalize ended the library: pending requests are aborted and freed


def init():
    """gcoll_init (starts MPI unless it runs already; nests). What is not finalized is at exit."""
    global _inits
    _check(_L.gcoll_init(None, None))
    if _inits == 0 and not _finalized:
        atexit.register(_finalize_at_exit)
    _inits += 1


def finalize():
    global _inits, _finalized
    _check(_L.gcoll_finalize())
    _inits -= 1
    _finalized = _inits == 0


def _finalize_at_exit():
    while _inits > 0:
        finalize()


def comm_world():
    h = _lib.c_comm()
    _check(_L.gcoll_comm_world(ctypes.byref(h)))
    return Comm(h)


def version():
    return _L.gcoll_version().decode()


__version__ = version()

ConfigVar = collections.namedtuple("ConfigVar", "name type default description")


def config_vars():
    """Every GCOLL_* variable of the registry."""
    out = []
    for k in range(_L.gcoll_config_count()):
        v = _lib.ConfigVar()
        _check(_L.gcoll_config_var(k, ctypes.byref(v)))
        out.append(ConfigVar(v.name.decode(), v.type.decode(), v.default_str.decode(),
                             v.description.decode()))
    return out


def config_get(name):
    """(value, source) of a GCOLL_* variable as the library takes it: the environment's value or
    the default, source "environment" or "default"; works before init()."""
    buf = ctypes.create_string_buffer(1 << 16)  # any value of a real environment fits
    source = ctypes.c_char_p()
    _check(_L.gcoll_config_get(name.encode(), buf, len(buf), ctypes.byref(source)))
    return buf.value.decode(), source.value.decode()


def algorithms(collective):
    """The algorithm names of a collective ("allreduce", ...), or of Adasum's family ("adasum"), from
    the library's algorithm registry: what algorithm= and GCOLL_<COLLECTIVE> take."""
    names = ctypes.POINTER(ctypes.c_char_p)()
    n = ctypes.c_size_t()
    _check(_L.gcoll_algorithms(collective.encode(), ctypes.byref(names), ctypes.byref(n)))
    return [names[k].decode() for k in range(n.value)]


def reduce_local(inout, x, op=SUM, dtype=None):
    """inout = inout op x with gcoll's kernels (SUM, PROD, MIN, MAX); works before init()."""
    a = _Buf(inout, "inout", True, dtype)
    b = _out_buf(x, a, a.count, "x", writable=False)
    _check(_L.gcoll_reduce_local(a.ptr, b.ptr, a.count, a.dtype, int(op)))
    a.finish()
    return inout
