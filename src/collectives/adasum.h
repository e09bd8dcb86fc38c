/* Adasum (docs/adasum.md, DESIGN.md's exact operator): the schedule builders behind
 * gcoll_adasum and GCOLL_ADASUM, the per-tensor kernels they share, and the entry point that the
 * gradient session calls to reduce a bucket of fused tensors with Adasum. */
#ifndef GCOLL_ADASUM_H
#define GCOLL_ADASUM_H

#include "collectives/algo.h"

/* Where the tensors of a fused buffer lie: tensor t is elements [off[t], off[t+1]). */
typedef struct gcoll__adasum_shape {
    gcoll_dtype_t dtype;
    size_t es, nt;
    size_t *off; /* nt + 1 entries */
} gcoll__adasum_shape_t;

/* Checks tensor_counts (NULL: one tensor; then ntensors must be 0 or 1) against count and the
 * dtype (floating point only); the error names the argument. */
gcoll_status_t gcoll__adasum_check(size_t count, gcoll_dtype_t dtype, const size_t *tensor_counts, size_t ntensors);

/* Builds the Adasum of a->count elements over tensor_counts[0..ntensors) into s. a is an
 * allreduce's argument block as api.c fills it (op GCOLL_ADASUM; rank, size, shm, map, links of
 * the communicator); s must have been made with op GCOLL_SUM (the hierarchical variant's
 * intra-host sums run as plain reduce steps). forced: NULL (GCOLL_ADASUM decides), or a name of
 * the registry's Adasum family (gcoll_algorithms("adasum"); one that cannot serve gives way).
 * Checks the arguments first (gcoll__adasum_check); *algo is the label of the algorithm used.
 * tensor_counts is copied: the caller may free it at once. */
gcoll_status_t gcoll__adasum_build(gcoll__sched_t *s, const gcoll__coll_args_t *a, const size_t *tensor_counts,
                                   size_t ntensors, const char *forced, const char **algo);

/* The label of the algorithm gcoll__adasum_build would pick for a, as gcoll_comm_algorithm
 * reports it ("adasum/halving"). */
const char *gcoll__adasum_choice(const gcoll__coll_args_t *a);

/* Kernels (adasum_kernels.c). For elements [first, first + n) of the fused buffer, a and b
 * pointing at element `first` of the two vectors: acc[3t..3t+2] += (a.b, a.a, b.b) over the part
 * of tensor t in the range, in double. */
void gcoll__adasum_partials(const gcoll__adasum_shape_t *sh, const void *a, const void *b, size_t first, size_t n,
                            double *acc);
/* dst = ca a + cb b over [first, first + n), with tensor t's coefficients from its whole-tensor
 * sums[3t..3t+2] (dot, |a|^2, |b|^2). dst may be a or b. */
void gcoll__adasum_apply(const gcoll__adasum_shape_t *sh, void *dst, const void *a, const void *b, size_t first,
                         size_t n, const double *sums);

/* The algorithms, one file each, in the registry (algo.h) as the Adasum family: halving (point to
 * point), shm_cma and shm_slots (the node channel), hierarchical (sums within hosts, halving
 * among them). */
void gcoll__adasum_halving(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh);
void gcoll__node_adasum_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh);
void gcoll__node_adasum_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh);
void gcoll__adasum_hier(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh);
/* The largest power of two <= n: the ranks past it fold first. */
static inline int gcoll__adasum_pow2(int n)
{
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

/* DESIGN.md's coefficient of v: 1 - dot / (2 |v|^2), or 1 when |v|^2 (nv) < sqrt(DBL_MIN) (a zero
 * or negligible v). */
double gcoll__adasum_coeff(double dot, double nv);

#endif
