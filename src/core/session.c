/* The gradient session: commit cuts the parameter sets, in backprop order, into fusion buckets
 * (the first small, so the network starts early) whose schedules are built once and rewound each
 * iteration, so an iteration allocates nothing. Buckets run on the session's own communicator
 * with tags naming bucket and iteration, so ranks may start sets in different orders.
 * docs/design.md describes the fusion rules. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/config.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/reduce.h"
#include "core/lane.h"
#include "core/request.h"
#include "collectives/adasum.h"
#include "cuda/cuda.h"

typedef struct {
    char name[64];
    size_t count;
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    size_t bucket;
    size_t offset; /* bytes into the bucket's buffer */
    void *buf;     /* this iteration's gradient */
    int started;
    gcoll_compress_t compress;
    double density;
    float *residual; /* top-k: what earlier iterations did not send */
    double premul;   /* GCOLL_PREMUL_SUM: this rank's scalar, applied as the set starts */
} set_t;

enum { B_IDLE, B_RUNNING, B_DONE };

typedef struct {
    size_t first, nsets; /* sets first .. first + nsets - 1 */
    size_t count, bytes;
    void *data;      /* the fused gradients, the sets copied in and out; NULL while one set runs in place */
    void *buf;       /* what the schedule runs on: data, or the one set's own host buffer */
    size_t *tensors; /* Adasum: each set's count (its own tensor, never mixed with a neighbour's) */
    gcoll__sched_t *sched;
    const char *algo;
    int rewindable; /* else the schedule is built again each iteration */
    struct gcoll_request req;
    gcoll_request_t handle;
    gcoll__attr_t attr;
    char label[48];
    size_t waiting; /* sets not yet started in this iteration */
    int state;
    uint64_t iter; /* launches so far: with the bucket's index, its messages' tag */
} bucket_t;

struct gcoll_session {
    gcoll_comm_t comm; /* the user's, held until free */
    gcoll_comm_t own;  /* the duplicate the buckets run on */
    set_t *sets;
    size_t nsets, cap;
    bucket_t *buckets;
    size_t nbuckets;
    int committed;
};

static gcoll_status_t check_session(gcoll_session_t s, int committed)
{
    if (!s)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "s is NULL");
    if (s->committed != committed)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            committed ? "s is not committed yet: call gcoll_session_commit"
                                      : "s is already committed: add every set before");
    return GCOLL_SUCCESS;
}

