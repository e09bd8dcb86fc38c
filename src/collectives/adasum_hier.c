/* Adasum's hierarchical algorithm (adasum.h): the ranks of each host sum to their first rank,
 * the hosts' first ranks run halving's Adasum among themselves, and each broadcasts the result
 * on its host. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/copy.h"
#include "base/dtype.h"
#include "base/log.h"
#include "collectives/adasum.h"
#include "collectives/halving.h"
#include "collectives/select.h"

/* Appends sub (a reduce or bcast among this host's ranks g) with the selection's algorithm. */
static void on_host(gcoll__sched_t *s, const gcoll__coll_args_t *sub, const int *g)
{
    const gcoll__algo_t *alg;
    if (gcoll__algo_select(sub, NULL, &alg) != GCOLL_SUCCESS) {
        s->status = GCOLL_ERR_INTERNAL;
        return;
    }
    s->peermap = g;
    alg->build(s, sub);
    s->peermap = NULL;
}

void gcoll__adasum_hier(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh)
{
    const gcoll__nodemap_t *mp = a->map;
    int H = mp->nhosts, h = mp->host[a->rank], me = mp->local[a->rank];
    int L = mp->first[h + 1] - mp->first[h];
    const int *g = mp->by_host + mp->first[h];
    size_t bytes = a->count * a->esize;
    gcoll__coll_args_t sub = *a;
    sub.shm = NULL;
    sub.map = NULL;
    sub.op = GCOLL_SUM;
    sub.rank = me;
    sub.size = L;
    sub.root = 0;
    if (L == 1) {
        gcoll__sched_round(s);
        gcoll__sched_copy(s, a->recvbuf, gcoll__input(a), bytes);
    } else {
        sub.coll = GCOLL_COLL_REDUCE;
        on_host(s, &sub, g);
        if (s->status != GCOLL_SUCCESS)
            return;
    }
    if (me == 0 && H > 1) {
        int *leaders = gcoll__sched_scratch(s, sizeof(int) * (size_t)H);
        if (!leaders)
            return;
        for (int k = 0; k < H; k++)
            leaders[k] = mp->by_host[mp->first[k]];
        gcoll__coll_args_t lead = *a;
        lead.sendbuf = lead.recvbuf;
        lead.rank = h;
        lead.size = H;
        lead.shm = NULL;
        lead.map = NULL;
        s->peermap = leaders;
        gcoll__adasum_halving(s, &lead, sh);
        s->peermap = NULL;
    }
    if (L > 1) {
        sub.coll = GCOLL_COLL_BCAST;
        sub.sendbuf = sub.recvbuf;
        on_host(s, &sub, g);
    }
}
