/* Intra-node reduce over the node channel: every rank stages its vector (a slot per round) and
 * the root reduces the slots in rank order. Cost: one copy per rank, n reads at the root. */
#include <string.h>

#include "node/node_op.h"

static gcoll_status_t publish(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    const char *src = op->me == op->a.root ? op->src : op->a.sendbuf;
    memcpy(gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op)), src + gcoll__node_lo(op) * es,
           gcoll__node_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t work(gcoll__node_op_t *op)
{
    if (op->me == op->a.root)
        gcoll__node_combine_slots(op, (char *)op->a.recvbuf + gcoll__node_lo(op) * op->a.esize, 0, gcoll__node_len(op));
    return GCOLL_SUCCESS;
}

void gcoll__node_reduce_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    /* a non-root's "in place" buffer is its input and stays untouched */
    gcoll__coll_args_t b = *a;
    if (a->rank != a->root && a->sendbuf == a->recvbuf)
        b.recvbuf = NULL;
    gcoll__node_op(s, &b, 0, 1, publish, work, 0);
}
