/* Intra-node broadcast over the node channel.
 * shm_slots: the root stages the vector (a slot per round); the others copy it out.
 * shm_cma: every non-root reads the vector straight from the root's buffer
 *   (process_vm_readv), all at once, so the copies proceed on every core in parallel. */
#include <string.h>

#include "node/node_op.h"

static gcoll_status_t slots_publish(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    if (op->me == op->a.root)
        memcpy(gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op)), (char *)op->a.recvbuf + gcoll__node_lo(op) * es,
               gcoll__node_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t slots_work(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    if (op->me != op->a.root)
        memcpy((char *)op->a.recvbuf + gcoll__node_lo(op) * es,
               gcoll__shm_slot(op->shm, op->a.root, gcoll__node_seq(op)), gcoll__node_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(gcoll__node_op_t *op)
{
    gcoll__shm_publish(op->shm, op->a.recvbuf, NULL);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_work(gcoll__node_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    if (op->me == op->a.root)
        return GCOLL_SUCCESS;
    return gcoll__shm_read(shm, op->a.root, op->a.recvbuf, gcoll__shm_peer_src(shm, op->a.root),
                           op->a.count * op->a.esize);
}

void gcoll__node_bcast_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op(s, a, 0, 1, slots_publish, slots_work, 0);
}

void gcoll__node_bcast_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op(s, a, 1, 1, cma_publish, cma_work, 0);
}
