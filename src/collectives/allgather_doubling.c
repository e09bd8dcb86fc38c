/* Recursive-doubling allgather, any rank count: each even rank of the first 2(n-P) hands its
 * block to the odd one above it, P ranks double what they hold log2(P) times (distance 1 first),
 * and each odd rank hands the whole vector back. Cost: log2(P) steps (+2 off powers of two),
 * (P-1)/P of the vector received per rank: for small blocks, where the ring's n-1 steps cost. */
#include "collectives/halving.h"

void gcoll__allgather_doubling(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, bc = a->count, bytes = bc * es, total = bytes * (size_t)n;
    char *rb = a->recvbuf, *mine = rb + (size_t)r * bytes;
    gcoll__sched_round(s);
    if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, mine, a->sendbuf, bytes);
    if (n == 1)
        return;
    gcoll__halving_t h;
    gcoll__halving_init(&h, n, r, bc * (size_t)n, bc);
    if (h.vr < 0) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + 1, mine, bytes);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r + 1, rb, total);
        return;
    }
    if (r < 2 * h.rem)
        gcoll__sched_recv(s, r - 1, rb + (size_t)(r - 1) * bytes, bytes);
    h.lo = h.vr;
    h.hi = h.vr + 1;
    gcoll__doubling_gather(s, &h, rb, es, 0);
    if (r < 2 * h.rem) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, r - 1, rb, total);
    }
}
