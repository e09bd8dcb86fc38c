"""PyTorch over gcoll (torch 1.13 and later).

Importing this module registers gcoll as a torch.distributed backend: dist.init_process_group(
"gcoll") under torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or under
mpirun; the ranks meet through the c10d store torch hands the backend (gcoll_init_store), and
every group (new_group included) is a gcoll communicator. DDP communication hooks:
ddp.register_comm_hook(state, gcoll.torch.allreduce_hook) averages, adasum_hook applies Adasum;
state None runs them on the backend's process group, a gcoll.Comm on that communicator.
Priorities: gradient reductions started while others are in flight overtake them (bucket
priorities, bucket_priorities() turns them off); `with gcoll.torch.priority(p):` sets them.
dump(path) writes a group's flight recorder.
"""
import atexit
import fcntl
import importlib.util
import os
import socket
import struct

import torch
import torch.distributed as dist

import gcoll
from gcoll import _lib

_EXTENSION = "gcoll_c10d.so"


def _extension_path():
    """The backend's extension module: beside the libgcoll this package loaded, or beside it."""
    places = [os.path.dirname(os.path.abspath(__file__))]
    if os.sep in _lib.path:
        places.insert(0, os.path.dirname(os.path.realpath(_lib.path)))
        places.insert(0, os.path.dirname(_lib.path))
    for d in places:
        path = os.path.join(d, _EXTENSION)
        if os.path.exists(path):
            return path
    raise ImportError("gcoll: the torch.distributed backend (%s) was not built: `make` builds it where "
                      "Debian's libtorch-dev, pybind11-dev and python3-dev are installed; looked in %s"
                      % (_EXTENSION, ", ".join(places)))


_module = None


def _backend():
    global _module
    if _module is None:
        spec = importlib.util.spec_from_file_location("gcoll_c10d", _extension_path())
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _module = mod
    return _module


def _create(store, rank, size, timeout):
    """torch.distributed's creator for backend "gcoll": one gcoll communicator per group."""
    return _backend().ProcessGroupGcoll(store, rank, size, timeout.total_seconds())


