/* See baseline.h: MPI's (or on GPU buffers NCCL's) collective on the benchmark's own buffers,
 * with the user-defined fp16/bf16 ops and the local AVG division that MPI lacks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"

static float h2f(uint16_t h, int bf16)
{
    if (bf16) {
        uint32_t b = (uint32_t)h << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

static uint16_t f2h(float f, int bf16)
{
    if (bf16) {
        uint32_t b;
        memcpy(&b, &f, 4);
        if ((b & 0x7fffffff) > 0x7f800000)
            return (uint16_t)((b >> 16) | 0x40);
        return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
    }
    _Float16 x = (_Float16)f;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}

/* MPI user ops get no context, so each (16-bit type, op) pair is its own function. */
static void half_op(const void *in, void *inout, int len, int bf16, int op)
{
    for (int i = 0; i < len; i++) {
        uint16_t a, b;
        memcpy(&a, (const char *)in + 2 * i, 2);
        memcpy(&b, (char *)inout + 2 * i, 2);
        float x = h2f(a, bf16), y = h2f(b, bf16), r;
        switch (op) {
        case GCOLL_PROD: r = x * y; break;
        case GCOLL_MIN: r = x < y ? x : y; break;
        case GCOLL_MAX: r = x > y ? x : y; break;
        default: r = x + y; break;
        }
        uint16_t o = f2h(r, bf16);
        memcpy((char *)inout + 2 * i, &o, 2);
    }
}

#define HALF_OP(name, bf16, op)                                         \
    static void name(void *in, void *inout, int *len, MPI_Datatype *dt) \
    {                                                                   \
        (void)dt;                                                       \
        half_op(in, inout, *len, bf16, op);                             \
    }
HALF_OP(f16_sum, 0, GCOLL_SUM)
HALF_OP(f16_prod, 0, GCOLL_PROD)
HALF_OP(f16_min, 0, GCOLL_MIN)
HALF_OP(f16_max, 0, GCOLL_MAX)
HALF_OP(bf16_sum, 1, GCOLL_SUM)
HALF_OP(bf16_prod, 1, GCOLL_PROD)
HALF_OP(bf16_min, 1, GCOLL_MIN)
HALF_OP(bf16_max, 1, GCOLL_MAX)

int baseline_init(baseline_t *b, gcoll_dtype_t dtype, gcoll_op_t op)
{
    static MPI_User_function *const half_fns[2][4] = {{f16_sum, f16_prod, f16_min, f16_max},
                                                      {bf16_sum, bf16_prod, bf16_min, bf16_max}};
    /* 8-bit floats only move (as bytes): the parser refuses them with a reduction */
    const MPI_Datatype dts[GCOLL_DTYPE_COUNT] = {
        [GCOLL_INT8] = MPI_INT8_T,         [GCOLL_UINT8] = MPI_UINT8_T,    [GCOLL_INT16] = MPI_INT16_T,
        [GCOLL_UINT16] = MPI_UINT16_T,     [GCOLL_INT32] = MPI_INT32_T,    [GCOLL_UINT32] = MPI_UINT32_T,
        [GCOLL_INT64] = MPI_INT64_T,       [GCOLL_UINT64] = MPI_UINT64_T,  [GCOLL_FLOAT8_E4M3] = MPI_UINT8_T,
        [GCOLL_FLOAT8_E5M2] = MPI_UINT8_T, [GCOLL_FLOAT16] = MPI_UINT16_T, [GCOLL_BFLOAT16] = MPI_UINT16_T,
        [GCOLL_FLOAT32] = MPI_FLOAT,       [GCOLL_FLOAT64] = MPI_DOUBLE};
    const MPI_Op ops[4] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    int base = op == GCOLL_AVG ? GCOLL_SUM : (int)op;
    memset(b, 0, sizeof(*b));
    if (dts[dtype] == MPI_DATATYPE_NULL)
        return MPI_ERR_TYPE;
    b->dt = dts[dtype];
    b->op = ops[base];
    if (dtype == GCOLL_FLOAT16 || dtype == GCOLL_BFLOAT16) {
        int rc = MPI_Op_create(half_fns[dtype == GCOLL_BFLOAT16][base], 1, &b->op);
        if (rc != MPI_SUCCESS)
            return rc;
        b->user_op = 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &b->nranks);
    return MPI_Comm_dup(MPI_COMM_WORLD, &b->comm);
}

