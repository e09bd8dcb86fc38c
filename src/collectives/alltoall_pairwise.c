/* Pairwise-exchange alltoall: at step k each rank sends to rank+k and receives from rank-k.
 * Cost: n-1 steps, (n-1)/n of the buffer sent and received per rank. In place, the input is
 * first copied to scratch, since blocks still to be sent would be overwritten. */
#include "collectives/algo.h"

void gcoll__alltoall_pairwise(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t bytes = a->count * a->esize;
    char *rb = a->recvbuf;
    const char *src = a->sendbuf;
    gcoll__sched_round(s);
    if (a->sendbuf == a->recvbuf) {
        char *copy = gcoll__sched_scratch(s, bytes * (size_t)n);
        gcoll__sched_copy(s, copy, rb, bytes * (size_t)n);
        src = copy;
    } else {
        gcoll__sched_copy(s, rb + (size_t)r * bytes, src + (size_t)r * bytes, bytes);
    }
    for (int k = 1; k < n; k++) {
        int to = (r + k) % n, from = gcoll__mod(r - k, n);
        gcoll__sched_round(s);
        gcoll__sched_send(s, to, src + (size_t)to * bytes, bytes);
        gcoll__sched_recv(s, from, rb + (size_t)from * bytes, bytes);
    }
}
