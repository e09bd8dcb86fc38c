/* Pipelined chain reduce: ranks root-1, root-2, ..., root+1, root form a chain; partial sums
 * move down it in slices of GCOLL_CHUNK_BYTES, each reduced as it lands and forwarded the next
 * round. Cost: n-1 + S/slice steps of one slice, each rank sending the vector once (the least any
 * reduce moves): for large vectors on slow links. GCOLL_AVG divides once, at the root. */
#include "collectives/algo.h"

void gcoll__reduce_chain(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, vr = gcoll__mod(a->rank - a->root, n);
    int from = (a->rank + 1) % n, to = gcoll__mod(a->rank - 1, n);
    size_t es = a->esize, cnt = a->count, groups = gcoll__pipe_groups(cnt, es);
    char *rb = a->recvbuf;
    const char *src = vr == 0 ? gcoll__input(a) : a->sendbuf;
    if (gcoll__alone(s, a))
        return;
    if (vr == n - 1) { /* the chain's start: our contribution is all we send */
        gcoll__pipe(s, to, src, cnt, from, NULL, 0, NULL, NULL, es);
        return;
    }
    /* partial sums land in acc and are reduced there with our contribution; at the root in
     * place they would land on it, so they land beside it */
    char *acc = vr == 0 ? rb : gcoll__sched_scratch(s, cnt * es);
    char *in = acc == src ? gcoll__sched_scratch(s, cnt * es) : acc;
    size_t sn = vr > 0 ? cnt : 0, lag = vr > 0; /* round g forwards what round g-1 reduced */
    for (size_t g = 0; g < groups + lag; g++)
        gcoll__pipe_round(s, to, acc, g >= lag ? sn : 0, g >= lag ? g - lag : 0, from, in, cnt, g, acc, src, es);
    if (vr == 0)
        gcoll__sched_avg(s, rb, cnt);
}
