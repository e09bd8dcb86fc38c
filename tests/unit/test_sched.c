/* Schedules: the engine runs a local step as soon as the steps listed before it are done (over a
 * fake transport whose messages land when the test says so); every point-to-point algorithm
 * builds, on every rank, schedules whose messages pair up between each two ranks, at any rank
 * count and count; the pipelined ones send no slice larger than GCOLL_CHUNK_BYTES and at most
 * GCOLL_PIPELINE_DEPTH of them a round to one peer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/config.h"
#include "core/lane.h"
#include "core/request.h"
#include "unit.h"
#include "collectives/adasum.h"
#include "collectives/select.h"

/* ---- a fake transport: messages complete when the test lets them */

#define MAXREQ 16
static int landed[MAXREQ];
static void *where[MAXREQ];
static int prio_of[MAXREQ]; /* the priority a send was posted with */
static int nreq;

static gcoll_status_t fake_post(void *buf, gcoll__tp_req_t **req)
{
    ck_assert_int_lt(nreq, MAXREQ);
    where[nreq] = buf;
    landed[nreq] = 0;
    *req = (gcoll__tp_req_t *)&landed[nreq++];
    return GCOLL_SUCCESS;
}

static gcoll_status_t fake_isend_prio(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                      int priority, gcoll__tp_req_t **req)
{
    (void)tp, (void)peer, (void)tag, (void)bytes;
    prio_of[nreq] = priority;
    return fake_post((void *)buf, req);
}

static gcoll_status_t fake_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                 gcoll__tp_req_t **req)
{
    return fake_isend_prio(tp, peer, tag, buf, bytes, 0, req);
}

static gcoll_status_t fake_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                 gcoll__tp_req_t **req)
{
    (void)tp, (void)peer, (void)tag, (void)bytes;
    return fake_post(buf, req);
}

static gcoll_status_t fake_test(gcoll__tp_t *tp, gcoll__tp_req_t *req, int *done)
{
    (void)tp;
    *done = *(int *)req;
    return GCOLL_SUCCESS;
}

static void fake_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *req)
{
    (void)tp, (void)req;
}

static const gcoll__transport_t fake = {.name = "fake",
                                        .isend = fake_isend,
                                        .isend_prio = fake_isend_prio,
                                        .irecv = fake_irecv,
                                        .test = fake_test,
                                        .cancel = fake_cancel};

/* Completes the message posted on buf (a receive's data is written first). */
static void land(void *buf, const int *data, size_t n)
{
    for (int i = 0; i < nreq; i++)
        if (where[i] == buf) {
            if (data)
                memcpy(buf, data, n * sizeof(int));
            landed[i] = 1;
            return;
        }
    ck_abort_msg("no message was posted on that buffer");
}

static const gcoll__start_t plain = {0};
static const gcoll__attr_t dflt = {0}; /* priority 0, no name: all a request reads of it */

/* The engine's lanes without a worker: the test alone drives progress, deterministically. A
 * fresh fake transport too (valgrind runs every test in one process). */
static void engine_up(void)
{
    nreq = 0;
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    gcoll__config.worker_count = 0;
    ck_assert_int_eq(gcoll__lanes_start(), GCOLL_SUCCESS);
}

