/* What the vector collectives' builders share: the packed offsets of uneven blocks, and the
 * streaming ring of allgatherv and reduce_scatterv (algo.h says how it streams and why its rounds
 * match). Every rank plans the same streams from the counts, which all of them know. */
#include "base/config.h"
#include "collectives/algo.h"

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

size_t gcoll__vring_slice(size_t es)
{
    return gcoll__config.chunk_bytes / es;
}

/* Adds, through fn, the pieces of group g (D pieces a group) of the block `hop` hops away. */
static void group(gcoll__sched_t *s, gcoll__vring_t *v, int hop, size_t g, size_t round,
                  void (*fn)(gcoll__sched_t *, gcoll__vring_t *, const gcoll__vpiece_t *))
{
    size_t D = (size_t)gcoll__config.pipeline_depth;
    int blk = gcoll__mod(v->own - hop, v->n);
    size_t c = v->counts[blk];
    for (size_t k = g * D; k < (g + 1) * D && k * v->slice < c; k++) {
        size_t off = k * v->slice;
        gcoll__vpiece_t p = {hop, blk, k, off, c - off < v->slice ? c - off : v->slice, round};
        fn(s, v, &p);
    }
}

void gcoll__vring_build(gcoll__sched_t *s, gcoll__vring_t *v)
{
    int n = v->n;
    size_t D = (size_t)gcoll__config.pipeline_depth, per = (v->slice = gcoll__vring_slice(v->es)) * D, last = 0;
    /* the last round: a block's last group crosses hop h in round groups - 1 + h - 1 and is
     * forwarded the round after, except the last block to come */
    for (int h = 0; h < n; h++) {
        size_t c = v->counts[gcoll__mod(v->own - h, n)], groups = (c + per - 1) / per;
        size_t at = (size_t)(h < n - 1 ? h : h - 1);
        if (groups && groups - 1 + at > last)
            last = groups - 1 + at;
    }
    for (size_t t = 0; t <= last; t++) {
        gcoll__sched_round(s);
        /* receives in the order the left sends them: its own block, then what it forwards */
        for (int h = 1; h < n; h++)
            if (t + 1 >= (size_t)h)
                group(s, v, h, t + 1 - (size_t)h, t, v->recv);
        group(s, v, 0, t, t, v->send);
        for (int h = 1; h < n - 1; h++)
            if (t >= (size_t)h)
                group(s, v, h, t - (size_t)h, t, v->send);
    }
}
