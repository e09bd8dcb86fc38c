/* Intra-node alltoallv over the node channel, single copy: every rank publishes its send buffer's
 * address, and in its slot its send displacements, so that each rank reads the block every peer
 * holds for it straight into its output (process_vm_readv): one copy per block, whatever the
 * counts. In place the blocks that arrive wait in scratch until every peer has read its own out
 * of this rank's buffer. */
#include <string.h>

#include "node/node_op.h"

int gcoll__node_alltoallv_usable(const gcoll__coll_args_t *a)
{
    return gcoll__node_cma_usable(a) && gcoll__shm_info(a->shm)->slot_bytes >= (size_t)a->size * sizeof(size_t);
}

static gcoll_status_t publish(gcoll__node_op_t *op)
{
    gcoll__shm_publish(op->shm, op->src, NULL);
    memcpy(gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op)), op->a.sdispls, (size_t)op->n * sizeof(size_t));
    return GCOLL_SUCCESS;
}

/* Where peer q's block lands: the output, or in place scratch (op->tab: its offset there). */
static char *landing(gcoll__node_op_t *op, int q)
{
    const gcoll__coll_args_t *a = &op->a;
    return op->inplace ? op->scratch + op->tab[q] * a->esize : (char *)a->recvbuf + a->displs[q] * a->esize;
}

static gcoll_status_t work(gcoll__node_op_t *op)
{
    const gcoll__coll_args_t *a = &op->a;
    size_t es = a->esize;
    int me = op->me;
    if (!op->inplace)
        memcpy((char *)a->recvbuf + a->displs[me] * es, (const char *)a->sendbuf + a->sdispls[me] * es,
               a->counts[me] * es);
    for (int q = 0; q < op->n; q++) {
        if (q == me || !a->counts[q])
            continue;
        size_t at;
        memcpy(&at, gcoll__shm_slot(op->shm, q, gcoll__node_seq(op)) + (size_t)me * sizeof(size_t), sizeof(at));
        GCOLL_CHECK(
            gcoll__shm_read(op->shm, q, landing(op, q), gcoll__shm_peer_src(op->shm, q) + at * es, a->counts[q] * es));
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t finish(gcoll__node_op_t *op)
{
    const gcoll__coll_args_t *a = &op->a;
    for (int q = 0; q < op->n; q++)
        if (q != op->me && a->counts[q])
            memcpy((char *)a->recvbuf + a->displs[q] * a->esize, landing(op, q), a->counts[q] * a->esize);
    return GCOLL_SUCCESS;
}

void gcoll__node_alltoallv_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t in = 0; /* what arrives, for the scratch in place */
    for (int q = 0; q < a->size; q++)
        in += q == a->rank ? 0 : a->counts[q];
    int inplace = a->sendbuf == a->recvbuf;
    /* every rank runs it, its counts all zero or not: the channel's rounds are shared */
    gcoll__node_op_t *op = gcoll__node_vop(s, a, 1, 1, publish, work, inplace ? in * a->esize : 0);
    if (!op || !inplace)
        return;
    op->finish = finish;
    size_t at = 0;
    for (int q = 0; q < a->size; q++) {
        op->tab[q] = at;
        at += q == a->rank ? 0 : a->counts[q];
    }
}
