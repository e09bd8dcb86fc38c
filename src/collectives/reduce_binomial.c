/* Binomial-tree reduce: each rank reduces its children's vectors into its own, nearest child
 * first, then sends the sum to its parent. Cost: ceil(log2 n) steps, the whole vector per
 * edge. Only the root writes recvbuf; other ranks accumulate in scratch. */
#include "collectives/algo.h"

void gcoll__reduce_binomial(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, root = a->root, vr = gcoll__mod(a->rank - root, n);
    size_t cnt = a->count, bytes = cnt * a->esize;
    int is_root = vr == 0;
    const char *cur = is_root && a->sendbuf == a->recvbuf ? a->recvbuf : a->sendbuf;
    char *acc = is_root ? a->recvbuf : NULL, *tmp = NULL;
    for (int mask = 1; mask < n; mask <<= 1) {
        if (vr & mask) {
            gcoll__sched_round(s);
            gcoll__sched_send(s, gcoll__mod(vr - mask + root, n), cur, bytes);
            return;
        }
        if (vr + mask < n) {
            if (!tmp) {
                tmp = gcoll__sched_scratch(s, bytes);
                if (!acc)
                    acc = gcoll__sched_scratch(s, bytes);
            }
            gcoll__sched_round(s);
            gcoll__sched_recv(s, (vr + mask + root) % n, tmp, bytes);
            gcoll__sched_reduce(s, acc, cur, tmp, cnt);
            cur = acc;
        }
    }
    /* only the root gets here */
    gcoll__sched_round(s);
    gcoll__sched_copy(s, a->recvbuf, cur, bytes);
    gcoll__sched_avg(s, a->recvbuf, cnt);
}
