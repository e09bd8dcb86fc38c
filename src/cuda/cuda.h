/* CUDA device buffers. Every CUDA call gcoll makes goes through one table of functions: the
 * real one is filled by dlopen of libcudart (and of libgcoll_cuda.so, the kernels nvcc built)
 * on first use, so libgcoll has no link-time dependency on CUDA and runs unchanged where there
 * is no driver or no GPU: then the table is absent and every pointer is host memory. Tests
 * install a fake table that emulates device memory on the host (tests/cuda/fake_cuda.c). */
#ifndef GCOLL_CUDA_H
#define GCOLL_CUDA_H

#include <stddef.h>

#include "gcoll.h"
#include "base/coll.h"
#include "core/attr.h"
#include "cuda/rt_abi.h"

/* Every function returns 0 on success or the runtime's nonzero error code (error_string names
 * it); event_query returns 0 when the event has completed, GCOLL_CUDA_NOT_READY when not yet. */
#define GCOLL_CUDA_NOT_READY 600 /* cudaErrorNotReady */

typedef struct gcoll__cuda_ops {
    const char *name;
    int (*is_device)(const void *p, int *device); /* 1 device, 2 managed memory, 0 host (cudaPointerGetAttributes) */
    int (*set_device)(int device);                /* the calling thread's device: progress threads run copies too */
    int (*stream_create)(void **stream);
    int (*stream_destroy)(void *stream);
    int (*stream_wait_event)(void *stream, void *event);
    int (*event_create)(void **event);
    int (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*event_query)(void *event);
    int (*event_sync)(void *event);
    int (*memcpy_async)(void *dst, const void *src, size_t bytes, void *stream); /* any direction */
    int (*host_alloc)(void **p, size_t bytes);                                   /* pinned */
    int (*host_free)(void *p);
    int (*dev_alloc)(void **p, size_t bytes);
    int (*dev_free)(void *p);
    const char *(*error_string)(int err);
    /* The reduction kernel (NULL when libgcoll_cuda.so is missing): dst = a op b on the device. */
    int (*reduce)(void *dst, const void *a, const void *b, size_t n, int dtype, int op, void *stream);
    /* CUDA IPC (any of them NULL: no IPC). export: the allocation holding p as a handle another
     * process can open, p's offset in it, and an id no other allocation of this process gets;
     * open: maps a peer's handle (the allocation's base); close: unmaps what open returned. */
    int (*ipc_export)(const void *p, gcoll__cuda_ipc_handle_t *h, size_t *offset, unsigned long long *id);
    int (*ipc_open)(const gcoll__cuda_ipc_handle_t *h, void **base);
    int (*ipc_close)(void *base);
    /* The GPU's PCI bus id, which tells ranks that share a GPU (NULL: unknown). */
    int (*bus_id)(int device, char *buf, int len);
    /* Every dst[d][i] = op over s of src[s][i], divided by divisor when above 1 (NULL when
     * libgcoll_cuda.so is missing); at most GCOLL_CUDA_MULTI_MAX of each, any dtype. */
    int (*reduce_multi)(void *const *dst, int ndst, const void *const *src, int nsrc, size_t n, int dtype, int op,
                        unsigned divisor, void *stream);
    /* Adasum's kernels (NULL when libgcoll_cuda.so is missing): the three doubles at out (device
     * memory) become a.b, a.a, b.b; dst = ca a + cb b (dst may be a or b). */
    int (*adasum_dots)(const void *a, const void *b, size_t n, int dtype, double *out, void *stream);
    int (*scaled_add)(void *dst, double ca, const void *a, double cb, const void *b, size_t n, int dtype, void *stream);
    /* dst = src converted from src_dtype to dst_dtype, round to nearest even: fp32 to or from fp16
     * or bf16 (compression's wire formats); NULL when libgcoll_cuda.so is missing. */
    int (*convert)(void *dst, int dst_dtype, const void *src, int src_dtype, size_t n, void *stream);
} gcoll__cuda_ops_t;

/* The table in use: NULL when there is no CUDA (decided once, on first use). */
const gcoll__cuda_ops_t *gcoll__cuda_get(void);
/* One line on whether CUDA is on and why (gcoll-info prints it); loads the table if needed. */
const char *gcoll__cuda_describe(void);
/* Tests: installs ops (a fake) in place of whatever dlopen would find; call before gcoll_init. */
void gcoll__cuda_set_ops(const gcoll__cuda_ops_t *ops);

