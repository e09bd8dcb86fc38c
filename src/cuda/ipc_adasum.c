/* Adasum on device buffers over CUDA IPC (DESIGN.md's exact tree): each rank takes a slice of the
 * elements (rank 0 all of them where the ranks share one GPU) and computes every level of the tree
 * on it with the GPU kernels, reading its peers' inputs in place. A level's per-tensor dot products
 * are partial over the slices: the ranks exchange them and each sums them in rank order, so every
 * rank applies the same coefficients, then the level's scaled adds run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "cuda/ipc.h"
#include "../collectives/adasum.h"

typedef struct {
    gcoll__ipc_t *g;
    gcoll__adasum_shape_t sh;
    int p2;                /* the largest power of two <= the rank count */
    int fold;              /* 1 when ranks p2.. fold into 0.. first (the level 0) */
    int nlev;              /* levels: the fold, then log2(p2) of pairs */
    int lev;               /* the level this step works on */
    int queued;            /* this step's work is on the stream */
    int waiting;           /* ... and an event recorded after it */
    size_t lo, hi;         /* this rank's slice of the elements */
    size_t maxpair;        /* the most pairs a level has */
    char *dev;             /* device: the intermediate slots, then maxpair * nt * 3 doubles of dot products */
    double *ddots, *hdots; /* those dot products, on the device and pinned */
    double **parts;        /* per level: every rank's dot products (rank, pair, tensor, 3) */
    char **vec;            /* per input vector: its slice as it stands (device) */
    void *ev;
} ada_t;

/* Level k's pairs (into a[], b[]: out = adasum(vec[a], vec[b]) lands in vec[a]); their count. */
static int pairs(const ada_t *d, int k, int *a, int *b)
{
    int n = 0;
    if (d->fold && k == 0) {
        for (int r = d->p2; r < d->g->a.size; r++, n++) {
            a[n] = r - d->p2;
            b[n] = r;
        }
        return n;
    }
    int stride = 1 << (k - d->fold);
    for (int i = 0; i + stride < d->p2; i += 2 * stride, n++) {
        a[n] = i;
        b[n] = i + stride;
    }
    return n;
}

/* Tensor t's part of the slice: [*i, *j), empty when it lies outside. */
static void part(const ada_t *d, size_t t, size_t *i, size_t *j)
{
    *i = d->sh.off[t] > d->lo ? d->sh.off[t] : d->lo;
    *j = d->sh.off[t + 1] < d->hi ? d->sh.off[t + 1] : d->hi;
    if (*j < *i)
        *j = *i;
}

static void ada_free(void *arg)
{
    ada_t *d = arg;
    if (d->dev)
        gcoll__cuda_cached_put(d->dev);
    if (d->hdots)
        gcoll__cuda_cached_put(d->hdots);
    if (d->ev)
        d->g->cu->event_destroy(d->ev);
    for (int k = 0; d->parts && k < d->nlev; k++)
        free(d->parts[k]);
    free(d->parts);
    free(d->vec);
    free(d->sh.off);
    free(d);
}

/* After the records crossed: the peers mapped, this rank's slice, its device and pinned memory. */
static gcoll_status_t first(ada_t *d)
{
    gcoll__ipc_t *g = d->g;
    int p = g->a.size, me = g->a.rank;
    g->launched = 1;
    gcoll__ipc_map(g);
    if (g->err[0])
        return GCOLL_SUCCESS;
    if (g->whole) {
        d->lo = 0;
        d->hi = me == 0 ? g->a.count : 0;
    } else {
        gcoll__ipc_share(g->a.count, me, p, &d->lo, &d->hi);
    }
    size_t es = g->a.esize, len = d->hi - d->lo;
    if (len == 0 || d->nlev == 0)
        return GCOLL_SUCCESS;
    size_t nslot = (size_t)(p - d->p2) + (size_t)d->p2 / 2;
    size_t slots = (nslot * len * es + 255) & ~(size_t)255, dots = d->maxpair * d->sh.nt * 3 * sizeof(double);
    if (!(d->dev = gcoll__cuda_cached_get(g->device, slots + dots)) || !(d->hdots = gcoll__cuda_cached_get(-1, dots)))
        return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no device or pinned memory for %zu bytes of intermediates",
                            slots + dots);
    d->ddots = (double *)(void *)(d->dev + slots);
    for (int q = 0; q < p; q++)
        d->vec[q] = g->sendp[q] + d->lo * es;
    return GCOLL_SUCCESS;
}

