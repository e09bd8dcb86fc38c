/* Intra-node reduce over the node channel: every rank stages its vector (a slot per round) and
 * the root reduces the slots in rank order. Cost: one copy per rank, n reads at the root. */
#include <string.h>

#include "../src/reduce.h"
#include "shm_op.h"

static gcoll_status_t publish(shm_op_t *op)
{
    size_t es = op->a.esize;
    const char *src = op->shm->me == op->a.root ? op->src : op->a.sendbuf;
    memcpy(gcoll__shm_slot(op->shm, op->shm->me, shm_seq(op)), src + shm_lo(op) * es, shm_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t work(shm_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    if (shm->me != op->a.root)
        return GCOLL_SUCCESS;
    uint64_t seq = shm_seq(op);
    size_t n = shm_len(op);
    char *dst = (char *)op->a.recvbuf + shm_lo(op) * op->a.esize;
    gcoll__reduce(dst, gcoll__shm_slot(shm, 0, seq), gcoll__shm_slot(shm, 1, seq), n, op->a.dtype, op->a.op);
    for (int q = 2; q < shm->n; q++)
        gcoll__reduce(dst, dst, gcoll__shm_slot(shm, q, seq), n, op->a.dtype, op->a.op);
    if (op->a.op == GCOLL_AVG)
        gcoll__kernels->div[op->a.dtype](dst, n, (unsigned)shm->n);
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