int baseline_init_nccl(baseline_t *b, bench_coll_t c, gcoll_dtype_t dtype, gcoll_op_t op, int inplace, char *err,
                       size_t errlen)
{
    memset(b, 0, sizeof(*b));
    b->nccl = nccl_open(c, dtype, op, inplace, err, errlen);
    return b->nccl ? 0 : -1;
}

void baseline_free(baseline_t *b)
{
    if (b->nccl) {
        nccl_close(b->nccl);
        return;
    }
    if (b->user_op)
        MPI_Op_free(&b->op);
    MPI_Comm_free(&b->comm);
}

/* GCOLL_AVG in MPI terms: the sum, then a division by the rank count. */
static void divide(void *buf, size_t n, gcoll_dtype_t d, int k)
{
    for (size_t i = 0; i < n; i++) {
        char *p = (char *)buf + i * gcoll_dtype_size(d);
        switch (d) {
        case GCOLL_INT8: {
            int8_t v;
            memcpy(&v, p, 1);
            v = (int8_t)(v / k);
            memcpy(p, &v, 1);
            break;
        }
        case GCOLL_UINT8: {
            uint8_t v;
            memcpy(&v, p, 1);
            v = (uint8_t)(v / k);
            memcpy(p, &v, 1);
            break;
        }
        case GCOLL_INT32: {
            int32_t v;
            memcpy(&v, p, 4);
            v /= k;
            memcpy(p, &v, 4);
            break;
        }
        case GCOLL_INT16: {
            int16_t v;
            memcpy(&v, p, 2);
            v = (int16_t)(v / k);
            memcpy(p, &v, 2);
            break;
        }
        case GCOLL_UINT16: {
            uint16_t v;
            memcpy(&v, p, 2);
            v = (uint16_t)(v / k);
            memcpy(p, &v, 2);
            break;
        }
        case GCOLL_UINT32: {
            uint32_t v;
            memcpy(&v, p, 4);
            v /= (uint32_t)k;
            memcpy(p, &v, 4);
            break;
        }
        case GCOLL_INT64: {
            int64_t v;
            memcpy(&v, p, 8);
            v /= k;
            memcpy(p, &v, 8);
            break;
        }
        case GCOLL_UINT64: {
            uint64_t v;
            memcpy(&v, p, 8);
            v /= (uint64_t)k;
            memcpy(p, &v, 8);
            break;
        }
        case GCOLL_FLOAT16:
        case GCOLL_BFLOAT16: {
            uint16_t h;
            memcpy(&h, p, 2);
            h = f2h(h2f(h, d == GCOLL_BFLOAT16) / (float)k, d == GCOLL_BFLOAT16);
            memcpy(p, &h, 2);
            break;
        }
        case GCOLL_FLOAT32: {
            float v;
            memcpy(&v, p, 4);
            v /= (float)k;
            memcpy(p, &v, 4);
            break;
        }
        default: {
            double v;
            memcpy(&v, p, 8);
            v /= k;
            memcpy(p, &v, 8);
            break;
        }
        }
    }
}

