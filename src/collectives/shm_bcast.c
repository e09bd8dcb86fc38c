/* Intra-node broadcast over the node channel.
 * shm_slots: the root stages the vector (a slot per round); the others copy it out.
 * shm_cma: every non-root reads the vector straight from the root's buffer
 *   (process_vm_readv), all at once, so the copies proceed on every core in parallel. */
#include <string.h>

#include "collectives/shm_op.h"

static gcoll_status_t slots_publish(shm_op_t *op)
{
    size_t es = op->a.esize;
    if (op->shm->me == op->a.root)
        memcpy(gcoll__shm_slot(op->shm, op->shm->me, shm_seq(op)), (char *)op->a.recvbuf + shm_lo(op) * es,
               shm_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t slots_work(shm_op_t *op)
{
    size_t es = op->a.esize;
    if (op->shm->me != op->a.root)
        memcpy((char *)op->a.recvbuf + shm_lo(op) * es, gcoll__shm_slot(op->shm, op->a.root, shm_seq(op)),
               shm_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(shm_op_t *op)
{
    op->shm->ctrl[op->shm->me].src = (uint64_t)(uintptr_t)op->a.recvbuf;
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_work(shm_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    if (shm->me == op->a.root)
        return GCOLL_SUCCESS;
    return gcoll__shm_read(shm, op->a.root, op->a.recvbuf, shm->ctrl[op->a.root].src, op->a.count * op->a.esize);
}

void gcoll__bcast_shm_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__shm_op(s, a, 0, 1, slots_publish, slots_work, 0);
}

void gcoll__bcast_shm_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__shm_op(s, a, 1, 1, cma_publish, cma_work, 0);
}