START_TEST(local_steps_run_as_soon_as_the_steps_before_them)
{
    engine_up();
    static struct gcoll_comm comm = {.rank = 0, .size = 2, .refs = 1, .tpops = &fake};
    comm.lane = gcoll__lane_at(0);
    int own[4] = {1, 2, 3, 4}, a[4], b[4], out_a[4] = {0}, out_b[4] = {0}, last[4] = {0};
    const int in_a[4] = {10, 20, 30, 40}, in_b[4] = {100, 200, 300, 400};
    gcoll__sched_t *s = gcoll__sched_new(GCOLL_INT32, GCOLL_SUM, 2, NULL);
    ck_assert_ptr_nonnull(s);
    /* one round: recv a; reduce a; recv b; reduce b; send; copy (waits for everything) */
    gcoll__sched_round(s);
    gcoll__sched_recv(s, 1, a, sizeof(a));
    gcoll__sched_reduce(s, out_a, a, own, 4);
    gcoll__sched_recv(s, 1, b, sizeof(b));
    gcoll__sched_reduce(s, out_b, b, own, 4);
    gcoll__sched_send(s, 1, own, sizeof(own));
    gcoll__sched_copy(s, last, out_b, sizeof(last));
    gcoll_request_t req;
    ck_assert_int_eq(gcoll__request_start(&comm, GCOLL_COLL_ALLREDUCE, "test", s, &dflt, &req, &plain), GCOLL_SUCCESS);
    int done = 0;
    ck_assert_int_eq(gcoll_test(&req, &done), GCOLL_SUCCESS);
    ck_assert(!done && out_a[0] == 0); /* nothing has landed */

    land(b, in_b, 4); /* b first: its reduction still waits for a, listed before it */
    ck_assert_int_eq(gcoll_test(&req, &done), GCOLL_SUCCESS);
    ck_assert(!done && out_a[0] == 0 && out_b[0] == 0);

    land(a, in_a, 4); /* both reductions run; the copy waits for the send */
    ck_assert_int_eq(gcoll_test(&req, &done), GCOLL_SUCCESS);
    ck_assert(!done);
    ck_assert(out_a[0] == 11 && out_a[3] == 44 && out_b[0] == 101 && out_b[3] == 404);
    ck_assert_int_eq(last[0], 0);

    land(own, NULL, 0);
    ck_assert_int_eq(gcoll_test(&req, &done), GCOLL_SUCCESS);
    ck_assert(done);
    ck_assert(last[0] == 101 && last[3] == 404);
    gcoll__lanes_stop();
}
END_TEST

START_TEST(a_reduction_overlaps_later_receives)
{
    /* the old engine ran local steps after the whole round: here slice 0's reduction must run
     * while slice 1 is still on its way */
    engine_up();
    static struct gcoll_comm comm = {.rank = 0, .size = 2, .refs = 1, .tpops = &fake};
    comm.lane = gcoll__lane_at(0);
    int own[2] = {1, 2}, in[2], acc[2] = {0};
    gcoll__sched_t *s = gcoll__sched_new(GCOLL_INT32, GCOLL_SUM, 2, NULL);
    gcoll__sched_recv(s, 1, &in[0], sizeof(int));
    gcoll__sched_reduce(s, &acc[0], &in[0], &own[0], 1);
    gcoll__sched_recv(s, 1, &in[1], sizeof(int));
    gcoll__sched_reduce(s, &acc[1], &in[1], &own[1], 1);
    gcoll_request_t req;
    ck_assert_int_eq(gcoll__request_start(&comm, GCOLL_COLL_ALLREDUCE, "test", s, &dflt, &req, &plain), GCOLL_SUCCESS);
    const int five = 5, seven = 7;
    land(&in[0], &five, 1);
    int done = 0;
    ck_assert_int_eq(gcoll_test(&req, &done), GCOLL_SUCCESS);
    ck_assert(!done);
    ck_assert_int_eq(acc[0], 6);
    land(&in[1], &seven, 1);
    ck_assert_int_eq(gcoll_test(&req, &done), GCOLL_SUCCESS);
    ck_assert(done && acc[1] == 9);
    gcoll__lanes_stop();
}
END_TEST

/* Where buf's message stands in the order of posting; -1 when it was not posted. */
static int post_index(const void *buf)
{
    for (int i = 0; i < nreq; i++)
        if (where[i] == buf)
            return i;
    return -1;
}