static gcoll_status_t check_id(gcoll_session_t s, size_t id)
{
    GCOLL_CHECK(check_session(s, 1));
    if (id >= s->nsets)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "id %zu is out of range (%zu sets)", id, s->nsets);
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_session_create(gcoll_comm_t comm, gcoll_session_t *session)
{
    if (!session)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "session is NULL");
    *session = NULL;
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    gcoll_session_t s = calloc(1, sizeof(*s));
    if (!s)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a session");
    /* the session's operations may outlive the user's handle of comm */
    gcoll__lane_t *l = comm->lane;
    pthread_mutex_lock(&l->lock);
    comm->refs++;
    pthread_mutex_unlock(&l->lock);
    s->comm = comm;
    *session = s;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_session_add(gcoll_session_t s, const char *name, size_t count, gcoll_dtype_t dtype,
                                           gcoll_op_t op, size_t *id)
{
    GCOLL_CHECK(check_session(s, 0));
    if (!id)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "id is NULL");
    if (!gcoll__dtype_valid(dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %d is not a gcoll_dtype_t", (int)dtype);
    if (op != GCOLL_SUM && op != GCOLL_AVG && op != GCOLL_ADASUM && op != GCOLL_PREMUL_SUM)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "op %d is not valid for a gradient session: accepts GCOLL_SUM, "
                            "GCOLL_AVG, GCOLL_ADASUM or GCOLL_PREMUL_SUM",
                            (int)op);
    if (op == GCOLL_ADASUM && dtype != GCOLL_FLOAT16 && dtype != GCOLL_BFLOAT16 && dtype != GCOLL_FLOAT32 &&
        dtype != GCOLL_FLOAT64)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %s: GCOLL_ADASUM takes float16, bfloat16, float32 or float64",
                            gcoll_dtype_name(dtype));
    if (op == GCOLL_PREMUL_SUM && (dtype < GCOLL_FLOAT16 || dtype > GCOLL_FLOAT64) && dtype != GCOLL_FLOAT8_E4M3 &&
        dtype != GCOLL_FLOAT8_E5M2)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %s: GCOLL_PREMUL_SUM takes floating-point types only",
                            gcoll_dtype_name(dtype));
    if (count == 0 || count > SIZE_MAX / 2 / gcoll_dtype_size(dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "count %zu is not valid: a set holds 1 or more elements", count);
    if (s->nsets == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        set_t *p = realloc(s->sets, cap * sizeof(*p));
        if (!p)
            return gcoll__error(GCOLL_ERR_NOMEM, "no memory for parameter set %zu", s->nsets);
        s->sets = p;
        s->cap = cap;
    }
    set_t *set = &s->sets[s->nsets];
    *set = (set_t){.count = count, .dtype = dtype, .op = op, .density = 1, .premul = 1};
    snprintf(set->name, sizeof(set->name), "%s", name ? name : "");
    *id = s->nsets++;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_session_set_compress(gcoll_session_t s, size_t id, gcoll_compress_t compress,
                                                    double density)
{
    GCOLL_CHECK(check_session(s, 0));
    if (id >= s->nsets)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "id %zu is out of range (%zu sets)", id, s->nsets);
    set_t *set = &s->sets[id];
    GCOLL_CHECK(gcoll__compress_check(compress, density, set->dtype, set->op, "compress", "density"));
    if (compress == GCOLL_COMPRESS_TOPK && set->count > UINT32_MAX)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "compress GCOLL_COMPRESS_TOPK: set %zu has %zu elements, top-k "
                            "sends 32-bit indices",
                            id, set->count);
    set->compress = compress;
    set->density = compress == GCOLL_COMPRESS_TOPK ? density : 1;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_session_set_premul(gcoll_session_t s, size_t id, double premul)
{
    GCOLL_CHECK(check_session(s, 0));
    if (id >= s->nsets)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "id %zu is out of range (%zu sets)", id, s->nsets);
    if (s->sets[id].op != GCOLL_PREMUL_SUM)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "id %zu: set '%s' was added with op %s, not GCOLL_PREMUL_SUM", id,
                            s->sets[id].name, gcoll_op_name(s->sets[id].op));
    s->sets[id].premul = premul;
    return GCOLL_SUCCESS;
}

/* GCOLL_FUSION_BYTES=auto: about 2 ms on the communicator's slowest link, so a bucket's fixed
 * costs (latency of every step, a schedule's start) stay a few percent of its transfer. */
static size_t fusion_bytes(gcoll_comm_t c)
{
    if (gcoll__config.fusion_bytes)
        return gcoll__config.fusion_bytes;
    const gcoll__link_t *l = c->map.nhosts > 1 ? &c->links.inter : &c->links.intra;
    double b = l->bw_Bps > 0 ? l->bw_Bps * 2e-3 : (double)(4 << 20);
    size_t lo = (size_t)64 << 10, hi = (size_t)64 << 20;
    return b < (double)lo ? lo : b > (double)hi ? hi : (size_t)b;
}

/* Every rank must have added the same sets: a mismatch would pair buckets of different sizes. */
static gcoll_status_t check_agreement(gcoll_session_t s)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < s->nsets; i++) {
        uint64_t d;
        memcpy(&d, &s->sets[i].density, sizeof(d));
        const uint64_t v[5] = {s->sets[i].count, (uint64_t)s->sets[i].dtype, (uint64_t)s->sets[i].op,
                               (uint64_t)s->sets[i].compress, d};
        for (int k = 0; k < 5; k++)
            h = (h ^ v[k]) * 1099511628211ull;
    }
    int64_t all[2] = {(int64_t)h, (int64_t)~h}; /* the largest of each: all equal only when every h is */
    if (gcoll__boot_reduce_i64(s->comm->boot, all, 2, 1) != GCOLL_SUCCESS)
        return gcoll__error(GCOLL_ERR_TRANSPORT, "gcoll_session_commit: the bootstrap allreduce failed: %s",
                            gcoll_last_error());
    if ((uint64_t)all[0] != h || (uint64_t)all[1] != ~h)
        return gcoll__error(
            GCOLL_ERR_INVALID_USAGE,
            "gcoll_session_commit: ranks added different parameter sets "
            "(count, dtype, op or compression differ, or their number): every rank must add the same sets in "
            "the same order");
    return GCOLL_SUCCESS;
}

