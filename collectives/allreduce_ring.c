/* Ring allreduce: a ring reduce-scatter followed by a ring allgather.
 * Cost: 2(n-1) steps; each rank sends and receives 2(n-1)/n of the vector, the bandwidth
 * optimum; latency grows with n, so small vectors go to recursive doubling. GCOLL_AVG divides
 * each reduced block once, at its owner, before the allgather. */
#include "algo.h"

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
        size_t sn = gcoll__blk_cnt(cnt, n, sb), rn = gcoll__blk_cnt(cnt, n, rbk);
        char *rdst = rb + gcoll__blk_off(cnt, n, rbk) * es;
        gcoll__sched_round(s);
        if (sn)
            gcoll__sched_send(s, right, (step == 0 ? src : rb) + gcoll__blk_off(cnt, n, sb) * es, sn * es);
        if (rn) {
            gcoll__sched_recv(s, left, inplace ? tmp : rdst, rn * es);
            gcoll__sched_reduce(s, rdst, inplace ? tmp : rdst, src + gcoll__blk_off(cnt, n, rbk) * es, rn);
        }
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
