/* Adasum on device buffers between ranks that share no node channel (across hosts): the tree on
 * the GPU (adasum_gpu.h) over each rank's share of the elements, the host only moving bytes
 * through pinned memory. Each rank's input goes down whole and every peer gets its share of it
 * (one round); those copies go up; after the tree, each rank's slice of the result goes down, to
 * every peer (a second round), and the peers' slices up. A byte per rank then tells every rank
 * whether all succeeded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/request.h"
#include "cuda/adasum_gpu.h"

typedef struct {
    gcoll__gpu_ada_t d;
    const gcoll__cuda_ops_t *cu;
    gcoll__coll_args_t a;
    void *stream, *ev_start, *ev_copy, *user_stream;
    size_t *lo, *hi; /* every rank's share */
    size_t width;    /* the widest share's elements */
    char *pin;       /* pinned: this rank's input (later the result), then width elements from each rank */
    char *dslots;    /* device: the peers' copies of this rank's share, width elements each */
    uint8_t *status;
    int queued, up_queued;
    char err[240];
} sada_t;

int gcoll__cuda_stage_adasum_gpu(const gcoll__coll_args_t *a, const gcoll__attr_t *attr)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    return a->op == GCOLL_ADASUM && !attr->algorithm && cu && cu->adasum_dots && cu->scaled_add &&
        gcoll__cuda_stage_gpu_placed(a);
}

static size_t len_of(const sada_t *x, int q)
{
    return x->hi[q] - x->lo[q];
}
static char *pin_in(const sada_t *x, int q)
{
    return x->pin + x->a.count * x->a.esize + (size_t)q * x->width * x->a.esize;
}

/* Keeps a failure (the rank goes on exchanging, so that no peer waits for it). */
static void keep(sada_t *x, gcoll_status_t st)
{
    if (st != GCOLL_SUCCESS && !x->err[0])
        snprintf(x->err, sizeof(x->err), "%s", gcoll_last_error());
}

/* Waits for the copies queued before ev_copy; *done once they are done (or failed). */
static gcoll_status_t wait_copy(sada_t *x, int *done)
{
    int ok = 1;
    if (!x->err[0])
        GCOLL_CHECK(gcoll__cuda_ready(x->ev_copy, &ok));
    *done = ok;
    return GCOLL_SUCCESS;
}

/* Round 1: the input down, once the caller's stream reached the call. */
static gcoll_status_t step_down(void *state, int *done)
{
    sada_t *x = state;
    GCOLL_CU(x->cu->set_device(x->d.device), "set device");
    if (!x->queued) {
        x->queued = 1;
        int e = x->cu->memcpy_async(x->pin, x->a.sendbuf, x->a.count * x->a.esize, x->stream);
        if (!e)
            e = x->cu->event_record(x->ev_copy, x->stream);
        if (e)
            keep(x, gcoll__cuda_fail(e, "copy to host"));
    }
    return wait_copy(x, done);
}

/* Before the tree: the peers' copies of this rank's share up. */
static gcoll_status_t begin(gcoll__gpu_ada_t *d)
{
    sada_t *x = d->frame;
    int me = x->a.rank;
    size_t es = x->a.esize;
    d->lo = x->lo[me];
    d->hi = x->hi[me];
    if (x->err[0] || d->hi == d->lo)
        return GCOLL_SUCCESS;
    for (int q = 0; q < x->a.size; q++) {
        d->vec[q] = x->dslots + (size_t)q * x->width * es;
        if (q == me)
            d->vec[q] = (char *)x->a.sendbuf + d->lo * es;
        else
            GCOLL_CU(x->cu->memcpy_async(d->vec[q], pin_in(x, q), len_of(x, me) * es, x->stream), "copy to device");
    }
    d->out = (char *)x->a.recvbuf + d->lo * es;
    return gcoll__gpu_ada_memory(d);
}