/* Queues level k's dot products of this slice and their copy down. */
static gcoll_status_t queue_dots(ada_t *d, int k)
{
    gcoll__ipc_t *g = d->g;
    const gcoll__cuda_ops_t *cu = g->cu;
    int a[GCOLL_CUDA_MULTI_MAX], b[GCOLL_CUDA_MULTI_MAX];
    int np = pairs(d, k, a, b);
    size_t es = g->a.esize, nt = d->sh.nt;
    for (int j = 0; j < np; j++)
        for (size_t t = 0, i, e; t < nt; t++) {
            part(d, t, &i, &e);
            if (i < e)
                GCOLL_CU(cu->adasum_dots(d->vec[a[j]] + (i - d->lo) * es, d->vec[b[j]] + (i - d->lo) * es, e - i,
                                         (int)g->a.dtype, d->ddots + ((size_t)j * nt + t) * 3, g->stream),
                         "Adasum dot-product kernel");
        }
    GCOLL_CU(cu->memcpy_async(d->hdots, d->ddots, (size_t)np * nt * 3 * sizeof(double), g->stream), "copy");
    return GCOLL_SUCCESS;
}

/* This rank's row of level k's dot products, from the copy down (zero where a tensor lies outside
 * the slice). */
static void fill_row(ada_t *d, int k)
{
    int a[GCOLL_CUDA_MULTI_MAX], b[GCOLL_CUDA_MULTI_MAX];
    int np = pairs(d, k, a, b);
    size_t nt = d->sh.nt, row = (size_t)np * nt * 3;
    double *mine = d->parts[k] + (size_t)d->g->a.rank * row;
    for (int j = 0; j < np; j++)
        for (size_t t = 0, i, e; t < nt; t++) {
            part(d, t, &i, &e);
            for (int c = 0; c < 3; c++)
                mine[((size_t)j * nt + t) * 3 + c] = i < e ? d->hdots[((size_t)j * nt + t) * 3 + c] : 0.0;
        }
}

/* Level k's scaled adds with the coefficients of the ranks' summed dot products. The fold and the
 * first level of pairs write fresh slots (their inputs are the ranks' own buffers), later levels
 * write over their left input, the last one into this rank's receive buffer. */
static gcoll_status_t apply(ada_t *d, int k)
{
    gcoll__ipc_t *g = d->g;
    const gcoll__cuda_ops_t *cu = g->cu;
    int a[GCOLL_CUDA_MULTI_MAX], b[GCOLL_CUDA_MULTI_MAX];
    int np = pairs(d, k, a, b), p = g->a.size;
    size_t es = g->a.esize, nt = d->sh.nt, len = d->hi - d->lo, row = (size_t)np * nt * 3;
    for (int j = 0; j < np; j++) {
        char *out;
        if (k == d->nlev - 1)
            out = g->recvp[g->a.rank] + d->lo * es;
        else if (d->fold && k == 0)
            out = d->dev + (size_t)j * len * es;
        else if (k == d->fold)
            out = d->dev + ((size_t)(p - d->p2) + (size_t)a[j] / 2) * len * es;
        else
            out = d->vec[a[j]];
        for (size_t t = 0, i, e; t < nt; t++) {
            part(d, t, &i, &e);
            if (i == e)
                continue;
            double s[3] = {0, 0, 0};
            for (int q = 0; q < p; q++) /* in rank order: every rank gets the same bits */
                for (int c = 0; c < 3; c++)
                    s[c] += d->parts[k][(size_t)q * row + ((size_t)j * nt + t) * 3 + c];
            size_t at = (i - d->lo) * es;
            GCOLL_CU(cu->scaled_add(out + at, gcoll__adasum_coeff(s[0], s[1]), d->vec[a[j]] + at,
                                    gcoll__adasum_coeff(s[0], s[2]), d->vec[b[j]] + at, e - i, (int)g->a.dtype,
                                    g->stream),
                     "Adasum scaled-add kernel");
        }
        d->vec[a[j]] = out;
    }
    return GCOLL_SUCCESS;
}

/* The result's slice (a single rank's input where there is no level) goes to every rank. */
static gcoll_status_t push(ada_t *d)
{
    gcoll__ipc_t *g = d->g;
    int me = g->a.rank;
    size_t es = g->a.esize, bytes = (d->hi - d->lo) * es;
    char *mine = g->recvp[me] + d->lo * es;
    if (bytes == 0)
        return GCOLL_SUCCESS;
    if (d->nlev == 0 && g->sendp[me] != g->recvp[me])
        GCOLL_CU(g->cu->memcpy_async(mine, g->sendp[me], bytes, g->stream), "copy");
    for (int q = 0; q < g->a.size; q++)
        if (q != me)
            GCOLL_CU(g->cu->memcpy_async(g->recvp[q] + d->lo * es, mine, bytes, g->stream), "copy");
    return GCOLL_SUCCESS;
}

/* One step a level (and a last one): the previous level's scaled adds, then this level's dot
 * products copied down (the last step: the result pushed), waited for. A failure is kept in g->err
 * and the rank goes on exchanging zeros, so that no peer waits for it; the completion bytes tell. */
