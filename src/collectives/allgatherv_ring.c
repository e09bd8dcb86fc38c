/* Streaming ring allgatherv (algo.h, gcoll__vring): every block travels the ring at once in
 * pieces of GCOLL_CHUNK_BYTES, each rank forwarding a piece the round after it lands, so uneven
 * blocks cost what they weigh: the busiest link carries the total less its receiver's block, where
 * a lock-step ring would hold each of its n - 1 steps for the largest block. Pieces land where
 * they belong in recvbuf and are forwarded from there. Cost: n - 2 + (the largest block's pieces)
 * / D rounds, the total less one block through each link. */
#include "collectives/algo.h"

typedef struct {
    const gcoll__coll_args_t *a;
    char *rb;
    const char *mine; /* this rank's block as it sends it */
} ring_t;

static void recv_piece(gcoll__sched_t *s, gcoll__vring_t *v, const gcoll__vpiece_t *p)
{
    const ring_t *g = v->arg;
    gcoll__sched_recv(s, v->left, g->rb + (g->a->displs[p->blk] + p->off) * v->es, p->len * v->es);
}

static void send_piece(gcoll__sched_t *s, gcoll__vring_t *v, const gcoll__vpiece_t *p)
{
    const ring_t *g = v->arg;
    const char *from = p->hop ? g->rb + g->a->displs[p->blk] * v->es : g->mine;
    gcoll__sched_send(s, v->right, from + p->off * v->es, p->len * v->es);
}

void gcoll__allgatherv_ring(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize;
    ring_t g = {a, a->recvbuf, a->sendbuf == a->recvbuf ? (char *)a->recvbuf + a->displs[r] * es : a->sendbuf};
    gcoll__sched_round(s); /* its own round: no message is in flight while it runs */
    gcoll__sched_copy(s, g.rb + a->displs[r] * es, g.mine, a->counts[r] * es);
    if (n == 1)
        return;
    gcoll__vring_t v = {.n = n,
                        .own = r,
                        .left = gcoll__mod(r - 1, n),
                        .right = (r + 1) % n,
                        .counts = a->counts,
                        .es = es,
                        .recv = recv_piece,
                        .send = send_piece,
                        .arg = &g};
    gcoll__vring_build(s, &v);
}
