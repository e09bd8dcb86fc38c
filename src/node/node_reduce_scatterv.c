/* Intra-node reduce_scatterv over the node channel, uneven blocks.
 * shm_slots: each round every rank stages a piece of each block (block q in R rounds of
 *   ceil(counts[q] / R) elements, R such that the pieces of all blocks fill a slot) and reduces
 *   its own block's piece of every slot in rank order: every block advances alike.
 * shm_cma: each rank reads its block from every peer's input (process_vm_readv) a chunk at a time
 *   and reduces it into its output.
 * In place the output overwrites the front of the input, which peers or later rounds still read
 * unless the rank's own block is first: then the result waits in scratch until the end. */
#include <string.h>

#include "base/reduce.h"
#include "node/node_op.h"

/* Where the result accumulates. */
static char *acc_of(gcoll__node_op_t *op)
{
    return op->scratch ? op->scratch : op->a.recvbuf;
}

static size_t staged(const gcoll__coll_args_t *a)
{
    return a->sendbuf == a->recvbuf && a->displs[a->rank] != 0 ? a->counts[a->rank] * a->esize : 0;
}

static gcoll_status_t finish(gcoll__node_op_t *op)
{
    memcpy(op->a.recvbuf, op->scratch, op->a.counts[op->a.rank] * op->a.esize);
    return GCOLL_SUCCESS;
}

/* Block q's piece of this round: its first element and its length (tab: the pieces' size, then
 * their offsets in the slot). */
static size_t piece(const gcoll__node_op_t *op, int q, size_t *len)
{
    size_t lo = (size_t)op->round * op->tab[q], c = op->a.counts[q];
    *len = lo < c ? (c - lo < op->tab[q] ? c - lo : op->tab[q]) : 0;
    return lo;
}

static gcoll_status_t slots_publish(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    char *slot = gcoll__shm_slot(op->shm, op->me, gcoll__node_seq(op));
    for (int q = 0; q < op->n; q++) {
        size_t len, lo = piece(op, q, &len);
        memcpy(slot + op->tab[op->n + q] * es, op->src + (op->a.displs[q] + lo) * es, len * es);
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t slots_work(gcoll__node_op_t *op)
{
    size_t es = op->a.esize, len, lo = piece(op, op->me, &len);
    if (len)
        gcoll__node_combine_slots(op, acc_of(op) + lo * es, op->tab[op->n + op->me] * es, len);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(gcoll__node_op_t *op)
{
    gcoll__shm_publish(op->shm, op->src, NULL);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_work(gcoll__node_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    int me = op->me, n = op->n;
    size_t es = op->a.esize, cnt = op->a.counts[me], step = gcoll__shm_info(shm)->chunk_bytes / es,
           mine = op->a.displs[me] * es;
    for (size_t c0 = 0; c0 < cnt; c0 += step) {
        size_t len = cnt - c0 < step ? cnt - c0 : step;
        char *d = acc_of(op) + c0 * es;
        const char *acc = op->src + mine + c0 * es; /* the first reduction reads the input */
        for (int q = 0; q < n; q++) {
            if (q == me)
                continue;
            GCOLL_CHECK(gcoll__shm_read(shm, q, gcoll__shm_tmp(shm, 0), gcoll__shm_peer_src(shm, q) + mine + c0 * es,
                                        len * es));
            gcoll__reduce(d, acc, gcoll__shm_tmp(shm, 0), len, op->a.dtype, op->a.op);
            acc = d;
        }
        if (acc != d) /* no peer: the input is the result */
            memcpy(d, acc, len * es);
        if (op->a.op == GCOLL_AVG)
            gcoll__kernels->div[op->a.dtype](d, len, (unsigned)n);
    }
    return GCOLL_SUCCESS;
}

void gcoll__node_reduce_scatterv_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size;
    size_t most = 0, fit = gcoll__shm_info(a->shm)->slot_bytes / a->esize, total = a->total;
    for (int q = 0; q < n; q++)
        most = a->counts[q] > most ? a->counts[q] : most;
    if (!total)
        return;
    /* with R rounds the pieces take at most total / R + n elements of a slot */
    size_t rounds = fit > (size_t)n ? (total + fit - (size_t)n - 1) / (fit - (size_t)n) : most;
    gcoll__node_op_t *op = gcoll__node_vop(s, a, 0, (int)rounds, slots_publish, slots_work, staged(a));
    if (!op)
        return;
    size_t at = 0;
    for (int q = 0; q < n; q++) {
        op->tab[q] = (a->counts[q] + rounds - 1) / rounds;
        op->tab[n + q] = at;
        at += op->tab[q];
    }
    if (op->scratch)
        op->finish = finish;
}

void gcoll__node_reduce_scatterv_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    if (!a->total)
        return;
    gcoll__node_op_t *op = gcoll__node_vop(s, a, 1, 1, cma_publish, cma_work, staged(a));
    if (op && op->scratch)
        op->finish = finish;
}
