/* Intra-node reduce over the node channel: every rank stages its vector (a slot per round) and
 * the root reduces the slots in rank order. Cost: one copy per rank, n reads at the root. */
#include <string.h>

#include "collectives/shm_op.h"

static gcoll_status_t publish(shm_op_t *op)
{
    size_t es = op->a.esize;
    const char *src = op->shm->me == op->a.root ? op->src : op->a.sendbuf;
    memcpy(gcoll__shm_slot(op->shm, op->shm->me, shm_seq(op)), src + shm_lo(op) * es, shm_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t work(shm_op_t *op)
{
    if (op->shm->me == op->a.root)
        gcoll__shm_reduce_slots(op, (char *)op->a.recvbuf + shm_lo(op) * op->a.esize, 0, shm_len(op));
    return GCOLL_SUCCESS;
}

void gcoll__reduce_shm_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    /* a non-root's "in place" buffer is its input and stays untouched */
    gcoll__coll_args_t b = *a;
    if (a->rank != a->root && a->sendbuf == a->recvbuf)
        b.recvbuf = NULL;
    gcoll__shm_op(s, &b, 0, 1, publish, work, 0);
}
