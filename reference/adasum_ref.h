/* An independent reference for Adasum (docs/adasum.md's operator, in double), for the tests and
 * the benchmark's validation. Every combination is ca a + cb b with scalars per tensor, so the
 * result of the tree is, per tensor, a weighted sum of the ranks' inputs; the weights follow from
 * the Gram matrix of the inputs (one streaming pass that regenerates every rank's input), and the
 * result from a second pass. Nothing here calls gcoll, and no rank's vectors are stored. */
#ifndef GCOLL_ADASUM_REF_H
#define GCOLL_ADASUM_REF_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"

/* Rank q's input at element i, as stored in its dtype. */
typedef double (*adasum_value_fn)(int q, size_t i, void *ctx);

typedef struct {
    int n;         /* ranks */
    size_t nt;     /* tensors */
    size_t *off;   /* nt + 1 element offsets */
    double *w;     /* [nt][n]: the result's weight of each rank's input */
    double *scale; /* [nt]: the largest norm among the vectors the tree combines */
    adasum_value_fn value;
    void *ctx;
} adasum_ref_t;

/* The reference for n ranks whose tree combines m vectors, vector j being the sum over q of
 * init[j n + q] x_q (flat: m = n and init the identity; hierarchical: one vector per host, the
 * sum of its ranks). tensor_counts NULL: one tensor of count. 0 on success, -1 out of memory. */
int adasum_ref_init(adasum_ref_t *r, int n, int m, const double *init, size_t count, const size_t *tensor_counts,
                    size_t ntensors, adasum_value_fn value, void *ctx);
void adasum_ref_free(adasum_ref_t *r);
/* The reference result at element i. */
double adasum_ref_at(const adasum_ref_t *r, size_t i);
/* The worst tensor's error: max over tensors of |got - ref|_2 / max(|ref|_2, the largest norm of
 * the vectors combined) (rounding errors scale with the inputs, and a result near 0 from
 * cancelling inputs keeps the inputs' absolute error); the absolute error where both norms are
 * 0. got holds count elements of dtype d. *worst: that tensor. */
double adasum_ref_error(const adasum_ref_t *r, const void *got, gcoll_dtype_t d, size_t *worst);
/* The tolerance of that error that README documents for dtype d. */
double adasum_ref_tolerance(gcoll_dtype_t d);
/* A stored element of dtype d, as a double. */
double adasum_decode(gcoll_dtype_t d, const void *p);
/* A test input: rank q's element i in [-1.5, 1.5), as dtype d stores it (salt picks the series). */
double adasum_ref_input(gcoll_dtype_t d, int q, size_t i, uint32_t salt);

#endif
