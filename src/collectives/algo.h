/* What every algorithm file shares: the builder signature, the block partition of a vector over
 * ranks (the first count % n blocks hold one element more), and the registry of every algorithm
 * (GCOLL_ALGOS), Adasum's and top-k's included. */
#ifndef GCOLL_ALGO_H
#define GCOLL_ALGO_H

#include "base/coll.h"
#include "base/schedule.h"

typedef void (*gcoll__build_fn)(gcoll__sched_t *s, const gcoll__coll_args_t *a);

static inline size_t gcoll__blk_cnt(size_t count, int n, int i)
{
    return count / (size_t)n + ((size_t)i < count % (size_t)n);
}

static inline size_t gcoll__blk_off(size_t count, int n, int i)
{
    size_t q = count / (size_t)n, r = count % (size_t)n;
    return (size_t)i * q + ((size_t)i < r ? (size_t)i : r);
}

static inline int gcoll__mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* The input of a reducing collective: the output itself when the call is in place. */
static inline const char *gcoll__input(const gcoll__coll_args_t *a)
{
    return a->sendbuf == a->recvbuf ? (const char *)a->recvbuf : (const char *)a->sendbuf;
}

/* A lone rank's allreduce: its input is the result. Says whether it was alone. */
static inline int gcoll__alone(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    if (a->size == 1)
        gcoll__sched_copy(s, a->recvbuf, gcoll__input(a), a->count * a->esize);
    return a->size == 1;
}

/* Pipelined transfers (pipeline.c). A block of cnt elements goes in slices of GCOLL_CHUNK_BYTES
 * (whole elements), GCOLL_PIPELINE_DEPTH slices a round: group g is the slices of round g. */
size_t gcoll__pipe_groups(size_t cnt, size_t es);
/* One round: receives group rg of the rn elements at rbuf from `from`, and sends group sg of the
 * sn elements at sbuf to `to` (nothing past a block's end). With dst set, each received slice is
 * reduced as soon as it lands, dst[i] = rbuf[i] op own[i], while the round's sends are still in
 * flight: dst must not overlap what they send. */
void gcoll__pipe_round(gcoll__sched_t *s, int to, const void *sbuf, size_t sn, size_t sg, int from, void *rbuf,
                       size_t rn, size_t rg, void *dst, const void *own, size_t es);
/* A whole exchange: the rounds of every group of both blocks (a count of 0: nothing that way). */
void gcoll__pipe(gcoll__sched_t *s, int to, const void *sbuf, size_t sn, int from, void *rbuf, size_t rn, void *dst,
                 const void *own, size_t es);

/* The vector collectives (vector.c). Element offsets of blocks packed back to back in rank order:
 * pre[i] = counts[0] + ... + counts[i-1], n + 1 entries (scratch: a table, built dry too). */
size_t *gcoll__prefix(gcoll__sched_t *s, const size_t *counts, int n);
/* The streaming ring of uneven blocks (allgatherv, reduce_scatterv). Every block is cut in pieces
 * (gcoll__vring_slice), G of them a group (gcoll__vring_group); its owner sends a group a round,
 * and each rank forwards to the right the groups it receives, a round later, so every block
 * streams around the ring at once and a large one costs what it weighs, where a lock-step ring
 * holds each of its n - 1 steps for the largest block. Rank r receives the block own - h from h
 * hops away (h = 1 .. n - 1) and forwards all but the last. Group g crosses hop h in round
 * g + h - 1 (on more than GCOLL_PIPELINE_DEPTH + 1 ranks the hops take turns over
 * ceil((n - 1) / depth) rounds, so a link carries at most depth groups a round) on both sides of
 * the link, so rounds match and nothing waits on a later round. */
typedef struct {
    int hop;      /* 0: the own block; else the hops it has come */
    int blk;      /* the block */
    size_t k;     /* the piece's index in its block */
    size_t off;   /* its first element in the block */
    size_t len;   /* elements */
    size_t round; /* the round it crosses the link in */
} gcoll__vpiece_t;
typedef struct gcoll__vring gcoll__vring_t;
struct gcoll__vring {
    int n, own, left, right;
    const size_t *counts; /* elements of each block */
    size_t es;            /* bytes per element */
    /* adds the receive of an incoming piece and whatever must follow it (listed before the round's
     * sends), and the send of a piece: its own (hop 0) or one received the round before */
    void (*recv)(gcoll__sched_t *s, gcoll__vring_t *v, const gcoll__vpiece_t *p);
    void (*send)(gcoll__sched_t *s, gcoll__vring_t *v, const gcoll__vpiece_t *p);
    void *arg;
    size_t slice; /* elements per piece: set by gcoll__vring_build */
};
void gcoll__vring_build(gcoll__sched_t *s, gcoll__vring_t *v);
/* Elements per piece: at most GCOLL_CHUNK_BYTES, smaller for small totals so that a large block
 * still streams; and pieces of each block per round (1; GCOLL_PIPELINE_DEPTH on two ranks). */
