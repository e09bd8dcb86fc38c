/* Ring allreduce: a ring reduce-scatter then a ring allgather, blocks in slices of
 * GCOLL_CHUNK_BYTES reduced as they land. Cost: 2(n-1) steps, 2(n-1)/n of the vector sent and
 * received per rank (the bandwidth optimum). Each block is reduced (and divided, for GCOLL_AVG)
 * once, at its owner, and copied everywhere, so all ranks get the same bits. */
#include "collectives/algo.h"

void gcoll__allreduce_ring(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, right = (r + 1) % n, left = gcoll__mod(r - 1, n);
    size_t es = a->esize, cnt = a->count;
    char *rb = a->recvbuf;
    const char *src = gcoll__input(a);
    if (gcoll__alone(s, a))
        return;
    /* In place, a received block cannot land on our own contribution: use a scratch block. */
    char *tmp = src == rb ? gcoll__sched_scratch(s, gcoll__blk_cnt(cnt, n, 0) * es) : NULL;

    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(r - step - 1, n), rbk = gcoll__mod(r - step - 2, n);
        size_t roff = gcoll__blk_off(cnt, n, rbk) * es;
        gcoll__pipe(s, right, (step == 0 ? src : rb) + gcoll__blk_off(cnt, n, sb) * es, gcoll__blk_cnt(cnt, n, sb),
                    left, tmp ? tmp : rb + roff, gcoll__blk_cnt(cnt, n, rbk), rb + roff, src + roff, es);
    }
    gcoll__sched_avg(s, rb + gcoll__blk_off(cnt, n, r) * es, gcoll__blk_cnt(cnt, n, r));
    gcoll__sched_wire_round(s, rb + gcoll__blk_off(cnt, n, r) * es, gcoll__blk_cnt(cnt, n, r));

    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(r - step, n), rbk = gcoll__mod(r - step - 1, n);
        gcoll__pipe(s, right, rb + gcoll__blk_off(cnt, n, sb) * es, gcoll__blk_cnt(cnt, n, sb), left,
                    rb + gcoll__blk_off(cnt, n, rbk) * es, gcoll__blk_cnt(cnt, n, rbk), NULL, NULL, es);
    }
}
