/* Direct allreduce for tiny vectors: in one round every rank sends its vector to every other,
 * then reduces the n contributions in rank order, so every rank computes the same bits. Cost:
 * 1 step, n-1 messages of the whole vector each way per rank: the fewest steps, the most bytes;
 * it wins only while a message costs its latency and nothing more. */
#include "collectives/algo.h"

void gcoll__allreduce_direct(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t cnt = a->count, bytes = cnt * a->esize;
    char *rb = a->recvbuf;
    const char *src = gcoll__input(a);
    if (gcoll__alone(s, a))
        return;
    char *all = gcoll__sched_scratch(s, bytes * (size_t)n); /* contribution p at p * bytes */
    if (!all)
        return;
    gcoll__sched_round(s);
    gcoll__sched_copy(s, all + (size_t)r * bytes, src, bytes); /* before the output is written */
    for (int p = 0; p < n; p++)
        if (p != r)
            gcoll__sched_recv(s, p, all + (size_t)p * bytes, bytes);
    for (int k = 1; k < n; k++) /* start with the next rank, so that not all send to rank 0 first */
        gcoll__sched_send(s, (r + k) % n, src, bytes);
    gcoll__sched_reduce(s, rb, all, all + bytes, cnt);
    for (int p = 2; p < n; p++)
        gcoll__sched_reduce(s, rb, rb, all + (size_t)p * bytes, cnt);
    gcoll__sched_avg(s, rb, cnt);
}
