/* Intra-node allreduce over the node channel. shm_slots: every rank copies its vector into its
 * slot and reduces all n slots itself, in rank order (one synchronization; small vectors).
 * shm_cma: each rank reduces its 1/n slice, reading the peers' slices with process_vm_readv a
 * chunk at a time, and writes it into every rank's output (two synchronizations; large vectors). */
#include <string.h>

#include "base/copy.h"

#include "base/reduce.h"
#include "node/node_op.h"

static gcoll_status_t slots_publish(gcoll__node_op_t *op)
{
    size_t es = op->a.esize;
    memcpy(gcoll__node_input(op, op->me), op->src + gcoll__node_lo(op) * es, gcoll__node_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t slots_work(gcoll__node_op_t *op)
{
    gcoll__node_combine_slots(op, (char *)op->a.recvbuf + gcoll__node_lo(op) * op->a.esize, 0, gcoll__node_len(op));
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(gcoll__node_op_t *op)
{
    gcoll__shm_publish(op->shm, op->src, op->a.recvbuf);
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_work(gcoll__node_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    int me = op->me, n = op->n;
    size_t es = op->a.esize, off = gcoll__blk_off(op->a.count, n, me), cnt = gcoll__blk_cnt(op->a.count, n, me);
    size_t step = gcoll__shm_info(shm)->chunk_bytes / es;
    char *in = gcoll__shm_tmp(shm, 0), *acc = gcoll__shm_tmp(shm, 1);
    for (size_t c0 = 0; c0 < cnt; c0 += step) {
        size_t len = cnt - c0 < step ? cnt - c0 : step, at = (off + c0) * es;
        const char *first = op->src + at; /* the first reduction reads the input, sparing a copy */
        for (int q = 0; q < n; q++) {
            if (q == me)
                continue;
            GCOLL_CHECK(gcoll__shm_read(shm, q, in, gcoll__shm_peer_src(shm, q) + at, len * es));
            gcoll__reduce(acc, first, in, len, op->a.dtype, op->a.op);
            first = acc;
        }
        if (op->a.op == GCOLL_AVG)
            gcoll__kernels->div[op->a.dtype](acc, len, (unsigned)n);
        gcoll__copy_stream((char *)op->a.recvbuf + at, acc, len * es);
        for (int q = 0; q < n; q++)
            if (q != me)
                GCOLL_CHECK(gcoll__shm_write(shm, q, gcoll__shm_peer_dst(shm, q) + at, acc, len * es));
    }
    return GCOLL_SUCCESS;
}

void gcoll__node_allreduce_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op_t *op = gcoll__node_op(s, a, 0, 1, slots_publish, slots_work, 0);
    if (op)
        op->tiny = a->count * a->esize <= GCOLL_SHM_INLINE;
}

void gcoll__node_allreduce_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__node_op(s, a, 1, 1, cma_publish, cma_work, 0);
}
