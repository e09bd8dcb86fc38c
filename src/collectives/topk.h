/* Top-k selection of the sparse allreduce (allreduce_topk.c), apart for the unit tests: the
 * choice of k, the exact selection with its residual, the wire encoding and the merge. */
#ifndef GCOLL_TOPK_H
#define GCOLL_TOPK_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"
#include "base/reduce.h"

/* One kept entry as it travels: 8 bytes, no padding. */
typedef struct {
    uint32_t idx;
    float val;
} gcoll__topk_pair_t;

/* What the selection needs besides its input: two 65536-entry histograms and room for the
 * candidates of the threshold's bin (cand_cap of them; more make it scan the vector again). */
typedef struct {
    uint32_t *hist; /* 2 * 65536 */
    uint32_t *cand;
    size_t cand_cap;
} gcoll__topk_work_t;

/* The k = floor(density * count) of the allreduce (as double arithmetic, like every rank's). */
size_t gcoll__topk_k(size_t count, double density);

/* Writes to out the k entries of v = x + residual (x alone when residual is NULL) with the
 * largest |v|, ties to the lower index, NaN above infinity; pairs in two runs of ascending
 * index (those above the threshold's histogram bin, then the bin's), as the encoding needs.
 * With a residual, leaves there v minus what was kept (0 at kept entries, v elsewhere). */
void gcoll__topk_select(const float *x, float *residual, size_t count, size_t k, gcoll__topk_pair_t *out,
                        const gcoll__topk_work_t *w);

/* The wire form of a rank's k pairs: wire_entries(count, k) entries of 6 bytes, a uint16 gap
 * then the fp32 value (host byte order, like every gcoll message), indices ascending. An entry
 * names index next + gap, where next is one past the index named before (0 at first); gap
 * 0xffff names none and moves next on by 65535. The escapes a vector of count entries can need
 * bound the size, so every block has it: unused entries at the end are zero. */
size_t gcoll__topk_wire_entries(size_t count, size_t k);
void gcoll__topk_encode(void *dst, const gcoll__topk_pair_t *pairs, size_t k, size_t count);

/* out (count floats, zero on entry) += the n encoded blocks of k pairs, block 0 first: every
 * rank that merges the same blocks gets the same bits. An index past count or a block with
 * fewer than k values (a corrupt message) fails with GCOLL_ERR_TRANSPORT naming the block's rank. */
gcoll_status_t gcoll__topk_merge(float *out, size_t count, const void *blocks, int n, size_t k);

/* The selection's scan (topk_scan.c): for n entries of v = x + residual (x alone when residual
 * is NULL; with one, v is stored back into it), bit j of a[b] is set when entry 64 b + j's key,
 * the bits of |v|, lies in [mid, hi), and bit j of m[b] when it lies in [lo, mid) (unsigned;
 * lo <= mid <= hi). Bits past n are clear. gcoll__topk_masks takes any n and uses the kernel of
 * the reduction table in use; gcoll__topk_masks_for gives a table's own, for n a multiple of 64. */
typedef void (*gcoll__topk_masks_fn)(const float *x, float *residual, size_t n, uint32_t lo, uint32_t mid, uint32_t hi,
                                     uint64_t *a, uint64_t *m);
gcoll__topk_masks_fn gcoll__topk_masks_for(const gcoll__kernels_t *k);
void gcoll__topk_masks(const float *x, float *residual, size_t n, uint32_t lo, uint32_t mid, uint32_t hi, uint64_t *a,
                       uint64_t *m);

#endif