START_TEST(higher_priority_sends_take_the_budget_first)
{
    engine_up();
    gcoll__config.inflight_bytes = 2 << 20;
    static struct gcoll_comm comm = {.rank = 0, .size = 2, .refs = 1, .tpops = &fake};
    comm.lane = gcoll__lane_at(0);
    static char big[6][1 << 20];
    gcoll__sched_t *low = gcoll__sched_new(GCOLL_UINT8, GCOLL_SUM, 2, NULL);
    for (int i = 0; i < 4; i++)
        gcoll__sched_send(low, 1, big[i], sizeof(big[i]));
    gcoll__sched_t *high = gcoll__sched_new(GCOLL_UINT8, GCOLL_SUM, 2, NULL);
    for (int i = 4; i < 6; i++)
        gcoll__sched_send(high, 1, big[i], sizeof(big[i]));
    gcoll__attr_t hi_attr = {.priority = 5};
    gcoll_request_t rl, rh;
    ck_assert_int_eq(gcoll__request_start(&comm, GCOLL_COLL_ALLREDUCE, "test", low, &dflt, &rl, &plain), GCOLL_SUCCESS);
    /* the first slice is outside the budget, the next two fill its 2 MiB; the fourth waits */
    ck_assert_int_eq(nreq, 3);
    ck_assert_int_eq(post_index(big[2]), 2);
    ck_assert_int_eq(gcoll__request_start(&comm, GCOLL_COLL_ALLREDUCE, "test", high, &hi_attr, &rh, &plain),
                     GCOLL_SUCCESS);
    /* an operation with nothing in flight may always post one slice: no starvation, no deadlock */
    ck_assert_int_eq(nreq, 4);
    ck_assert_int_eq(post_index(big[4]), 3);
    land(big[0], NULL, 0);
    land(big[1], NULL, 0);
    int done = 0;
    ck_assert_int_eq(gcoll_test(&rh, &done), GCOLL_SUCCESS);
    /* the room freed by the low-priority slices goes to the high-priority operation first */
    ck_assert_int_eq(post_index(big[5]), 4);
    ck_assert_int_eq(post_index(big[3]), -1);
    /* and each send carries its operation's priority to the transport */
    ck_assert_int_eq(prio_of[post_index(big[0])], 0);
    ck_assert_int_eq(prio_of[post_index(big[4])], 5);
    ck_assert_int_eq(prio_of[post_index(big[5])], 5);
    land(big[2], NULL, 0);
    land(big[4], NULL, 0);
    land(big[5], NULL, 0);
    ck_assert_int_eq(gcoll_wait(&rh), GCOLL_SUCCESS);
    ck_assert_int_eq(post_index(big[3]), 5); /* posted once big[2] made room */
    land(big[3], NULL, 0);
    ck_assert_int_eq(gcoll_wait(&rl), GCOLL_SUCCESS);
    gcoll__lanes_stop();
}
END_TEST

/* Low-priority operations moving one slice each, more of them than the budget holds, must not
 * hold a later high-priority operation to one slice at a time: on a link with deep queues each
 * slice waits a loaded round trip for its rendezvous, so a one-slice pipeline leaves the link
 * to the low priorities. */