def _interface_addr(name):
    """The IPv4 address of network interface name, or None (Linux's SIOCGIFADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            req = struct.pack("256s", name.encode()[:15])
            return socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24])
        except OSError:
            return None


def _spec_matches(spec, name):
    """GCOLL_TCP_IFNAME's syntax, as gcoll's TCP transport reads it (NCCL_SOCKET_IFNAME's):
    prefixes, ^ excludes them, = makes them exact names."""
    exclude, exact = spec.startswith("^"), spec.startswith("=")
    parts = [p for p in (spec[1:] if exclude or exact else spec).split(",") if p]
    return any(name == p if exact else name.startswith(p) for p in parts) != exclude


def _reachable_addr():
    """An address of this host that the job's other hosts reach: on the interfaces the user named
    for gcoll (GCOLL_TCP_IFNAME) or gloo (GLOO_SOCKET_IFNAME: exact names); else the host name's
    address when it resolves at all and not to loopback (Debian maps the name to 127.0.1.1); else
    that of the first interface up with a non-loopback one."""
    names = [n for _, n in socket.if_nameindex()]
    tcp, gloo = os.environ.get("GCOLL_TCP_IFNAME", "auto"), os.environ.get("GLOO_SOCKET_IFNAME", "")
    named = [n for n in names if tcp != "auto" and _spec_matches(tcp, n)] + [n for n in gloo.split(",") if n]
    try:
        by_name = [socket.gethostbyname(socket.gethostname())]
    except OSError:
        by_name = []
    for addr in [_interface_addr(n) for n in named] + by_name + [_interface_addr(n) for n in names]:
        if addr and not addr.startswith("127."):
            return addr
    raise RuntimeError("gcoll: under mpirun across hosts, this host (%s) has no address that others can reach: "
                       "set MASTER_ADDR, or GCOLL_TCP_IFNAME to the interface to use" % socket.gethostname())


def _launched_by_mpi():
    """RANK, WORLD_SIZE and, where missing, MASTER_ADDR and MASTER_PORT for env:// under mpirun:
    the launcher's rank variables; rank 0's address and a port free there, sent through gcoll."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK"))
    size = os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE"))
    if rank is None or size is None or "RANK" in os.environ or "WORLD_SIZE" in os.environ:
        return
    os.environ["RANK"], os.environ["WORLD_SIZE"] = rank, size
    local = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK")
    if local is not None:
        os.environ.setdefault("LOCAL_RANK", local)
        os.environ.setdefault("LOCAL_WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if "MASTER_ADDR" in os.environ and "MASTER_PORT" in os.environ:
        return
    gcoll.init()
    comm = gcoll.comm_world()
    where = torch.zeros(64, dtype=torch.uint8)
    failure = None
    if comm.rank == 0:
        one_host = os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE") == size
        try:
            addr = os.environ.get("MASTER_ADDR") or ("127.0.0.1" if one_host else _reachable_addr())
        except RuntimeError as e:
            failure = e  # the others learn it from an empty address, rather than wait out a timeout
        else:
            with socket.socket() as s:
                s.bind(("", 0))
                port = os.environ.get("MASTER_PORT") or str(s.getsockname()[1])
            text = ("%s:%s" % (addr, port)).encode()
            where[:len(text)] = torch.tensor(list(text), dtype=torch.uint8)
    comm.bcast(where, 0)
    if failure:
        raise failure
    if not where[0]:
        raise RuntimeError("gcoll: under mpirun, rank 0 found no address for the ranks to meet at (its error "
                           "says why): set MASTER_ADDR and MASTER_PORT")
    addr, port = bytes(where.tolist()).rstrip(b"\0").decode().rsplit(":", 1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = addr, port
    # gcoll stays initialized (MPI cannot start twice); the process groups nest in it


def _destroy_at_exit():
    """Process groups still alive at exit are destroyed while the interpreter can still release
    their tensors: later, their completion threads could not."""
    if dist.is_initialized():
        dist.destroy_process_group()


if "GCOLL" not in dist.Backend._plugins:
    dist.Backend.register_backend("gcoll", _create)
    atexit.register(_destroy_at_exit)
_launched_by_mpi()


class priority:
    """`with gcoll.torch.priority(p):` gives the operations this thread starts on gcoll process
    groups priority p (higher runs first, 0 by default); bucket priorities do not apply to them.
    priority(None) restores the default inside an outer one."""

    def __init__(self, p):
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or not -2**31 <= p < 2**31):
            raise ValueError("gcoll.torch.priority: p must be an int of 32 bits or None, not %r" % (p,))
        self._p = p
        self._before = None

    def __enter__(self):
        self._before = _backend().set_priority(self._p)
        return self

    def __exit__(self, *exc):
        _backend().set_priority(self._before)
        return False


def bucket_priorities(on=True, group=None):
    """Turns bucket priorities on or off for group (the default group when None): with them, a
    gradient reduction (allreduce, reduce_scatter, adasum) started while others of the group are
    in flight gets a priority one above the newest of them, so DDP's later buckets, which hold
    the first layers, overtake the earlier ones. On by default. Returns the setting before."""
    pg = _group(group)
    if pg is None:
        raise ValueError("gcoll.torch.bucket_priorities: %s is not a gcoll process group"
                         % ("the default group" if group is None else group))
    before = pg.bucket_priorities()
    pg.set_bucket_priorities(bool(on))
    return before


def dump(path, group=None):
    """Writes the flight recorder of group's communicator (the default group when None), its last
    operations, to path as JSON (gcoll_comm_dump: %r becomes the rank, %c the communicator's
    number); works after a failure. gcoll-info --trace reads the ranks' files together."""
    pg = _group(group)
    if pg is None:
        raise ValueError("gcoll.torch.dump: %s is not a gcoll process group"
                         % ("the default group" if group is None else group))
    pg.dump(os.fspath(path))


def gloo_init_method(comm):
    """tcp://127.0.0.1:PORT with a port free on rank 0, sent to every rank with gcoll bcast."""
    port = torch.zeros(1, dtype=torch.int64)
    if comm.rank == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port[0] = s.getsockname()[1]
    comm.bcast(port, 0)
    return "tcp://127.0.0.1:%d" % int(port[0])


# (request, future, result) of the buckets started and not yet completed, in start order.
_pending = []


def _comm(state):
    if isinstance(state, gcoll.Comm):
        return state
    if state is None:
        return gcoll.comm_world()
    raise TypeError("gcoll.torch hooks take a gcoll.Comm, a gcoll process group or None as state, not %s"
                    % type(state).__name__)


def _group(state):
    """The gcoll process group a hook runs on: state itself, or with None the default group when
    it is gcoll's; None otherwise (the hook then runs on a gcoll.Comm)."""
    if state is None and dist.is_initialized():
        state = dist.distributed_c10d._get_default_group()
    if _module is not None and isinstance(state, _module.ProcessGroupGcoll):
        return state
    return None


def _first(fut):
    return fut.value()[0]


def _settle(req, fut, result):
    try:
        req.wait()
    except gcoll.GcollError as e:
        fut.set_exception(e)
        return
    fut.set_result(result)


def _complete(all_of_them):
    """Completes the futures of finished operations (all of them when all_of_them)."""
    global _pending
    still = []
    for entry in _pending:
        req = entry[0]
        if all_of_them or req.test():
            _settle(*entry)
        else:
            still.append(entry)
    _pending = still


def _launch(start, bucket):
    buf = bucket.buffer()
    fut = torch.futures.Future()
    try:
        # Later DDP buckets hold earlier layers, which the next forward pass needs first.
        req = start(buf, priority=bucket.index(), name="ddp-bucket-%d" % bucket.index())
    except gcoll.GcollError as e:
        fut.set_exception(e)
        return fut
    _pending.append((req, fut, buf))
    _complete(bucket.is_last())
    return fut


def allreduce_hook(state, bucket):
    """Averages the bucket across the ranks of state (gcoll iallreduce with AVG, in place)."""
    pg = _group(state)
    if pg is not None:
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.AVG
        return pg.allreduce([bucket.buffer()], opts).get_future().then(_first)
    comm = _comm(state)
    return _launch(lambda buf, **kw: comm.iallreduce(buf, gcoll.AVG, out=buf, **kw), bucket)


def adasum_hook(state, bucket):
    """Adasum of the bucket across the ranks of state, each gradient its own tensor (dots and
    norms never cross a gradient's boundary)."""
    counts = [g.numel() for g in bucket.gradients()]
    pg = _group(state)
    if pg is not None:
        return pg.adasum(bucket.buffer(), counts).get_future().then(_first)
    comm = _comm(state)
    return _launch(lambda buf, **kw: comm.iadasum(buf, counts, out=buf, **kw), bucket)
