"""Finds and loads libgcoll.so through ctypes and declares the C ABI of include/gcoll.h.

The search order: $GCOLL_LIBRARY, the path recorded when the package was installed
(gcoll/_install.py), a libgcoll.so.1 next to this file, then the dynamic loader's own path.
"""
import ctypes
import os

_SONAME = "libgcoll.so.1"


def _candidates():
    env = os.environ.get("GCOLL_LIBRARY", "none")
    if env != "none":
        # An explicit choice is never second-guessed: a wrong path fails loudly.
        return [env]
    found = []
    try:
        from . import _install
        if _install.LIBRARY:
            found.append(_install.LIBRARY)
    except ImportError:
        pass
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), _SONAME)
    found.append(here)
    found.append(_SONAME)
    return found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path) and path != os.environ.get("GCOLL_LIBRARY"):
            # absent optional places are skipped quietly; an explicit GCOLL_LIBRARY is tried
            tried.append(path + " (absent)")
            continue
        try:
            # RTLD_GLOBAL: Open MPI's components, loaded later by libmpi, look up libmpi's
            # symbols in the global namespace.
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("gcoll: cannot load libgcoll; set GCOLL_LIBRARY to its path. Tried: "
                      + "; ".join(tried))


lib, path = _load()

c_status = ctypes.c_int
c_comm = ctypes.c_void_p
c_req = ctypes.c_void_p
c_session = ctypes.c_void_p
P = ctypes.POINTER
vp = ctypes.c_void_p
sz = ctypes.c_size_t
i = ctypes.c_int
s = ctypes.c_char_p


ATTR_MAGIC = 0x67636174  # GCOLL_ATTR_MAGIC
HEADER_VERSION = 200  # GCOLL_VERSION of the include/gcoll.h that Attr mirrors (0.2.0)


class Attr(ctypes.Structure):
    # gcoll_attr_t of that header, field by field in order; its own size in the header field
    # tells the library which fields this mirror has, so a newer library reads it unchanged
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("priority", ctypes.c_int), ("compress", ctypes.c_int), ("name", ctypes.c_char_p),
                ("algorithm", ctypes.c_char_p), ("topk_density", ctypes.c_double),
                ("stream", ctypes.c_void_p), ("premul", ctypes.c_double)]

    def __init__(self, **fields):
        # GCOLL_ATTR_INIT, then the fields given
        init = dict(size=ctypes.sizeof(Attr), magic=ATTR_MAGIC, version=HEADER_VERSION, topk_density=0.01,
                    premul=0.0)
        init.update(fields)
        super().__init__(**init)


class ConfigVar(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_char_p),
                ("default_str", ctypes.c_char_p), ("description", ctypes.c_char_p)]