size_t gcoll__vring_slice(const size_t *counts, int n, size_t es);
size_t gcoll__vring_group(int n);

/* Messages a rank keeps in flight at once where it has many peers (the scattered alltoallv, the
 * linear gathers and scatters): every peer at once up to this, in rounds of this many beyond.
 * 32 is MPICH's throttle for the same purpose: past it, more concurrent messages add memory for
 * unexpected arrivals and contention at the receivers, and no overlap. */
#define GCOLL__WINDOW 32

/* Whether an algorithm can serve these arguments (NULL: always). */
typedef int (*gcoll__usable_fn)(const gcoll__coll_args_t *a);
int gcoll__node_usable(const gcoll__coll_args_t *a);
int gcoll__node_cma_usable(const gcoll__coll_args_t *a);
int gcoll__node_alltoallv_usable(const gcoll__coll_args_t *a);
int gcoll__hier_usable(const gcoll__coll_args_t *a);
int gcoll__adasum_slots_usable(const gcoll__coll_args_t *a);
int gcoll__adasum_hier_usable(const gcoll__coll_args_t *a);

/* Adasum's builders (adasum.h) take the shape of the fused tensors besides the arguments. */
struct gcoll__adasum_shape;
typedef void (*gcoll__adasum_fn)(gcoll__sched_t *s, const gcoll__coll_args_t *a, const struct gcoll__adasum_shape *sh);

/* The calls an entry serves, besides its collective: the plain ones (PLAIN), op GCOLL_ADASUM of an
 * allreduce (ADASUM: gcoll__adasum_build runs them) or attr.compress GCOLL_COMPRESS_TOPK (TOPK).
 * Names are unique within a collective's family. */
typedef enum { GCOLL_FAMILY_PLAIN, GCOLL_FAMILY_ADASUM, GCOLL_FAMILY_TOPK, GCOLL_FAMILY_COUNT } gcoll__family_t;

/* What the selection asks of an entry. */
#define GCOLL_ALGO_NODE (1u << 0)   /* runs over the node's shared-memory channel (every rank on one host) */
#define GCOLL_ALGO_CMA (1u << 1)    /* with NODE: single copy between the ranks' buffers; without, the slots */
#define GCOLL_ALGO_HIER (1u << 2)   /* hierarchical: inside each host, then among the hosts */
#define GCOLL_ALGO_WIRE16 (1u << 3) /* carries the fp16/bf16 wire format (each block reduced at one rank) */
#define GCOLL_ALGO_FORCED (1u << 4) /* only when named: never the built-in choice */

/* The registry: collective, name, builder, usable, family, flags. The selection (select.c), the
 * GCOLL_<COLL> variables, gcoll_algorithms, Adasum's entry and gcoll-info all read it. */
