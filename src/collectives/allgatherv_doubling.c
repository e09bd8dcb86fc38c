/* Recursive-doubling allgatherv, any rank count, uneven blocks: allgather_doubling.c's steps over
 * the blocks packed back to back in rank order (each vrank's range is the blocks of the ranks it
 * stands for). It works in recvbuf where the displacements pack the blocks, else in scratch that
 * is copied out at the end. Cost: log2(P) steps (+2 off powers of two), the total less one's own
 * range received per rank: for small totals, where the ring's n - 1 steps cost. */
#include "collectives/halving.h"

void gcoll__allgatherv_doubling(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, total = a->total;
    const size_t *counts = a->counts, *displs = a->displs;
    char *rb = a->recvbuf;
    const char *mine = a->sendbuf == a->recvbuf ? rb + displs[r] * es : a->sendbuf;
    if (n == 1) {
        gcoll__sched_copy(s, rb + displs[r] * es, mine, counts[r] * es);
        return;
    }
    size_t *pre = gcoll__prefix(s, counts, n);
    if (!pre)
        return;
    int packed = 1;
    for (int q = 0; q < n; q++)
        packed &= displs[q] == pre[q] || counts[q] == 0;
    char *work = packed ? rb : gcoll__sched_scratch(s, total * es);
    if (!work || total == 0)
        return;
    gcoll__sched_round(s);
    gcoll__sched_copy(s, work + pre[r] * es, mine, counts[r] * es);
    gcoll__halving_t h;
    gcoll__halving_init(&h, n, r, total, 0);
    h.pre = pre;
    if (h.vr < 0) { /* folded out: hands its block to its odd partner, which hands back the whole */
        gcoll__sched_round(s);
        if (counts[r])
            gcoll__sched_send(s, r + 1, mine, counts[r] * es);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r + 1, work, total * es);
    } else {
        if (r < 2 * h.rem && counts[r - 1])
            gcoll__sched_recv(s, r - 1, work + pre[r - 1] * es, counts[r - 1] * es);
        h.lo = h.vr;
        h.hi = h.vr + 1;
        gcoll__doubling_gather(s, &h, work, es, 0);
        if (r < 2 * h.rem) {
            gcoll__sched_round(s);
            gcoll__sched_send(s, r - 1, work, total * es);
        }
    }
    if (work != rb) {
        gcoll__sched_round(s);
        for (int q = 0; q < n; q++)
            if (q != r || a->sendbuf != a->recvbuf)
                gcoll__sched_copy(s, rb + displs[q] * es, work + pre[q] * es, counts[q] * es);
    }
}
