/* Collective kinds, the node map of a communicator's ranks, and the arguments every algorithm
 * builder receives. */
#ifndef GCOLL_COLL_H
#define GCOLL_COLL_H

#include <stddef.h>

#include "gcoll.h"

typedef enum {
    GCOLL_COLL_ALLREDUCE,
    GCOLL_COLL_REDUCE_SCATTER,
    GCOLL_COLL_ALLGATHER,
    GCOLL_COLL_BCAST,
    GCOLL_COLL_REDUCE,
    GCOLL_COLL_ALLTOALL,
    GCOLL_COLL_BARRIER,
    GCOLL_COLL_ALLGATHERV,
    GCOLL_COLL_REDUCE_SCATTERV,
    GCOLL_COLL_ALLTOALLV,
    GCOLL_COLL_GATHER,
    GCOLL_COLL_GATHERV,
    GCOLL_COLL_SCATTER,
    GCOLL_COLL_SCATTERV,
    GCOLL_COLL_COUNT,
    /* not a collective, no selection: a request of point-to-point messages (names and timelines) */
    GCOLL_COLL_P2P = GCOLL_COLL_COUNT
} gcoll__coll_t;

const char *gcoll__coll_name(int coll);

/* The vector collectives and the rooted ones built on blocks: a schedule is built even when this
 * rank's own count is 0, since its peers' may not be. */
static inline int gcoll__coll_vector(int coll)
{
    return coll >= GCOLL_COLL_ALLGATHERV && coll <= GCOLL_COLL_SCATTERV;
}

/* Where the ranks of a communicator live. Hosts are numbered in the order of their first rank;
 * by_host lists the ranks host after host, each host's in local-index order. */
typedef struct {
    int nhosts;
    int uniform; /* every host holds the same number of ranks */
    int *host;   /* host number of each rank */
    int *local;  /* each rank's index among the ranks of its host */
    int *first;  /* nhosts + 1 offsets into by_host */
    int *by_host;
    /* The host's first rank's, taken by every rank of one host at creation: inputs to choices
     * that change which messages the ranks exchange, so that no setting or topology seen
     * differently can split them (filled where every rank shares one host) */
    int adasum_push; /* GCOLL_ADASUM_PUSH: 0 auto, 1 on, 2 off */
    size_t l3;       /* bytes of one L3 cache (hwloc), 0 when unknown */
    /* The cores of a host whose ranks outnumber them (the fewest of any such host, each host's
     * as its first rank counts them), known to every rank: the cost model queues the messages'
     * core time on them. 0: every rank has a core. */
    int cores;
} gcoll__nodemap_t;

/* What a schedule builder needs. count is the per-collective count of the public call
 * (recvcount for reduce_scatter, sendcount for allgather and allgatherv and gatherv, recvcount
 * for scatterv, count for gather and scatter; the total for reduce_scatterv). */
typedef struct {
    gcoll__coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    int root;
    int rank, size;
    size_t esize;                /* bytes per element */
    struct gcoll__shm *shm;      /* the node's shared-memory channel when every rank shares a host */
    const gcoll__nodemap_t *map; /* NULL inside a sub-group (see gcoll__sched_t.peermap) */
    struct gcoll__links *links;  /* the communicator's cost-model links and picks */
    /* the communicator's own selection table (gcoll_comm_set_algorithm); NULL: GCOLL_<COLL>'s */
    const struct gcoll__algo_table *table;
    /* allreduce compression (gcoll_attr_t); residual: TOPK error feedback, count floats or NULL */
    gcoll_compress_t compress;
    double density;
    float *residual;
    /* The vector collectives' blocks, in elements, one per rank: counts and displs in recvbuf
     * (allgatherv, reduce_scatterv, alltoallv, gatherv at the root), scounts and sdispls in
     * sendbuf (alltoallv, scatterv at the root). Displacements are never NULL here: the front
     * packs them when the caller passed NULL. The arrays are read while the schedule is built. */
    const size_t *counts, *displs;
    const size_t *scounts, *sdispls;
    size_t total;  /* reduce_scatterv, allgatherv: the sum of counts */
    double premul; /* GCOLL_PREMUL_SUM: this rank's input is multiplied by it before the sum */
} gcoll__coll_args_t;

#endif