/* The bucket's fused buffer, allocated once. */
static gcoll_status_t stage(bucket_t *b, size_t k)
{
    if (b->data)
        return GCOLL_SUCCESS;
    b->data = malloc(b->bytes);
    if (!b->data)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for fusion bucket %zu (%zu bytes)", k, b->bytes);
    memset(b->data, 0, b->bytes); /* touched now, not in the first iteration */
    return GCOLL_SUCCESS;
}

static gcoll_status_t build_bucket(gcoll_session_t s, bucket_t *b)
{
    const set_t *first = &s->sets[b->first];
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLREDUCE,
                            .sendbuf = b->buf,
                            .recvbuf = b->buf,
                            .count = b->count,
                            .dtype = first->dtype,
                            .op = first->op == GCOLL_PREMUL_SUM ? GCOLL_SUM : first->op, /* scaled at start */
                            .compress = first->compress,
                            .density = first->density,
                            .residual = first->residual};
    GCOLL_CHECK(gcoll__check_common(&a, s->own, 1));
    a.shm = NULL; /* point-to-point algorithms only (see the top of this file) */
    if (first->op != GCOLL_ADASUM)
        return gcoll__build(&a, NULL, NULL, &b->sched, &b->algo);
    /* Adasum's own builder; its local sums, where it has any, are plain sums */
    b->sched = gcoll__sched_new(a.dtype, GCOLL_SUM, (unsigned)a.size, NULL);
    if (!b->sched)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
    gcoll_status_t st = gcoll__adasum_build(b->sched, &a, b->tensors, b->nsets, NULL, &b->algo);
    if (st != GCOLL_SUCCESS) {
        gcoll__sched_free(b->sched);
        b->sched = NULL;
    }
    return st;
}

GCOLL_API gcoll_status_t gcoll_session_commit(gcoll_session_t s)
{
    GCOLL_CHECK(check_session(s, 0));
    GCOLL_CHECK(gcoll__comm_check(s->comm, "the session's communicator"));
    GCOLL_CHECK(check_agreement(s));
    GCOLL_CHECK(gcoll_comm_dup(s->comm, &s->own));
    s->buckets = calloc(s->nsets ? s->nsets : 1, sizeof(*s->buckets));
    if (!s->buckets)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for the session's buckets");
    size_t limit = gcoll__config.fusion_first_bytes, full = fusion_bytes(s->comm);
    /* backwards: the last set's gradient is ready first */
    for (size_t i = s->nsets; i-- > 0;) {
        set_t *set = &s->sets[i];
        size_t bytes = set->count * gcoll_dtype_size(set->dtype);
        bucket_t *b = s->nbuckets ? &s->buckets[s->nbuckets - 1] : NULL;
        const set_t *head = b ? &s->sets[b->first] : NULL;
        if (!b || head->dtype != set->dtype || head->op != set->op || head->compress != set->compress ||
            set->compress == GCOLL_COMPRESS_TOPK || b->bytes + bytes > limit) {
            if (b)
                limit = full;
            b = &s->buckets[s->nbuckets++];
            b->nsets = 0;
        }
        b->first = i;
        b->nsets++;
        b->count += set->count;
        b->bytes += bytes;
        set->bucket = (size_t)(b - s->buckets);
    }
    for (size_t k = 0; k < s->nbuckets; k++) {
        bucket_t *b = &s->buckets[k];
        size_t off = 0;
        for (size_t i = b->first; i < b->first + b->nsets; i++) {
            s->sets[i].offset = off;
            off += s->sets[i].count * gcoll_dtype_size(s->sets[i].dtype);
        }
        if (s->sets[b->first].op == GCOLL_ADASUM) {
            if (!(b->tensors = malloc(b->nsets * sizeof(*b->tensors))))
                return gcoll__error(GCOLL_ERR_NOMEM, "no memory for fusion bucket %zu", k);
            for (size_t i = 0; i < b->nsets; i++)
                b->tensors[i] = s->sets[b->first + i].count;
        }
        set_t *head = &s->sets[b->first];
        if (head->compress == GCOLL_COMPRESS_TOPK && !(head->residual = calloc(head->count, sizeof(float))))
            return gcoll__error(GCOLL_ERR_NOMEM, "no memory for the residual of set %zu", b->first);
        if (b->nsets > 1) {
            GCOLL_CHECK(stage(b, k));
            b->buf = b->data;
            GCOLL_CHECK(build_bucket(s, b));
            b->rewindable = gcoll__sched_rewindable(b->sched);
        }
        b->waiting = b->nsets;
        snprintf(b->label, sizeof(b->label), "bucket %u (%.24s..)", (unsigned)k, s->sets[b->first].name);
        gcoll__attr_load(NULL, &b->attr); /* the defaults */
        b->attr.priority = (int)k;        /* later buckets hold earlier layers */
        b->attr.name = b->label;
    }
    s->committed = 1;
    return GCOLL_SUCCESS;
}

