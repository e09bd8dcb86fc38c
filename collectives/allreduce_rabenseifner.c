/* Rabenseifner's allreduce, any rank count: a reduce-scatter by recursive halving and an
 * allgather by recursive doubling among P ranks, P the largest power of two <= n; the first
 * 2(n-P) ranks pair up first and the even one hands its vector to the odd one (and gets the
 * result back at the end). Cost: 2 log2(P) steps (+2 when n is not a power of two), each rank
 * sending 2(P-1)/P of the vector: a ring's volume in far fewer steps, for medium and large
 * vectors. Halving starts at distance 1, so with ranks numbered host by host the largest halves
 * stay inside a host and the network carries the smaller ones. Every block is reduced at one
 * rank and then copied everywhere, so all ranks end with the same bits. */
#include "halving.h"

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
