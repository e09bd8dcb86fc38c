/* Intra-node reduce_scatter over the node channel. shm_slots: every rank stages all n blocks (a
 * slot-sized piece of each per round) and reduces block `rank` of every slot, in rank order.
 * shm_cma: each rank reads its block from every peer's input (process_vm_readv) a chunk at a time
 * and reduces it into its output; in place, the result waits in scratch until every peer has read. */
#include <string.h>

#include "base/reduce.h"
#include "node/node_op.h"

static gcoll_status_t slots_work(gcoll__node_op_t *op)
{
    size_t es = op->a.esize, len = gcoll__node_len(op);
    gcoll__node_combine_slots(op, (char *)op->a.recvbuf + gcoll__node_lo(op) * es, (size_t)op->me * len * es, len);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(gcoll__node_op_t *op)
{
    gcoll__shm_publish(op->shm, op->src, NULL);
    return GCOLL_SUCCESS;
}

/* Where the result accumulates: the output, or scratch when that would overwrite input that
 * peers still read (in place, on every rank but 0). */
static char *acc_of(gcoll__node_op_t *op)
{
    return op->scratch ? op->scratch : op->a.recvbuf;
}

static gcoll_status_t cma_work(gcoll__node_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    int me = op->me, n = op->n;
    size_t es = op->a.esize, cnt = op->a.count, step = gcoll__shm_info(shm)->chunk_bytes / es,
           mine = (size_t)me * cnt * es;
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
        if (op->a.op == GCOLL_AVG)
            gcoll__kernels->div[op->a.dtype](d, len, (unsigned)n);
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_finish(gcoll__node_op_t *op)
{
    memcpy(op->a.recvbuf, op->scratch, op->a.count * op->a.esize);
    return GCOLL_SUCCESS;
}

void gcoll__node_reduce_scatter_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op(s, a, 0, (size_t)a->size, gcoll__node_stage_blocks, slots_work, 0);
}

void gcoll__node_reduce_scatter_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int staged = a->sendbuf == a->recvbuf && a->rank != 0;
    gcoll__node_op_t *op = gcoll__node_op(s, a, 1, 1, cma_publish, cma_work, staged ? a->count * a->esize : 0);
    if (op && staged)
        op->finish = cma_finish;
}
