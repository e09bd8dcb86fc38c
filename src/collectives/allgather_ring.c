/* Ring allgather: n-1 steps; each rank forwards to the right the block it received last, as
 * slices of GCOLL_CHUNK_BYTES (up to GCOLL_PIPELINE_DEPTH a round). Cost: n-1 steps, (n-1)/n of
 * the output vector sent and received per rank. */
#include "collectives/algo.h"

void gcoll__allgather_ring(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, right = (r + 1) % n, left = gcoll__mod(r - 1, n);
    size_t es = a->esize, cnt = a->count, bytes = cnt * es;
    char *rb = a->recvbuf;
    int inplace = a->sendbuf == a->recvbuf;
    gcoll__sched_round(s);
    if (!inplace) /* its own round: no message is in flight while it runs */
        gcoll__sched_copy(s, rb + (size_t)r * bytes, a->sendbuf, bytes);
    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(r - step, n), rbk = gcoll__mod(r - step - 1, n);
        gcoll__pipe(s, right, step == 0 && !inplace ? a->sendbuf : rb + (size_t)sb * bytes, cnt, left,
                    rb + (size_t)rbk * bytes, cnt, NULL, NULL, es);
    }
}
