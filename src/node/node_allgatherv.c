/* Intra-node allgatherv over the node channel, uneven blocks.
 * shm_slots: each round every rank stages a piece of its block (block q in R rounds of
 *   ceil(counts[q] / R) elements, R set by the largest block) and copies every piece out.
 * shm_cma: every rank publishes where its block is and reads each peer's straight into its
 *   output (process_vm_readv): one copy per block, whatever displacements each rank uses. */
#include <string.h>

#include "node/node_op.h"

static const char *my_block(const gcoll__node_op_t *op)
{
    const gcoll__coll_args_t *a = &op->a;
    return op->inplace ? (const char *)a->recvbuf + a->displs[a->rank] * a->esize : (const char *)a->sendbuf;
}

/* Block q's piece of this round: its first element and its length (tab: the pieces' size). */
static size_t piece(const gcoll__node_op_t *op, int q, size_t *len)
{
    size_t lo = (size_t)op->round * op->tab[q], c = op->a.counts[q];
    *len = lo < c ? (c - lo < op->tab[q] ? c - lo : op->tab[q]) : 0;
    return lo;
}

static gcoll_status_t slots_publish(gcoll__node_op_t *op)
{
    size_t len, lo = piece(op, op->a.rank, &len);
    memcpy(gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op)), my_block(op) + lo * op->a.esize, len * op->a.esize);
    return GCOLL_SUCCESS;
}

static gcoll_status_t slots_work(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    for (int q = 0; q < op->n; q++) {
        size_t len, lo = piece(op, q, &len);
        if (q != op->me || !op->inplace)
            memcpy((char *)op->a.recvbuf + (op->a.displs[q] + lo) * es,
                   gcoll__shm_slot(op->shm, q, gcoll__node_seq(op)), len * es);
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(gcoll__node_op_t *op)
{
    gcoll__shm_publish(op->shm, my_block(op), NULL);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_work(gcoll__node_op_t *op)
{
    const gcoll__coll_args_t *a = &op->a;
    size_t es = a->esize;
    char *rb = a->recvbuf;
    if (!op->inplace)
        memcpy(rb + a->displs[a->rank] * es, a->sendbuf, a->counts[a->rank] * es);
    for (int q = 0; q < op->n; q++)
        if (q != op->me && a->counts[q])
            GCOLL_CHECK(gcoll__shm_read(op->shm, q, rb + a->displs[q] * es, gcoll__shm_peer_src(op->shm, q),
                                        a->counts[q] * es));
    return GCOLL_SUCCESS;
}

void gcoll__node_allgatherv_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t most = 0, fit = gcoll__shm_info(a->shm)->slot_bytes / a->esize;
    for (int q = 0; q < a->size; q++)
        most = a->counts[q] > most ? a->counts[q] : most;
    if (!most)
        return;
    size_t rounds = (most + fit - 1) / fit;
    gcoll__node_op_t *op = gcoll__node_vop(s, a, 0, (int)rounds, slots_publish, slots_work, 0);
    for (int q = 0; op && q < a->size; q++)
        op->tab[q] = (a->counts[q] + rounds - 1) / rounds;
}

void gcoll__node_allgatherv_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    if (a->total)
        gcoll__node_vop(s, a, 1, 1, cma_publish, cma_work, 0);
}
