/* Groups (gcoll_group_start/end): inside one, this thread's operations start as they are posted,
 * but blocking calls do not wait: gcoll_group_end waits for them, so no order of sends and
 * receives can deadlock. Small plain allreduces are held back and fused at the end, per
 * communicator, dtype, op and priority in posting order (the same on every rank): one operation
 * over a packed buffer whose first member's request carries it, the others following it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "collectives/select.h"
#include "core/comm.h"
#include "core/lane.h"
#include "core/post.h"

/* Allreduces at most FUSE_MAX bytes are fused, into operations of at most FUSED_MAX: one per
 * batch beats several in flight at once, which on one host take turns on the node channel, each
 * a round of every rank. */
#define FUSE_MAX ((size_t)64 << 10)
#define FUSED_MAX ((size_t)4 << 20)

typedef struct {
    gcoll_request_t r; /* allocated, not started: pending until the end */
    gcoll_comm_t comm;
    gcoll__coll_args_t a;
    gcoll__attr_t attr;
    char name[64];
    int taken; /* already in a batch */
} held_t;

/* A held request of a blocking call: gcoll_group_end waits for it and no caller holds it. */
static int blocking(const held_t *h)
{
    return h->r->blocking;
}

/* One fused operation: the first member's request runs it, the rest wait for done. */
typedef struct {
    int refs;
    int done;  /* the results are in every member's buffer */
    int ended; /* the fused schedule is gone, done or not */
} batch_t;

/* This thread's open group. */
typedef struct {
    int depth;
    gcoll_request_t *waits; /* the blocking calls' requests */
    size_t nwaits, capwaits;
    held_t *held;
    size_t nheld, capheld;
    gcoll_request_t *posted; /* every request posted in the group, held ones apart */
    size_t nposted, capposted;
} group_t;
static __thread group_t g; /* __thread, not _Thread_local, which cppcheck 2.10 misreads on a struct */

int gcoll__group_open(void)
{
    return g.depth > 0;
}

GCOLL_API gcoll_status_t gcoll_group_start(void)
{
    g.depth++;
    return GCOLL_SUCCESS;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return 0;
    *arr = p;
    *cap = ncap;
    return 1;
}

