/* The collective entry points: argument checks (every message names the argument), the
 * algorithm choice, schedule construction, and the start of a request. Each blocking call is
 * its nonblocking twin plus gcoll_wait, with the request and schedule in its own frame. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attr.h"
#include "core/comm.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/reduce.h"
#include "core/post.h"
#include "core/request.h"
#include "base/schedule.h"
#include "cuda/cuda.h"
#include "collectives/adasum.h"
#include "collectives/select.h"

gcoll_status_t gcoll__check_buf(const void *buf, size_t count, const char *name)
{
    if (!buf && count)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL with count %zu", name, count);
    return GCOLL_SUCCESS;
}

static int floating(gcoll_dtype_t d)
{
    return d == GCOLL_FLOAT16 || d == GCOLL_BFLOAT16 || d == GCOLL_FLOAT32 || d == GCOLL_FLOAT64 ||
        d == GCOLL_FLOAT8_E4M3 || d == GCOLL_FLOAT8_E5M2;
}

gcoll_status_t gcoll__check_common(gcoll__coll_args_t *a, gcoll_comm_t comm, int needs_op)
{
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    if (!gcoll__dtype_valid(a->dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %d is not a gcoll_dtype_t", (int)a->dtype);
    if (needs_op && !gcoll__op_valid(a->op))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "op %d is not a gcoll_op_t", (int)a->op);
    if (needs_op && a->op == GCOLL_ADASUM && a->coll != GCOLL_COLL_ALLREDUCE)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "op GCOLL_ADASUM: only gcoll_allreduce, gcoll_adasum and the gradient session take it");
    if (needs_op && a->op == GCOLL_PREMUL_SUM && !floating(a->dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "op GCOLL_PREMUL_SUM: takes floating-point types only, not %s",
                            gcoll_dtype_name(a->dtype));
    a->rank = comm->rank;
    a->size = comm->size;
    a->shm = comm->shm;
    a->map = &comm->map;
    a->links = &comm->links;
    a->table = comm->own_table[a->coll] ? &comm->table[a->coll] : NULL;
    a->esize = gcoll_dtype_size(a->dtype);
    /* The whole vector of any collective is at most count * size elements. */
    if (a->count > SIZE_MAX / a->esize / (size_t)a->size)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "count %zu is too large for %s on %d ranks", a->count,
                            gcoll_dtype_name(a->dtype), a->size);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__compress_check(gcoll_compress_t compress, double density, gcoll_dtype_t dtype, gcoll_op_t op,
                                     const char *cname, const char *dname)
{
    static const char *const names[] = {"GCOLL_COMPRESS_NONE", "GCOLL_COMPRESS_FP16", "GCOLL_COMPRESS_BF16",
                                        "GCOLL_COMPRESS_TOPK"};
    if ((int)compress < 0 || compress >= GCOLL_COMPRESS_COUNT)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s %d is not a gcoll_compress_t", cname, (int)compress);
    if (compress == GCOLL_COMPRESS_NONE)
        return GCOLL_SUCCESS;
    if (dtype != GCOLL_FLOAT32)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s %s: takes float32 only, not %s", cname, names[compress],
                            gcoll_dtype_name(dtype));
    if (op != GCOLL_SUM && op != GCOLL_AVG)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s %s: takes op GCOLL_SUM or GCOLL_AVG only, not %s", cname,
                            names[compress], gcoll_op_name(op));
    if (compress == GCOLL_COMPRESS_TOPK && !(density > 0 && density <= 1))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s %g is outside (0, 1]", dname, density);
    return GCOLL_SUCCESS;
}

/* attr's compression into a (allreduce only; other collectives refuse it). */
static gcoll_status_t apply_compress(gcoll__coll_args_t *a, const gcoll__attr_t *attr)
{
    if (attr->compress == GCOLL_COMPRESS_NONE)
        return GCOLL_SUCCESS;
    if (a->coll != GCOLL_COLL_ALLREDUCE)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "attr->compress: only allreduce takes compression, not %s",
                            gcoll__coll_name(a->coll));
    GCOLL_CHECK(gcoll__compress_check(attr->compress, attr->topk_density, a->dtype, a->op, "attr->compress",
                                      "attr->topk_density"));
    if (attr->compress == GCOLL_COMPRESS_TOPK && a->count > UINT32_MAX)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "count %zu: top-k sends 32-bit indices, so at most %u elements",
                            a->count, UINT32_MAX);
    a->compress = attr->compress;
    a->density = attr->topk_density;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__check_root(int root, gcoll_comm_t comm)
{
    if (root < 0 || root >= comm->size)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "root %d is out of range for a communicator of %d ranks", root,
                            comm->size);
    return GCOLL_SUCCESS;
}

