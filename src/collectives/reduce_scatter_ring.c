/* Ring reduce-scatter: at each of n-1 steps a partial block moves one rank right and gains that
 * rank's contribution, so block b completes at rank b. Cost: n-1 steps, (n-1)/n of the input sent
 * and received per rank. Partial blocks travel in two alternating scratch blocks, in slices of
 * GCOLL_CHUNK_BYTES reduced as they land; the last reduction writes the result in place. */
#include "collectives/algo.h"

void gcoll__reduce_scatter_ring(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, right = (r + 1) % n, left = gcoll__mod(r - 1, n);
    size_t es = a->esize, cnt = a->count, bytes = cnt * es;
    char *rb = a->recvbuf;
    const char *src = gcoll__input(a);
    if (gcoll__alone(s, a))
        return;
    char *t[2] = {gcoll__sched_scratch(s, bytes), gcoll__sched_scratch(s, bytes)};
    /* The last reduction writes the output, in place block 0 of the input. Only our own block
     * is still read then, but on two ranks rank 1 is still sending block 0 while it reduces
     * (the reductions overlap the sends): its result waits in scratch until they are done. */
    char *out = n == 2 && r == 1 && src == rb ? t[0] : rb;
    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(r - step - 1, n), rbk = gcoll__mod(r - step - 2, n);
        char *in = t[step % 2];
        gcoll__pipe(s, right, step == 0 ? src + (size_t)sb * bytes : t[(step + 1) % 2], cnt, left, in, cnt,
                    step == n - 2 ? out : in, src + (size_t)rbk * bytes, es);
    }
    gcoll__sched_copy(s, rb, out, bytes); /* listed after the last sends: waits for them */
    gcoll__sched_avg(s, rb, cnt);
}