/* one row per algorithm, unwrapped */
/* clang-format off */
#define GCOLL_ALGOS(X) \
    X(GCOLL_COLL_ALLREDUCE, ring, gcoll__allreduce_ring, NULL, PLAIN, GCOLL_ALGO_WIRE16) \
    X(GCOLL_COLL_ALLREDUCE, recursive_doubling, gcoll__allreduce_rd, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLREDUCE, rabenseifner, gcoll__allreduce_rabenseifner, NULL, PLAIN, GCOLL_ALGO_WIRE16) \
    X(GCOLL_COLL_ALLREDUCE, direct, gcoll__allreduce_direct, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLREDUCE, shm_slots, gcoll__node_allreduce_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_ALLREDUCE, shm_cma, gcoll__node_allreduce_cma, gcoll__node_cma_usable, PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA) \
    X(GCOLL_COLL_ALLREDUCE, hierarchical, gcoll__allreduce_hier, gcoll__hier_usable, PLAIN, GCOLL_ALGO_HIER | GCOLL_ALGO_WIRE16) \
    X(GCOLL_COLL_ALLREDUCE, topk, gcoll__allreduce_topk, NULL, TOPK, 0) \
    X(GCOLL_COLL_ALLREDUCE, halving, gcoll__adasum_halving, NULL, ADASUM, 0) \
    X(GCOLL_COLL_ALLREDUCE, shm_slots, gcoll__node_adasum_slots, gcoll__adasum_slots_usable, ADASUM, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_ALLREDUCE, shm_cma, gcoll__node_adasum_cma, gcoll__node_cma_usable, ADASUM, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA | GCOLL_ALGO_FORCED) \
    X(GCOLL_COLL_ALLREDUCE, hierarchical, gcoll__adasum_hier, gcoll__adasum_hier_usable, ADASUM, GCOLL_ALGO_HIER) \
    X(GCOLL_COLL_REDUCE_SCATTER, ring, gcoll__reduce_scatter_ring, NULL, PLAIN, 0) \
    X(GCOLL_COLL_REDUCE_SCATTER, recursive_halving, gcoll__reduce_scatter_halving, NULL, PLAIN, 0) \
    X(GCOLL_COLL_REDUCE_SCATTER, shm_slots, gcoll__node_reduce_scatter_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_REDUCE_SCATTER, shm_cma, gcoll__node_reduce_scatter_cma, gcoll__node_cma_usable, PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA) \
    X(GCOLL_COLL_ALLGATHER, ring, gcoll__allgather_ring, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLGATHER, recursive_doubling, gcoll__allgather_doubling, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLGATHER, shm_slots, gcoll__node_allgather_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_ALLGATHER, shm_cma, gcoll__node_allgather_cma, gcoll__node_cma_usable, PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA) \
    X(GCOLL_COLL_BCAST, binomial, gcoll__bcast_binomial, NULL, PLAIN, 0) \
    X(GCOLL_COLL_BCAST, scatter_allgather, gcoll__bcast_scatter_allgather, NULL, PLAIN, 0) \
    X(GCOLL_COLL_BCAST, chain, gcoll__bcast_chain, NULL, PLAIN, 0) \
    X(GCOLL_COLL_BCAST, shm_slots, gcoll__node_bcast_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_BCAST, shm_cma, gcoll__node_bcast_cma, gcoll__node_cma_usable, PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA) \
    X(GCOLL_COLL_REDUCE, binomial, gcoll__reduce_binomial, NULL, PLAIN, 0) \
    X(GCOLL_COLL_REDUCE, rabenseifner, gcoll__reduce_rabenseifner, NULL, PLAIN, 0) \
    X(GCOLL_COLL_REDUCE, chain, gcoll__reduce_chain, NULL, PLAIN, 0) \
    X(GCOLL_COLL_REDUCE, shm_slots, gcoll__node_reduce_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_ALLTOALL, pairwise, gcoll__alltoall_pairwise, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLTOALL, shm_slots, gcoll__node_alltoall_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_BARRIER, dissemination, gcoll__barrier_dissemination, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLGATHERV, ring, gcoll__allgatherv_ring, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLGATHERV, recursive_doubling, gcoll__allgatherv_doubling, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLGATHERV, shm_slots, gcoll__node_allgatherv_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_ALLGATHERV, shm_cma, gcoll__node_allgatherv_cma, gcoll__node_cma_usable, PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA) \
    X(GCOLL_COLL_REDUCE_SCATTERV, ring, gcoll__reduce_scatterv_ring, NULL, PLAIN, 0) \
    X(GCOLL_COLL_REDUCE_SCATTERV, recursive_halving, gcoll__reduce_scatterv_halving, NULL, PLAIN, 0) \
    X(GCOLL_COLL_REDUCE_SCATTERV, shm_slots, gcoll__node_reduce_scatterv_slots, gcoll__node_usable, PLAIN, GCOLL_ALGO_NODE) \
    X(GCOLL_COLL_REDUCE_SCATTERV, shm_cma, gcoll__node_reduce_scatterv_cma, gcoll__node_cma_usable, PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA) \
    X(GCOLL_COLL_ALLTOALLV, scattered, gcoll__alltoallv_scattered, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLTOALLV, pairwise, gcoll__alltoallv_pairwise, NULL, PLAIN, 0) \
    X(GCOLL_COLL_ALLTOALLV, shm_cma, gcoll__node_alltoallv_cma, gcoll__node_alltoallv_usable, PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA) \
    X(GCOLL_COLL_GATHER, binomial, gcoll__gather_binomial, NULL, PLAIN, 0) \
    X(GCOLL_COLL_GATHER, linear, gcoll__gather_linear, NULL, PLAIN, 0) \
    X(GCOLL_COLL_GATHERV, linear, gcoll__gatherv_linear, NULL, PLAIN, 0) \
    X(GCOLL_COLL_SCATTER, binomial, gcoll__scatter_binomial, NULL, PLAIN, 0) \
    X(GCOLL_COLL_SCATTER, linear, gcoll__scatter_linear, NULL, PLAIN, 0) \
    X(GCOLL_COLL_SCATTERV, linear, gcoll__scatterv_linear, NULL, PLAIN, 0)
/* clang-format on */

/* The plain and top-k builders; Adasum's are declared in adasum.h with the shape they take. */
#define GCOLL_DECLARE_BUILDER(coll, name, fn, usable, family, flags) GCOLL_DECLARE_##family(fn)
#define GCOLL_DECLARE_PLAIN(fn) void fn(gcoll__sched_t *s, const gcoll__coll_args_t *a);
#define GCOLL_DECLARE_TOPK(fn) GCOLL_DECLARE_PLAIN(fn)
#define GCOLL_DECLARE_ADASUM(fn)
GCOLL_ALGOS(GCOLL_DECLARE_BUILDER)

#endif