/* The count a collective's messages carry for mismatch checks: one that every rank knows alike
 * (the vector collectives' totals, or none where each rank knows only its own counts). */
static size_t desc_count(const gcoll__coll_args_t *a)
{
    switch (a->coll) {
    case GCOLL_COLL_ALLGATHERV:
    case GCOLL_COLL_REDUCE_SCATTERV: return a->total;
    case GCOLL_COLL_ALLTOALLV:
    case GCOLL_COLL_GATHERV:
    case GCOLL_COLL_SCATTERV: return 0;
    default: return a->count;
    }
}

/* The elements of a reducing collective's input on this rank. */
static size_t input_count(const gcoll__coll_args_t *a)
{
    switch (a->coll) {
    case GCOLL_COLL_REDUCE_SCATTER: return a->count * (size_t)a->size;
    case GCOLL_COLL_REDUCE_SCATTERV: return a->total;
    default: return a->count;
    }
}

/* GCOLL_PREMUL_SUM: this rank's input scaled by its premul, as the call posts it (in place in
 * the caller's buffer when the call is in place, whose result replaces it anyway, else into the
 * schedule's own); the operation then sums. */
static void premultiply(gcoll__sched_t *s, gcoll__coll_args_t *b)
{
    size_t n = input_count(b);
    if (b->sendbuf == b->recvbuf && (b->coll != GCOLL_COLL_REDUCE || b->rank == b->root)) {
        gcoll__scale(b->recvbuf, b->recvbuf, n, b->dtype, b->premul);
    } else {
        void *scaled = gcoll__sched_scratch(s, n * b->esize);
        if (scaled)
            gcoll__scale(scaled, b->sendbuf, n, b->dtype, b->premul);
        b->sendbuf = scaled;
    }
}

gcoll_status_t gcoll__build(const gcoll__coll_args_t *a, const char *forced, gcoll__sched_t *storage,
                            gcoll__sched_t **out, const char **algo_name)
{
    gcoll__coll_args_t b = *a;
    if (a->op == GCOLL_PREMUL_SUM)
        b.op = GCOLL_SUM; /* what the algorithms see */
    const gcoll__algo_t *algo;
    GCOLL_CHECK(gcoll__algo_select(&b, forced, &algo));
    gcoll__sched_t *s = gcoll__sched_new(b.dtype, b.op, (unsigned)a->size, storage);
    if (!s)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
    s->desc = gcoll__opdesc_of(a->coll, a->dtype, a->op, desc_count(a), a->root);
    if (a->compress == GCOLL_COMPRESS_FP16 || a->compress == GCOLL_COMPRESS_BF16)
        s->wire = a->compress;
    if (a->op == GCOLL_PREMUL_SUM && input_count(a))
        premultiply(s, &b);
    if (s->status == GCOLL_SUCCESS && (a->count || a->coll == GCOLL_COLL_BARRIER || gcoll__coll_vector(a->coll)))
        algo->build(s, &b);
    if (s->status != GCOLL_SUCCESS) {
        gcoll_status_t st = s->status;
        gcoll__sched_free(s);
        return gcoll__error(st, "%s: no memory for the schedule of %zu elements", gcoll__coll_name(a->coll), a->count);
    }
    *out = s;
    *algo_name = algo->name;
    return GCOLL_SUCCESS;
}

/* Device buffers, or an order on a CUDA stream: the host-staged pipeline (src/cuda/stage.c). */
static int staged(const gcoll__coll_args_t *a, const gcoll__attr_t *attr)
{
    return attr->stream || gcoll__cuda_is_device(a->sendbuf) || gcoll__cuda_is_device(a->recvbuf);
}

/* GCOLL_CUDA_IPC=on refuses what cannot use CUDA IPC (why) rather than staging it. */
static gcoll_status_t ipc_demanded(const gcoll__coll_args_t *a, const char *why)
{
    if (why && gcoll__config.cuda_ipc == 1)
        return gcoll__error(GCOLL_ERR_UNSUPPORTED, "GCOLL_CUDA_IPC=on, but this %s cannot use CUDA IPC: %s",
                            gcoll__coll_name(a->coll), why);
    return GCOLL_SUCCESS;
}

