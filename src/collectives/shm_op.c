/* See shm_op.h: the round driver of the intra-node algorithms, their usability checks, and the
 * slot staging and reduction helpers they share. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/reduce.h"
#include "collectives/shm_op.h"

enum { PH_ORDER, PH_PUBLISH, PH_GATHER, PH_FINISH };

int gcoll__shm_usable(const gcoll__coll_args_t *a)
{
    /* a slot must hold one element of every block */
    return a->shm != NULL && a->shm->slot_bytes >= a->esize * (size_t)a->size;
}

int gcoll__shm_cma_usable(const gcoll__coll_args_t *a)
{
    return a->shm != NULL && a->shm->cma && a->shm->chunk_bytes >= a->esize;
}

static void who(void *state, char *buf, size_t len)
{
    shm_op_t *op = state;
    if (op->phase == PH_ORDER) {
        snprintf(buf, len, "none: an earlier operation on this communicator is unfinished");
        return;
    }
    char ranks[128];
    int ready = op->phase == PH_FINISH;
    gcoll__shm_laggards(op->shm, shm_seq(op) - (op->phase == PH_PUBLISH ? 1 : 0), ready, ranks, sizeof(ranks));
    snprintf(buf, len, "%s (local, %s)", ranks, ready ? "not ready" : "not arrived");
}

/* Every rank's operation on the channel starts at the same sequence number while they agree:
 * each compares the others' descriptors with its own, so every rank sees a mismatch itself. No
 * peer passes this round before this rank arrives at the next (see PH_PUBLISH; single copy
 * waits for every rank's ready), so the entry of this parity is still this round's. */
static gcoll_status_t compare_ops(shm_op_t *op, uint64_t seq)
{
    gcoll__shm_t *shm = op->shm;
    for (int q = 0; q < shm->n; q++) {
        const gcoll__opdesc_t *d = &shm->ctrl[q].op[seq & 1].d;
        if (q != shm->me && shm->ctrl[q].op[seq & 1].seq == seq && !gcoll__opdesc_agree(d, &op->sched->desc))
            return gcoll__opdesc_mismatch(op->sched->tag, &op->sched->desc, op->a.rank, d, q);
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t step(void *state, int *done)
{
    shm_op_t *op = state;
    gcoll__shm_t *shm = op->shm;
    for (;;) {
        uint64_t seq = shm_seq(op);
        switch (op->phase) {
        case PH_ORDER:
            if (shm->completed != op->seq0 - 1)
                return GCOLL_SUCCESS;
            op->phase = PH_PUBLISH;
            break;
        case PH_PUBLISH:
            /* a slot may be rewritten once every rank is done with the round two back, which a
             * rank's arrival at the round before this one proves (rounds run in order) */
            if (!op->single_copy && seq > 2 && !gcoll__shm_all_arrived(shm, seq - 1))
                return GCOLL_SUCCESS;
            if (op->round == 0) {
                shm->ctrl[shm->me].op[seq & 1].seq = seq;
                shm->ctrl[shm->me].op[seq & 1].d = op->sched->desc;
            }
            GCOLL_CHECK(op->publish(op));
            gcoll__shm_set(shm, &shm->ctrl[shm->me].arrive, seq);
            op->phase = PH_GATHER;
            break;
        case PH_GATHER:
            if (!gcoll__shm_all_arrived(shm, seq))
                return GCOLL_SUCCESS;
            if (op->round == 0)
                GCOLL_CHECK(compare_ops(op, seq));
            GCOLL_CHECK(op->work(op));
            if (op->single_copy) /* slot rounds need no second signal: see PH_PUBLISH */
                gcoll__shm_set(shm, &shm->ctrl[shm->me].ready, seq);
            op->phase = PH_FINISH;
            break;
        default:
            if (op->single_copy && !gcoll__shm_all_ready(shm, seq))
                return GCOLL_SUCCESS;
            shm->completed = seq;
            if (++op->round < op->nrounds) {
                op->phase = PH_PUBLISH;
                break;
            }
            if (op->finish)
                GCOLL_CHECK(op->finish(op));
            *done = 1;
            return GCOLL_SUCCESS;
        }
    }
}

/* Runs again as a new operation: it takes the channel's next sequence numbers, as a fresh
 * build would. */
static void rewind_op(void *state)
{
    shm_op_t *op = state;
    op->phase = PH_ORDER;
    op->round = 0;
    op->seq0 = op->shm->issued + 1;
    op->shm->issued += (uint64_t)op->nrounds;
}

shm_op_t *gcoll__shm_op(gcoll__sched_t *s, const gcoll__coll_args_t *a, int single_copy, size_t blocks,
                        shm_hook_t publish, shm_hook_t work, size_t scratch_bytes)
{
    shm_op_t *op = gcoll__sched_scratch(s, sizeof(*op));
    if (!op)
        return NULL;
    *op = (shm_op_t){.shm = a->shm,
                     .a = *a,
                     .single_copy = single_copy,
                     .blocks = blocks,
                     .publish = publish,
                     .work = work,
                     .sched = s};
    op->inplace = a->sendbuf == a->recvbuf;
    op->src = op->inplace ? a->recvbuf : a->sendbuf;
    if (scratch_bytes && !(op->scratch = gcoll__sched_scratch(s, scratch_bytes)))
        return NULL;
    size_t fit = a->shm->slot_bytes / (a->esize * blocks);
    op->per_round = single_copy || fit >= a->count ? a->count : fit;
    op->nrounds = (int)((a->count + op->per_round - 1) / op->per_round);
    op->seq0 = a->shm->issued + 1;
    a->shm->issued += (uint64_t)op->nrounds;
    gcoll__sched_custom(s, step, who, op);
    gcoll__sched_custom_rewind(s, rewind_op);
    return op;
}

void gcoll__shm_reduce_slots(shm_op_t *op, void *dst, size_t at, size_t n)
{
    gcoll__shm_t *shm = op->shm;
    gcoll__reduce(dst, shm_input(op, 0) + at, shm_input(op, 1) + at, n, op->a.dtype, op->a.op);
    for (int q = 2; q < shm->n; q++)
        gcoll__reduce(dst, dst, shm_input(op, q) + at, n, op->a.dtype, op->a.op);
    if (op->a.op == GCOLL_AVG)
        gcoll__kernels->div[op->a.dtype](dst, n, (unsigned)shm->n);
}

gcoll_status_t gcoll__shm_stage_blocks(shm_op_t *op)
{
    size_t es = op->a.esize, len = shm_len(op);
    char *slot = gcoll__shm_slot(op->shm, op->shm->me, shm_seq(op));
    for (int q = 0; q < op->shm->n; q++)
        memcpy(slot + (size_t)q * len * es, op->src + ((size_t)q * op->a.count + shm_lo(op)) * es, len * es);
    return GCOLL_SUCCESS;
}
