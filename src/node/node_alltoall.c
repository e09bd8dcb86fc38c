/* Intra-node alltoall over the node channel: every rank stages all its blocks (a slot-sized
 * piece of each per round) and copies block `rank` out of every slot. Cost per rank: one copy
 * in and one copy out of the whole buffer. */
#include <string.h>

#include "node/node_op.h"

static gcoll_status_t work(gcoll__node_op_t *op)
{
    size_t es = op->a.esize, len = gcoll__node_len(op);
    for (int p = 0; p < op->n; p++)
        memcpy((char *)op->a.recvbuf + ((size_t)p * op->a.count + gcoll__node_lo(op)) * es,
               gcoll__shm_slot(op->shm, p, gcoll__node_seq(op)) + (size_t)op->me * len * es, len * es);
    return GCOLL_SUCCESS;
}

void gcoll__node_alltoall_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op(s, a, 0, (size_t)a->size, gcoll__node_stage_blocks, work, 0);
}