static gcoll_status_t start(gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req,
                            gcoll__frame_t *frame)
{
    GCOLL_CHECK(apply_compress(a, attr));
    a->premul = attr->premul;
    if (staged(a, attr)) {
        if (gcoll__coll_vector(a->coll) || a->op == GCOLL_PREMUL_SUM)
            return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                                "%s%s: takes host memory only, not device buffers or a CUDA "
                                "stream (docs/cuda.md)",
                                gcoll__coll_name(a->coll), a->op == GCOLL_PREMUL_SUM ? " with GCOLL_PREMUL_SUM" : "");
        /* the staged chunks would each pick their own top k; fp16/bf16 run uncompressed over CUDA
         * IPC (no wire to save: exact, within the bound) and as the host's compressed algorithms
         * on the staged chunks */
        if (a->compress == GCOLL_COMPRESS_TOPK)
            return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                                "attr->compress: top-k not with device buffers or a CUDA stream "
                                "(docs/cuda.md)");
        const char *why;
        if (gcoll__cuda_ipc_eligible(a, comm, attr, &why))
            return gcoll__cuda_ipc_start(a, comm, attr, req);
        GCOLL_CHECK(ipc_demanded(a, why));
        return gcoll__cuda_stage_start(a, NULL, 0, comm, attr, req);
    }
    if (gcoll__group_fusable(a, attr))
        return gcoll__group_defer(a, comm, attr, req);
    gcoll__sched_t *s;
    const char *algo;
    GCOLL_CHECK(gcoll__build(a, attr->algorithm, frame ? &frame->sched : NULL, &s, &algo));
    gcoll__start_t how = {.storage = frame ? &frame->req : NULL, .wake = !frame};
    return gcoll__request_start(comm, a->coll, algo, s, attr, req, &how);
}

gcoll_status_t gcoll__start(gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req,
                            gcoll__frame_t *frame)
{
    gcoll_status_t st = start(a, comm, attr, req, frame);
    return gcoll__group_track(st, *req);
}

/* Adasum builds its own schedule (no selection table); its reduce steps, if any, are sums. */
static gcoll_status_t start_adasum(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                   gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req,
                                   gcoll__frame_t *frame)
{
    if (staged(a, attr)) {
        const char *why;
        if (gcoll__cuda_ipc_adasum_eligible(a, comm, attr, &why))
            return gcoll__cuda_ipc_adasum_start(a, tensor_counts, ntensors, comm, attr, req);
        GCOLL_CHECK(ipc_demanded(a, why));
        return gcoll__cuda_stage_start(a, tensor_counts, ntensors, comm, attr, req);
    }
    gcoll__sched_t *s = gcoll__sched_new(a->dtype, GCOLL_SUM, (unsigned)a->size, frame ? &frame->sched : NULL);
    if (!s)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
    s->desc = gcoll__opdesc_of(a->coll, a->dtype, a->op, a->count, a->root);
    const char *algo = NULL;
    gcoll_status_t st = gcoll__adasum_build(s, a, tensor_counts, ntensors, attr->algorithm, &algo);
    if (st != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return st;
    }
    gcoll__start_t how = {.storage = frame ? &frame->req : NULL, .wake = !frame};
    return gcoll__request_start(comm, a->coll, algo, s, attr, req, &how);
}

/* What every posting checks first: the request handle, then the caller's attributes (user),
 * read into attr. */
gcoll_status_t gcoll__begin(gcoll_request_t *req, const gcoll_attr_t *user, gcoll__attr_t *attr)
{
    if (!req)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "req is NULL");
    *req = NULL;
    return gcoll__attr_load(user, attr);
}

static gcoll_status_t post_allreduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                     gcoll_op_t op, gcoll_comm_t comm, const gcoll_attr_t *user, gcoll_request_t *req,
                                     gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = GCOLL_COLL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .dtype = dtype, .op = op};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 1));
    GCOLL_CHECK(gcoll__check_buf(sendbuf, count, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, count, "recvbuf"));
    if (op == GCOLL_ADASUM) {
        GCOLL_CHECK(apply_compress(&a, &attr)); /* refuses it */
        gcoll_status_t st = start_adasum(&a, NULL, 0, comm, &attr, req, frame);
        return gcoll__group_track(st, *req);
    }
    return gcoll__start(&a, comm, &attr, req, frame);
}

static gcoll_status_t post_adasum(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                  const size_t *tensor_counts, size_t ntensors, gcoll_comm_t comm,
                                  const gcoll_attr_t *user, gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLREDUCE,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count,
                            .dtype = dtype,
                            .op = GCOLL_ADASUM};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 1));
    GCOLL_CHECK(apply_compress(&a, &attr)); /* refuses it */
    GCOLL_CHECK(gcoll__check_buf(sendbuf, count, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, count, "recvbuf"));
    gcoll_status_t st = start_adasum(&a, tensor_counts, ntensors, comm, &attr, req, frame);
    return gcoll__group_track(st, *req);
}

