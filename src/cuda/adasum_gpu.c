/* Adasum's tree on the GPU over this rank's slice (adasum_gpu.h): the levels, their dot products
 * and scaled adds, as custom steps between which the ranks' partial sums cross. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cuda/adasum_gpu.h"

/* Level k's pairs into d->pa, d->pb; their count. */
static int pairs(gcoll__gpu_ada_t *d, int k)
{
    int n = 0;
    if (d->fold && k == 0) {
        for (int r = d->p2; r < d->size; r++, n++) {
            d->pa[n] = r - d->p2;
            d->pb[n] = r;
        }
        return n;
    }
    int stride = 1 << (k - d->fold);
    for (int i = 0; i + stride < d->p2; i += 2 * stride, n++) {
        d->pa[n] = i;
        d->pb[n] = i + stride;
    }
    return n;
}

/* Bytes of one rank's partial sums at level k. */
static size_t row_bytes(gcoll__gpu_ada_t *d, int k)
{
    return (size_t)pairs(d, k) * d->sh.nt * 3 * sizeof(double);
}

/* Tensor t's part of the slice: [*i, *j), empty when it lies outside. */
static void part(const gcoll__gpu_ada_t *d, size_t t, size_t *i, size_t *j)
{
    *i = d->sh.off[t] > d->lo ? d->sh.off[t] : d->lo;
    *j = d->sh.off[t + 1] < d->hi ? d->sh.off[t + 1] : d->hi;
    if (*j < *i)
        *j = *i;
}

gcoll_status_t gcoll__gpu_ada_init(gcoll__gpu_ada_t *d, const gcoll__coll_args_t *a, const size_t *tensor_counts,
                                   size_t ntensors)
{
    GCOLL_CHECK(gcoll__adasum_check(a->count, a->dtype, tensor_counts, ntensors));
    size_t nt = tensor_counts ? ntensors : 1, p = (size_t)a->size;
    d->cu = gcoll__cuda_get();
    d->dtype = a->dtype;
    d->es = a->esize;
    d->rank = a->rank;
    d->size = a->size;
    d->sh = (gcoll__adasum_shape_t){.dtype = a->dtype, .es = a->esize, .nt = nt, .off = calloc(nt + 1, sizeof(size_t))};
    d->vec = calloc(p, sizeof(char *));
    d->pa = calloc(p, sizeof(int));
    d->pb = calloc(p, sizeof(int));
    for (d->p2 = 1; d->p2 * 2 <= a->size; d->p2 *= 2)
        ;
    d->fold = a->size > d->p2;
    d->nlev = d->fold;
    for (int w = d->p2; w > 1; w /= 2)
        d->nlev++;
    d->maxpair = p - (size_t)d->p2 > (size_t)d->p2 / 2 ? p - (size_t)d->p2 : (size_t)d->p2 / 2;
    d->parts = calloc((size_t)d->nlev + 1, sizeof(double *));
    if (!d->sh.off || !d->vec || !d->pa || !d->pb || !d->parts)
        return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no memory for %zu tensors", nt);
    for (size_t t = 0; t < nt; t++)
        d->sh.off[t + 1] = d->sh.off[t] + (tensor_counts ? tensor_counts[t] : a->count);
    for (int k = 0; k < d->nlev; k++)
        if (!(d->parts[k] = calloc(p, row_bytes(d, k))))
            return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no memory for the dot products of %zu tensors", nt);
    GCOLL_CU(d->cu->event_create(&d->ev), "event create");
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__gpu_ada_memory(gcoll__gpu_ada_t *d)
{
    size_t len = d->hi - d->lo;
    if (len == 0 || d->nlev == 0)
        return GCOLL_SUCCESS;
    /* the fold's outputs, then the first level of pairs' (later levels write over their inputs) */
    size_t nslot = (size_t)(d->size - d->p2) + (size_t)d->p2 / 2;
    size_t slots = (nslot * len * d->es + 255) & ~(size_t)255, dots = d->maxpair * d->sh.nt * 3 * sizeof(double);
    if (!(d->dev = gcoll__cuda_cached_get(d->device, slots + dots)) || !(d->hdots = gcoll__cuda_cached_get(-1, dots)))
        return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no device or pinned memory for %zu bytes of intermediates",
                            slots + dots);
    d->ddots = (double *)(void *)(d->dev + slots);
    return GCOLL_SUCCESS;
}

void gcoll__gpu_ada_free(gcoll__gpu_ada_t *d)
{
    if (d->dev)
        gcoll__cuda_cached_put(d->dev);
    if (d->hdots)
        gcoll__cuda_cached_put(d->hdots);
    if (d->ev)
        d->cu->event_destroy(d->ev);
    for (int k = 0; d->parts && k < d->nlev; k++)
        free(d->parts[k]);
    free(d->parts);
    free(d->vec);
    free(d->pa);
    free(d->pb);
    free(d->sh.off);
}

/* Queues level k's dot products of this slice and their copy down. */
static gcoll_status_t queue_dots(gcoll__gpu_ada_t *d, int k)
{
    int np = pairs(d, k);
    size_t es = d->es, nt = d->sh.nt;
    for (int j = 0; j < np; j++)
        for (size_t t = 0, i, e; t < nt; t++) {
            part(d, t, &i, &e);
            if (i < e)
                GCOLL_CU(d->cu->adasum_dots(d->vec[d->pa[j]] + (i - d->lo) * es, d->vec[d->pb[j]] + (i - d->lo) * es,
                                            e - i, (int)d->dtype, d->ddots + ((size_t)j * nt + t) * 3, d->stream),
                         "Adasum dot-product kernel");
        }
    GCOLL_CU(d->cu->memcpy_async(d->hdots, d->ddots, (size_t)np * nt * 3 * sizeof(double), d->stream), "copy");
    return GCOLL_SUCCESS;
}