START_TEST(a_crowd_of_single_slices_leaves_the_budget_to_a_higher_priority)
{
    engine_up();
    gcoll__config.inflight_bytes = 2 << 20;
    static struct gcoll_comm comm = {.rank = 0, .size = 2, .refs = 1, .tpops = &fake};
    comm.lane = gcoll__lane_at(0);
    enum { CROWD = 6, HIGH = 4 };
    static char big[CROWD + HIGH][1 << 20];
    gcoll_request_t rl[CROWD], rh;
    for (int i = 0; i < CROWD; i++) {
        gcoll__sched_t *low = gcoll__sched_new(GCOLL_UINT8, GCOLL_SUM, 2, NULL);
        gcoll__sched_send(low, 1, big[i], sizeof(big[i]));
        ck_assert_int_eq(gcoll__request_start(&comm, GCOLL_COLL_ALLREDUCE, "test", low, &dflt, &rl[i], &plain),
                         GCOLL_SUCCESS);
    }
    ck_assert_int_eq(nreq, CROWD); /* 6 MiB in flight against a 2 MiB budget */
    gcoll__sched_t *high = gcoll__sched_new(GCOLL_UINT8, GCOLL_SUM, 2, NULL);
    for (int i = CROWD; i < CROWD + HIGH; i++)
        gcoll__sched_send(high, 1, big[i], sizeof(big[i]));
    gcoll__attr_t hi_attr = {.priority = 5};
    ck_assert_int_eq(gcoll__request_start(&comm, GCOLL_COLL_ALLREDUCE, "test", high, &hi_attr, &rh, &plain),
                     GCOLL_SUCCESS);
    /* its first slice, then the whole budget */
    ck_assert_int_eq(post_index(big[CROWD]), CROWD);
    ck_assert_int_eq(post_index(big[CROWD + 1]), CROWD + 1);
    ck_assert_int_eq(post_index(big[CROWD + 2]), CROWD + 2);
    ck_assert_int_eq(post_index(big[CROWD + 3]), -1);
    land(big[CROWD], NULL, 0);
    land(big[CROWD + 1], NULL, 0);
    int done = 0;
    ck_assert_int_eq(gcoll_test(&rh, &done), GCOLL_SUCCESS);
    ck_assert_int_eq(post_index(big[CROWD + 3]), CROWD + 3);
    for (int i = 0; i < CROWD + HIGH; i++)
        if (i != CROWD && i != CROWD + 1)
            land(big[i], NULL, 0);
    ck_assert_int_eq(gcoll_wait(&rh), GCOLL_SUCCESS);
    for (int i = 0; i < CROWD; i++)
        ck_assert_int_eq(gcoll_wait(&rl[i]), GCOLL_SUCCESS);
    gcoll__lanes_stop();
}
END_TEST

START_TEST(a_kept_schedule_runs_again_after_rewind)
{
    engine_up();
    static struct gcoll_comm comm = {.rank = 0, .size = 2, .refs = 1, .tpops = &fake};
    comm.lane = gcoll__lane_at(0);
    int own[3] = {1, 2, 3}, in[3], out[3];
    gcoll__sched_t *s = gcoll__sched_new(GCOLL_INT32, GCOLL_SUM, 2, NULL);
    gcoll__sched_recv(s, 1, in, sizeof(in));
    gcoll__sched_send(s, 1, own, sizeof(own));
    gcoll__sched_reduce(s, out, in, own, 3);
    ck_assert(gcoll__sched_rewindable(s));
    struct gcoll_request storage;
    gcoll__start_t kept = {.storage = &storage, .kept = 1};
    for (int iter = 0; iter < 3; iter++) {
        const int data[3] = {10 * iter, 20 * iter, 30 * iter};
        gcoll_request_t req;
        nreq = 0;
        gcoll__sched_rewind(s);
        ck_assert_int_eq(gcoll__request_start(&comm, GCOLL_COLL_ALLREDUCE, "test", s, &dflt, &req, &kept),
                         GCOLL_SUCCESS);
        ck_assert_int_eq(nreq, 2);
        land(in, data, 3);
        land(own, NULL, 0);
        ck_assert_int_eq(gcoll_wait(&req), GCOLL_SUCCESS);
        ck_assert(out[0] == 1 + 10 * iter && out[2] == 3 + 30 * iter);
    }
    gcoll__sched_free(s); /* still the caller's: the engine did not free it */
    gcoll__lanes_stop();
}
END_TEST

/* ---- every rank's schedule of an algorithm, checked together */

typedef struct {
    int from, to;
    size_t bytes;
} msg_t;

typedef struct {
    msg_t *m;
    size_t n, cap;
} msgs_t;

static void add_msg(msgs_t *l, int from, int to, size_t bytes)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->m = realloc(l->m, l->cap * sizeof(msg_t));
        ck_assert_ptr_nonnull(l->m);
    }
    l->m[l->n++] = (msg_t){from, to, bytes};
}

/* The k-th message from `from` to `to` in l, or NULL. */
static const msg_t *nth(const msgs_t *l, int from, int to, size_t k)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->m[i].from == from && l->m[i].to == to && k-- == 0)
            return &l->m[i];
    return NULL;
}

