/* Test data and independent reference results, shared by the tests and the benchmark's
 * validation. Inputs are small integers (or quarters, or for fp8 small multiples of powers of two)
 * chosen so that every reduction is exact in every dtype whatever the order (past 8 ranks, the sum's
 * inputs are zero but on one rank in every ceil(n / 8), turning with the element);
 * GCOLL_AVG is the one rounding, done by the compiler's own _Float16 conversion, an independent
 * bf16 rounding, or for fp8 a search of the format's values. Nothing here calls gcoll. */
#ifndef GCOLL_REFERENCE_H
#define GCOLL_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"

/* Deterministic, well-mixed 32 bits of (a, b, c). */
uint32_t ref_hash(uint32_t a, uint32_t b, uint32_t c);

/* The most ranks one reduction in this process sums (the world's size; at least 8, the default):
 * past 8, each element's sum takes nonzero inputs from at most 8 of them, so that it stays exact. */
void ref_set_ranks(int nranks);
/* The input of `rank` at element i for a reduction with op. */
double ref_value(int rank, size_t i, gcoll_dtype_t d, gcoll_op_t op);
/* The reduction of element i over ranks 0..n-1, as gcoll_allreduce must return it. */
double ref_expected(size_t i, gcoll_dtype_t d, gcoll_op_t op, int n);
/* Stores v in dtype d (rounding to nearest-even where it must; E4M3 saturates at +-448). */
void ref_encode(gcoll_dtype_t d, double v, void *out);
/* The value of the element of dtype d at p. */
double ref_decode(gcoll_dtype_t d, const void *p);

/* Fills p[0..n) with rank's inputs for op (elements of dtype d). */
void ref_fill_values(void *p, size_t n, int rank, gcoll_dtype_t d, gcoll_op_t op);
/* Writes the expected reduction of elements first..first+n-1 into p. */
void ref_fill_expected(void *p, size_t first, size_t n, gcoll_dtype_t d, gcoll_op_t op, int nranks);
/* The float32 top-k allreduce of the sum inputs (op GCOLL_SUM or GCOLL_AVG): each rank keeps its
 * floor(density * count) inputs of largest magnitude, ties to the lower index, chosen by counting
 * (the inputs are quarters in [-3.75, 3.75], 16 magnitudes); the kept values summed, exactly. */
void ref_topk_expected(float *out, size_t count, double density, gcoll_op_t op, int nranks);
/* Fills bytes with a pattern of (rank, salt), for collectives that only move data. */
void ref_fill_bytes(void *p, size_t bytes, int rank, uint32_t salt);

#endif
