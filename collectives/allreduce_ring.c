/* Ring allreduce: a ring reduce-scatter followed by a ring allgather, pipelined.
 * Cost: 2(n-1) steps; each rank sends and receives 2(n-1)/n of the vector, the bandwidth
 * optimum; latency grows with n, so small vectors go to recursive doubling. In every step the
 * block travels as slices of GCOLL_CHUNK_BYTES, up to GCOLL_PIPELINE_DEPTH of them per round; in
 * the reduce-scatter each slice is reduced as soon as it lands while the next ones are still on
 * the wire: only the last slice's reduction of a round is not hidden. Block b is reduced once,
 * along the ring to its owner b, and then copied to every rank, so all ranks get the same bits.
 * GCOLL_AVG divides each reduced block once, at its owner, before the allgather. */
#include "algo.h"

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
