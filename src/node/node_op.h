/* The driver of the node algorithms: one custom schedule step that runs an operation over the
 * node channel (transports/shm/channel.h) as rounds (publish this rank's inputs, wait for every
 * rank, do this rank's share, mark it ready). Operations on one channel run in issue order, the
 * same on every rank; docs/design.md describes the round protocol. */
#ifndef GCOLL_NODE_OP_H
#define GCOLL_NODE_OP_H

#include "base/error.h"
#include "collectives/algo.h"
#include "transports/shm/channel.h"

typedef struct gcoll__node_op gcoll__node_op_t;
typedef gcoll_status_t (*gcoll__node_hook_t)(gcoll__node_op_t *op);

struct gcoll__node_op {
    gcoll__shm_t *shm;
    int me, n; /* this rank's local index, the local ranks */
    gcoll__coll_args_t a;
    const char *src; /* the input: sendbuf, or recvbuf in place */
    int inplace;
    int single_copy;
    int staged;       /* single copy, but this rank's inputs went into its slot: it need not wait for the
                   peers to be done with its buffers (it still tells them it is done with theirs) */
    int tiny;         /* one round whose input fits GCOLL_SHM_INLINE: it rides on the arrive line */
    size_t blocks;    /* blocks of the input staged per round: the rank count for
                           reduce_scatter and alltoall, else 1 */
    size_t per_round; /* elements of each block per slot round */
    int nrounds, round, phase;
    uint64_t seq0;                            /* the first round's sequence number, reserved at issue */
    const gcoll__sched_t *sched;              /* its tag and descriptor, for mismatch detection */
    gcoll__node_hook_t publish, work, finish; /* finish (optional) runs once the last round is over */
    char *scratch;                            /* an algorithm's private buffer, if it asked for one */
    size_t *tab;                              /* the vector collectives': 2 n sizes of their own (gcoll__node_vop) */
};

/* Builds the step, which reserves its nrounds on the channel when the schedule is issued (a
 * build alone changes nothing). Slot rounds cover per_round elements of each block;
 * single_copy makes one round. scratch_bytes of private scratch are allocated with the schedule. */
gcoll__node_op_t *gcoll__node_op(gcoll__sched_t *s, const gcoll__coll_args_t *a, int single_copy, size_t blocks,
                                 gcoll__node_hook_t publish, gcoll__node_hook_t work, size_t scratch_bytes);

/* The vector collectives' form: nrounds rounds (the same on every rank, from what all know), a
 * as the hooks see it with its counts and displacements copied into the schedule (the caller's
 * are read only while the schedule is built), and op->tab for the algorithm's own tables. */
gcoll__node_op_t *gcoll__node_vop(gcoll__sched_t *s, const gcoll__coll_args_t *a, int single_copy, int nrounds,
                                  gcoll__node_hook_t publish, gcoll__node_hook_t work, size_t scratch_bytes);

/* The current round's sequence number, first element and element count. */
static inline uint64_t gcoll__node_seq(const gcoll__node_op_t *op)
{
    return op->seq0 + (uint64_t)op->round;
}
static inline size_t gcoll__node_lo(const gcoll__node_op_t *op)
{
    return (size_t)op->round * op->per_round;
}
static inline size_t gcoll__node_len(const gcoll__node_op_t *op)
{
    size_t lo = gcoll__node_lo(op);
    return op->a.count - lo < op->per_round ? op->a.count - lo : op->per_round;
}

/* Where rank q's input of this round is: the arrive line's inline bytes, or q's slot. */
static inline char *gcoll__node_input(gcoll__node_op_t *op, int q)
{
    return op->tiny ? gcoll__shm_inline(op->shm, q, gcoll__node_seq(op))
                    : gcoll__shm_slot(op->shm, q, gcoll__node_seq(op));
}

/* Publish hook that stages this round's piece of each of the n blocks of the input into this
 * rank's slot, block after block (reduce_scatter, alltoall). */
gcoll_status_t gcoll__node_stage_blocks(gcoll__node_op_t *op);

/* dst = the reduction, in rank order, of n elements at byte offset `at` of every rank's slot
 * for this round, divided by the rank count for GCOLL_AVG. */
void gcoll__node_combine_slots(gcoll__node_op_t *op, void *dst, size_t at, size_t n);

#endif
