/* See node_op.h: the round driver of the intra-node algorithms, their usability checks, and the
 * slot staging and reduction helpers they share. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/reduce.h"
#include "node/node_op.h"

enum { PH_ORDER, PH_PUBLISH, PH_GATHER, PH_FINISH };

int gcoll__node_usable(const gcoll__coll_args_t *a)
{
    /* a slot must hold one element of every block */
    return a->shm != NULL && gcoll__shm_info(a->shm)->slot_bytes >= a->esize * (size_t)a->size;
}

int gcoll__node_cma_usable(const gcoll__coll_args_t *a)
{
    return a->shm != NULL && gcoll__shm_info(a->shm)->cma && gcoll__shm_info(a->shm)->chunk_bytes >= a->esize;
}

static void who(void *state, char *buf, size_t len)
{
    gcoll__node_op_t *op = state;
    if (op->phase == PH_ORDER) {
        snprintf(buf, len, "none: an earlier operation on this communicator is unfinished");
        return;
    }
    char ranks[128];
    int ready = op->phase == PH_FINISH;
    gcoll__shm_laggards(op->shm, gcoll__node_seq(op) - (op->phase == PH_PUBLISH ? 1 : 0), ready, ranks, sizeof(ranks));
    snprintf(buf, len, "%s (local, %s)", ranks, ready ? "not ready" : "not arrived");
}

static gcoll_status_t step(void *state, int *done)
{
    gcoll__node_op_t *op = state;
    gcoll__shm_t *shm = op->shm;
    for (;;) {
        uint64_t seq = gcoll__node_seq(op);
        switch (op->phase) {
        case PH_ORDER:
            if (!gcoll__shm_turn(shm, op->seq0))
                return GCOLL_SUCCESS;
            op->phase = PH_PUBLISH;
            break;
        case PH_PUBLISH:
            /* a slot may be rewritten once every rank is done with the round two back, which a
             * rank's arrival at the round before this one proves (rounds run in order) */
            if (!op->single_copy && seq > 2 && !gcoll__shm_all_arrived(shm, seq - 1))
                return GCOLL_SUCCESS;
            if (op->round == 0)
                gcoll__shm_announce(shm, seq, &op->sched->desc);
            GCOLL_CHECK(op->publish(op));
            gcoll__shm_arrive(shm, seq);
            op->phase = PH_GATHER;
            break;
        case PH_GATHER:
            if (!gcoll__shm_all_arrived(shm, seq))
                return GCOLL_SUCCESS;
            /* every rank compares the others' descriptors with its own, so each sees a mismatch */
            if (op->round == 0)
                GCOLL_CHECK(gcoll__shm_agree(shm, seq, op->sched->tag, &op->sched->desc, op->a.rank));
            GCOLL_CHECK(op->work(op));
            if (op->single_copy) /* slot rounds need no second signal: see PH_PUBLISH */
                gcoll__shm_ready(shm, seq);
            op->phase = PH_FINISH;
            break;
        default:
            if (op->single_copy && !op->staged && !gcoll__shm_all_ready(shm, seq))
                return GCOLL_SUCCESS;
            gcoll__shm_complete(shm, seq);
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

/* Issued (the first time or again, after a rewind): it starts afresh, and the channel's next
 * sequence numbers are this operation's. */
static void issue_op(void *state)
{
    gcoll__node_op_t *op = state;
    op->phase = PH_ORDER;
    op->round = 0;
    op->seq0 = gcoll__shm_reserve(op->shm, op->nrounds);
}

/* An operation not yet in the schedule: its step is added once its rounds are known. */
static gcoll__node_op_t *make(gcoll__sched_t *s, const gcoll__coll_args_t *a, int single_copy, size_t blocks,
                              gcoll__node_hook_t publish, gcoll__node_hook_t work, size_t scratch_bytes)
{
    gcoll__node_op_t *op = gcoll__sched_scratch(s, sizeof(*op));
    if (!op)
        return NULL;
    *op = (gcoll__node_op_t){.shm = a->shm,
                             .me = gcoll__shm_info(a->shm)->me,
                             .n = gcoll__shm_info(a->shm)->n,
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
    return op;
}

static gcoll__node_op_t *add(gcoll__sched_t *s, gcoll__node_op_t *op)
{
    gcoll__sched_custom(s, step, who, op);
    gcoll__sched_custom_issue(s, issue_op);
    return op;
}

gcoll__node_op_t *gcoll__node_op(gcoll__sched_t *s, const gcoll__coll_args_t *a, int single_copy, size_t blocks,
                                 gcoll__node_hook_t publish, gcoll__node_hook_t work, size_t scratch_bytes)
{
    gcoll__node_op_t *op = make(s, a, single_copy, blocks, publish, work, scratch_bytes);
    if (!op)
        return NULL;
    size_t fit = gcoll__shm_info(a->shm)->slot_bytes / (a->esize * blocks);
    op->per_round = single_copy || fit >= a->count ? a->count : fit;
    op->nrounds = (int)((a->count + op->per_round - 1) / op->per_round);
    return add(s, op);
}

/* A copy of n sizes in the schedule (NULL stays NULL). */
static const size_t *keep(gcoll__sched_t *s, const size_t *v, int n)
{
    size_t *c = v ? gcoll__sched_scratch(s, (size_t)n * sizeof(size_t)) : NULL;
    if (c)
        memcpy(c, v, (size_t)n * sizeof(size_t));
    return c;
}

gcoll__node_op_t *gcoll__node_vop(gcoll__sched_t *s, const gcoll__coll_args_t *a, int single_copy, int nrounds,
                                  gcoll__node_hook_t publish, gcoll__node_hook_t work, size_t scratch_bytes)
{
    gcoll__node_op_t *op = make(s, a, single_copy, 1, publish, work, scratch_bytes);
    if (!op)
        return NULL;
    int n = a->size;
    op->a.counts = keep(s, a->counts, n);
    op->a.displs = keep(s, a->displs, n);
    op->a.scounts = keep(s, a->scounts, n);
    op->a.sdispls = keep(s, a->sdispls, n);
    op->tab = gcoll__sched_scratch(s, 2 * (size_t)n * sizeof(size_t));
    if (s->status != GCOLL_SUCCESS)
        return NULL;
    op->nrounds = nrounds;
    return add(s, op);
}

void gcoll__node_combine_slots(gcoll__node_op_t *op, void *dst, size_t at, size_t n)
{
    if (op->n == 1) { /* alone: its input is the result */
        memcpy(dst, gcoll__node_input(op, 0) + at, n * op->a.esize);
        return;
    }
    gcoll__reduce(dst, gcoll__node_input(op, 0) + at, gcoll__node_input(op, 1) + at, n, op->a.dtype, op->a.op);
    for (int q = 2; q < op->n; q++)
        gcoll__reduce(dst, dst, gcoll__node_input(op, q) + at, n, op->a.dtype, op->a.op);
    if (op->a.op == GCOLL_AVG)
        gcoll__kernels->div[op->a.dtype](dst, n, (unsigned)op->n);
}

gcoll_status_t gcoll__node_stage_blocks(gcoll__node_op_t *op)
{
    size_t es = op->a.esize, len = gcoll__node_len(op);
    char *slot = gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op));
    for (int q = 0; q < op->n; q++)
        memcpy(slot + (size_t)q * len * es, op->src + ((size_t)q * op->a.count + gcoll__node_lo(op)) * es, len * es);
    return GCOLL_SUCCESS;
}