static int overlap(const void *p, size_t pn, const void *q, size_t qn)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return pn && qn && a < b + qn && b < a + pn;
}

/* schedule.h's rule: a local step runs while the messages listed after it in its round are in
 * flight, so it must not write what they send or receive, nor read what they receive. */
static void check_races(const gcoll__sched_t *s, size_t es, const char *algo, int n, size_t count, int r)
{
    for (size_t k = 0; k < s->nrounds; k++) {
        const gcoll__step_t *st = s->steps + s->rounds[k].first;
        for (size_t i = 0; i < s->rounds[k].count; i++) {
            if (st[i].kind != GCOLL_STEP_REDUCE && st[i].kind != GCOLL_STEP_COPY && st[i].kind != GCOLL_STEP_DIV)
                continue;
            size_t bytes = st[i].kind == GCOLL_STEP_COPY ? st[i].n : st[i].n * es;
            const void *reads[2] = {st[i].kind == GCOLL_STEP_DIV ? NULL : st[i].a,
                                    st[i].kind == GCOLL_STEP_REDUCE ? st[i].b : NULL};
            for (size_t j = i + 1; j < s->rounds[k].count; j++) {
                int send = st[j].kind == GCOLL_STEP_SEND;
                if (!send && st[j].kind != GCOLL_STEP_RECV)
                    continue;
                const void *buf = send ? st[j].a : st[j].dst;
                int bad = overlap(st[i].dst, bytes, buf, st[j].n);
                for (int x = 0; x < 2 && !send; x++)
                    bad |= reads[x] && overlap(reads[x], bytes, buf, st[j].n);
                ck_assert_msg(!bad,
                              "%s n=%d count=%zu rank %d round %zu: local step %zu races with the %s listed "
                              "after it",
                              algo, n, count, r, k, i, send ? "send" : "receive");
            }
        }
    }
}

/* Uneven blocks for the vector collectives, the same on every rank: zeros, and sizes around
 * count. alltoallv's matrix is symmetric, so that every rank can run in place. */
static size_t vcount(int i, size_t count)
{
    return i % 3 == 1 ? 0 : count + 3 * (size_t)i;
}

static size_t vpair(int i, int j, size_t count)
{
    int lo = i < j ? i : j, hi = i < j ? j : i;
    return (lo + 2 * hi) % 4 == 0 ? 0 : count / (size_t)(1 + (lo + hi) % 3) + (size_t)hi;
}

typedef struct {
    size_t counts[32], displs[32], scounts[32], sdispls[32];
} varrays_t;

static size_t pack_displs(const size_t *c, size_t *d, int n)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        d[i] = off;
        off += c[i];
    }
    return off;
}

/* Fills a's blocks as the front would for rank a->rank; returns the elements a buffer needs. */
static size_t vargs(gcoll__coll_args_t *a, varrays_t *v, size_t count)
{
    int n = a->size, r = a->rank, atroot = r == a->root;
    for (int i = 0; i < n; i++) {
        v->counts[i] = vcount(i, count);
        v->scounts[i] = v->counts[i];
    }
    switch (a->coll) {
    case GCOLL_COLL_ALLGATHERV:
    case GCOLL_COLL_REDUCE_SCATTERV:
        a->counts = v->counts;
        a->displs = v->displs;
        a->total = pack_displs(v->counts, v->displs, n);
        a->count = a->coll == GCOLL_COLL_ALLGATHERV ? v->counts[r] : a->total;
        return a->total;
    case GCOLL_COLL_ALLTOALLV:
        for (int i = 0; i < n; i++) {
            v->scounts[i] = vpair(r, i, count);
            v->counts[i] = vpair(i, r, count);
        }
        a->scounts = v->scounts;
        a->counts = v->counts;
        a->sdispls = v->sdispls;
        a->displs = v->displs;
        a->count = 0;
        pack_displs(v->scounts, v->sdispls, n);
        return pack_displs(v->counts, v->displs, n);
    case GCOLL_COLL_GATHERV:
    case GCOLL_COLL_SCATTERV:
        a->count = v->counts[r];
        if (atroot && a->coll == GCOLL_COLL_GATHERV) {
            a->counts = v->counts;
            a->displs = v->displs;
        } else if (atroot) {
            a->scounts = v->scounts;
            a->sdispls = v->sdispls;
        }
        return pack_displs(v->counts, v->displs, n) + pack_displs(v->scounts, v->sdispls, n);
    default: return count * (size_t)n;
    }
}

