/* Dissemination barrier: in round k each rank signals rank+2^k and waits for rank-2^k.
 * Cost: ceil(log2 n) rounds of empty messages, any n. */
#include "collectives/algo.h"

void gcoll__barrier_dissemination(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    for (int k = 1; k < n; k <<= 1) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, (r + k) % n, NULL, 0);
        gcoll__sched_recv(s, gcoll__mod(r - k, n), NULL, 0);
    }
}