static gcoll_status_t post_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, gcoll_dtype_t dtype,
                                          gcoll_op_t op, gcoll_comm_t comm, const gcoll_attr_t *user,
                                          gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_REDUCE_SCATTER,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = recvcount,
                            .dtype = dtype,
                            .op = op};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 1));
    GCOLL_CHECK(gcoll__check_buf(sendbuf, recvcount, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, recvcount, "recvbuf"));
    return gcoll__start(&a, comm, &attr, req, frame);
}

static gcoll_status_t post_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype,
                                     gcoll_comm_t comm, const gcoll_attr_t *user, gcoll_request_t *req,
                                     gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = GCOLL_COLL_ALLGATHER, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = sendcount, .dtype = dtype};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    GCOLL_CHECK(gcoll__check_buf(sendbuf, sendcount, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, sendcount, "recvbuf"));
    return gcoll__start(&a, comm, &attr, req, frame);
}

static gcoll_status_t post_bcast(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm,
                                 const gcoll_attr_t *user, gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = GCOLL_COLL_BCAST, .sendbuf = buf, .recvbuf = buf, .count = count, .dtype = dtype, .root = root};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    GCOLL_CHECK(gcoll__check_root(root, comm));
    GCOLL_CHECK(gcoll__check_buf(buf, count, "buf"));
    return gcoll__start(&a, comm, &attr, req, frame);
}

static gcoll_status_t post_reduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_op_t op,
                                  int root, gcoll_comm_t comm, const gcoll_attr_t *user, gcoll_request_t *req,
                                  gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_REDUCE,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count,
                            .dtype = dtype,
                            .op = op,
                            .root = root};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 1));
    GCOLL_CHECK(gcoll__check_root(root, comm));
    GCOLL_CHECK(gcoll__check_buf(sendbuf, count, "sendbuf"));
    if (comm->rank == root) /* recvbuf matters only at the root */
        GCOLL_CHECK(gcoll__check_buf(recvbuf, count, "recvbuf"));
    return gcoll__start(&a, comm, &attr, req, frame);
}

static gcoll_status_t post_alltoall(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                    gcoll_comm_t comm, const gcoll_attr_t *user, gcoll_request_t *req,
                                    gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = GCOLL_COLL_ALLTOALL, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .dtype = dtype};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    GCOLL_CHECK(gcoll__check_buf(sendbuf, count, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, count, "recvbuf"));
    return gcoll__start(&a, comm, &attr, req, frame);
}

static gcoll_status_t post_barrier(gcoll_comm_t comm, const gcoll_attr_t *user, gcoll_request_t *req,
                                   gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_BARRIER, .dtype = GCOLL_UINT8};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    return gcoll__start(&a, comm, &attr, req, frame);
}