/* Builds algo for every rank of n and checks that each pair's sends and receives pair up in
 * order with equal sizes and that no local step races with a message in flight; for a pipelined
 * algorithm also that no message exceeds the chunk and no round has more than depth messages to
 * or from one peer. */
static void check_algo(int coll, const char *algo, int n, size_t count, int root, int inplace, int pipelined)
{
    int idx = gcoll__algo_find(coll, GCOLL_FAMILY_PLAIN, algo);
    ck_assert_int_ge(idx, 0);
    size_t es = 4, chunk = gcoll__config.chunk_bytes, depth = (size_t)gcoll__config.pipeline_depth;
    msgs_t sends = {0}, recvs = {0};
    for (int r = 0; r < n; r++) {
        gcoll__coll_args_t a = {.coll = (gcoll__coll_t)coll,
                                .count = count,
                                .dtype = GCOLL_FLOAT32,
                                .op = GCOLL_AVG,
                                .root = root,
                                .rank = r,
                                .size = n,
                                .esize = es};
        varrays_t v;
        size_t vec = vargs(&a, &v, count) * es; /* room for the largest vector of the collective */
        char *sb = calloc(1, vec + 1), *rb = calloc(1, vec + 1);
        a.sendbuf = inplace ? rb : sb;
        a.recvbuf = rb;
        gcoll__sched_t *s = gcoll__sched_new(a.dtype, a.op, (unsigned)n, NULL);
        gcoll__algo_get(idx)->build(s, &a);
        ck_assert_int_eq(s->status, GCOLL_SUCCESS);
        check_races(s, es, algo, n, count, r);
        for (size_t k = 0; k < s->nrounds; k++) {
            size_t per_peer[2][32] = {{0}};
            for (size_t i = 0; i < s->rounds[k].count; i++) {
                const gcoll__step_t *st = &s->steps[s->rounds[k].first + i];
                if (st->kind != GCOLL_STEP_SEND && st->kind != GCOLL_STEP_RECV)
                    continue;
                int send = st->kind == GCOLL_STEP_SEND;
                CK_EXPECT(st->peer >= 0 && st->peer < n && st->peer != r, "%s n=%d rank %d: peer %d", algo, n, r,
                          st->peer);
                CK_EXPECT(!pipelined || st->n <= chunk, "%s n=%d count=%zu rank %d: a %zu-byte message", algo, n, count,
                          r, st->n);
                CK_EXPECT(!pipelined || ++per_peer[send][st->peer] <= depth,
                          "%s n=%d count=%zu rank %d: round %zu has over %zu %s peer %d", algo, n, count, r, k, depth,
                          send ? "sends to" : "receives from", st->peer);
                if (send)
                    add_msg(&sends, r, st->peer, st->n);
                else
                    add_msg(&recvs, st->peer, r, st->n);
            }
        }
        gcoll__sched_free(s);
        free(sb);
        free(rb);
    }
    ck_assert_msg(sends.n == recvs.n, "%s n=%d count=%zu: %zu sends, %zu receives", algo, n, count, sends.n, recvs.n);
    for (int p = 0; p < n; p++)
        for (int q = 0; q < n; q++)
            for (size_t k = 0;; k++) {
                const msg_t *x = nth(&sends, p, q, k), *y = nth(&recvs, p, q, k);
                CK_EXPECT(!x == !y, "%s n=%d count=%zu: message %zu from %d to %d is %s", algo, n, count, k, p, q,
                          x ? "never received" : "received, never sent");
                if (!x)
                    break;
                CK_EXPECT(x->bytes == y->bytes,
                          "%s n=%d count=%zu: message %zu from %d to %d: %zu bytes sent, "
                          "%zu expected",
                          algo, n, count, k, p, q, x->bytes, y->bytes);
            }
    free(sends.m);
    free(recvs.m);
}

