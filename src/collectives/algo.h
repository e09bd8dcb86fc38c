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

/* Whether an algorithm can serve these arguments (NULL: always). */
typedef int (*gcoll__usable_fn)(const gcoll__coll_args_t *a);
int gcoll__node_usable(const gcoll__coll_args_t *a);
int gcoll__node_cma_usable(const gcoll__coll_args_t *a);
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
    X(GCOLL_COLL_BARRIER, dissemination, gcoll__barrier_dissemination, NULL, PLAIN, 0)
/* clang-format on */

/* The plain and top-k builders; Adasum's are declared in adasum.h with the shape they take. */
#define GCOLL_DECLARE_BUILDER(coll, name, fn, usable, family, flags) GCOLL_DECLARE_##family(fn)
#define GCOLL_DECLARE_PLAIN(fn) void fn(gcoll__sched_t *s, const gcoll__coll_args_t *a);
#define GCOLL_DECLARE_TOPK(fn) GCOLL_DECLARE_PLAIN(fn)
#define GCOLL_DECLARE_ADASUM(fn)
GCOLL_ALGOS(GCOLL_DECLARE_BUILDER)

#endif
