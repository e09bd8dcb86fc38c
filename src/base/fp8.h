/* OCP 8-bit floats for the reduction kernels: decoding through 256-entry tables, encoding from
 * fp32 with round to nearest even (E4M3 saturates at +-448 and has one NaN, S.1111.111; E5M2 is
 * IEEE-like and overflows to infinity), and 16-wide AVX-512 or AVX2 forms that match the scalar
 * ones bit for bit, where the includer is compiled for them (GCOLL_FP8_X16). */
#ifndef GCOLL_FP8_H
#define GCOLL_FP8_H

#include <stdint.h>
#include <string.h>

extern const float gcoll__e4m3_values[256];
extern const float gcoll__e5m2_values[256];

static inline float gcoll__e4m3_to_f32(uint8_t c)
{
    return gcoll__e4m3_values[c];
}

static inline float gcoll__e5m2_to_f32(uint8_t c)
{
    return gcoll__e5m2_values[c];
}

/* The unsigned code of the finite fp32 magnitude ax (bits, sign cleared) in a format of m
 * mantissa bits and exponent bias `bias`, rounded to nearest even; the caller handles NaN and
 * values past the largest finite one. A rounding up carries into the exponent field, which is
 * the next code. Below the smallest normal, fp32 addition does the rounding: beside
 * 2^(24 - bias - m) an fp32 ulp is the smallest subnormal, so the sum's low bits are the code
 * (in the default rounding mode, as all of the kernels' arithmetic; with denormals-are-zero an
 * fp32 subnormal counts as 0, which is what it rounds to anyway). */
static inline uint32_t gcoll__fp8_round(uint32_t ax, uint32_t m, uint32_t bias)
{
    if (ax >= (128 - bias) << 23) { /* normal: rebias the exponent, drop 23 - m mantissa bits */
        uint32_t r = ax - ((127 - bias) << 23), sh = 23 - m;
        return (r + (1u << (sh - 1)) - 1 + ((r >> sh) & 1)) >> sh;
    }
    uint32_t big_bits = (151 - bias - m) << 23, sum_bits;
    float f, big;
    memcpy(&f, &ax, 4);
    memcpy(&big, &big_bits, 4);
    float sum = f + big;
    memcpy(&sum_bits, &sum, 4);
    return sum_bits - big_bits;
}

static inline uint8_t gcoll__f32_to_e4m3(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 24) & 0x80, ax = x & 0x7fffffff;
    if (ax > 0x7f800000)
        return (uint8_t)(sign | 0x7f);
    if (ax > 0x43e00000) /* above 448, infinity included: saturate */
        return (uint8_t)(sign | 0x7e);
    return (uint8_t)(sign | gcoll__fp8_round(ax, 3, 7));
}

static inline uint8_t gcoll__f32_to_e5m2(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 24) & 0x80, ax = x & 0x7fffffff;
    if (ax > 0x7f800000) /* NaN: quiet */
        return (uint8_t)(sign | 0x7e);
    if (ax >= 0x47700000) /* from 61440, halfway between 57344 and 2^16, up: infinity */
        return (uint8_t)(sign | 0x7c);
    return (uint8_t)(sign | gcoll__fp8_round(ax, 2, 15));
}

/* Blocks of 16 codes to and from 16 floats, for the vector kernels (GCOLL_FP8_X16), with
 * AVX-512 where the includer is built for it, else AVX2 (both with F16C). Decoding: an E5M2 code
 * is the top byte of the fp16 of the same value, which F16C widens exactly; an E4M3 code with its
 * sign moved to bit 15 and the rest to bits 7..13 is an fp16 worth the code's value times 2^-8,
 * subnormals included, and the NaN code S.1111.111 comes out as +-480, whose exponent is then
 * filled in. Encoding: gcoll__fp8_round on every lane, both of its paths computed and the
 * subnormal one blended in. */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__F16C__)
#include <immintrin.h>
#define GCOLL_FP8_X16 1

static inline void gcoll__e5m2x16_to_f32(const void *src, float *dst)
{
    __m256i h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)src)), 8);
    _mm512_storeu_ps(dst, _mm512_cvtph_ps(h));
}

static inline void gcoll__e4m3x16_to_f32(const void *src, float *dst)
{
    __m256i w = _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)src)), 8);
    __m256i h = _mm256_and_si256(_mm256_srai_epi16(w, 1), _mm256_set1_epi16((short)0xbfff));
    __m512 f = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
    __mmask16 nan = _mm512_cmp_ps_mask(_mm512_abs_ps(f), _mm512_set1_ps(480.0f), _CMP_EQ_OQ);
    __m512i fi = _mm512_castps_si512(f);
    _mm512_storeu_ps(dst, _mm512_castsi512_ps(_mm512_mask_or_epi32(fi, nan, fi, _mm512_set1_epi32(0x7fc00000))));
}

/* x's lanes as codes of m mantissa bits and bias `bias`, before overflow and NaN. */
static inline __m512i gcoll__fp8x16_round(__m512i ax, int m, int bias)
{
    __m512i r = _mm512_sub_epi32(ax, _mm512_set1_epi32((127 - bias) << 23));
    __m512i odd = _mm512_and_si512(_mm512_srlv_epi32(r, _mm512_set1_epi32(23 - m)), _mm512_set1_epi32(1));
    __m512i norm = _mm512_add_epi32(_mm512_add_epi32(r, _mm512_set1_epi32((1 << (22 - m)) - 1)), odd);
    norm = _mm512_srlv_epi32(norm, _mm512_set1_epi32(23 - m));
    __m512i big = _mm512_set1_epi32((151 - bias - m) << 23);
    __m512 sum = _mm512_add_ps(_mm512_castsi512_ps(ax), _mm512_castsi512_ps(big));
    __m512i sub = _mm512_sub_epi32(_mm512_castps_si512(sum), big);
    return _mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(ax, _mm512_set1_epi32((128 - bias) << 23)), norm, sub);
}

