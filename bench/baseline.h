/* The baseline: MPI's own collective on the same buffers, dtype and op, or on GPU buffers NCCL's
 * (nccl.h). MPI has no fp16 or bf16 reductions and no average, so those use a user-defined op
 * and a local division, as frameworks that reduce through MPI do. */
#ifndef GCOLL_BENCH_BASELINE_H
#define GCOLL_BENCH_BASELINE_H

#include <mpi.h>

#include "gcoll.h"
#include "metrics.h"
#include "nccl.h"

typedef struct {
    MPI_Comm comm;
    MPI_Datatype dt;
    MPI_Op op;
    int user_op; /* op was created here and must be freed */
    int nranks;
    nccl_side_t *nccl; /* set: NCCL runs the collectives instead of MPI */
} baseline_t;

int baseline_init(baseline_t *b, gcoll_dtype_t dtype, gcoll_op_t op);
void baseline_free(baseline_t *b);
/* NCCL's side for collective c (b is then for nothing else); -1 with why in err. */
int baseline_init_nccl(baseline_t *b, bench_coll_t c, gcoll_dtype_t dtype, gcoll_op_t op, int inplace, char *err,
                       size_t errlen);
/* Runs one collective; in place when sendbuf == recvbuf. Returns an MPI error code (NCCL: 0 or -1). */
int baseline_run(baseline_t *b, bench_coll_t c, const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                 gcoll_op_t op, int root);
/* The counts and displacements (elements) of a vector collective, in MPI's ints: allgatherv
 * (scount, rcounts, rdispls), reduce_scatterv (rcounts), alltoallv (all four arrays), gatherv
 * (scount; rcounts, rdispls at the root), scatterv (scounts, sdispls at the root; rcount). */
typedef struct {
    int scount, rcount;
    const int *scounts, *sdispls, *rcounts, *rdispls;
} baseline_v_t;
/* Runs a vector collective (MPI only); in place when sendbuf == recvbuf. An MPI error code. */
int baseline_runv(baseline_t *b, bench_coll_t c, const void *sendbuf, void *recvbuf, const baseline_v_t *v,
                  gcoll_dtype_t dtype, gcoll_op_t op, int root);
/* group's MPI side: k allreduces of count elements (of esize bytes) at k offsets of the buffers,
 * as MPI batches them: k MPI_Iallreduce and one MPI_Waitall. */
int baseline_batch(baseline_t *b, const void *sendbuf, void *recvbuf, size_t count, size_t esize, int k,
                   gcoll_dtype_t dtype, gcoll_op_t op);
/* MPI_Iallreduce and its wait, which also divides for GCOLL_AVG; out of place only. */
int baseline_iallreduce(baseline_t *b, const void *sendbuf, void *recvbuf, size_t count, MPI_Request *req);
int baseline_iallreduce_wait(baseline_t *b, MPI_Request *req, void *recvbuf, size_t count, gcoll_dtype_t dtype,
                             gcoll_op_t op);

#endif