/* The algorithms that cut their blocks into slices, at most the pipeline's depth a round (the
 * vector collectives' streaming rings send a piece of every block in flight a round). */
static int is_pipelined(int coll, const char *name)
{
    return strcmp(name, "chain") == 0 ||
        (strcmp(name, "ring") == 0 && coll != GCOLL_COLL_ALLTOALL && coll != GCOLL_COLL_ALLGATHERV &&
         coll != GCOLL_COLL_REDUCE_SCATTERV);
}

START_TEST(schedules_match_at_any_rank_count)
{
    /* every plain algorithm that needs no node channel or node map (Adasum's below), at 1..17
     * ranks, counts below and above the rank count, in place and not, with a moving root; _i
     * picks fine slices (1 or 3 a round) or the defaults */
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    if (_i < 2) {
        gcoll__config.chunk_bytes = 4096;
        gcoll__config.pipeline_depth = _i ? 3 : 1;
    }
    for (int i = 0; gcoll__algo_get(i); i++) {
        const gcoll__algo_t *al = gcoll__algo_get(i);
        if (al->usable || al->family != GCOLL_FAMILY_PLAIN)
            continue;
        for (int n = 1; n <= 17; n++) {
            size_t counts[] = {1, (size_t)n - 1, (size_t)n + 1, 700, 5001};
            for (size_t c = 0; c < 5; c++)
                if (counts[c])
                    check_algo(al->coll, al->name, n, counts[c], (int)(((size_t)n / 2 + c) % (size_t)n), (int)(c % 2),
                               is_pipelined(al->coll, al->name));
        }
    }
}
END_TEST

START_TEST(ring_slices_its_blocks)
{
    /* 3 ranks, 10000 floats: blocks of 3334/3333/3333 elements go as 4 slices of at most 1024
     * elements, 3 a round; each reduction follows the receive it reduces */
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    gcoll__config.chunk_bytes = 4096;
    gcoll__config.pipeline_depth = 3;
    // cppcheck-suppress unassignedVariable ; the schedule only takes their addresses
    static float in[10000], out[10000];
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLREDUCE,
                            .sendbuf = in,
                            .recvbuf = out,
                            .count = 10000,
                            .dtype = GCOLL_FLOAT32,
                            .op = GCOLL_SUM,
                            .rank = 1,
                            .size = 3,
                            .esize = 4};
    gcoll__sched_t *s = gcoll__sched_new(a.dtype, a.op, 3, NULL);
    gcoll__allreduce_ring(s, &a);
    ck_assert_uint_eq(s->nrounds, 8); /* 4 steps x 2 rounds */
    size_t sent = 0, reduces = 0;
    for (size_t i = 0; i < s->nsteps; i++) {
        const gcoll__step_t *st = &s->steps[i];
        if (st->kind == GCOLL_STEP_SEND)
            sent += st->n;
        if (st->kind == GCOLL_STEP_REDUCE) {
            reduces++;
            ck_assert(i > 0 && s->steps[i - 1].kind == GCOLL_STEP_RECV && s->steps[i - 1].dst == st->a &&
                      s->steps[i - 1].n == st->n * 4);
        }
    }
    ck_assert_uint_eq(reduces, 8);
    /* blocks 0 and 2 in the reduce-scatter, 1 and 0 in the allgather */
    ck_assert_uint_eq(sent, (3334 + 3333 + 3333 + 3334) * 4);
    gcoll__sched_free(s);
}
END_TEST

