/* The slicing of the pipelined algorithms (ring, chain): a block goes in slices of at most
 * GCOLL_CHUNK_BYTES, GCOLL_PIPELINE_DEPTH of them a round, and each received slice is reduced as
 * soon as it lands while the next ones are still on the wire. Both sides of a message cut the
 * same block with the same settings, so their slices match. */
#include "base/config.h"
#include "collectives/algo.h"

static size_t slice_cnt(size_t es)
{
    return gcoll__config.chunk_bytes / es; /* at least 4K / 8 */
}

size_t gcoll__pipe_groups(size_t cnt, size_t es)
{
    size_t per = slice_cnt(es) * (size_t)gcoll__config.pipeline_depth;
    return (cnt + per - 1) / per;
}

void gcoll__pipe_round(gcoll__sched_t *s, int to, const void *sbuf, size_t sn, size_t sg, int from, void *rbuf,
                       size_t rn, size_t rg, void *dst, const void *own, size_t es)
{
    size_t slice = slice_cnt(es), per = slice * (size_t)gcoll__config.pipeline_depth;
    gcoll__sched_round(s);
    /* receives and their reductions first: a reduction waits only for the steps listed before it */
    for (size_t k = rg * per; k < rn && k < (rg + 1) * per; k += slice) {
        size_t m = rn - k < slice ? rn - k : slice;
        gcoll__sched_recv(s, from, (char *)rbuf + k * es, m * es);
        if (dst)
            gcoll__sched_reduce(s, (char *)dst + k * es, (char *)rbuf + k * es, (const char *)own + k * es, m);
    }
    for (size_t k = sg * per; k < sn && k < (sg + 1) * per; k += slice) {
        size_t m = sn - k < slice ? sn - k : slice;
        gcoll__sched_send(s, to, (const char *)sbuf + k * es, m * es);
    }
}

void gcoll__pipe(gcoll__sched_t *s, int to, const void *sbuf, size_t sn, int from, void *rbuf, size_t rn, void *dst,
                 const void *own, size_t es)
{
    size_t groups = gcoll__pipe_groups(sn > rn ? sn : rn, es);
    if (groups == 0) /* nothing to move this step: the step still takes its time elsewhere */
        gcoll__sched_idle(s);
    for (size_t g = 0; g < groups; g++)
        gcoll__pipe_round(s, to, sbuf, sn, g, from, rbuf, rn, g, dst, own, es);
}
