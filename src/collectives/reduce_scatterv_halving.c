/* Recursive-halving reduce_scatterv, any rank count, uneven blocks: reduce_scatter_halving.c's
 * steps with the ranges cut at block boundaries (vrank v's range is the blocks of the ranks it
 * stands for), so each halving step sends the half its partner keeps, however uneven. Cost:
 * log2(P) steps (+2 off powers of two), about the total less the own range sent per rank when
 * the blocks are even: for small and medium vectors. */
#include "collectives/halving.h"

void gcoll__reduce_scatterv_halving(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, total = a->total, mine = a->counts[r];
    char *rb = a->recvbuf;
    const char *src = gcoll__input(a);
    if (total == 0)
        return;
    if (n == 1) {
        gcoll__sched_copy(s, rb, src, mine * es);
        return;
    }
    gcoll__halving_t h;
    gcoll__halving_init(&h, n, r, total, 0);
    h.pre = gcoll__prefix(s, a->counts, n);
    char *work = gcoll__sched_scratch(s, total * es), *tmp = gcoll__sched_scratch(s, total * es);
    if (!h.pre || !work || !tmp)
        return;
    if (h.vr < 0) { /* folded out: the odd partner reduces our blocks and returns ours */
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + 1, src, total * es);
        gcoll__sched_round(s);
        if (mine)
            gcoll__sched_recv(s, r + 1, rb, mine * es);
        gcoll__sched_avg(s, rb, mine);
        return;
    }
    gcoll__halving_fold_reduce(s, &h, r, src, work, tmp, es, 1);
    gcoll__sched_round(s);
    if (r < 2 * h.rem && a->counts[r - 1])
        gcoll__sched_send(s, r - 1, work + h.pre[r - 1] * es, a->counts[r - 1] * es);
    gcoll__sched_copy(s, rb, work + h.pre[r] * es, mine * es);
    gcoll__sched_avg(s, rb, mine);
}
