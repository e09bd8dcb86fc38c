/* Binomial-tree broadcast: each rank receives once from its parent, then sends to its
 * children, farthest first. Cost: ceil(log2 n) steps, the whole vector per edge. */
#include "collectives/algo.h"

void gcoll__bcast_binomial(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, root = a->root, vr = gcoll__mod(a->rank - root, n), mask = 1;
    size_t bytes = a->count * a->esize;
    while (mask < n) {
        if (vr & mask) {
            gcoll__sched_round(s);
            gcoll__sched_recv(s, gcoll__mod(vr - mask + root, n), a->recvbuf, bytes);
            break;
        }
        mask <<= 1;
    }
    gcoll__sched_round(s);
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < n)
            gcoll__sched_send(s, (vr + mask + root) % n, a->recvbuf, bytes);
}
