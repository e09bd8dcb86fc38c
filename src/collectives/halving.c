/* The recursive halving and doubling steps shared by the algorithms of halving.h: the fold of
 * the first 2(n-P) ranks, the vrank numbering, the ranges, and the halving and doubling rounds. */
#include "collectives/halving.h"

void gcoll__halving_init(gcoll__halving_t *h, int n, int rank, size_t cnt, size_t per)
{
    h->P = 1;
    while (h->P * 2 <= n)
        h->P *= 2;
    h->rem = n - h->P;
    h->vr = rank < 2 * h->rem ? (rank % 2 ? rank / 2 : -1) : rank - h->rem;
    h->lo = 0;
    h->hi = h->P;
    h->cnt = cnt;
    h->per = per;
    h->pre = NULL;
}

int gcoll__halving_rank(const gcoll__halving_t *h, int v)
{
    return v < h->rem ? v * 2 + 1 : v + h->rem;
}

size_t gcoll__halving_off(const gcoll__halving_t *h, int i)
{
    if (!h->per && !h->pre)
        return gcoll__blk_off(h->cnt, h->P, i);
    int first = i < h->rem ? 2 * i : i + h->rem; /* the first block of vrank i */
    return h->pre ? h->pre[first] : (size_t)first * h->per;
}

/* The halving proper: the first step reads cur, later ones work. */
static void halving_reduce(gcoll__sched_t *s, gcoll__halving_t *h, const char *cur, char *work, char *tmp, size_t es,
                           int from_top)
{
    for (int mask = from_top ? h->P / 2 : 1; mask >= 1 && mask < h->P; mask = from_top ? mask >> 1 : mask << 1) {
        int vp = h->vr ^ mask, peer = gcoll__halving_rank(h, vp), mid = (h->lo + h->hi) / 2, low = h->vr < vp;
        int klo = low ? h->lo : mid, khi = low ? mid : h->hi, slo = low ? mid : h->lo, shi = low ? h->hi : mid;
        size_t ko = gcoll__halving_off(h, klo), kn = gcoll__halving_off(h, khi) - ko;
        size_t so = gcoll__halving_off(h, slo), sn = gcoll__halving_off(h, shi) - so;
        gcoll__sched_round(s);
        if (kn) {
            gcoll__sched_recv(s, peer, tmp + ko * es, kn * es);
            gcoll__sched_reduce(s, work + ko * es, cur + ko * es, tmp + ko * es, kn);
        }
        if (sn)
            gcoll__sched_send(s, peer, cur + so * es, sn * es);
        cur = work;
        h->lo = klo;
        h->hi = khi;
    }
}

void gcoll__halving_fold_reduce(gcoll__sched_t *s, gcoll__halving_t *h, int rank, const char *src, char *work,
                                char *tmp, size_t es, int from_top)
{
    if (rank < 2 * h->rem) {
        gcoll__sched_round(s);
        gcoll__sched_recv(s, rank - 1, tmp, h->cnt * es);
        gcoll__sched_reduce(s, work, src, tmp, h->cnt);
        src = work;
    }
    halving_reduce(s, h, src, work, tmp, es, from_top);
}

void gcoll__doubling_gather(gcoll__sched_t *s, gcoll__halving_t *h, char *work, size_t es, int after_halving)
{
    /* after the halving, partners at distance P/2 hold adjacent ranges; from vrank order, those
     * at distance 1 do */
    for (int mask = after_halving ? h->P / 2 : 1; mask >= 1 && mask < h->P;
         mask = after_halving ? mask >> 1 : mask << 1) {
        int vp = h->vr ^ mask, peer = gcoll__halving_rank(h, vp), w = h->hi - h->lo, low = h->vr < vp;
        int plo = low ? h->hi : h->lo - w, phi = low ? h->hi + w : h->lo;
        size_t po = gcoll__halving_off(h, plo), pn = gcoll__halving_off(h, phi) - po;
        size_t oo = gcoll__halving_off(h, h->lo), on = gcoll__halving_off(h, h->hi) - oo;
        gcoll__sched_round(s);
        if (pn)
            gcoll__sched_recv(s, peer, work + po * es, pn * es);
        if (on)
            gcoll__sched_send(s, peer, work + oo * es, on * es);
        h->lo = low ? h->lo : plo;
        h->hi = low ? phi : h->hi;
    }
}

void gcoll__halving_final(const gcoll__halving_t *h, int v, int *lo, int *hi)
{
    *lo = 0;
    *hi = h->P;
    for (int mask = 1; mask < h->P; mask <<= 1) {
        int mid = (*lo + *hi) / 2;
        if (v & mask)
            *lo = mid;
        else
            *hi = mid;
    }
}
