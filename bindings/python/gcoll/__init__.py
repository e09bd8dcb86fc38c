"""gcoll for Python: communicators, every collective on NumPy arrays and PyTorch tensors,
nonblocking requests and the gradient session, over libgcoll's C ABI through ctypes. A failing
call raises the GcollError subclass of its status, with gcoll_last_error() in its message;
include/gcoll.h is the reference for semantics.
"""
import atexit
import collections
import ctypes
import enum
import sys

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

    @property
    def itemsize(self):
        return _L.gcoll_dtype_size(self)

    @property
    def c_name(self):
        return _L.gcoll_dtype_name(self).decode()


class Op(enum.IntEnum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4
    ADASUM = 5

    @property
    def c_name(self):
        return _L.gcoll_op_name(self).decode()


SUM, PROD, MIN, MAX, AVG, ADASUM = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG, Op.ADASUM

# gcoll_compress_t by the names iallreduce's compress= takes (docs/compression.md)
_COMPRESS = {None: 0, "none": 0, "fp16": 1, "bf16": 2, "topk": 3}

# NumPy dtypes by (kind, itemsize): numpy has no bfloat16.
_NP_DTYPES = {("i", 1): DType.INT8, ("u", 1): DType.UINT8, ("i", 4): DType.INT32,
              ("u", 4): DType.UINT32, ("i", 8): DType.INT64, ("u", 8): DType.UINT64,
              ("f", 2): DType.FLOAT16, ("f", 4): DType.FLOAT32, ("f", 8): DType.FLOAT64}
_TORCH_DTYPE_NAMES = {"int8": DType.INT8, "uint8": DType.UINT8, "int32": DType.INT32,
                      "int64": DType.INT64, "float16": DType.FLOAT16, "bfloat16": DType.BFLOAT16,
                      "float32": DType.FLOAT32, "float64": DType.FLOAT64}


def _is_torch(x):
    return type(x).__module__.startswith("torch") and "torch" in sys.modules


def dtype_of(d, argname="dtype"):
    """The DType for a DType, a NumPy dtype (or type) or a torch dtype; InvalidArgError (naming
    argname) if none."""
    if isinstance(d, DType):
        return d
    if isinstance(d, int) and not isinstance(d, bool) and 0 <= d < len(DType):
        return DType(d)
    if _is_torch(d):
        code = _TORCH_DTYPE_NAMES.get(str(d).replace("torch.", ""))
        if code is None:
            raise _bad("%s: dtype %s has no gcoll type (int8, uint8, int32, int64, float16, bfloat16, "
                       "float32, float64)" % (argname, d))
        return code
    import numpy as np
    try:
        nd = np.dtype(d)
    except TypeError:
        raise _bad("%s: %r is not a data type" % (argname, d)) from None
    code = _NP_DTYPES.get((nd.kind, nd.itemsize))
    if code is None or not nd.isnative:
        raise _bad("%s: dtype %s has no gcoll type (int8, uint8, int32, uint32, int64, uint64, float16, "
                   "float32, float64 in native byte order; bfloat16 through torch)" % (argname, nd))
    return code


# ---- buffers ---------------------------------------------------------------------------------

class _Buf:
    """One array or tensor as the C call sees it: address, element count, dtype.
    A CUDA tensor goes through a host copy (gcoll reads host memory); finish() writes it back."""

    __slots__ = ("obj", "host", "ptr", "count", "dtype", "writable")

    def __init__(self, x, argname, writable):
        self.obj = x
        self.host = None
        self.writable = writable
        if _is_torch(x):
            import torch
            if not isinstance(x, torch.Tensor):
                raise _bad("%s: a NumPy array or torch tensor, not %s" % (argname, type(x).__name__))
            self.dtype = dtype_of(x.dtype, argname)
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
        self.dtype = dtype_of(x.dtype, argname)
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


def _flat_view(x, n):
    """The first n elements of x, flat (the result of an in-place reduce-scatter)."""
    return x.reshape(-1)[:n]


def _out_buf(out, send, count, argname="out", writable=True):
    b = _Buf(out, argname, writable)
    if _is_torch(out) != _is_torch(send.obj):
        raise _bad("%s: a %s like the input" % (argname, "torch tensor" if _is_torch(send.obj) else "NumPy array"))
    if b.dtype != send.dtype:
        raise _bad("%s: dtype %s differs from the input's %s" % (argname, b.dtype.c_name,
                                                                 send.dtype.c_name))
    if b.count != count:
        raise _bad("%s: %d elements, expected %d" % (argname, b.count, count))
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
            self._h = _lib.c_req()
            self._complete(st)
        return self._result

    def test(self):
        self._after_finalize()
        if not self._h:
            return True
        done = ctypes.c_int(0)
        st = _L.gcoll_test(ctypes.byref(self._h), ctypes.byref(done))
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


def _attr(priority, name, algorithm, compress=None, topk_density=0.01):
    if compress not in _COMPRESS:
        raise _bad("compress: %r is not one of none, fp16, bf16, topk" % (compress,))
    return _lib.Attr(priority=int(priority), name=name.encode() if name is not None else None,
                     algorithm=algorithm.encode() if algorithm is not None else None,
                     compress=_COMPRESS[compress], topk_density=float(topk_density))


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

    # Each collective is built once as (C arguments, buffers, result) and then run blocking or
    # nonblocking, so the two forms cannot drift apart.

    # The builders return (C arguments, buffers, result). Every buffer the C side touches is in
    # the list, inputs too, so that a Request keeps each one alive until it completes.

    def _allreduce(self, x, op, out):
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True)
            return (s.ptr, s.ptr, s.count, s.dtype, int(op)), [s], x
        s = _Buf(x, "x", False)
        if out is None:
            out = _empty_like(x, tuple(x.shape))
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count, s.dtype, int(op)), [s, r], out

    def _reduce_scatter(self, x, op, out):
        n = self.size
        inplace = out is not None and _same(x, out)
        s = _Buf(x, "x", inplace)
        if s.count % n:
            raise _bad("x: %d elements do not split into %d equal blocks" % (s.count, n))
        count = s.count // n
        if inplace:
            return (s.ptr, s.ptr, count, s.dtype, int(op)), [s], _flat_view(x, count)
        if out is None:
            shape = tuple(x.shape)
            shape = (shape[0] // n,) + shape[1:] if shape and shape[0] % n == 0 else (count,)
            out = _empty_like(x, shape)
        r = _out_buf(out, s, count)
        return (s.ptr, r.ptr, count, s.dtype, int(op)), [s, r], out

    def _allgather(self, x, out):
        n = self.size
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True)
            if s.count % n:
                raise _bad("x: in place, %d elements do not split into %d blocks" % (s.count, n))
            return (s.ptr, s.ptr, s.count // n, s.dtype), [s], x
        s = _Buf(x, "x", False)
        if out is None:
            out = _empty_like(x, (n,) + tuple(x.shape))
        r = _out_buf(out, s, s.count * n)
        return (s.ptr, r.ptr, s.count, s.dtype), [s, r], out

    def _reduce(self, x, op, root, out):
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True)
            return (s.ptr, s.ptr, s.count, s.dtype, int(op), int(root)), [s], x
        s = _Buf(x, "x", False)
        if self.rank == int(root) and out is None:
            out = _empty_like(x, tuple(x.shape))
        if out is None:
            return (s.ptr, None, s.count, s.dtype, int(op), int(root)), [s], None
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count, s.dtype, int(op), int(root)), [s, r], out

    def _alltoall(self, x, out):
        n = self.size
        inplace = out is not None and _same(x, out)
        s = _Buf(x, "x", inplace)
        if s.count % n:
            raise _bad("x: %d elements do not split into %d equal blocks" % (s.count, n))
        if inplace:
            return (s.ptr, s.ptr, s.count // n, s.dtype), [s], x
        if out is None:
            out = _empty_like(x, tuple(x.shape))
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count // n, s.dtype), [s, r], out

    def _adasum(self, x, tensor_counts, out):
        counts, nt = _counts_array(tensor_counts)
        if out is not None and _same(x, out):
            s = _Buf(x, "x", True)
            return (s.ptr, s.ptr, s.count, s.dtype, counts, nt), [s], x, counts
        s = _Buf(x, "x", False)
        if out is None:
            out = _empty_like(x, tuple(x.shape))
        r = _out_buf(out, s, s.count)
        return (s.ptr, r.ptr, s.count, s.dtype, counts, nt), [s, r], out, counts

    def _run(self, fn, args, bufs, result):
        _check(fn(*args, self._h))
        for b in bufs:
            b.finish()
        return result

    def _start(self, fn, args, bufs, result, priority, name, algorithm, keep=(), attr=None):
        attr = attr or _attr(priority, name, algorithm)
        req = Request(bufs, result, (attr,) + tuple(keep))
        _check(fn(*args, self._h, ctypes.byref(attr), ctypes.byref(req._h)))
        return req

    def allreduce(self, x, op=SUM, out=None):
        return self._run(_L.gcoll_allreduce, *self._allreduce(x, op, out))

    def iallreduce(self, x, op=SUM, out=None, priority=0, name=None, algorithm=None, compress=None,
                   topk_density=0.01):
        """compress: None, "fp16", "bf16" (16-bit on the wire) or "topk" (the topk_density share of
        largest-magnitude entries of each rank); fp32 SUM/AVG only."""
        attr = _attr(priority, name, algorithm, compress, topk_density)
        return self._start(_L.gcoll_iallreduce, *self._allreduce(x, op, out), priority, name, algorithm,
                           attr=attr)

    def reduce_scatter(self, x, op=SUM, out=None):
        """x holds size blocks; this rank gets the reduction of block rank."""
        return self._run(_L.gcoll_reduce_scatter, *self._reduce_scatter(x, op, out))

    def ireduce_scatter(self, x, op=SUM, out=None, priority=0, name=None, algorithm=None):
        return self._start(_L.gcoll_ireduce_scatter, *self._reduce_scatter(x, op, out),
                           priority, name, algorithm)

    def allgather(self, x, out=None):
        """Every rank's x, stacked: out[r] is rank r's (in place: x holds every block)."""
        return self._run(_L.gcoll_allgather, *self._allgather(x, out))

    def iallgather(self, x, out=None, priority=0, name=None, algorithm=None):
        return self._start(_L.gcoll_iallgather, *self._allgather(x, out), priority, name, algorithm)

    def bcast(self, buf, root=0):
        """buf from root to every rank, in place."""
        b = _Buf(buf, "buf", True)
        return self._run(_L.gcoll_bcast, (b.ptr, b.count, b.dtype, int(root)), [b], buf)

    def ibcast(self, buf, root=0, priority=0, name=None, algorithm=None):
        b = _Buf(buf, "buf", True)
        return self._start(_L.gcoll_ibcast, (b.ptr, b.count, b.dtype, int(root)), [b], buf,
                           priority, name, algorithm)

    def reduce(self, x, op=SUM, root=0, out=None):
        """The reduction at root (returned there; None elsewhere unless out is given)."""
        return self._run(_L.gcoll_reduce, *self._reduce(x, op, root, out))

    def ireduce(self, x, op=SUM, root=0, out=None, priority=0, name=None, algorithm=None):
        return self._start(_L.gcoll_ireduce, *self._reduce(x, op, root, out), priority, name, algorithm)

    def alltoall(self, x, out=None):
        """x holds size blocks; block p goes to rank p, and out's block p comes from rank p."""
        return self._run(_L.gcoll_alltoall, *self._alltoall(x, out))

    def ialltoall(self, x, out=None, priority=0, name=None, algorithm=None):
        return self._start(_L.gcoll_ialltoall, *self._alltoall(x, out), priority, name, algorithm)

    def barrier(self):
        _check(_L.gcoll_barrier(self._h))

    def ibarrier(self, priority=0, name=None):
        return self._start(_L.gcoll_ibarrier, (), [], None, priority, name, None)

    def adasum(self, x, tensor_counts=None, out=None):
        """Adasum (docs/adasum.md) over the tensors whose element counts tensor_counts lists,
        back to back in x (None: one tensor)."""
        args, bufs, result, _counts = self._adasum(x, tensor_counts, out)
        return self._run(_L.gcoll_adasum, args, bufs, result)

    def iadasum(self, x, tensor_counts=None, out=None, priority=0, name=None, algorithm=None):
        args, bufs, result, counts = self._adasum(x, tensor_counts, out)
        return self._start(_L.gcoll_iadasum, args, bufs, result, priority, name, algorithm,
                           keep=(counts,))

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
        """Registers a set of count elements of dtype reduced with op (SUM, AVG, ADASUM);
        returns its id (0, 1, ... in order)."""
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

    def commit(self):
        _check(_L.gcoll_session_commit(self._h))

    def start(self, sid, buf):
        b = _Buf(buf, "buf", True)
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


def reduce_local(inout, x, op=SUM):
    """inout = inout op x with gcoll's kernels (SUM, PROD, MIN, MAX); works before init()."""
    a = _Buf(inout, "inout", True)
    b = _out_buf(x, a, a.count, "x", writable=False)
    _check(_L.gcoll_reduce_local(a.ptr, b.ptr, a.count, a.dtype, int(op)))
    a.finish()
    return inout
