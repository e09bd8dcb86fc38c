/* AVX-512 reduction kernels (built with -mavx512f -mavx512bw -mavx512vl): the template,
 * auto-vectorized at 512 bits, with 16-wide fp16 conversions. */
#include <immintrin.h>
#define KERNELS_NAME gcoll__kernels_avx512
#define KERNELS_LABEL "avx512"
#define CVT_H2F_16(s, d) _mm512_storeu_ps((d), _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s))))
#define CVT_F2H_16(s, d) \
    _mm256_storeu_si256((__m256i *)(d), _mm512_cvtps_ph(_mm512_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT))
#include "base/reduce_kernels.inc"
