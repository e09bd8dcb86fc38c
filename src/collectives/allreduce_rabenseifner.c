/* Rabenseifner's allreduce, any rank count: a recursive-halving reduce-scatter and a
 * recursive-doubling allgather among P ranks (the largest power of two <= n), the first 2(n-P)
 * folded in pairs. Cost: 2 log2(P) steps (+2 off powers of two), 2(P-1)/P of the vector per
 * rank. Each block is reduced at one rank and copied, so all ranks get the same bits. */
#include "collectives/halving.h"

void gcoll__allreduce_rabenseifner(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, cnt = a->count, bytes = cnt * es;
    char *rb = a->recvbuf;
    const char *src = gcoll__input(a);
    if (gcoll__alone(s, a))
        return;
    gcoll__halving_t h;
    gcoll__halving_init(&h, n, r, cnt, 0);
    char *tmp = gcoll__sched_scratch(s, bytes);
    if (h.vr < 0) { /* folded out */
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + 1, src, bytes);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r + 1, rb, bytes);
        return;
    }
    gcoll__halving_fold_reduce(s, &h, r, src, rb, tmp, es, 0);
    size_t mo = gcoll__halving_off(&h, h.lo);
    gcoll__sched_avg(s, rb + mo * es, gcoll__halving_off(&h, h.hi) - mo);
    gcoll__sched_wire_round(s, rb + mo * es, gcoll__halving_off(&h, h.hi) - mo);
    gcoll__doubling_gather(s, &h, rb, es, 1);
    if (r < 2 * h.rem) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, r - 1, rb, bytes);
    }
}
