/* AVX2 reduction kernels (built with -mavx2 -mfma -mf16c): the template, auto-vectorized, with
 * F16C instructions for fp16 blocks. */
#include <immintrin.h>
#define KERNELS_NAME gcoll__kernels_avx2
#define KERNELS_LABEL "avx2"
#define CVT_H2F_16(s, d)                                                                       \
    do {                                                                                       \
        _mm256_storeu_ps((d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s))));         \
        _mm256_storeu_ps((d) + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s) + 1))); \
    } while (0)
#define CVT_F2H_16(s, d)                                                                                            \
    do {                                                                                                            \
        _mm_storeu_si128((__m128i *)(d), _mm256_cvtps_ph(_mm256_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT));           \
        _mm_storeu_si128((__m128i *)(d) + 1, _mm256_cvtps_ph(_mm256_loadu_ps((s) + 8), _MM_FROUND_TO_NEAREST_INT)); \
    } while (0)
#include "base/reduce_kernels.inc"
