/* The top-k selection's scanning kernel (topk.h), one per instruction set, chosen with the
 * reduction kernels: it compares whole vectors and hands the caller bit masks to walk, so the scan
 * runs at memory speed instead of branching per entry. The vector versions are compiled with
 * target attributes and called only where the CPU has them (gcoll__kernels_supported). */
#include <immintrin.h>
#include <string.h>

#include "base/reduce.h"
#include "collectives/topk.h"

static inline uint32_t key_of(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    return u & 0x7fffffffu;
}

/* Any n; the vector versions leave the last n % 64 entries to it. Without vectors, a branch
 * that is rarely taken costs less than computing both bits of every entry. */
static void masks_generic(const float *x, float *residual, size_t n, uint32_t lo, uint32_t mid, uint32_t hi,
                          uint64_t *a, uint64_t *m)
{
    for (size_t b = 0; b * 64 < n; b++) {
        uint64_t ab = 0, mb = 0;
        size_t end = n - b * 64 < 64 ? n - b * 64 : 64;
        // cppcheck-suppress knownConditionTrueFalse ; a false positive: end is 1..64 here
        for (size_t j = 0; j < end; j++) {
            size_t i = b * 64 + j;
            float v = x[i];
            if (residual)
                v = residual[i] += v;
            uint32_t key = key_of(v);
            if (key - lo < hi - lo) { /* unsigned: lo <= key < hi, rare: the branch predicts */
                if (key >= mid)
                    ab |= (uint64_t)1 << j;
                else
                    mb |= (uint64_t)1 << j;
            }
        }
        a[b] = ab;
        m[b] = mb;
    }
}

/* AVX2 has signed compares only: flipping the sign bit of both sides compares unsigned. */
__attribute__((target("avx2"))) static void masks_avx2(const float *x, float *residual, size_t n, uint32_t lo,
                                                       uint32_t mid, uint32_t hi, uint64_t *a, uint64_t *m)
{
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), sign = _mm256_set1_epi32((int)0x80000000u);
    const __m256i vlo = _mm256_set1_epi32((int)lo), vmid = _mm256_set1_epi32((int)mid);
    const __m256i wa = _mm256_set1_epi32((int)((hi - mid) ^ 0x80000000u));
    const __m256i wm = _mm256_set1_epi32((int)((mid - lo) ^ 0x80000000u));
    for (size_t b = 0; b < n / 64; b++) {
        uint64_t ab = 0, mb = 0;
        for (int j = 0; j < 8; j++) {
            size_t i = b * 64 + (size_t)j * 8;
            __m256 v = _mm256_loadu_ps(x + i);
            if (residual) {
                v = _mm256_add_ps(v, _mm256_loadu_ps(residual + i));
                _mm256_storeu_ps(residual + i, v);
            }
            __m256i key = _mm256_and_si256(_mm256_castps_si256(v), abs);
            __m256i da = _mm256_xor_si256(_mm256_sub_epi32(key, vmid), sign);
            __m256i dm = _mm256_xor_si256(_mm256_sub_epi32(key, vlo), sign);
            ab |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(wa, da))) << (j * 8);
            mb |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(wm, dm))) << (j * 8);
        }
        a[b] = ab;
        m[b] = mb;
    }
}

__attribute__((target("avx512f"))) static void masks_avx512(const float *x, float *residual, size_t n, uint32_t lo,
                                                            uint32_t mid, uint32_t hi, uint64_t *a, uint64_t *m)
{
    const __m512i abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i vlo = _mm512_set1_epi32((int)lo), vmid = _mm512_set1_epi32((int)mid);
    const __m512i wa = _mm512_set1_epi32((int)(hi - mid)), wm = _mm512_set1_epi32((int)(mid - lo));
    for (size_t b = 0; b < n / 64; b++) {
        uint64_t ab = 0, mb = 0;
        for (int j = 0; j < 4; j++) {
            size_t i = b * 64 + (size_t)j * 16;
            __m512 v = _mm512_loadu_ps(x + i);
            if (residual) {
                v = _mm512_add_ps(v, _mm512_loadu_ps(residual + i));
                _mm512_storeu_ps(residual + i, v);
            }
            __m512i key = _mm512_and_si512(_mm512_castps_si512(v), abs);
            ab |= (uint64_t)_mm512_cmplt_epu32_mask(_mm512_sub_epi32(key, vmid), wa) << (j * 16);
            mb |= (uint64_t)_mm512_cmplt_epu32_mask(_mm512_sub_epi32(key, vlo), wm) << (j * 16);
        }
        a[b] = ab;
        m[b] = mb;
    }
}

gcoll__topk_masks_fn gcoll__topk_masks_for(const gcoll__kernels_t *k)
{
    return k == &gcoll__kernels_avx512 ? masks_avx512 : k == &gcoll__kernels_avx2 ? masks_avx2 : masks_generic;
}

void gcoll__topk_masks(const float *x, float *residual, size_t n, uint32_t lo, uint32_t mid, uint32_t hi, uint64_t *a,
                       uint64_t *m)
{
    size_t body = n / 64 * 64;
    if (body)
        gcoll__topk_masks_for(gcoll__kernels)(x, residual, body, lo, mid, hi, a, m);
    if (body < n)
        masks_generic(x + body, residual ? residual + body : NULL, n - body, lo, mid, hi, a + body / 64, m + body / 64);
}
