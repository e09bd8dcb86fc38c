/* Scatter-allgather broadcast (van de Geijn), any rank count: the root scatters the vector in n
 * blocks down a binomial tree (each rank receives the blocks of its subtree once), then a ring
 * allgather completes every rank. Cost: log2(n) + n-1 steps; about 2(n-1)/n of the vector per
 * rank, where a binomial tree sends the whole vector log2(n) times: for large vectors. */
#include "collectives/algo.h"

void gcoll__bcast_scatter_allgather(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, root = a->root, vr = gcoll__mod(a->rank - root, n);
    size_t es = a->esize, cnt = a->count;
    char *buf = a->recvbuf;
    if (n == 1)
        return;
#define REAL(v) (((v) + root) % n)
#define OFF(v) (gcoll__blk_off(cnt, n, (v)) * es)
    int top = 1; /* the span of our subtree: the lowest set bit of vr (the root: all of it) */
    while (top < n && !(vr & top))
        top <<= 1;
    if (vr) {
        int end = vr + top < n ? vr + top : n;
        gcoll__sched_round(s);
        if (OFF(end) > OFF(vr))
            gcoll__sched_recv(s, REAL(vr - top), buf + OFF(vr), OFF(end) - OFF(vr));
    }
    gcoll__sched_round(s);
    for (int mask = top >> 1; mask >= 1; mask >>= 1) {
        int child = vr + mask, end = child + mask < n ? child + mask : n;
        if (child < n && OFF(end) > OFF(child))
            gcoll__sched_send(s, REAL(child), buf + OFF(child), OFF(end) - OFF(child));
    }
    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(vr - step, n), rbk = gcoll__mod(vr - step - 1, n);
        gcoll__sched_round(s);
        if (OFF(sb + 1) > OFF(sb))
            gcoll__sched_send(s, REAL(vr + 1), buf + OFF(sb), OFF(sb + 1) - OFF(sb));
        if (OFF(rbk + 1) > OFF(rbk))
            gcoll__sched_recv(s, REAL(vr + n - 1), buf + OFF(rbk), OFF(rbk + 1) - OFF(rbk));
    }
#undef REAL
#undef OFF
}