START_TEST(adasum_halving_matches_and_moves_a_rabenseifner_volume)
{
    /* Adasum's halving at 1..17 ranks: messages pair up between each two ranks, and each rank
     * sends what Rabenseifner's allreduce sends, 2(P-1)/P of the vector (a whole vector more to
     * and from a folded rank), plus log2 P (log2 P + 1) / 2 messages of 3 doubles per tensor */
    size_t tcs[3] = {1000, 0, 2345}, nt = 3, count = 3345, es = 4, part = 3 * nt * sizeof(double);
    // cppcheck-suppress unassignedVariable ; the schedule only takes their addresses
    static float sb[3345], rb[3345];
    for (int n = 1; n <= 17; n++) {
        int P = 1, lg = 0;
        while (P * 2 <= n)
            P *= 2, lg++;
        msgs_t sends = {0}, recvs = {0};
        for (int r = 0; r < n; r++) {
            gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLREDUCE,
                                    .sendbuf = sb,
                                    .recvbuf = rb,
                                    .count = count,
                                    .dtype = GCOLL_FLOAT32,
                                    .op = GCOLL_ADASUM,
                                    .rank = r,
                                    .size = n,
                                    .esize = es};
            gcoll__sched_t *s = gcoll__sched_new(a.dtype, GCOLL_SUM, (unsigned)n, NULL);
            const char *algo;
            ck_assert_int_eq(gcoll__adasum_build(s, &a, tcs, nt, "halving", &algo), GCOLL_SUCCESS);
            ck_assert_str_eq(algo, "adasum/halving");
            size_t data = 0, parts = 0;
            for (size_t i = 0; i < s->nsteps; i++) {
                const gcoll__step_t *st = &s->steps[i];
                if (st->kind == GCOLL_STEP_SEND) {
                    add_msg(&sends, r, st->peer, st->n);
                    if (st->n == part && st->a != sb && st->a != rb) /* the partial sums live in scratch */
                        parts++;
                    else
                        data += st->n;
                } else if (st->kind == GCOLL_STEP_RECV) {
                    add_msg(&recvs, st->peer, r, st->n);
                }
            }
            size_t whole = count * es,
                   want = r >= P ? whole : 2 * whole - 2 * whole / (size_t)P + (r < n - P ? whole : 0);
            /* P near-equal ranges: the first count % P hold one element more */
            ck_assert_msg(data + 2 * (size_t)P * es >= want && data <= want + 2 * (size_t)P * es,
                          "n=%d rank %d sends %zu bytes of data, a Rabenseifner allreduce %zu", n, r, data, want);
            ck_assert_msg(parts == (r >= P ? 0 : (size_t)(lg * (lg + 1) / 2)), "n=%d rank %d: %zu partial messages", n,
                          r, parts);
            gcoll__sched_free(s);
        }
        ck_assert_uint_eq(sends.n, recvs.n);
        for (int p = 0; p < n; p++)
            for (int q = 0; q < n; q++)
                for (size_t k = 0;; k++) {
                    const msg_t *x = nth(&sends, p, q, k), *y = nth(&recvs, p, q, k);
                    CK_EXPECT(!x == !y, "adasum n=%d: message %zu from %d to %d unmatched", n, k, p, q);
                    if (!x)
                        break;
                    CK_EXPECT(x->bytes == y->bytes, "adasum n=%d: message %zu from %d to %d: %zu vs %zu bytes", n, k, p,
                              q, x->bytes, y->bytes);
                }
        free(sends.m);
        free(recvs.m);
    }
}
END_TEST

Suite *sched_suite(void)
{
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("sched");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, local_steps_run_as_soon_as_the_steps_before_them);
    tcase_add_test(tc, a_reduction_overlaps_later_receives);
    tcase_add_test(tc, higher_priority_sends_take_the_budget_first);
    tcase_add_test(tc, a_crowd_of_single_slices_leaves_the_budget_to_a_higher_priority);
    tcase_add_test(tc, a_kept_schedule_runs_again_after_rewind);
    tcase_add_loop_test(tc, schedules_match_at_any_rank_count, 0, 3);
    tcase_add_test(tc, ring_slices_its_blocks);
    tcase_add_test(tc, adasum_halving_matches_and_moves_a_rabenseifner_volume);
    suite_add_tcase(s, tc);
    return s;
}
