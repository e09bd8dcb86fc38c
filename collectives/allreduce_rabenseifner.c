/* Rabenseifner's allreduce, any rank count: a reduce-scatter by recursive halving and an
 * allgather by recursive doubling among P ranks, P the largest power of two <= n; the first
 * 2(n-P) ranks pair up first and the even one hands its vector to the odd one (and gets the
 * result back at the end). Cost: 2 log2(P) steps (+2 when n is not a power of two), each rank
 * sending 2(P-1)/P of the vector: a ring's volume in far fewer steps, for medium and large
 * vectors. Halving starts at distance 1, so with ranks numbered host by host the largest halves
 * stay inside a host and the network carries the smaller ones. Every block is reduced at one
 * rank and then copied everywhere, so all ranks end with the same bits. */
#include "algo.h"

void gcoll__allreduce_rabenseifner(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, cnt = a->count, bytes = cnt * es;
    char *rb = a->recvbuf;
    const char *src = a->sendbuf == a->recvbuf ? rb : a->sendbuf;
    if (n == 1) {
        gcoll__sched_copy(s, rb, src, bytes);
        return;
    }
    int P = 1;
    while (P * 2 <= n)
        P *= 2;
    int rem = n - P, vr;
    char *tmp = gcoll__sched_scratch(s, bytes);
    if (r < 2 * rem && r % 2 == 0) { /* folded out */
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + 1, src, bytes);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r + 1, rb, bytes);
        return;
    }
    const char *cur = src; /* the first halving reads the input, later ones the output */
    if (r < 2 * rem) {
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r - 1, tmp, bytes);
        gcoll__sched_reduce(s, rb, src, tmp, cnt);
        cur = rb;
        vr = r / 2;
    } else {
        vr = r - rem;
    }
    /* [lo, hi): the blocks (of P) this rank still reduces; the lower rank of a pair keeps the
     * lower half */
    int lo = 0, hi = P;
    for (int mask = 1; mask < P; mask <<= 1) {
        int vp = vr ^ mask, peer = vp < rem ? vp * 2 + 1 : vp + rem, mid = (lo + hi) / 2;
        int klo = vr < vp ? lo : mid, khi = vr < vp ? mid : hi, slo = vr < vp ? mid : lo, shi = vr < vp ? hi : mid;
        size_t ko = gcoll__blk_off(cnt, P, klo), kn = gcoll__blk_off(cnt, P, khi) - ko;
        size_t so = gcoll__blk_off(cnt, P, slo), sn = gcoll__blk_off(cnt, P, shi) - so;
        gcoll__sched_round(s);
        if (kn) {
            gcoll__sched_recv(s, peer, tmp + ko * es, kn * es);
            gcoll__sched_reduce(s, rb + ko * es, cur + ko * es, tmp + ko * es, kn);
        }
        if (sn)
            gcoll__sched_send(s, peer, cur + so * es, sn * es);
        cur = rb;
        lo = klo;
        hi = khi;
    }
    size_t mo = gcoll__blk_off(cnt, P, lo);
    gcoll__sched_avg(s, rb + mo * es, gcoll__blk_off(cnt, P, hi) - mo);
    for (int mask = P / 2; mask >= 1; mask >>= 1) {
        int vp = vr ^ mask, peer = vp < rem ? vp * 2 + 1 : vp + rem, w = hi - lo;
        int plo = vr < vp ? hi : lo - w, phi = vr < vp ? hi + w : lo;
        size_t po = gcoll__blk_off(cnt, P, plo), pn = gcoll__blk_off(cnt, P, phi) - po;
        size_t oo = gcoll__blk_off(cnt, P, lo), on = gcoll__blk_off(cnt, P, hi) - oo;
        gcoll__sched_round(s);
        if (pn)
            gcoll__sched_recv(s, peer, rb + po * es, pn * es);
        if (on)
            gcoll__sched_send(s, peer, rb + oo * es, on * es);
        lo = vr < vp ? lo : plo;
        hi = vr < vp ? phi : hi;
    }
    if (r < 2 * rem) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, r - 1, rb, bytes);
    }
}
