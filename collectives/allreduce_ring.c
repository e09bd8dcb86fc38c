/* Ring allreduce: a ring reduce-scatter followed by a ring allgather, pipelined.
 * Cost: 2(n-1) steps; each rank sends and receives 2(n-1)/n of the vector, the bandwidth
 * optimum; latency grows with n, so small vectors go to recursive doubling. In each
 * reduce-scatter step the block travels as slices of GCOLL_CHUNK_BYTES, up to
 * GCOLL_PIPELINE_DEPTH of them per round, and each slice is reduced as soon as it lands while the
 * next ones are still on the wire: only the last slice's reduction of a round is not hidden.
 * GCOLL_AVG divides each reduced block once, at its owner, before the allgather. */
#include "../src/config.h"
#include "algo.h"

/* One reduce-scatter step: send block sb (from sbuf) to right, receive block rbk from left into
 * rdst (or tmp, in place) and reduce it with the own contribution at own. */
static void rs_step(gcoll__sched_t *s, int right, int left, const char *sbuf, size_t sn, char *rdst,
                    char *tmp, const char *own, size_t rn, size_t es)
{
    size_t most = sn > rn ? sn : rn;
    size_t slice = gcoll__config.chunk_bytes >= es ? gcoll__config.chunk_bytes / es : most; /* 0: not loaded */
    size_t depth = gcoll__config.pipeline_depth > 0 ? (size_t)gcoll__config.pipeline_depth : 1;
    slice = slice ? slice : 1;
    for (size_t first = 0; first == 0 || first < most; first += slice * depth) {
        gcoll__sched_round(s);
        for (size_t o = first; o < rn && o < first + slice * depth; o += slice) {
            size_t k = rn - o < slice ? rn - o : slice;
            gcoll__sched_recv(s, left, (tmp ? tmp : rdst) + o * es, k * es);
            gcoll__sched_reduce(s, rdst + o * es, (tmp ? tmp : rdst) + o * es, own + o * es, k);
        }
        for (size_t o = first; o < sn && o < first + slice * depth; o += slice)
            gcoll__sched_send(s, right, sbuf + o * es, (sn - o < slice ? sn - o : slice) * es);
    }
}

void gcoll__allreduce_ring(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, right = (r + 1) % n, left = gcoll__mod(r - 1, n);
    size_t es = a->esize, cnt = a->count;
    char *rb = a->recvbuf;
    const char *src = a->sendbuf == a->recvbuf ? rb : a->sendbuf;
    int inplace = src == rb;
    if (n == 1) {
        gcoll__sched_copy(s, rb, src, cnt * es);
        return;
    }
    /* In place, a received block cannot land on our own contribution: use a scratch block. */
    char *tmp = inplace ? gcoll__sched_scratch(s, gcoll__blk_cnt(cnt, n, 0) * es) : NULL;

    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(r - step - 1, n), rbk = gcoll__mod(r - step - 2, n);
        size_t roff = gcoll__blk_off(cnt, n, rbk) * es;
        rs_step(s, right, left, (step == 0 ? src : rb) + gcoll__blk_off(cnt, n, sb) * es, gcoll__blk_cnt(cnt, n, sb),
                rb + roff, tmp, src + roff, gcoll__blk_cnt(cnt, n, rbk), es);
    }
    gcoll__sched_avg(s, rb + gcoll__blk_off(cnt, n, r) * es, gcoll__blk_cnt(cnt, n, r));

    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(r - step, n), rbk = gcoll__mod(r - step - 1, n);
        size_t sn = gcoll__blk_cnt(cnt, n, sb), rn = gcoll__blk_cnt(cnt, n, rbk);
        gcoll__sched_round(s);
        if (sn)
            gcoll__sched_send(s, right, rb + gcoll__blk_off(cnt, n, sb) * es, sn * es);
        if (rn)
            gcoll__sched_recv(s, left, rb + gcoll__blk_off(cnt, n, rbk) * es, rn * es);
    }
}