/* top: the code of overflow (E4M3's 448, E5M2's infinity) for magnitudes above over; nan: the
 * NaN code. */
static inline void gcoll__f32x16_to_fp8(const float *src, void *dst, int m, int bias, int over, int top, int nan)
{
    __m512i x = _mm512_castps_si512(_mm512_loadu_ps(src)), ax = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    __m512i c = gcoll__fp8x16_round(ax, m, bias);
    c = _mm512_mask_mov_epi32(c, _mm512_cmpgt_epi32_mask(ax, _mm512_set1_epi32(over)), _mm512_set1_epi32(top));
    c = _mm512_mask_mov_epi32(c, _mm512_cmpgt_epi32_mask(ax, _mm512_set1_epi32(0x7f800000)), _mm512_set1_epi32(nan));
    c = _mm512_or_si512(c, _mm512_and_si512(_mm512_srli_epi32(x, 24), _mm512_set1_epi32(0x80)));
    _mm_storeu_si128((__m128i *)dst, _mm512_cvtepi32_epi8(c));
}

#elif defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define GCOLL_FP8_X16 1

static inline void gcoll__e5m2x16_to_f32(const void *src, float *dst)
{
    __m128i b = _mm_loadu_si128((const __m128i *)src);
    _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_unpacklo_epi8(_mm_setzero_si128(), b)));
    _mm256_storeu_ps(dst + 8, _mm256_cvtph_ps(_mm_unpackhi_epi8(_mm_setzero_si128(), b)));
}

/* Eight E4M3 codes, each in the top byte of a 16-bit lane, as floats. */
static inline __m256 gcoll__e4m3x8_widen(__m128i w)
{
    __m128i h = _mm_and_si128(_mm_srai_epi16(w, 1), _mm_set1_epi16((short)0xbfff));
    __m256 f = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    __m256 nan = _mm256_cmp_ps(_mm256_and_ps(f, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))),
                               _mm256_set1_ps(480.0f), _CMP_EQ_OQ);
    return _mm256_or_ps(f, _mm256_and_ps(nan, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000))));
}

static inline void gcoll__e4m3x16_to_f32(const void *src, float *dst)
{
    __m128i b = _mm_loadu_si128((const __m128i *)src);
    _mm256_storeu_ps(dst, gcoll__e4m3x8_widen(_mm_unpacklo_epi8(_mm_setzero_si128(), b)));
    _mm256_storeu_ps(dst + 8, gcoll__e4m3x8_widen(_mm_unpackhi_epi8(_mm_setzero_si128(), b)));
}

static inline __m256i gcoll__fp8x8_round(__m256i ax, int m, int bias)
{
    __m256i r = _mm256_sub_epi32(ax, _mm256_set1_epi32((127 - bias) << 23));
    __m256i odd = _mm256_and_si256(_mm256_srlv_epi32(r, _mm256_set1_epi32(23 - m)), _mm256_set1_epi32(1));
    __m256i norm = _mm256_add_epi32(_mm256_add_epi32(r, _mm256_set1_epi32((1 << (22 - m)) - 1)), odd);
    norm = _mm256_srlv_epi32(norm, _mm256_set1_epi32(23 - m));
    __m256i big = _mm256_set1_epi32((151 - bias - m) << 23);
    __m256 sum = _mm256_add_ps(_mm256_castsi256_ps(ax), _mm256_castsi256_ps(big));
    __m256i sub = _mm256_sub_epi32(_mm256_castps_si256(sum), big);
    return _mm256_blendv_epi8(norm, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32((128 - bias) << 23), ax));
}

/* Eight floats as 32-bit codes (see the AVX-512 form for the arguments). */
static inline __m256i gcoll__f32x8_to_fp8(const float *src, int m, int bias, int over, int top, int nan)
{
    __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src)), ax = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    __m256i c = gcoll__fp8x8_round(ax, m, bias);
    c = _mm256_blendv_epi8(c, _mm256_set1_epi32(top), _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(over)));
    c = _mm256_blendv_epi8(c, _mm256_set1_epi32(nan), _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7f800000)));
    return _mm256_or_si256(c, _mm256_and_si256(_mm256_srli_epi32(x, 24), _mm256_set1_epi32(0x80)));
}

static inline void gcoll__f32x16_to_fp8(const float *src, void *dst, int m, int bias, int over, int top, int nan)
{
    __m256i lo = gcoll__f32x8_to_fp8(src, m, bias, over, top, nan);
    __m256i hi = gcoll__f32x8_to_fp8(src + 8, m, bias, over, top, nan);
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8); /* 16-bit, in order */
    _mm_storeu_si128((__m128i *)dst, _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
}
#endif

#ifdef GCOLL_FP8_X16
/* E4M3 saturates above 448 (0x43e00000); E5M2 is infinite from 61440 (above 0x476fffff). */
static inline void gcoll__f32x16_to_e4m3(const float *src, void *dst)
{
    gcoll__f32x16_to_fp8(src, dst, 3, 7, 0x43e00000, 0x7e, 0x7f);
}

static inline void gcoll__f32x16_to_e5m2(const float *src, void *dst)
{
    gcoll__f32x16_to_fp8(src, dst, 2, 15, 0x476fffff, 0x7c, 0x7e);
}
#endif

#endif