gcoll_status_t gcoll__run(gcoll_status_t started, gcoll_request_t *req)
{
    GCOLL_CHECK(started);
    if (!g.depth)
        return gcoll_wait(req);
    if (!grow((void **)&g.waits, &g.capwaits, g.nwaits + 1, sizeof(*g.waits))) {
        gcoll_status_t st = gcoll_wait(req); /* it cannot be left behind: wait now */
        return st != GCOLL_SUCCESS ? st : gcoll__error(GCOLL_ERR_NOMEM, "no memory to hold a group's call");
    }
    g.waits[g.nwaits++] = *req;
    (*req)->blocking = 1;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__group_track(gcoll_status_t started, gcoll_request_t r)
{
    if (started != GCOLL_SUCCESS || !g.depth || !r || r->pending)
        return started;
    if (!grow((void **)&g.posted, &g.capposted, g.nposted + 1, sizeof(*g.posted)))
        return started; /* untracked: its wait is merely not refused */
    r->grouped = 1;
    g.posted[g.nposted++] = r;
    return started;
}

int gcoll__group_fusable(const gcoll__coll_args_t *a, const gcoll__attr_t *attr)
{
    return g.depth && a->size > 1 && a->coll == GCOLL_COLL_ALLREDUCE && a->compress == GCOLL_COMPRESS_NONE &&
        !attr->algorithm && a->op != GCOLL_ADASUM && a->op != GCOLL_PREMUL_SUM && a->count &&
        a->count * a->esize <= FUSE_MAX;
}

gcoll_status_t gcoll__group_defer(const gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                                  gcoll_request_t *req)
{
    if (!grow((void **)&g.held, &g.capheld, g.nheld + 1, sizeof(*g.held)))
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory to hold a group's allreduce");
    gcoll_request_t r = calloc(1, sizeof(*r));
    if (!r)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a request");
    r->pending = 1;
    held_t *h = &g.held[g.nheld++];
    *h = (held_t){.r = r, .comm = comm, .a = *a, .attr = *attr};
    if (attr->name) {
        snprintf(h->name, sizeof(h->name), "%s", attr->name);
        h->attr.name = h->name;
    }
    pthread_mutex_lock(&comm->lane->lock);
    comm->refs++; /* until it starts */
    pthread_mutex_unlock(&comm->lane->lock);
    *req = r;
    return GCOLL_SUCCESS;
}

static void batch_unref(batch_t *b)
{
    if (--b->refs == 0)
        free(b);
}

/* The fused schedule's end, and its last step: the members' results are out. */
static void leader_end(void *arg)
{
    batch_t *b = arg;
    b->ended = 1;
    batch_unref(b);
}

static gcoll_status_t leader_signal(void *state, int *done)
{
    ((batch_t *)state)->done = 1;
    *done = 1;
    return GCOLL_SUCCESS;
}

static gcoll_status_t follow(void *state, int *done)
{
    batch_t *b = state;
    *done = b->done;
    if (!b->done && b->ended)
        return gcoll__error(GCOLL_ERR_ABORTED, "the fused allreduce that this one joined in its group failed");
    return GCOLL_SUCCESS;
}

static void follow_who(void *state, char *buf, size_t len)
{
    (void)state;
    snprintf(buf, len, "the group's fused allreduce");
}

static void follower_end(void *arg)
{
    batch_unref(arg);
}

/* Ends a held request without starting it, with status: its wait reports it. */
static void end_held(held_t *h, gcoll_status_t status)
{
    gcoll_request_t r = h->r;
    r->pending = 0;
    r->lane = h->comm->lane;
    r->status = status;
    snprintf(r->errmsg, sizeof(r->errmsg), "%s", status == GCOLL_SUCCESS ? "" : gcoll_last_error());
    r->done = 1;
}

static gcoll_status_t start_one(held_t *h)
{
    gcoll__sched_t *s;
    const char *algo;
    GCOLL_CHECK(gcoll__build(&h->a, NULL, NULL, &s, &algo));
    /* the group's end drives what it waits for; the worker, what a caller waits for later */
    gcoll__start_t how = {.storage = h->r, .heap = 1, .wake = !blocking(h)};
    gcoll_request_t out;
    return gcoll__request_start(h->comm, GCOLL_COLL_ALLREDUCE, algo, s, &h->attr, &out, &how);
}

/* The members m[0..n) as one allreduce over a packed buffer, which the first blocking member's
 * request runs (the first member's where none blocks): gcoll_group_end waits for it, so the
 * other blocking members need no request of their own; the nonblocking ones follow it. */
static gcoll_status_t start_fused(held_t **m, size_t n, size_t total)
{
    size_t lead = 0;
    while (lead < n && !blocking(m[lead]))
        lead++;
    if (lead == n)
        lead = 0;
    const gcoll__coll_args_t *a0 = &m[0]->a;
    gcoll_comm_t comm = m[0]->comm;
    size_t es = a0->esize;
    gcoll__coll_args_t b = {.coll = GCOLL_COLL_ALLREDUCE, .count = total, .dtype = a0->dtype, .op = a0->op};
    GCOLL_CHECK(gcoll__check_common(&b, comm, 1));
    const gcoll__algo_t *algo;
    GCOLL_CHECK(gcoll__algo_select(&b, NULL, &algo));
    batch_t *bt = calloc(1, sizeof(*bt));
    gcoll__sched_t *s = bt ? gcoll__sched_new(b.dtype, b.op, (unsigned)b.size, NULL) : NULL;
    char *packed = s ? gcoll__sched_scratch(s, total * es) : NULL;
    if (!packed) {
        gcoll__sched_free(s);
        free(bt);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory to fuse %zu allreduces of %zu elements", n, total);
    }
    bt->refs = 1;
    s->cleanup = leader_end;
    s->cleanup_arg = bt;
    s->desc = gcoll__opdesc_of(GCOLL_COLL_ALLREDUCE, b.dtype, b.op, total, 0);
    b.sendbuf = b.recvbuf = packed;
    gcoll__sched_round(s);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const gcoll__coll_args_t *a = &m[i]->a;
        const void *in = a->sendbuf == a->recvbuf ? a->recvbuf : a->sendbuf;
        gcoll__sched_copy(s, packed + off * es, in, a->count * es);
        off += a->count;
    }
    gcoll__sched_round(s); /* the packing is done before the algorithm's first step, whatever it is */
    algo->build(s, &b);
    gcoll__sched_round(s);
    off = 0;
    for (size_t i = 0; i < n; i++) {
        const gcoll__coll_args_t *a = &m[i]->a;
        gcoll__sched_copy(s, a->recvbuf, packed + off * es, a->count * es);
        off += a->count;
    }
    gcoll__sched_round(s);
    gcoll__sched_custom(s, leader_signal, NULL, bt);
    if (s->status != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory to fuse %zu allreduces of %zu elements", n, total);
    }
    /* the followers first, so that the leader cannot finish and free the batch under them */
    for (size_t i = 0; i < n; i++) {
        if (i == lead)
            continue;
        if (blocking(m[i])) {
            end_held(m[i], GCOLL_SUCCESS); /* the leader's wait stands for it */
            continue;
        }
        gcoll__sched_t *f = gcoll__sched_new(b.dtype, b.op, (unsigned)b.size, NULL);
        if (f) {
            gcoll__sched_round(f);
            gcoll__sched_custom(f, follow, follow_who, bt);
        }
        if (!f || f->status != GCOLL_SUCCESS) {
            gcoll__sched_free(f);
            end_held(m[i], gcoll__error(GCOLL_ERR_NOMEM, "no memory for a fused allreduce's member"));
            continue;
        }
        bt->refs++;
        f->cleanup = follower_end;
        f->cleanup_arg = bt;
        gcoll__start_t how = {.storage = m[i]->r, .heap = 1, .wake = 1, .own_tag = 1, .member = 1};
        gcoll_request_t out;
        gcoll_status_t st = gcoll__request_start(comm, GCOLL_COLL_ALLREDUCE, "fused", f, &m[i]->attr, &out, &how);
        if (st != GCOLL_SUCCESS)
            end_held(m[i], st);
    }
    gcoll__start_t how = {.storage = m[lead]->r, .heap = 1, .wake = !blocking(m[lead])};
    gcoll_request_t out;
    return gcoll__request_start(comm, GCOLL_COLL_ALLREDUCE, algo->name, s, &m[lead]->attr, &out, &how);
}

