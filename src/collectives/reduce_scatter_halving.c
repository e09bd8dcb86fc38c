/* Recursive-halving reduce-scatter, any rank count: after the fold (each even rank of the first
 * 2(n-P) hands its vector to the odd one above it), P ranks halve the vector log2(P) times from
 * distance P/2 down, vrank v ending with the blocks of the ranks it stands for; an odd rank then hands its even
 * partner its block. Cost: log2(P) steps (+2 off powers of two), (P-1)/P of the vector sent per
 * rank: the ring's volume in log steps, for small and medium vectors. */
#include "collectives/halving.h"

void gcoll__reduce_scatter_halving(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, rc = a->count, total = rc * (size_t)n;
    char *rb = a->recvbuf;
    const char *src = a->sendbuf == a->recvbuf ? rb : a->sendbuf;
    if (n == 1) {
        gcoll__sched_copy(s, rb, src, rc * es);
        return;
    }
    gcoll__halving_t h;
    gcoll__halving_init(&h, n, r, total, rc);
    char *work = gcoll__sched_scratch(s, total * es), *tmp = gcoll__sched_scratch(s, total * es);
    if (h.vr < 0) { /* folded out: the odd partner reduces our blocks and returns ours */
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + 1, src, total * es);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r + 1, rb, rc * es);
        gcoll__sched_avg(s, rb, rc);
        return;
    }
    gcoll__halving_fold_reduce(s, &h, r, src, work, tmp, es, 1);
    gcoll__sched_round(s);
    if (r < 2 * h.rem)
        gcoll__sched_send(s, r - 1, work + (size_t)(r - 1) * rc * es, rc * es);
    gcoll__sched_copy(s, rb, work + (size_t)r * rc * es, rc * es);
    gcoll__sched_avg(s, rb, rc);
}
