/* Test data for the vector collectives, point-to-point and GCOLL_PREMUL_SUM: per-rank block counts
 * and alltoallv count matrices drawn from a seed (the same on every rank) and displacements with
 * gaps; elements are stored and read with reference.h's ref_encode and ref_decode. Nothing here
 * calls gcoll. */
#ifndef GCOLL_VREF_H
#define GCOLL_VREF_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"

/* How the counts of the blocks are drawn: random (some zero), all zero, one rank (or, in a
 * matrix, one peer of each rank) holding everything, distinct primes, one rank (one destination)
 * holding half of the total. */
typedef enum { VREF_RANDOM, VREF_ZERO, VREF_SINGLE, VREF_PRIMES, VREF_HALF, VREF_PATTERNS } vref_pattern_t;
const char *vref_pattern_name(vref_pattern_t p);

/* counts[0..n) of pattern p, a function of (n, p, seed) only. */
void vref_counts(size_t *counts, int n, vref_pattern_t p, uint32_t seed);
/* The alltoallv matrix m[src * n + dst]: the elements src sends to dst. sym: m[a][b] == m[b][a]
 * (what alltoallv in place needs). */
void vref_matrix(size_t *m, int n, vref_pattern_t p, uint32_t seed, int sym);
/* Displacements of n blocks of counts[]: back to back in rank order (gaps 0), or in reverse rank
 * order with a gap of 1 to 5 elements before each block and after the last. Returns the extent:
 * the elements a buffer must hold. */
size_t vref_displs(size_t *displs, const size_t *counts, int n, int gaps, uint32_t seed);
size_t vref_sum(const size_t *counts, int n);

int vref_is_float(gcoll_dtype_t d);

#endif
