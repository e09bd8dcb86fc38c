/* Streaming ring reduce_scatterv (algo.h, gcoll__vring): a rank sends its input of block r - 1,
 * and forwards each piece it receives, reduced with its own input of that block, the round after
 * it lands; block b ends at rank b, whose last reduction writes the output. Every block streams
 * at once, so uneven blocks cost what they weigh: the busiest link carries the total less its
 * sender's block. Cost: n - 2 + (the largest block's pieces) / D rounds, the total less one block
 * through each link, each element reduced once per rank. Partial pieces wait in scratch for a
 * round: two rounds' worth of slots, or the whole incoming stream where that is smaller. */
#include "base/config.h"
#include "collectives/algo.h"

typedef struct {
    const gcoll__coll_args_t *a;
    const char *in; /* the input vector */
    char *out;      /* where block rank's result is reduced */
    char *store;    /* partial pieces: in slots (slots set) or the incoming stream back to back */
    size_t *at;     /* back to back: each hop's block's first element in the store */
    int slots;
} ring_t;

/* Where an incoming piece waits: slot (the parity of the round it lands in, its hop, its index in
 * its group), or its place in the stream. */
static char *stored(const gcoll__vring_t *v, const ring_t *g, const gcoll__vpiece_t *p)
{
    size_t G = gcoll__vring_group(v->n), e;
    if (g->slots)
        e = ((((p->k / G + (size_t)p->hop - 1) % 2) * (size_t)(v->n - 1) + (size_t)p->hop - 1) * G + p->k % G) *
            v->slice;
    else
        e = g->at[p->hop] + p->off;
    return g->store + e * v->es;
}

static void recv_piece(gcoll__sched_t *s, gcoll__vring_t *v, const gcoll__vpiece_t *p)
{
    const ring_t *g = v->arg;
    size_t es = v->es;
    char *buf = stored(v, g, p);
    const char *own = g->in + (g->a->displs[p->blk] + p->off) * es;
    gcoll__sched_recv(s, v->left, buf, p->len * es);
    gcoll__sched_reduce(s, p->blk == g->a->rank ? g->out + p->off * es : buf, buf, own, p->len);
}

static void send_piece(gcoll__sched_t *s, gcoll__vring_t *v, const gcoll__vpiece_t *p)
{
    const ring_t *g = v->arg;
    const char *from = p->hop ? stored(v, g, p) : g->in + (g->a->displs[p->blk] + p->off) * v->es;
    gcoll__sched_send(s, v->right, from, p->len * v->es);
}

void gcoll__reduce_scatterv_ring(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, mine = a->counts[r];
    char *rb = a->recvbuf;
    ring_t g = {a, gcoll__input(a), rb, NULL, NULL, 0};
    if (a->total == 0)
        return;
    if (n == 1) {
        gcoll__sched_copy(s, rb, g.in, mine * es);
        return;
    }
    gcoll__vring_t v = {.n = n,
                        .own = gcoll__mod(r - 1, n),
                        .left = gcoll__mod(r - 1, n),
                        .right = (r + 1) % n,
                        .counts = a->counts,
                        .es = es,
                        .recv = recv_piece,
                        .send = send_piece,
                        .arg = &g};
    size_t slice = gcoll__vring_slice(a->counts, n, es), stream = a->total - a->counts[v.own];
    size_t slots = 2 * (size_t)(n - 1) * gcoll__vring_group(n) * slice;
    g.slots = slots < stream;
    g.store = gcoll__sched_scratch(s, (g.slots ? slots : stream) * es);
    g.at = gcoll__sched_scratch(s, (size_t)n * sizeof(size_t));
    if (!g.store || !g.at)
        return;
    size_t sum = 0;
    for (int h = 1; h < n; h++) {
        g.at[h] = sum;
        sum += a->counts[gcoll__mod(v.own - h, n)];
    }
    /* In place the output overwrites the front of the input, which may still be sent or read
     * unless it is this rank's own block: then the result waits in scratch until the end. */
    if (g.in == rb && a->displs[r] != 0 && !(g.out = gcoll__sched_scratch(s, mine * es)))
        return;
    gcoll__vring_build(s, &v);
    gcoll__sched_copy(s, rb, g.out, mine * es); /* listed after the last sends: waits for them */
    gcoll__sched_avg(s, rb, mine);
}
