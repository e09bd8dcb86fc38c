/* What the vector collectives' builders share: the packed offsets of uneven blocks, and the
 * streaming ring of allgatherv and reduce_scatterv (algo.h says how it streams and why its rounds
 * match). Every rank plans the same streams from the counts, which all of them know. */
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

void gcoll__vring_build(gcoll__sched_t *s, gcoll__vring_t *v)
{
    int n = v->n;
    size_t G = gcoll__vring_group(n), per = (v->slice = gcoll__vring_slice(v->counts, n, v->es)) * G, last = 0;
    /* one group of each block a round would pass GCOLL_PIPELINE_DEPTH messages a link beyond
     * depth + 1 ranks: the hops then take turns */
    size_t D = (size_t)gcoll__config.pipeline_depth, S = n > 2 ? ((size_t)n - 1 + D - 1) / D : 1, any = 0;
    /* the last round: the last group of the block coming in at each hop, and of the own block and
     * each forwarded one going out (hop L out carries the block L - 1 hops from its owner) */
    for (size_t L = 1; L < (size_t)n; L++) {
        size_t in = (v->counts[gcoll__mod(v->own - (int)L, n)] + per - 1) / per;
        size_t out = (v->counts[gcoll__mod(v->own - (int)L + 1, n)] + per - 1) / per;
        if (in && crossing(L, in - 1, S) >= last)
            last = crossing(L, in - 1, S), any = 1;
        if (out && crossing(L, out - 1, S) >= last)
            last = crossing(L, out - 1, S), any = 1;
    }
    for (size_t R = 0; any && R <= last; R++) {
        size_t q = R / S;
        gcoll__sched_round(s);
        /* receives in the order the left sends them: by hop */
        for (size_t L = R % S + 1; L < (size_t)n && L - 1 <= q; L += S)
            group(s, v, (int)L, q - (L - 1), R, v->recv);
        for (size_t L = R % S + 1; L < (size_t)n && L - 1 <= q; L += S)
            group(s, v, (int)L - 1, q - (L - 1), R, v->send);
    }
}