/* gcoll__error for a failed CUDA call: "CUDA <what> failed: <the runtime's message>". */
gcoll_status_t gcoll__cuda_fail(int err, const char *what);
#define GCOLL_CU(call, what)                     \
    do {                                         \
        int e_ = (call);                         \
        if (e_)                                  \
            return gcoll__cuda_fail(e_, (what)); \
    } while (0)
/* *done: 1 when the event has completed, 0 when not yet; a failed query is returned. */
gcoll_status_t gcoll__cuda_ready(void *event, int *done);

/* Whether p is device memory; 0 whenever there is no CUDA (one cached load, no call). */
static inline int gcoll__cuda_is_device(const void *p)
{
    const gcoll__cuda_ops_t *c;
    int dev;
    return p && (c = gcoll__cuda_get()) != NULL && c->is_device(p, &dev);
}

/* The range of elements rank q of p computes where the ranks split n: equal shares, each a
 * multiple of 64 elements so that every share starts 16-byte aligned where the buffers do. */
static inline void gcoll__cuda_share(size_t n, int q, int p, size_t *lo, size_t *hi)
{
    size_t per = ((n + (size_t)p - 1) / (size_t)p + 63) & ~(size_t)63;
    *lo = (size_t)q * per < n ? (size_t)q * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

/* Starts the collective a (whose buffers include device memory) over pinned host staging: chunks
 * copied down, the host algorithm on each chunk, results copied up, each chunk's copies
 * overlapping other chunks' transfers. adasum: tensor_counts/ntensors as gcoll_iadasum's. */
gcoll_status_t gcoll__cuda_stage_start(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                       gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req);

/* Whether the staged a is placed for a GPU path: both buffers on the device, ranks that share no
 * node channel, two of them or a send buffer of GCOLL_CUDA_REDUCE_MIN bytes (stage.c). */
int gcoll__cuda_stage_gpu_placed(const gcoll__coll_args_t *a);
/* Whether the staged Adasum a runs its tree on the GPU (stage_adasum.c): both buffers on the device,
 * ranks that share no node channel, the kernels there, no host algorithm named in attr; more than
 * two ranks from GCOLL_CUDA_REDUCE_MIN bytes. */
int gcoll__cuda_stage_adasum_gpu(const gcoll__coll_args_t *a, const gcoll__attr_t *attr);
/* Starts it: the shares of the inputs cross through pinned memory, the tree runs on the GPU over
 * each rank's share, the result's slices cross back. */
gcoll_status_t gcoll__cuda_stage_adasum_start(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                              gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req);

/* Whether a (its buffers device memory) runs over CUDA IPC: every rank of comm on this host, the
 * table able to, GCOLL_CUDA_IPC not off. Every rank decides alike where all pass device memory.
 * When not, *why says why (NULL when GCOLL_CUDA_IPC is off). */
int gcoll__cuda_ipc_eligible(const gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                             const char **why);
/* Starts a over CUDA IPC: each rank maps its peers' buffers and reduces or copies its share of
 * the result with kernels, the host exchanging only handles and completion. */
gcoll_status_t gcoll__cuda_ipc_start(gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                                     gcoll_request_t *req);
/* Whether the Adasum a (device buffers) runs over CUDA IPC, as gcoll__cuda_ipc_eligible. */
int gcoll__cuda_ipc_adasum_eligible(const gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                                    const char **why);
/* Starts the Adasum a over CUDA IPC: each rank computes the tree on its slice of the elements
 * with the GPU kernels, the ranks summing each level's per-tensor dot products on the host;
 * tensor_counts/ntensors as gcoll_iadasum's. */
gcoll_status_t gcoll__cuda_ipc_adasum_start(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                            gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req);
/* At finalize: unmaps every peer allocation still mapped. */
void gcoll__cuda_ipc_release(void);

/* gcoll_reduce_local on device buffers: the kernel on the default stream, waited for. */
gcoll_status_t gcoll__cuda_reduce_local(void *inout, const void *in, size_t count, gcoll_dtype_t dtype, gcoll_op_t op);

/* memcpy, or a CUDA copy waited for when dst or src is device memory (the gradient session's
 * fusion buckets are host memory; a set's gradient may live on the GPU). */
gcoll_status_t gcoll__cuda_copy(void *dst, const void *src, size_t bytes);

/* A block of at least bytes of pinned host memory (device -1) or of that GPU's memory from the
 * cache (cache.c), allocated when none is free; NULL when that fails. Back with _put. */
void *gcoll__cuda_cached_get(int device, size_t bytes);
void gcoll__cuda_cached_put(void *p);
/* At finalize: returns the memory cached. */
void gcoll__cuda_release(void);

#endif
