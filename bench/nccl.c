/* See nccl.h. The few NCCL declarations used are written here (ncclUniqueId is 128 bytes, the
 * enums' values are NCCL's), so building needs no NCCL headers. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devbuf.h"
#include "nccl.h"

typedef struct {
    // cppcheck-suppress unusedStructMember ; ncclUniqueId's layout: only NCCL reads the bytes
    char internal[128];
} nccl_uid_t;

static struct {
    int (*get_unique_id)(nccl_uid_t *);
    int (*comm_init_rank)(void **, int, nccl_uid_t, int);
    int (*comm_destroy)(void *);
    const char *(*error_string)(int);
    int (*all_reduce)(const void *, void *, size_t, int, int, void *, void *);
    int (*reduce_scatter)(const void *, void *, size_t, int, int, void *, void *);
    int (*all_gather)(const void *, void *, size_t, int, void *, void *);
    int (*broadcast)(const void *, void *, size_t, int, int, void *, void *);
    int (*reduce)(const void *, void *, size_t, int, int, int, void *, void *);
    int (*send)(const void *, size_t, int, int, void *, void *);
    int (*recv)(void *, size_t, int, int, void *, void *);
    int (*group_start)(void);
    int (*group_end)(void);
} nc;

struct nccl_side {
    void *comm;
    bench_coll_t coll;
    int dt, op, rank, size;
    size_t esize;
};

/* Loads the library; NULL, or why not. */
static const char *load(void)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW);
    if (!h)
        return "libnccl.so.2 not found";
    struct {
        void **slot;
        const char *sym;
    } syms[] = {{(void **)&nc.get_unique_id, "ncclGetUniqueId"},
                {(void **)&nc.comm_init_rank, "ncclCommInitRank"},
                {(void **)&nc.comm_destroy, "ncclCommDestroy"},
                {(void **)&nc.error_string, "ncclGetErrorString"},
                {(void **)&nc.all_reduce, "ncclAllReduce"},
                {(void **)&nc.reduce_scatter, "ncclReduceScatter"},
                {(void **)&nc.all_gather, "ncclAllGather"},
                {(void **)&nc.broadcast, "ncclBroadcast"},
                {(void **)&nc.reduce, "ncclReduce"},
                {(void **)&nc.send, "ncclSend"},
                {(void **)&nc.recv, "ncclRecv"},
                {(void **)&nc.group_start, "ncclGroupStart"},
                {(void **)&nc.group_end, "ncclGroupEnd"}};
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].sym)))
            return "libnccl.so.2 lacks a function (NCCL 2.10 or later is needed)";
    return NULL;
}

/* Why NCCL cannot run c as gcoll_bench runs it, or NULL. */
static const char *unfit(bench_coll_t c, int inplace)
{
    if (c == B_BARRIER || c == B_ADASUM || c >= B_ALLGATHERV)
        return "NCCL has no such collective (gcoll_bench runs NCCL's own collectives only)";
    if (inplace && (c == B_ALLTOALL || c == B_REDUCE_SCATTER))
        return "NCCL's in-place form differs (alltoall has none; reduce_scatter leaves the block at the rank's offset)";
    return NULL;
}

nccl_side_t *nccl_open(bench_coll_t c, gcoll_dtype_t dtype, gcoll_op_t op, int inplace, char *err, size_t errlen)
{
    /* ncclDataType_t and ncclRedOp_t by gcoll's dtype and op */
    static const int dts[GCOLL_DTYPE_COUNT] = {
        [GCOLL_INT8] = 0,         [GCOLL_UINT8] = 1,        [GCOLL_INT16] = -1,  [GCOLL_UINT16] = -1,
        [GCOLL_INT32] = 2,        [GCOLL_UINT32] = 3,       [GCOLL_INT64] = 4,   [GCOLL_UINT64] = 5,
        [GCOLL_FLOAT8_E4M3] = 10, [GCOLL_FLOAT8_E5M2] = 11, [GCOLL_FLOAT16] = 6, [GCOLL_BFLOAT16] = 9,
        [GCOLL_FLOAT32] = 7,      [GCOLL_FLOAT64] = 8}; /* -1: NCCL has no such type */
    static const int ops[] = {0, 1, 3, 2, 4};           /* sum prod min max avg */
    const char *why = unfit(c, inplace);
    if (!why && dts[dtype] < 0)
        why = "NCCL has no 16-bit integer type";
    if (!why)
        why = load();
    int ok = why == NULL, all = 0, rank, size;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        snprintf(err, errlen, "%s", why ? why : "another rank cannot load NCCL");
        return NULL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nccl_uid_t id;
    memset(&id, 0, sizeof(id));
    int e = rank == 0 ? nc.get_unique_id(&id) : 0;
    MPI_Bcast(&e, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (e) {
        snprintf(err, errlen, "ncclGetUniqueId: %s", nc.error_string(e));
        return NULL;
    }
    MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    nccl_side_t *n = calloc(1, sizeof(*n));
    e = n ? nc.comm_init_rank(&n->comm, size, id, rank) : 1;
    ok = e == 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) { /* e.g. two ranks on one GPU, which NCCL refuses */
        snprintf(err, errlen, "ncclCommInitRank: %s", e ? nc.error_string(e) : "failed on another rank");
        if (n && ok)
            nc.comm_destroy(n->comm);
        free(n);
        return NULL;
    }
    n->coll = c;
    n->dt = dts[dtype];
    n->op = ops[op];
    n->rank = rank;
    n->size = size;
    n->esize = gcoll_dtype_size(dtype);
    return n;
}

int nccl_run(nccl_side_t *n, const void *sendbuf, void *recvbuf, size_t count, int root)
{
    size_t blk = count * n->esize;
    int e = 0;
    switch (n->coll) {
    case B_ALLREDUCE: e = nc.all_reduce(sendbuf, recvbuf, count, n->dt, n->op, n->comm, NULL); break;
    case B_REDUCE_SCATTER: e = nc.reduce_scatter(sendbuf, recvbuf, count, n->dt, n->op, n->comm, NULL); break;
    case B_ALLGATHER: /* in place: NCCL's send buffer is the rank's block of the output */
        e = nc.all_gather(sendbuf == recvbuf ? (char *)recvbuf + (size_t)n->rank * blk : sendbuf, recvbuf, count, n->dt,
                          n->comm, NULL);
        break;
    case B_BCAST: e = nc.broadcast(recvbuf, recvbuf, count, n->dt, root, n->comm, NULL); break;
    case B_REDUCE: e = nc.reduce(sendbuf, recvbuf, count, n->dt, n->op, root, n->comm, NULL); break;
    case B_ALLTOALL:
        nc.group_start();
        for (int q = 0; q < n->size && !e; q++) {
            e = nc.send((const char *)sendbuf + (size_t)q * blk, count, n->dt, q, n->comm, NULL);
            if (!e)
                e = nc.recv((char *)recvbuf + (size_t)q * blk, count, n->dt, q, n->comm, NULL);
        }
        if (nc.group_end() && !e)
            e = 1;
        break;
    default: return -1;
    }
    if (e) {
        fprintf(stderr, "gcoll_bench [rank %d]: NCCL: %s\n", n->rank, nc.error_string(e));
        return -1;
    }
    return devbuf_sync(); /* like gcoll's blocking call, the result is in place when it returns */
}

void nccl_close(nccl_side_t *n)
{
    if (n)
        nc.comm_destroy(n->comm);
    free(n);
}