static int same_batch(const held_t *a, const held_t *b)
{
    return a->comm == b->comm && a->a.dtype == b->a.dtype && a->a.op == b->a.op && a->attr.priority == b->attr.priority;
}

/* Starts every held allreduce, fused where several share a batch. */
static void flush_held(void)
{
    held_t **m = g.nheld ? malloc(g.nheld * sizeof(*m)) : NULL;
    for (size_t i = 0; i < g.nheld; i++) {
        held_t *h = &g.held[i];
        if (h->taken)
            continue;
        size_t n = 0, total = 0;
        for (size_t j = i; j < g.nheld && m; j++)
            if (!g.held[j].taken && same_batch(h, &g.held[j]) &&
                (n == 0 || (total + g.held[j].a.count) * h->a.esize <= FUSED_MAX)) {
                g.held[j].taken = 1;
                m[n++] = &g.held[j];
                total += g.held[j].a.count;
            }
        gcoll_status_t st;
        if (n > 1) {
            st = start_fused(m, n, total);
            if (st != GCOLL_SUCCESS) /* each on its own, then */
                for (size_t k = 0; k < n; k++)
                    if (!m[k]->r->done && (st = start_one(m[k])) != GCOLL_SUCCESS)
                        end_held(m[k], st);
        } else {
            h->taken = 1;
            if ((st = start_one(h)) != GCOLL_SUCCESS)
                end_held(h, st);
        }
    }
    free(m);
    for (size_t i = 0; i < g.nheld; i++) {
        gcoll_comm_t c = g.held[i].comm;
        pthread_mutex_lock(&c->lane->lock);
        gcoll__comm_release(c);
        pthread_mutex_unlock(&c->lane->lock);
    }
    g.nheld = 0;
}

GCOLL_API gcoll_status_t gcoll_group_end(void)
{
    if (!g.depth)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll_group_end without gcoll_group_start");
    if (--g.depth)
        return GCOLL_SUCCESS;
    for (size_t i = 0; i < g.nposted; i++)
        g.posted[i]->grouped = 0;
    g.nposted = 0;
    flush_held();
    gcoll_status_t first = GCOLL_SUCCESS;
    char why[384] = "";
    for (size_t i = 0; i < g.nwaits; i++) {
        gcoll_status_t st = gcoll_wait(&g.waits[i]);
        if (st != GCOLL_SUCCESS && first == GCOLL_SUCCESS) {
            first = st;
            snprintf(why, sizeof(why), "%s", gcoll_last_error());
        }
    }
    g.nwaits = 0;
    return first == GCOLL_SUCCESS ? GCOLL_SUCCESS : gcoll__error(first, "%s", why);
}