static gcoll_status_t launch(gcoll_session_t s, bucket_t *b)
{
    if (!b->rewindable) {
        gcoll__sched_free(b->sched);
        b->sched = NULL;
        GCOLL_CHECK(build_bucket(s, b));
    } else {
        gcoll__sched_rewind(b->sched);
    }
    b->state = B_RUNNING;
    gcoll__start_t how = {.storage = &b->req,
                          .kept = 1,
                          .wake = 1,
                          .own_tag = 1,
                          .tag = b->iter++ * s->nbuckets + (uint64_t)(b - s->buckets)};
    return gcoll__request_start(s->own, GCOLL_COLL_ALLREDUCE, b->algo, b->sched, &b->attr, &b->handle, &how);
}

GCOLL_API gcoll_status_t gcoll_session_start(gcoll_session_t s, size_t id, void *buf)
{
    GCOLL_CHECK(check_id(s, id));
    set_t *set = &s->sets[id];
    if (!buf)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "buf is NULL");
    bucket_t *b = &s->buckets[set->bucket];
    if (b->state == B_DONE) { /* a new iteration for this bucket */
        b->state = B_IDLE;
        b->waiting = b->nsets;
        for (size_t i = b->first; i < b->first + b->nsets; i++)
            s->sets[i].started = 0;
    }
    if (set->started || b->state != B_IDLE)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "set %zu ('%s') was started again before gcoll_session_wait", id,
                            set->name);
    GCOLL_CHECK(gcoll__comm_check(s->own, "the session's communicator"));
    if (!b->data && ((b->sched && b->buf != buf) || gcoll__cuda_is_device(buf))) {
        /* device memory, or a buffer that moved: through the bucket's own buffer from now on */
        GCOLL_CHECK(stage(b, (size_t)(b - s->buckets)));
        b->buf = b->data;
        gcoll__sched_free(b->sched);
        b->sched = NULL;
    }
    if (!b->sched) { /* an in-place bucket's first start, or after a build that failed */
        if (!b->data)
            b->buf = buf;
        GCOLL_CHECK(build_bucket(s, b));
        b->rewindable = gcoll__sched_rewindable(b->sched);
    }
    set->started = 1;
    set->buf = buf;
    if (b->data)
        GCOLL_CHECK(gcoll__cuda_copy((char *)b->data + set->offset, buf, set->count * gcoll_dtype_size(set->dtype)));
    if (set->op ==
        GCOLL_PREMUL_SUM) { /* in the bucket's host copy, or the set's own buffer, which the result replaces */
        void *in = b->data ? (char *)b->data + set->offset : buf;
        gcoll__scale(in, in, set->count, set->dtype, set->premul);
    }
    if (--b->waiting == 0)
        return launch(s, b);
    return GCOLL_SUCCESS;
}

/* The bucket's result into every set's buffer. */
static gcoll_status_t complete(gcoll_session_t s, bucket_t *b, gcoll_status_t st)
{
    b->state = B_DONE;
    if (st != GCOLL_SUCCESS || !b->data)
        return st;
    for (size_t i = b->first; i < b->first + b->nsets; i++)
        GCOLL_CHECK(gcoll__cuda_copy(s->sets[i].buf, (char *)b->data + s->sets[i].offset,
                                     s->sets[i].count * gcoll_dtype_size(s->sets[i].dtype)));
    return GCOLL_SUCCESS;
}

