/* Intra-node allreduce over the node channel. shm_slots: every rank copies its vector into its
 * slot and reduces all n slots itself, in rank order (one synchronization; small vectors).
 * shm_cma: each rank reduces its 1/n slice, reading the peers' slices with process_vm_readv a
 * chunk at a time, and writes it into every rank's output (two synchronizations; large vectors). */
#include <string.h>

#include "base/copy.h"

#include "base/reduce.h"
#include "collectives/shm_op.h"

static gcoll_status_t slots_publish(shm_op_t *op)
{
    size_t es = op->a.esize;
    memcpy(shm_input(op, op->shm->me), op->src + shm_lo(op) * es, shm_len(op) * es);
    return GCOLL_SUCCESS;
}

static gcoll_status_t slots_work(shm_op_t *op)
{
    gcoll__shm_reduce_slots(op, (char *)op->a.recvbuf + shm_lo(op) * op->a.esize, 0, shm_len(op));
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_publish(shm_op_t *op)
{
    gcoll__shm_ctrl_t *c = &op->shm->ctrl[op->shm->me];
    c->src = (uint64_t)(uintptr_t)op->src;
    c->dst = (uint64_t)(uintptr_t)op->a.recvbuf;
    return GCOLL_SUCCESS;
}

static gcoll_status_t cma_work(shm_op_t *op)
{
    gcoll__shm_t *shm = op->shm;
    int me = shm->me, n = shm->n;
    size_t es = op->a.esize, off = gcoll__blk_off(op->a.count, n, me), cnt = gcoll__blk_cnt(op->a.count, n, me);
    size_t step = shm->chunk_bytes / es;
    char *in = shm->tmp, *acc = shm->tmp + shm->tmp_stride;
    for (size_t c0 = 0; c0 < cnt; c0 += step) {
        size_t len = cnt - c0 < step ? cnt - c0 : step, at = (off + c0) * es;
        const char *first = op->src + at; /* the first reduction reads the input, sparing a copy */
        for (int q = 0; q < n; q++) {
            if (q == me)
                continue;
            GCOLL_CHECK(gcoll__shm_read(shm, q, in, shm->ctrl[q].src + at, len * es));
            gcoll__reduce(acc, first, in, len, op->a.dtype, op->a.op);
            first = acc;
        }
        if (op->a.op == GCOLL_AVG)
            gcoll__kernels->div[op->a.dtype](acc, len, (unsigned)n);
        gcoll__copy_stream((char *)op->a.recvbuf + at, acc, len * es);
        for (int q = 0; q < n; q++)
            if (q != me)
                GCOLL_CHECK(gcoll__shm_write(shm, q, shm->ctrl[q].dst + at, acc, len * es));
    }
    return GCOLL_SUCCESS;
}

void gcoll__allreduce_shm_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    shm_op_t *op = gcoll__shm_op(s, a, 0, 1, slots_publish, slots_work, 0);
    if (op)
        op->tiny = a->count * a->esize <= GCOLL_SHM_INLINE;
}

void gcoll__allreduce_shm_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__shm_op(s, a, 1, 1, cma_publish, cma_work, 0);
}
