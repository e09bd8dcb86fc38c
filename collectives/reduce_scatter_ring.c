/* Ring reduce-scatter: n-1 steps; at each a partial block moves one rank to the right and
 * gains that rank's contribution, so block b is complete at rank b after n-1 steps.
 * Cost: n-1 steps, (n-1)/n of the input vector sent and received per rank. Partial blocks
 * travel in two alternating scratch blocks; the last reduction writes the result in place. */
#include "algo.h"

void gcoll__reduce_scatter_ring(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, right = (r + 1) % n, left = gcoll__mod(r - 1, n);
    size_t es = a->esize, cnt = a->count, bytes = cnt * es;
    char *rb = a->recvbuf;
    const char *src = a->sendbuf == a->recvbuf ? rb : a->sendbuf;
    if (n == 1 || cnt == 0) {
        gcoll__sched_copy(s, rb, src, bytes);
        return;
    }
    char *t[2] = {gcoll__sched_scratch(s, bytes), gcoll__sched_scratch(s, bytes)};
    for (int step = 0; step < n - 1; step++) {
        int sb = gcoll__mod(r - step - 1, n), rbk = gcoll__mod(r - step - 2, n);
        char *in = t[step % 2];
        gcoll__sched_round(s);
        gcoll__sched_send(s, right, step == 0 ? src + (size_t)sb * bytes : t[(step + 1) % 2], bytes);
        gcoll__sched_recv(s, left, in, bytes);
        gcoll__sched_reduce(s, step == n - 2 ? rb : in, in, src + (size_t)rbk * bytes, cnt);
    }
    gcoll__sched_avg(s, rb, cnt);
}