static gcoll_status_t step(void *state, int *done)
{
    ada_t *d = state;
    gcoll__ipc_t *g = d->g;
    int last = d->lev == d->nlev;
    void *ev = last ? g->ev_done : d->ev;
    GCOLL_CU(g->cu->set_device(g->device), "set device");
    if (!d->queued) {
        d->queued = 1;
        gcoll_status_t st = d->lev == 0 ? first(d) : GCOLL_SUCCESS;
        int work = !g->err[0] && d->hi > d->lo;
        if (st == GCOLL_SUCCESS && work && d->lev > 0)
            st = apply(d, d->lev - 1);
        if (st == GCOLL_SUCCESS && work)
            st = last ? push(d) : queue_dots(d, d->lev);
        if (st == GCOLL_SUCCESS && work) {
            if (g->cu->event_record(ev, g->stream))
                st = gcoll__error(GCOLL_ERR_SYSTEM, "CUDA event record failed");
            d->waiting = st == GCOLL_SUCCESS;
        }
        if (st != GCOLL_SUCCESS) {
            snprintf(g->err, sizeof(g->err), "%s", gcoll_last_error());
            /* what was queued may still write the peers' buffers: it ends before they hear */
            if (!g->cu->event_record(g->ev_done, g->stream))
                g->cu->event_sync(g->ev_done);
        }
    }
    if (d->waiting && !g->err[0]) {
        int ok = 0;
        GCOLL_CHECK(gcoll__cuda_ready(ev, &ok));
        if (!ok)
            return GCOLL_SUCCESS;
        if (!last)
            fill_row(d, d->lev);
    }
    if (last)
        g->status[g->a.rank] = g->err[0] != 0;
    d->lev++;
    d->queued = d->waiting = 0;
    *done = 1;
    return GCOLL_SUCCESS;
}

static gcoll_status_t ada_setup(ada_t *d, const size_t *tensor_counts, size_t ntensors)
{
    const gcoll__coll_args_t *a = &d->g->a;
    size_t nt = tensor_counts ? ntensors : 1;
    d->sh = (gcoll__adasum_shape_t){.dtype = a->dtype, .es = a->esize, .nt = nt, .off = calloc(nt + 1, sizeof(size_t))};
    d->vec = calloc((size_t)a->size, sizeof(char *));
    for (d->p2 = 1; d->p2 * 2 <= a->size; d->p2 *= 2)
        ;
    d->fold = a->size > d->p2;
    d->nlev = d->fold;
    for (int w = d->p2; w > 1; w /= 2)
        d->nlev++;
    d->maxpair = (size_t)(a->size - d->p2) > (size_t)d->p2 / 2 ? (size_t)(a->size - d->p2) : (size_t)d->p2 / 2;
    d->parts = calloc((size_t)d->nlev + 1, sizeof(double *));
    if (!d->sh.off || !d->vec || !d->parts)
        return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no memory for %zu tensors", nt);
    for (size_t t = 0; t < nt; t++)
        d->sh.off[t + 1] = d->sh.off[t] + (tensor_counts ? tensor_counts[t] : a->count);
    int pa[GCOLL_CUDA_MULTI_MAX], pb[GCOLL_CUDA_MULTI_MAX];
    for (int k = 0; k < d->nlev; k++) {
        size_t row = (size_t)pairs(d, k, pa, pb) * nt * 3;
        if (!(d->parts[k] = calloc((size_t)a->size * row, sizeof(double))))
            return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no memory for the dot products of %zu tensors", nt);
    }
    GCOLL_CU(d->g->cu->event_create(&d->ev), "event create");
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__cuda_ipc_adasum_start(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                            gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    GCOLL_CHECK(gcoll__adasum_check(a->count, a->dtype, tensor_counts, ntensors));
    gcoll__ipc_t *g;
    gcoll__sched_t *s;
    GCOLL_CHECK(gcoll__ipc_begin(a, attr, &g, &s));
    ada_t *d = calloc(1, sizeof(*d));
    if (!d) {
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a CUDA IPC Adasum");
    }
    d->g = g;
    g->ext = d;
    g->ext_free = ada_free;
    gcoll_status_t st = ada_setup(d, tensor_counts, ntensors);
    if (st != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return st;
    }
    /* per level: its step, then the dot products cross; a last step pushes the result */
    int pa[GCOLL_CUDA_MULTI_MAX], pb[GCOLL_CUDA_MULTI_MAX];
    for (int k = 0; k <= d->nlev; k++) {
        gcoll__sched_round(s);
        gcoll__sched_custom(s, step, gcoll__ipc_who, d);
        gcoll__sched_custom_local(s);
        if (k < d->nlev)
            gcoll__ipc_exchange(s, a, d->parts[k], (size_t)pairs(d, k, pa, pb) * d->sh.nt * 3 * sizeof(double));
    }
    return gcoll__ipc_end(g, s, comm, attr, req, "cuda_ipc_adasum");
}
