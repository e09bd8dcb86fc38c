/* Recursive-doubling allreduce, any rank count. With P the largest power of two <= n, the
 * first 2(n-P) ranks pair up and the even one hands its vector to the odd one; the P
 * remaining ranks exchange whole vectors at distances 1, 2, 4, ...; the odd ranks hand the
 * result back. Cost: log2(P) steps (+2 when n is not a power of two), each moving the whole
 * vector: the latency optimum, for small vectors. */
#include "collectives/algo.h"

void gcoll__allreduce_rd(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t cnt = a->count, bytes = cnt * a->esize;
    char *rb = a->recvbuf;
    const char *cur = a->sendbuf == a->recvbuf ? rb : a->sendbuf;
    int pof2 = 1;
    while (pof2 * 2 <= n)
        pof2 *= 2;
    int rem = n - pof2, vrank;
    char *tmp = n > 1 ? gcoll__sched_scratch(s, bytes) : NULL;

    if (r < 2 * rem && r % 2 == 0) { /* folded out: give our vector, get the result back */
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + 1, cur, bytes);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r + 1, rb, bytes);
        return;
    }
    if (r < 2 * rem) {
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r - 1, tmp, bytes);
        gcoll__sched_reduce(s, rb, cur, tmp, cnt);
        cur = rb;
        vrank = r / 2;
    } else {
        vrank = r - rem;
    }
    for (int mask = 1; mask < pof2; mask <<= 1) {
        int vpeer = vrank ^ mask, peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
        gcoll__sched_round(s);
        gcoll__sched_send(s, peer, cur, bytes);
        gcoll__sched_recv(s, peer, tmp, bytes);
        gcoll__sched_reduce(s, rb, cur, tmp, cnt);
        cur = rb;
    }
    gcoll__sched_round(s);
    gcoll__sched_copy(s, rb, cur, bytes);
    gcoll__sched_avg(s, rb, cnt);
    if (r < 2 * rem) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, r - 1, rb, bytes);
    }
}
