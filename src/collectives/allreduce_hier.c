/* Hierarchical allreduce across hosts: a reduce-scatter inside each host (node channel), the flat
 * allreduce of each block among the ranks that hold it (one per host), then an allgather inside
 * each host. Cost: 2(L-1) intra-host steps plus the flat algorithm on S/L bytes among H ranks.
 * Needs the same rank count on every host; small vectors go through each host's first rank. */
#include "collectives/select.h"

/* Up to this many bytes the vector goes through one rank per host: a few microseconds of
 * latency saved per call there, against the split's parallel flows and reductions above it. */
#define HIER_LEADER_BYTES (16 << 10)

/* The intra-host ring: reduce-scatter (each rank ends with its own block reduced) or allgather.
 * g lists the host's ranks, me is our index in it. */
static void host_ring(gcoll__sched_t *s, const int *g, int L, int me, char *rb, const char *src, char *tmp, size_t cnt,
                      size_t es, int reduce)
{
    int right = g[(me + 1) % L], left = g[gcoll__mod(me - 1, L)];
    for (int step = 0; step < L - 1; step++) {
        int sb = gcoll__mod(me - step - reduce, L), rbk = gcoll__mod(me - step - 1 - reduce, L);
        size_t sn = gcoll__blk_cnt(cnt, L, sb), rn = gcoll__blk_cnt(cnt, L, rbk);
        char *rdst = rb + gcoll__blk_off(cnt, L, rbk) * es;
        gcoll__sched_round(s);
        if (sn)
            gcoll__sched_send(s, right, (reduce && step == 0 ? src : rb) + gcoll__blk_off(cnt, L, sb) * es, sn * es);
        if (!rn)
            continue;
        gcoll__sched_recv(s, left, reduce && tmp ? tmp : rdst, rn * es);
        if (reduce)
            gcoll__sched_reduce(s, rdst, tmp ? tmp : rdst, src + gcoll__blk_off(cnt, L, rbk) * es, rn);
    }
}

int gcoll__hier_usable(const gcoll__coll_args_t *a)
{
    return a->map && a->map->nhosts > 1 && a->map->uniform;
}

/* The flat allreduce of cnt elements at buf among the ranks listed in col, one per host. */
static void across_hosts(gcoll__sched_t *s, const gcoll__coll_args_t *a, int *col, char *buf, size_t cnt)
{
    const gcoll__nodemap_t *m = a->map;
    gcoll__coll_args_t sub = *a;
    sub.sendbuf = sub.recvbuf = buf;
    sub.count = cnt;
    sub.rank = m->host[a->rank];
    sub.size = m->nhosts;
    sub.shm = NULL;
    sub.map = NULL;
    const gcoll__algo_t *flat;
    if (gcoll__algo_select(&sub, NULL, &flat) == GCOLL_SUCCESS) {
        s->peermap = col;
        flat->build(s, &sub);
        s->peermap = NULL;
    }
}

/* A small vector: through the host's first rank (see the top of the file). */
static void through_leader(gcoll__sched_t *s, const gcoll__coll_args_t *a, const int *g, int L, int me, const char *src,
                           char *rb)
{
    const gcoll__nodemap_t *m = a->map;
    size_t bytes = a->count * a->esize;
    if (!bytes)
        return;
    if (me > 0) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, g[0], src, bytes);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, g[0], rb, bytes);
        return;
    }
    char *tmp = L > 1 ? gcoll__sched_scratch(s, (size_t)(L - 1) * bytes) : NULL;
    int *col = gcoll__sched_scratch(s, sizeof(int) * (size_t)m->nhosts);
    if ((L > 1 && !tmp) || !col)
        return;
    gcoll__sched_round(s);
    if (L == 1 && src != rb)
        gcoll__sched_copy(s, rb, src, bytes);
    for (int k = 1; k < L; k++) {
        gcoll__sched_recv(s, g[k], tmp + (size_t)(k - 1) * bytes, bytes);
        gcoll__sched_reduce(s, rb, k == 1 ? src : rb, tmp + (size_t)(k - 1) * bytes, a->count);
    }
    for (int k = 0; k < m->nhosts; k++)
        col[k] = m->by_host[m->first[k]];
    across_hosts(s, a, col, rb, a->count);
    gcoll__sched_round(s);
    for (int k = 1; k < L; k++)
        gcoll__sched_send(s, g[k], rb, bytes);
}

void gcoll__allreduce_hier(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    const gcoll__nodemap_t *m = a->map;
    int H = m->nhosts, me = m->local[a->rank], h = m->host[a->rank];
    int L = m->first[1] - m->first[0];
    const int *g = m->by_host + m->first[h];
    size_t es = a->esize, cnt = a->count;
    char *rb = a->recvbuf;
    const char *src = a->sendbuf == a->recvbuf ? rb : a->sendbuf;
    if (cnt * es <= HIER_LEADER_BYTES) {
        through_leader(s, a, g, L, me, src, rb);
        return;
    }
    /* in place, a received block cannot land on our own contribution */
    char *tmp = src == rb && L > 1 ? gcoll__sched_scratch(s, gcoll__blk_cnt(cnt, L, 0) * es) : NULL;
    if (L == 1 && src != rb) {
        gcoll__sched_round(s);
        gcoll__sched_copy(s, rb, src, cnt * es);
    }
    host_ring(s, g, L, me, rb, src, tmp, cnt, es, 1);

    /* our block among the ranks of our local index, one per host, in host order */
    int *col = gcoll__sched_scratch(s, sizeof(int) * (size_t)H);
    size_t bn = gcoll__blk_cnt(cnt, L, me);
    if (col && bn) {
        for (int k = 0; k < H; k++)
            col[k] = m->by_host[m->first[k] + me];
        across_hosts(s, a, col, rb + gcoll__blk_off(cnt, L, me) * es, bn);
    }
    host_ring(s, g, L, me, rb, NULL, NULL, cnt, es, 0);
}