/* After the tree: this rank's slice of the result down, where the peers' will join it. */
static gcoll_status_t finish(gcoll__gpu_ada_t *d)
{
    sada_t *x = d->frame;
    GCOLL_CU(x->cu->memcpy_async(x->pin + d->lo * d->es, d->out, (d->hi - d->lo) * d->es, x->stream), "copy to host");
    return GCOLL_SUCCESS;
}

/* The peers' slices of the result up; then this rank's status byte. */
static gcoll_status_t step_up(void *state, int *done)
{
    sada_t *x = state;
    GCOLL_CU(x->cu->set_device(x->d.device), "set device");
    if (!x->up_queued) {
        x->up_queued = 1;
        size_t es = x->a.esize;
        int e = 0;
        for (int q = 0; q < x->a.size && !e && !x->err[0]; q++)
            if (q != x->a.rank && len_of(x, q))
                e = x->cu->memcpy_async((char *)x->a.recvbuf + x->lo[q] * es, x->pin + x->lo[q] * es, len_of(x, q) * es,
                                        x->stream);
        if (!e && !x->err[0])
            e = x->cu->event_record(x->ev_copy, x->stream);
        if (e)
            keep(x, gcoll__cuda_fail(e, "copy to device"));
    }
    GCOLL_CHECK(wait_copy(x, done));
    if (*done)
        x->status[x->a.rank] = x->err[0] != 0;
    return GCOLL_SUCCESS;
}

/* Last: failures reported (this rank's own, or a peer's), later work on the caller's stream
 * ordered after the result. */
static gcoll_status_t step_end(void *state, int *done)
{
    sada_t *x = state;
    if (x->err[0])
        return gcoll__error(GCOLL_ERR_SYSTEM, "%s", x->err);
    for (int q = 0; q < x->a.size; q++)
        if (x->status[q])
            return gcoll__error(GCOLL_ERR_REMOTE, "adasum on the GPU failed on rank %d (its own error says why)", q);
    if (x->user_stream)
        GCOLL_CU(x->cu->stream_wait_event(x->user_stream, x->ev_copy), "stream wait");
    *done = 1;
    return GCOLL_SUCCESS;
}

static void sada_who(void *state, char *buf, size_t len)
{
    (void)state;
    snprintf(buf, len, "this rank's copies between the GPU and the host");
}

static void sada_free(void *arg)
{
    sada_t *x = arg;
    const gcoll__cuda_ops_t *cu = x->cu;
    cu->set_device(x->d.device);
    if (x->stream && x->ev_copy && !cu->event_record(x->ev_copy, x->stream)) /* what is queued ends first */
        cu->event_sync(x->ev_copy);
    gcoll__gpu_ada_free(&x->d);
    if (x->pin)
        gcoll__cuda_cached_put(x->pin);
    if (x->dslots)
        gcoll__cuda_cached_put(x->dslots);
    if (x->ev_start)
        cu->event_destroy(x->ev_start);
    if (x->ev_copy)
        cu->event_destroy(x->ev_copy);
    if (x->stream)
        cu->stream_destroy(x->stream);
    free(x->lo);
    free(x->hi);
    free(x->status);
    free(x);
}