/* This rank's row of level k's dot products, from the copy down (zero where a tensor lies outside
 * the slice). */
static void fill_row(gcoll__gpu_ada_t *d, int k)
{
    int np = pairs(d, k);
    size_t nt = d->sh.nt, row = (size_t)np * nt * 3;
    double *mine = d->parts[k] + (size_t)d->rank * row;
    for (int j = 0; j < np; j++)
        for (size_t t = 0, i, e; t < nt; t++) {
            part(d, t, &i, &e);
            for (int c = 0; c < 3; c++)
                mine[((size_t)j * nt + t) * 3 + c] = i < e ? d->hdots[((size_t)j * nt + t) * 3 + c] : 0.0;
        }
}

/* Level k's scaled adds with the coefficients of the ranks' summed dot products. The fold and the
 * first level of pairs write fresh slots (their inputs are the ranks' own), later levels write
 * over their left input, the last one the result's slice. */
static gcoll_status_t apply(gcoll__gpu_ada_t *d, int k)
{
    int np = pairs(d, k), p = d->size;
    size_t es = d->es, nt = d->sh.nt, len = d->hi - d->lo, row = (size_t)np * nt * 3;
    for (int j = 0; j < np; j++) {
        int a = d->pa[j], b = d->pb[j];
        char *out;
        if (k == d->nlev - 1)
            out = d->out;
        else if (d->fold && k == 0)
            out = d->dev + (size_t)j * len * es;
        else if (k == d->fold)
            out = d->dev + ((size_t)(p - d->p2) + (size_t)a / 2) * len * es;
        else
            out = d->vec[a];
        for (size_t t = 0, i, e; t < nt; t++) {
            part(d, t, &i, &e);
            if (i == e)
                continue;
            double s[3] = {0, 0, 0};
            for (int q = 0; q < p; q++) /* in rank order: every rank gets the same bits */
                for (int c = 0; c < 3; c++)
                    s[c] += d->parts[k][(size_t)q * row + ((size_t)j * nt + t) * 3 + c];
            size_t at = (i - d->lo) * es;
            GCOLL_CU(d->cu->scaled_add(out + at, gcoll__adasum_coeff(s[0], s[1]), d->vec[a] + at,
                                       gcoll__adasum_coeff(s[0], s[2]), d->vec[b] + at, e - i, (int)d->dtype,
                                       d->stream),
                     "Adasum scaled-add kernel");
        }
        d->vec[a] = out;
    }
    return GCOLL_SUCCESS;
}

/* One step a level and a last one: the previous level's scaled adds, then this level's dot
 * products copied down (the last step: the frame's finish), waited for. */
static gcoll_status_t step(void *state, int *done)
{
    gcoll__gpu_ada_t *d = state;
    int last = d->lev == d->nlev;
    void *ev = last ? d->ev_last : d->ev;
    GCOLL_CU(d->cu->set_device(d->device), "set device");
    if (!d->queued) {
        d->queued = 1;
        gcoll_status_t st = d->lev == 0 ? d->begin(d) : GCOLL_SUCCESS;
        int work = !d->err[0] && d->hi > d->lo;
        if (st == GCOLL_SUCCESS && work && d->lev > 0)
            st = apply(d, d->lev - 1);
        if (st == GCOLL_SUCCESS && work)
            st = last ? d->finish(d) : queue_dots(d, d->lev);
        if (st == GCOLL_SUCCESS && work) {
            if (d->cu->event_record(ev, d->stream))
                st = gcoll__error(GCOLL_ERR_SYSTEM, "CUDA event record failed");
            d->waiting = st == GCOLL_SUCCESS;
        }
        if (st != GCOLL_SUCCESS) {
            snprintf(d->err, d->errlen, "%s", gcoll_last_error());
            /* what was queued may still write the peers' buffers: it ends before they hear */
            if (!d->cu->event_record(d->ev, d->stream))
                d->cu->event_sync(d->ev);
        }
    }
    if (d->waiting && !d->err[0]) {
        int ok = 0;
        GCOLL_CHECK(gcoll__cuda_ready(ev, &ok));
        if (!ok)
            return GCOLL_SUCCESS;
        if (!last)
            fill_row(d, d->lev);
    }
    if (last && d->status)
        *d->status = d->err[0] != 0;
    d->lev++;
    d->queued = d->waiting = 0;
    *done = 1;
    return GCOLL_SUCCESS;
}

static void who(void *state, char *buf, size_t len)
{
    const gcoll__gpu_ada_t *d = state;
    snprintf(buf, len, "this rank's Adasum kernels (level %d of %d)", d->lev, d->nlev);
}

void gcoll__gpu_ada_rounds(gcoll__gpu_ada_t *d, gcoll__sched_t *s)
{
    for (int k = 0; k <= d->nlev; k++) {
        gcoll__sched_round(s);
        gcoll__sched_custom(s, step, who, d);
        gcoll__sched_custom_local(s);
        if (k < d->nlev)
            gcoll__sched_exchange(s, d->rank, d->size, d->parts[k], row_bytes(d, k));
    }
}
