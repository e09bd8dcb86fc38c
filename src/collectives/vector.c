/* What the vector collectives' builders share: the packed offsets of uneven blocks, and the
 * streaming ring of allgatherv and reduce_scatterv (algo.h says how it streams and why its rounds
 * match). Every rank plans the same streams from the counts, which all of them know. */
#include <stdlib.h>

#include "base/config.h"
#include "collectives/algo.h"

/* The smallest piece: below it a message costs its latency whatever its size (GCOLL_CHUNK_BYTES's
 * own least value). */
#define SLICE_MIN 4096

size_t *gcoll__prefix(gcoll__sched_t *s, const size_t *counts, int n)
{
    size_t *pre = gcoll__sched_scratch(s, ((size_t)n + 1) * sizeof(size_t));
    if (!pre)
        return NULL;
    pre[0] = 0;
    for (int i = 0; i < n; i++)
        pre[i + 1] = pre[i] + counts[i];
    return pre;
}

size_t gcoll__vring_group(int n)
{
    /* a link carries n - 1 blocks at once, so one piece of each keeps it as busy as the ring's
     * D slices of one block; two ranks have one block each way, in D slices as gcoll__pipe */
    return n > 2 ? 1 : (size_t)gcoll__config.pipeline_depth;
}

size_t gcoll__vring_slice(const size_t *counts, int n, size_t es)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += counts[i];
    /* the largest block's last groups cross the last n - 2 hops after the others are done:
     * pieces of about 1/16 of a link's share per group keep that tail near 1/16 of the time */
    if (n <= 2)
        return gcoll__config.chunk_bytes / es;
    size_t bytes = total / (16 * (size_t)(n - 1) * gcoll__vring_group(n)) * es;
    bytes = bytes < SLICE_MIN ? SLICE_MIN : bytes > gcoll__config.chunk_bytes ? gcoll__config.chunk_bytes : bytes;
    return (bytes / es) ? bytes / es : 1;
}

/* Adds, through fn, the pieces of group g (G pieces a group) of the block `hop` hops away. */
static void group(gcoll__sched_t *s, gcoll__vring_t *v, int hop, size_t g, size_t round,
                  void (*fn)(gcoll__sched_t *, gcoll__vring_t *, const gcoll__vpiece_t *))
{
    size_t G = gcoll__vring_group(v->n);
    int blk = gcoll__mod(v->own - hop, v->n);
    size_t c = v->counts[blk];
    for (size_t k = g * G; k < (g + 1) * G && k * v->slice < c; k++) {
        size_t off = k * v->slice;
        gcoll__vpiece_t p = {hop, blk, k, off, c - off < v->slice ? c - off : v->slice, round};
        fn(s, v, &p);
    }
}

/* The round in which group g crosses a link as its hop L (1: its owner sends it): the hops take
 * turns over S rounds, so that a link carries at most ceil((n - 1) / S) groups a round. */
static size_t crossing(size_t L, size_t g, size_t S)
{
    return (g + L - 1) * S + (L - 1) % S;
}

/* A group crossing a link: what one round of the ring carries, in the order the round lists them
 * (receives by hop, then sends by hop). */
typedef struct {
    size_t round, g;
    int send, hop;
} crossing_t;

static int by_round(const void *x, const void *y)
{
    const crossing_t *a = x, *b = y;
    if (a->round != b->round)
        return a->round < b->round ? -1 : 1;
    if (a->send != b->send)
        return a->send - b->send;
    return a->hop - b->hop;
}

void gcoll__vring_build(gcoll__sched_t *s, gcoll__vring_t *v)
{
    int n = v->n;
    size_t G = gcoll__vring_group(n), per = (v->slice = gcoll__vring_slice(v->counts, n, v->es)) * G;
    /* one group of each block a round would pass GCOLL_PIPELINE_DEPTH messages a link beyond
     * depth + 1 ranks: the hops take turns */
    size_t D = (size_t)gcoll__config.pipeline_depth, S = n > 2 ? ((size_t)n - 1 + D - 1) / D : 1;
    /* the crossings listed and sorted by round, rather than every round scanned for the hops it
     * serves: a skewed block streams over some n * S rounds, most of which carry nothing here */
    size_t total = 0;
    for (int L = 1; L < n; L++)
        total += (v->counts[gcoll__mod(v->own - L, n)] + per - 1) / per +
            (v->counts[gcoll__mod(v->own - L + 1, n)] + per - 1) / per;
    if (!total)
        return;
    crossing_t *c = malloc(total * sizeof(*c)); /* all of it read, dry or not: not sched scratch */
    if (!c) {
        s->status = GCOLL_ERR_NOMEM;
        return;
    }
    size_t k = 0;
    for (int L = 1; L < n; L++) {
        /* in: the block L hops from its owner arrives; out: the one L - 1 hops away leaves */
        size_t in = (v->counts[gcoll__mod(v->own - L, n)] + per - 1) / per;
        size_t out = (v->counts[gcoll__mod(v->own - L + 1, n)] + per - 1) / per;
        for (size_t g = 0; g < in; g++)
            c[k++] = (crossing_t){crossing((size_t)L, g, S), g, 0, L};
        for (size_t g = 0; g < out; g++)
            c[k++] = (crossing_t){crossing((size_t)L, g, S), g, 1, L};
    }
    qsort(c, total, sizeof(*c), by_round);
    for (size_t i = 0; i < total; i++) {
        if (i == 0 || c[i].round != c[i - 1].round)
            gcoll__sched_round(s);
        group(s, v, c[i].send ? c[i].hop - 1 : c[i].hop, c[i].g, c[i].round, c[i].send ? v->send : v->recv);
    }
    free(c);
}