/* The nonblocking entry points: the same posting, with heap-allocated request and schedule. */
GCOLL_API gcoll_status_t gcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                          gcoll_op_t op, gcoll_comm_t comm, const gcoll_attr_t *attr,
                                          gcoll_request_t *req)
{
    return post_allreduce(sendbuf, recvbuf, count, dtype, op, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                               gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                               const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_reduce_scatter(sendbuf, recvbuf, recvcount, dtype, op, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype,
                                          gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_allgather(sendbuf, recvbuf, sendcount, dtype, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_ibcast(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm,
                                      const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_bcast(buf, count, dtype, root, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                       gcoll_op_t op, int root, gcoll_comm_t comm, const gcoll_attr_t *attr,
                                       gcoll_request_t *req)
{
    return post_reduce(sendbuf, recvbuf, count, dtype, op, root, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_ialltoall(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                         gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_alltoall(sendbuf, recvbuf, count, dtype, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_ibarrier(gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_barrier(comm, attr, req, NULL);
}

gcoll_status_t gcoll__no_premul(gcoll_op_t op)
{
    if (op == GCOLL_PREMUL_SUM)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "op GCOLL_PREMUL_SUM: its scalar is attr->premul, so only the "
                            "nonblocking calls, which take an attr, accept it");
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                         gcoll_op_t op, gcoll_comm_t comm)
{
    GCOLL_CHECK(gcoll__no_premul(op));
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_allreduce(sendbuf, recvbuf, count, dtype, op, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, gcoll_dtype_t dtype,
                                              gcoll_op_t op, gcoll_comm_t comm)
{
    GCOLL_CHECK(gcoll__no_premul(op));
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_reduce_scatter(sendbuf, recvbuf, recvcount, dtype, op, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype,
                                         gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_allgather(sendbuf, recvbuf, sendcount, dtype, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_bcast(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_bcast(buf, count, dtype, root, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_reduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                      gcoll_op_t op, int root, gcoll_comm_t comm)
{
    GCOLL_CHECK(gcoll__no_premul(op));
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_reduce(sendbuf, recvbuf, count, dtype, op, root, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_alltoall(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                        gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_alltoall(sendbuf, recvbuf, count, dtype, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_barrier(gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_barrier(comm, NULL, &r, fp), &r);
}

/* "allreduce" -> GCOLL_COLL_ALLREDUCE; -1 for a name that is no collective */
static int coll_index(const char *name)
{
    for (int c = 0; c < GCOLL_COLL_COUNT; c++)
        if (strcmp(name, gcoll__coll_name(c)) == 0)
            return c;
    return -1;
}

GCOLL_API gcoll_status_t gcoll_comm_algorithm(gcoll_comm_t comm, const char *collective, size_t count,
                                              gcoll_dtype_t dtype, const char **algorithm)
{
    if (!collective || !algorithm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", !collective ? "collective" : "algorithm");
    gcoll__coll_args_t a = {.count = count, .total = count, .dtype = dtype}; /* a v-collective's count: its total */
    if (strcmp(collective, "adasum") == 0) { /* Adasum is an allreduce with its own algorithms */
        a.coll = GCOLL_COLL_ALLREDUCE;
        GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
        *algorithm = gcoll__adasum_choice(&a);
        return GCOLL_SUCCESS;
    }
    int coll = coll_index(collective);
    if (coll < 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "collective '%s' is unknown", collective);
    a.coll = (gcoll__coll_t)coll;
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    size_t *even = NULL;
    if (gcoll__coll_vector(coll)) { /* count is the total, in even blocks as the selection may read them */
        size_t n = (size_t)a.size;
        even = malloc(2 * n * sizeof(size_t));
        if (!even)
            return gcoll__error(GCOLL_ERR_NOMEM, "no memory for %zu blocks", n);
        for (size_t i = 0; i < n; i++) {
            even[i] = count / n + (i < count % n);
            even[n + i] = i ? even[n + i - 1] + even[i - 1] : 0;
        }
        a.counts = a.scounts = even;
        a.displs = a.sdispls = even + n;
        if (coll != GCOLL_COLL_REDUCE_SCATTERV)
            a.count = even[a.rank];
    }
    const gcoll__algo_t *algo;
    gcoll_status_t st = gcoll__algo_select(&a, NULL, &algo);
    free(even);
    if (st == GCOLL_SUCCESS)
        *algorithm = algo->name;
    return st;
}

GCOLL_API gcoll_status_t gcoll_comm_set_algorithm(gcoll_comm_t comm, const char *collective, const char *table)
{
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    if (!collective)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "collective is NULL");
    int coll = coll_index(collective);
    if (coll < 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "collective '%s' is unknown", collective);
    if (!table) {
        comm->own_table[coll] = 0;
        return GCOLL_SUCCESS;
    }
    gcoll__algo_table_t t;
    GCOLL_CHECK(gcoll__parse_algo_table("table", table, &t, coll));
    comm->table[coll] = t;
    comm->own_table[coll] = 1;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_iadasum(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                       const size_t *tensor_counts, size_t ntensors, gcoll_comm_t comm,
                                       const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_adasum(sendbuf, recvbuf, count, dtype, tensor_counts, ntensors, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_adasum(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                                      const size_t *tensor_counts, size_t ntensors, gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_adasum(sendbuf, recvbuf, count, dtype, tensor_counts, ntensors, comm, NULL, &r, fp), &r);
}

/* Local reduction, on the GPU when either buffer is device memory. */
GCOLL_API gcoll_status_t gcoll_reduce_local(void *inout, const void *in, size_t count, gcoll_dtype_t dtype,
                                            gcoll_op_t op)
{
    if (!gcoll__dtype_valid(dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %d is not a gcoll_dtype_t", (int)dtype);
    if (op != GCOLL_SUM && op != GCOLL_PROD && op != GCOLL_MIN && op != GCOLL_MAX)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "op %d: accepts GCOLL_SUM, PROD, MIN or MAX", (int)op);
    if (count && (!inout || !in))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL with count %zu", !inout ? "inout" : "in", count);
    if (count > SIZE_MAX / gcoll_dtype_size(dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "count %zu is too large for %s: its bytes overflow", count,
                            gcoll_dtype_name(dtype));
    if (gcoll__cuda_is_device(inout) || gcoll__cuda_is_device(in))
        return gcoll__cuda_reduce_local(inout, in, count, dtype, op);
    gcoll__reduce(inout, inout, in, count, dtype, op);
    return GCOLL_SUCCESS;
}