/* A bucket waited on before all its sets started would wait forever. */
static gcoll_status_t unstarted(gcoll_session_t s, const bucket_t *b, size_t id)
{
    for (size_t i = b->first; i < b->first + b->nsets; i++)
        if (!s->sets[i].started)
            return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                                "set %zu ('%s') cannot complete: set %zu ('%s') of its fusion "
                                "bucket was not started",
                                id, s->sets[id].name, i, s->sets[i].name);
    return GCOLL_SUCCESS;
}

static gcoll_status_t wait_bucket(gcoll_session_t s, bucket_t *b, size_t id)
{
    if (b->state == B_DONE)
        return GCOLL_SUCCESS;
    if (b->state == B_IDLE)
        return unstarted(s, b, id);
    return complete(s, b, gcoll_wait(&b->handle));
}

GCOLL_API gcoll_status_t gcoll_session_wait(gcoll_session_t s, size_t id)
{
    GCOLL_CHECK(check_id(s, id));
    if (!s->sets[id].started)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "set %zu ('%s') was not started", id, s->sets[id].name);
    return wait_bucket(s, &s->buckets[s->sets[id].bucket], id);
}

GCOLL_API gcoll_status_t gcoll_session_test(gcoll_session_t s, size_t id, int *done)
{
    GCOLL_CHECK(check_id(s, id));
    if (!done)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "done is NULL");
    bucket_t *b = &s->buckets[s->sets[id].bucket];
    *done = 0;
    if (!s->sets[id].started)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "set %zu ('%s') was not started", id, s->sets[id].name);
    if (b->state == B_IDLE)
        return GCOLL_SUCCESS; /* other sets of its bucket are still to come */
    if (b->state == B_RUNNING) {
        gcoll_status_t st = gcoll_test(&b->handle, done);
        if (st != GCOLL_SUCCESS || *done)
            return complete(s, b, st);
        return GCOLL_SUCCESS;
    }
    *done = 1;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_session_wait_all(gcoll_session_t s)
{
    GCOLL_CHECK(check_session(s, 1));
    gcoll_status_t first = GCOLL_SUCCESS;
    for (size_t k = s->nbuckets; k-- > 0;) { /* the earliest layers' buckets first */
        bucket_t *b = &s->buckets[k];
        if (b->state == B_IDLE && b->waiting == b->nsets)
            continue; /* not part of this iteration */
        gcoll_status_t st = wait_bucket(s, b, b->first);
        if (first == GCOLL_SUCCESS)
            first = st;
    }
    return first;
}

GCOLL_API gcoll_status_t gcoll_session_buckets(gcoll_session_t s, size_t *nbuckets)
{
    GCOLL_CHECK(check_session(s, 1));
    if (!nbuckets)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "nbuckets is NULL");
    *nbuckets = s->nbuckets;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_session_bucket_of(gcoll_session_t s, size_t id, size_t *bucket)
{
    GCOLL_CHECK(check_id(s, id));
    if (!bucket)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "bucket is NULL");
    *bucket = s->sets[id].bucket;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_session_free(gcoll_session_t *session)
{
    if (!session || !*session)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", !session ? "session" : "*session");
    gcoll_session_t s = *session;
    gcoll_status_t first = GCOLL_SUCCESS;
    for (size_t k = 0; k < s->nbuckets; k++) {
        bucket_t *b = &s->buckets[k];
        if (b->state == B_RUNNING) { /* its buffers must outlive the operation */
            gcoll_status_t st = gcoll_wait(&b->handle);
            if (first == GCOLL_SUCCESS)
                first = st;
        }
        gcoll__sched_free(b->sched);
        free(b->data);
        free(b->tensors);
    }
    if (s->own)
        (void)gcoll_comm_free(&s->own); /* a failed one is freed as well */
    gcoll__lane_t *l = s->comm->lane;
    pthread_mutex_lock(&l->lock);
    gcoll__comm_release(s->comm);
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < s->nsets; i++)
        free(s->sets[i].residual);
    free(s->buckets);
    free(s->sets);
    free(s);
    *session = NULL;
    return first;
}
