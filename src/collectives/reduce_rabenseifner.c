/* Rabenseifner's reduce, any rank count: the recursive-halving reduce-scatter of Rabenseifner's
 * allreduce, then every rank sends the part it reduced straight to the root. Cost: log2(P)
 * steps (+1 off powers of two) plus one gather step; (P-1)/P of the vector sent per rank, and
 * the root receives (P-1)/P of it: against a binomial tree's log2(n) whole vectors, for large
 * vectors. */
#include "collectives/halving.h"

void gcoll__reduce_rabenseifner(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, root = a->root;
    size_t es = a->esize, cnt = a->count, bytes = cnt * es;
    char *rb = a->recvbuf;
    const char *src = a->sendbuf == a->recvbuf && r == root ? rb : a->sendbuf;
    if (n == 1) {
        gcoll__sched_copy(s, rb, src, bytes);
        return;
    }
    gcoll__halving_t h;
    gcoll__halving_init(&h, n, r, cnt, 0);
    char *work = gcoll__sched_scratch(s, bytes), *tmp = gcoll__sched_scratch(s, bytes);
    if (h.vr < 0) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + 1, src, bytes);
    } else {
        gcoll__halving_fold_reduce(s, &h, r, src, work, tmp, es, 0);
    }
    gcoll__sched_round(s);
    if (r != root) {
        size_t o = gcoll__halving_off(&h, h.lo), k = gcoll__halving_off(&h, h.hi) - o;
        if (h.vr >= 0 && k)
            gcoll__sched_send(s, root, work + o * es, k * es);
        return;
    }
    for (int v = 0; v < h.P; v++) { /* the root collects every vrank's part */
        int lo, hi;
        gcoll__halving_final(&h, v, &lo, &hi);
        size_t o = gcoll__halving_off(&h, lo), k = gcoll__halving_off(&h, hi) - o;
        if (!k)
            continue;
        if (v == h.vr)
            gcoll__sched_copy(s, rb + o * es, work + o * es, k * es);
        else
            gcoll__sched_recv(s, gcoll__halving_rank(&h, v), rb + o * es, k * es);
    }
    gcoll__sched_avg(s, rb, cnt);
}