_PROTOS = {
    "gcoll_init": (c_status, [vp, vp]),
    "gcoll_finalize": (c_status, []),
    "gcoll_comm_world": (c_status, [P(c_comm)]),
    "gcoll_comm_split": (c_status, [c_comm, i, i, P(c_comm)]),
    "gcoll_comm_dup": (c_status, [c_comm, P(c_comm)]),
    "gcoll_comm_free": (c_status, [P(c_comm)]),
    "gcoll_comm_rank": (i, [c_comm]),
    "gcoll_comm_size": (i, [c_comm]),
    "gcoll_comm_abort": (c_status, [c_comm]),
    "gcoll_comm_algorithm": (c_status, [c_comm, s, sz, i, P(s)]),
    "gcoll_comm_transport": (c_status, [c_comm, P(s)]),
    "gcoll_comm_set_algorithm": (c_status, [c_comm, s, s]),
    "gcoll_allreduce": (c_status, [vp, vp, sz, i, i, c_comm]),
    "gcoll_reduce_scatter": (c_status, [vp, vp, sz, i, i, c_comm]),
    "gcoll_allgather": (c_status, [vp, vp, sz, i, c_comm]),
    "gcoll_bcast": (c_status, [vp, sz, i, i, c_comm]),
    "gcoll_reduce": (c_status, [vp, vp, sz, i, i, i, c_comm]),
    "gcoll_alltoall": (c_status, [vp, vp, sz, i, c_comm]),
    "gcoll_barrier": (c_status, [c_comm]),
    "gcoll_adasum": (c_status, [vp, vp, sz, i, P(sz), sz, c_comm]),
    "gcoll_iallreduce": (c_status, [vp, vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_ireduce_scatter": (c_status, [vp, vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_iallgather": (c_status, [vp, vp, sz, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_ibcast": (c_status, [vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_ireduce": (c_status, [vp, vp, sz, i, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_ialltoall": (c_status, [vp, vp, sz, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_ibarrier": (c_status, [c_comm, P(Attr), P(c_req)]),
    "gcoll_iadasum": (c_status, [vp, vp, sz, i, P(sz), sz, c_comm, P(Attr), P(c_req)]),
    "gcoll_wait": (c_status, [P(c_req)]),
    "gcoll_test": (c_status, [P(c_req), P(i)]),
    "gcoll_session_create": (c_status, [c_comm, P(c_session)]),
    "gcoll_session_add": (c_status, [c_session, s, sz, i, i, P(sz)]),
    "gcoll_session_set_compress": (c_status, [c_session, sz, i, ctypes.c_double]),
    "gcoll_comm_bytes_sent": (c_status, [c_comm, P(ctypes.c_ulonglong)]),
    "gcoll_comm_dump": (c_status, [c_comm, s]),
    "gcoll_session_commit": (c_status, [c_session]),
    "gcoll_session_start": (c_status, [c_session, sz, vp]),
    "gcoll_session_test": (c_status, [c_session, sz, P(i)]),
    "gcoll_session_wait": (c_status, [c_session, sz]),
    "gcoll_session_wait_all": (c_status, [c_session]),
    "gcoll_session_buckets": (c_status, [c_session, P(sz)]),
    "gcoll_session_bucket_of": (c_status, [c_session, sz, P(sz)]),
    "gcoll_session_free": (c_status, [P(c_session)]),
    "gcoll_strerror": (s, [i]),
    "gcoll_status_name": (s, [i]),
    "gcoll_last_error": (s, []),
    "gcoll_version": (s, []),
    "gcoll_dtype_size": (sz, [i]),
    "gcoll_dtype_name": (s, [i]),
    "gcoll_op_name": (s, [i]),
    "gcoll_config_count": (sz, []),
    "gcoll_config_var": (c_status, [sz, P(ConfigVar)]),
    "gcoll_config_get": (c_status, [s, ctypes.c_char_p, sz, P(s)]),
    "gcoll_reduce_local": (c_status, [vp, vp, sz, i, i]),
    "gcoll_algorithms": (c_status, [s, P(P(s)), P(sz)]),
    "gcoll_allgatherv": (c_status, [vp, sz, vp, P(sz), P(sz), i, c_comm]),
    "gcoll_reduce_scatterv": (c_status, [vp, vp, P(sz), i, i, c_comm]),
    "gcoll_alltoallv": (c_status, [vp, P(sz), P(sz), vp, P(sz), P(sz), i, c_comm]),
    "gcoll_gather": (c_status, [vp, vp, sz, i, i, c_comm]),
    "gcoll_scatter": (c_status, [vp, vp, sz, i, i, c_comm]),
    "gcoll_gatherv": (c_status, [vp, sz, vp, P(sz), P(sz), i, i, c_comm]),
    "gcoll_scatterv": (c_status, [vp, P(sz), P(sz), vp, sz, i, i, c_comm]),
    "gcoll_send": (c_status, [vp, sz, i, i, c_comm]),
    "gcoll_recv": (c_status, [vp, sz, i, i, c_comm]),
    "gcoll_group_start": (c_status, []),
    "gcoll_group_end": (c_status, []),
    "gcoll_iallgatherv": (c_status, [vp, sz, vp, P(sz), P(sz), i, c_comm, P(Attr), P(c_req)]),
    "gcoll_ireduce_scatterv": (c_status, [vp, vp, P(sz), i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_ialltoallv": (c_status, [vp, P(sz), P(sz), vp, P(sz), P(sz), i, c_comm, P(Attr), P(c_req)]),
    "gcoll_igather": (c_status, [vp, vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_iscatter": (c_status, [vp, vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_igatherv": (c_status, [vp, sz, vp, P(sz), P(sz), i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_iscatterv": (c_status, [vp, P(sz), P(sz), vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_isend": (c_status, [vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_irecv": (c_status, [vp, sz, i, i, c_comm, P(Attr), P(c_req)]),
    "gcoll_session_set_premul": (c_status, [c_session, sz, ctypes.c_double]),
}

# The calls added with the vector collectives, point-to-point and groups: a libgcoll built
# before them still loads, and calling one that it lacks raises (on_missing, set by the package).
_LATER = {"gcoll_%s%s" % (i_, n) for i_ in ("", "i") for n in
          ("allgatherv", "reduce_scatterv", "alltoallv", "gather", "scatter", "gatherv", "scatterv", "send", "recv")}
_LATER |= {"gcoll_group_start", "gcoll_group_end", "gcoll_session_set_premul"}
on_missing = None


def _absent(name):
    def call(*_args):
        return on_missing(name)
    return call


for _name, (_res, _args) in _PROTOS.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        if _name not in _LATER:
            raise
        setattr(lib, _name, _absent(_name))
        continue
    _f.restype = _res
    _f.argtypes = _args
