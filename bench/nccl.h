/* NCCL's own collectives as gcoll_bench's baseline on GPU buffers (-d cuda): libnccl.so.2 is
 * loaded with dlopen, so the benchmark builds and runs where NCCL is absent. */
#ifndef GCOLL_BENCH_NCCL_H
#define GCOLL_BENCH_NCCL_H

#include <stddef.h>

#include "gcoll.h"
#include "metrics.h"

typedef struct nccl_side nccl_side_t;

/* A communicator over MPI_COMM_WORLD (collective) for collective c of dtype and op; NULL with
 * why in err where NCCL is missing, has no such call, or refuses (ranks sharing a GPU). */
nccl_side_t *nccl_open(bench_coll_t c, gcoll_dtype_t dtype, gcoll_op_t op, int inplace, char *err, size_t errlen);
/* One collective on the same buffers as gcoll's, waited for; 0 on success. root: bcast, reduce. */
int nccl_run(nccl_side_t *n, const void *sendbuf, void *recvbuf, size_t count, int root);
void nccl_close(nccl_side_t *n);

#endif
