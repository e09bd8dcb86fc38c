/* See channel.h: the accessors through which algorithms use the node channel, over the layout
 * of shm_internal.h. */
#include <stdatomic.h>

#include "base/error.h"
#include "transports/shm/shm_internal.h"

const gcoll__shm_info_t *gcoll__shm_info(const gcoll__shm_t *s)
{
    return &s->info;
}

char *gcoll__shm_tmp(gcoll__shm_t *s, int i)
{
    return s->tmp + (size_t)i * s->tmp_stride;
}

uint64_t gcoll__shm_reserve(gcoll__shm_t *s, int nrounds)
{
    uint64_t first = s->issued + 1;
    s->issued += (uint64_t)nrounds;
    return first;
}

int gcoll__shm_turn(const gcoll__shm_t *s, uint64_t seq)
{
    return s->completed == seq - 1;
}

void gcoll__shm_complete(gcoll__shm_t *s, uint64_t seq)
{
    s->completed = seq;
}

void gcoll__shm_announce(gcoll__shm_t *s, uint64_t seq, const gcoll__opdesc_t *d)
{
    s->ctrl[s->info.me].op[seq & 1].seq = seq;
    s->ctrl[s->info.me].op[seq & 1].d = *d;
}

/* No peer passes round seq before this rank arrives at the next one, so the entry of seq's
 * parity is still seq's while this rank looks. */
gcoll_status_t gcoll__shm_agree(gcoll__shm_t *s, uint64_t seq, uint32_t tag, const gcoll__opdesc_t *mine, int rank)
{
    for (int q = 0; q < s->info.n; q++) {
        const gcoll__opdesc_t *d = &s->ctrl[q].op[seq & 1].d;
        if (q != s->info.me && s->ctrl[q].op[seq & 1].seq == seq && !gcoll__opdesc_agree(d, mine))
            return gcoll__opdesc_mismatch(tag, mine, rank, d, gcoll__shm_rank_of(s, q));
    }
    return GCOLL_SUCCESS;
}

char *gcoll__shm_slot(gcoll__shm_t *s, int q, uint64_t seq)
{
    return s->slots + ((size_t)q * 2 + (seq & 1)) * s->info.slot_bytes;
}

char *gcoll__shm_inline(gcoll__shm_t *s, int q, uint64_t seq)
{
    return s->ctrl[q].inl[seq & 1];
}

void gcoll__shm_publish(gcoll__shm_t *s, const void *src, const void *dst)
{
    if (src)
        s->ctrl[s->info.me].src = (uint64_t)(uintptr_t)src;
    if (dst)
        s->ctrl[s->info.me].dst = (uint64_t)(uintptr_t)dst;
}

uint64_t gcoll__shm_peer_src(const gcoll__shm_t *s, int q)
{
    return s->ctrl[q].src;
}

uint64_t gcoll__shm_peer_dst(const gcoll__shm_t *s, int q)
{
    return s->ctrl[q].dst;
}

void gcoll__shm_arrive(gcoll__shm_t *s, uint64_t seq)
{
    gcoll__shm_set(s, &s->ctrl[s->info.me].arrive, seq);
}

void gcoll__shm_ready(gcoll__shm_t *s, uint64_t seq)
{
    gcoll__shm_set(s, &s->ctrl[s->info.me].ready, seq);
}
