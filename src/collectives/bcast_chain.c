/* Pipelined chain broadcast: the root sends the vector in slices of GCOLL_CHUNK_BYTES to the
 * next rank, and each rank forwards the slices it got in one round while the next ones arrive
 * (up to GCOLL_PIPELINE_DEPTH slices per round). Cost: n-1 + S/slice steps of one slice, the
 * whole vector once per rank: every link busy at once, for large vectors on slow links. */
#include "collectives/algo.h"

void gcoll__bcast_chain(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, vr = gcoll__mod(a->rank - a->root, n);
    int prev = gcoll__mod(a->rank - 1, n), next = (a->rank + 1) % n;
    size_t es = a->esize, cnt = a->count, groups = gcoll__pipe_groups(cnt, es);
    if (n == 1)
        return;
    /* round g: receive group g, forward group g-1 (the root sends group g) */
    size_t rn = vr > 0 ? cnt : 0, sn = vr < n - 1 ? cnt : 0, lag = vr > 0 && vr < n - 1;
    for (size_t g = 0; g < groups + lag; g++)
        gcoll__pipe_round(s, next, a->recvbuf, g >= lag ? sn : 0, g >= lag ? g - lag : 0, prev, a->recvbuf, rn, g, NULL,
                          NULL, es);
}