static gcoll_status_t sada_setup(sada_t *x, const size_t *tensor_counts, size_t ntensors, const gcoll__attr_t *attr)
{
    const gcoll__cuda_ops_t *cu = x->cu;
    gcoll__coll_args_t *a = &x->a;
    size_t p = (size_t)a->size, es = a->esize;
    x->lo = calloc(p, sizeof(size_t));
    x->hi = calloc(p, sizeof(size_t));
    x->status = calloc(p, 1);
    if (!x->lo || !x->hi || !x->status)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a staged Adasum of %zu ranks", p);
    for (int q = 0; q < a->size; q++) {
        gcoll__cuda_share(a->count, q, a->size, &x->lo[q], &x->hi[q]);
        if (len_of(x, q) > x->width)
            x->width = len_of(x, q);
    }
    if (!cu->is_device(a->sendbuf, &x->d.device))
        x->d.device = 0;
    GCOLL_CU(cu->set_device(x->d.device), "set device");
    GCOLL_CU(cu->stream_create(&x->stream), "stream create");
    GCOLL_CU(cu->event_create(&x->ev_start), "event create");
    GCOLL_CU(cu->event_create(&x->ev_copy), "event create");
    /* the input is ready once the caller's stream (the legacy default stream without one) reaches
     * this point */
    x->user_stream = attr->stream;
    GCOLL_CU(cu->event_record(x->ev_start, x->user_stream), "event record");
    GCOLL_CU(cu->stream_wait_event(x->stream, x->ev_start), "stream wait");
    size_t pin = a->count * es + p * x->width * es;
    if (!(x->pin = gcoll__cuda_cached_get(-1, pin)) ||
        !(x->dslots = gcoll__cuda_cached_get(x->d.device, p * x->width * es)))
        return gcoll__error(GCOLL_ERR_NOMEM, "no pinned or device memory for %zu bytes of staging", pin);
    gcoll__gpu_ada_t *d = &x->d;
    d->stream = x->stream;
    d->ev_last = x->ev_copy;
    d->err = x->err;
    d->errlen = sizeof(x->err);
    d->begin = begin;
    d->finish = finish;
    d->frame = x;
    return gcoll__gpu_ada_init(d, a, tensor_counts, ntensors);
}

gcoll_status_t gcoll__cuda_stage_adasum_start(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                              gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req)
{
    sada_t *x = calloc(1, sizeof(*x));
    gcoll__sched_t *s = gcoll__sched_new(a->dtype, a->op, (unsigned)a->size, NULL);
    if (!x || !s) {
        free(x);
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a staged Adasum");
    }
    x->cu = gcoll__cuda_get();
    x->a = *a;
    s->cleanup = sada_free;
    s->cleanup_arg = x;
    s->desc = gcoll__opdesc_of(a->coll, a->dtype, a->op, a->count, a->root);
    s->desc.where = GCOLL_OPDESC_GPU; /* a rank that stages for the host's Adasum mismatches */
    gcoll_status_t st = sada_setup(x, tensor_counts, ntensors, attr);
    if (st != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return st;
    }
    int me = a->rank;
    size_t es = a->esize;
    gcoll__sched_round(s);
    gcoll__sched_custom(s, step_down, sada_who, x);
    gcoll__sched_custom_local(s);
    gcoll__sched_round(s); /* every peer its share of this rank's input */
    for (int i = 1; i < a->size; i++) {
        int to = (me + i) % a->size, from = (me - i + a->size) % a->size;
        if (len_of(x, to))
            gcoll__sched_send(s, to, x->pin + x->lo[to] * es, len_of(x, to) * es);
        if (len_of(x, me))
            gcoll__sched_recv(s, from, pin_in(x, from), len_of(x, me) * es);
    }
    gcoll__gpu_ada_rounds(&x->d, s);
    gcoll__sched_round(s); /* every peer this rank's slice of the result */
    for (int i = 1; i < a->size; i++) {
        int to = (me + i) % a->size, from = (me - i + a->size) % a->size;
        if (len_of(x, me))
            gcoll__sched_send(s, to, x->pin + x->lo[me] * es, len_of(x, me) * es);
        if (len_of(x, from))
            gcoll__sched_recv(s, from, x->pin + x->lo[from] * es, len_of(x, from) * es);
    }
    gcoll__sched_round(s);
    gcoll__sched_custom(s, step_up, sada_who, x);
    gcoll__sched_custom_local(s);
    gcoll__sched_exchange(s, me, a->size, x->status, 1);
    gcoll__sched_round(s);
    gcoll__sched_custom(s, step_end, sada_who, x);
    if (s->status != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
    }
    gcoll__start_t how = {.wake = 1};
    return gcoll__request_start(comm, a->coll, "staged_gpu_adasum", s, attr, req, &how);
}
