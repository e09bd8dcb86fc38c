/* Reduction kernels: dst[i] = a[i] op b[i] for every dtype and op (dst may alias a or b), the
 * final division of GCOLL_AVG, and the scaling of GCOLL_PREMUL_SUM. One portable table and
 * vector tables (AVX2+F16C, AVX-512) compiled from the same template; the best one the CPU
 * supports is chosen at run time. */
#ifndef GCOLL_REDUCE_H
#define GCOLL_REDUCE_H

#include <stddef.h>

#include "gcoll.h"

typedef void (*gcoll__reduce_fn)(void *dst, const void *a, const void *b, size_t n);
typedef void (*gcoll__div_fn)(void *buf, size_t n, unsigned divisor);
typedef void (*gcoll__scale_fn)(void *dst, const void *src, size_t n, double factor);
/* fp32 <-> a 16-bit wire format (round to nearest even), for compressed allreduce. */
typedef void (*gcoll__cvt_fn)(void *dst, const void *src, size_t n);

/* ops indexed by SUM, PROD, MIN, MAX; AVG reduces with SUM and divides at the end. Every
 * floating-point type but fp64 computes in fp32 and rounds once per element and step. scale:
 * floating-point types only (NULL for the integers). */
typedef struct {
    const char *name;
    gcoll__reduce_fn reduce[GCOLL_DTYPE_COUNT][4];
    gcoll__div_fn div[GCOLL_DTYPE_COUNT];
    gcoll__scale_fn scale[GCOLL_DTYPE_COUNT];
    gcoll__cvt_fn to_wire[2], from_wire[2]; /* [0] fp16, [1] bf16 */
} gcoll__kernels_t;

extern const gcoll__kernels_t gcoll__kernels_generic;
extern const gcoll__kernels_t gcoll__kernels_avx2;
extern const gcoll__kernels_t gcoll__kernels_avx512;

/* The table in use; set by gcoll__kernels_select, the generic one before that. */
extern const gcoll__kernels_t *gcoll__kernels;

/* isa: 0 auto, 1 generic, 2 avx2, 3 avx512. Fails if the CPU lacks the ISA asked for. */
gcoll_status_t gcoll__kernels_select(int isa);
int gcoll__kernels_supported(const gcoll__kernels_t *k);

static inline void gcoll__reduce(void *dst, const void *a, const void *b, size_t n, gcoll_dtype_t dtype, gcoll_op_t op)
{
    gcoll__kernels->reduce[dtype][op == GCOLL_AVG ? GCOLL_SUM : op](dst, a, b, n);
}

/* dst[i] = src[i] * factor rounded to dtype (dst may equal src), for GCOLL_PREMUL_SUM: fp64
 * multiplies in double; fp32, fp16, bf16 and both fp8 formats multiply in fp32 by the factor
 * rounded to fp32 (E4M3 saturates at +-448). Floating-point dtypes only: the caller refuses the
 * integers. */
void gcoll__scale(void *dst, const void *src, size_t count, gcoll_dtype_t dtype, double factor);

#endif