int baseline_run(baseline_t *b, bench_coll_t c, const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                 gcoll_op_t op, int root)
{
    if (b->nccl)
        return nccl_run(b->nccl, sendbuf, recvbuf, count, root);
    int n = (int)count, rank, rc;
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    MPI_Comm_rank(b->comm, &rank);
    switch (c) {
    case B_ALLREDUCE:
        rc = MPI_Allreduce(sb, recvbuf, n, b->dt, b->op, b->comm);
        if (op == GCOLL_AVG)
            divide(recvbuf, count, dtype, b->nranks);
        return rc;
    case B_REDUCE_SCATTER:
        rc = MPI_Reduce_scatter_block(sb, recvbuf, n, b->dt, b->op, b->comm);
        if (op == GCOLL_AVG)
            divide(recvbuf, count, dtype, b->nranks);
        return rc;
    case B_REDUCE:
        rc = MPI_Reduce(rank == root ? sb : sendbuf, recvbuf, n, b->dt, b->op, root, b->comm);
        if (op == GCOLL_AVG && rank == root)
            divide(recvbuf, count, dtype, b->nranks);
        return rc;
    case B_ALLGATHER: return MPI_Allgather(sb, n, b->dt, recvbuf, n, b->dt, b->comm);
    case B_ALLTOALL: return MPI_Alltoall(sb, n, b->dt, recvbuf, n, b->dt, b->comm);
    case B_BCAST: return MPI_Bcast(recvbuf, n, b->dt, root, b->comm);
    case B_GATHER: return MPI_Gather(rank == root ? sb : sendbuf, n, b->dt, recvbuf, n, b->dt, root, b->comm);
    case B_SCATTER: /* in place at the root: the root's block stays in sendbuf */
        return MPI_Scatter(sendbuf, n, b->dt, rank == root && sendbuf == recvbuf ? MPI_IN_PLACE : recvbuf, n, b->dt,
                           root, b->comm);
    case B_SENDRECV: {
        int size;
        MPI_Comm_size(b->comm, &size);
        return MPI_Sendrecv(sendbuf, n, b->dt, (rank + 1) % size, 0, recvbuf, n, b->dt, (rank + size - 1) % size, 0,
                            b->comm, MPI_STATUS_IGNORE);
    }
    default: return MPI_Barrier(b->comm);
    }
}

int baseline_runv(baseline_t *b, bench_coll_t c, const void *sendbuf, void *recvbuf, const baseline_v_t *v,
                  gcoll_dtype_t dtype, gcoll_op_t op, int root)
{
    int rank, rc;
    const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    MPI_Comm_rank(b->comm, &rank);
    switch (c) {
    case B_ALLGATHERV: return MPI_Allgatherv(sb, v->scount, b->dt, recvbuf, v->rcounts, v->rdispls, b->dt, b->comm);
    case B_REDUCE_SCATTERV:
        rc = MPI_Reduce_scatter(sb, recvbuf, v->rcounts, b->dt, b->op, b->comm);
        if (op == GCOLL_AVG)
            divide(recvbuf, (size_t)v->rcounts[rank], dtype, b->nranks);
        return rc;
    case B_ALLTOALLV:
        return MPI_Alltoallv(sb, v->scounts, v->sdispls, b->dt, recvbuf, v->rcounts, v->rdispls, b->dt, b->comm);
    case B_GATHERV:
        return MPI_Gatherv(rank == root ? sb : sendbuf, v->scount, b->dt, recvbuf, v->rcounts, v->rdispls, b->dt, root,
                           b->comm);
    default: /* scatterv; in place at the root: the root's block stays in sendbuf */
        return MPI_Scatterv(sendbuf, v->scounts, v->sdispls, b->dt,
                            rank == root && sendbuf == recvbuf ? MPI_IN_PLACE : recvbuf, v->rcount, b->dt, root,
                            b->comm);
    }
}

int baseline_batch(baseline_t *b, const void *sendbuf, void *recvbuf, size_t count, size_t esize, int k,
                   gcoll_dtype_t dtype, gcoll_op_t op)
{
    MPI_Request *reqs = malloc(sizeof(*reqs) * (size_t)k);
    if (!reqs)
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < k && rc == MPI_SUCCESS; i++) {
        size_t off = (size_t)i * count * esize;
        const void *sb = sendbuf == recvbuf ? MPI_IN_PLACE : (const char *)sendbuf + off;
        if ((rc = MPI_Iallreduce(sb, (char *)recvbuf + off, (int)count, b->dt, b->op, b->comm, &reqs[i])) !=
            MPI_SUCCESS)
            k = i; /* wait for those started */
    }
    int wrc = MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE);
    free(reqs);
    if (op == GCOLL_AVG)
        divide(recvbuf, count * (size_t)k, dtype, b->nranks);
    return rc != MPI_SUCCESS ? rc : wrc;
}

int baseline_iallreduce(baseline_t *b, const void *sendbuf, void *recvbuf, size_t count, MPI_Request *req)
{
    return MPI_Iallreduce(sendbuf, recvbuf, (int)count, b->dt, b->op, b->comm, req);
}

int baseline_iallreduce_wait(baseline_t *b, MPI_Request *req, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                             gcoll_op_t op)
{
    int rc = MPI_Wait(req, MPI_STATUS_IGNORE);
    if (op == GCOLL_AVG)
        divide(recvbuf, count, dtype, b->nranks);
    return rc;
}
