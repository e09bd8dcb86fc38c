/* Intra-node allgather over the node channel.
 * shm_slots: every rank stages its block; every rank copies all blocks out of the slots.
 * shm_cma: every rank writes its block straight into every peer's output (process_vm_writev):
 *   (n-1) blocks written per rank, one copy each. */
#include <string.h>

#include "node/node_op.h"

static const char *my_block(const gcoll__node_op_t *op)
{
    return op->inplace ? (const char *)op->a.recvbuf + (size_t)op->me * op->a.count * op->a.esize : op->a.sendbuf;
}

static gcoll_status_t slots_publish(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    memcpy(gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op)), my_block(op) + gcoll__node_lo(op) * es,
           gcoll__node_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t slots_work(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    for (int q = 0; q < op->n; q++)
        if (q != op->me || !op->inplace)
            memcpy((char *)op->a.recvbuf + ((size_t)q * op->a.count + gcoll__node_lo(op)) * es,
                   gcoll__shm_slot(op->shm, q, gcoll__node_seq(op)), gcoll__node_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(gcoll__node_op_t *op)
{
    gcoll__shm_publish(op->shm, NULL, op->a.recvbuf);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_work(gcoll__node_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    size_t blk = op->a.count * op->a.esize, at = (size_t)op->me * blk;
    if (!op->inplace)
        memcpy((char *)op->a.recvbuf + at, op->a.sendbuf, blk);
    for (int q = 0; q < op->n; q++)
        if (q != op->me)
            GCOLL_CHECK(gcoll__shm_write(shm, q, gcoll__shm_peer_dst(shm, q) + at, my_block(op), blk));
    return GCOLL_SUCCESS;
}

void gcoll__node_allgather_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op(s, a, 0, 1, slots_publish, slots_work, 0);
}

void gcoll__node_allgather_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op(s, a, 1, 1, cma_publish, cma_work, 0);
}
