/* Independent references for the unit tests: the compiler's own _Float16 conversions, a bf16
 * rounding that picks the nearer of the two neighbouring bf16 values by distance, and fp8 values
 * from the OCP definition with a rounding that picks the nearest of all 256 codes' values. */
#ifndef GCOLL_UNIT_REF_H
#define GCOLL_UNIT_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float ref_bits_to_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static inline uint32_t ref_f32_to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static inline float ref_f16_to_f32(uint16_t h)
{
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}

static inline uint16_t ref_f32_to_f16(float f)
{
    _Float16 x = (_Float16)f;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}

static inline float ref_bf16_to_f32(uint16_t h)
{
    return ref_bits_to_f32((uint32_t)h << 16);
}

/* The value bf16 pattern b stands for, with the pattern after the largest finite one read as
 * 2^128, as IEEE rounding with an unbounded exponent does. */
static inline double ref_bf16_value(uint32_t hb)
{
    if ((hb & 0x7fff) == 0x7f80)
        return (hb & 0x8000) ? -ldexp(1, 128) : ldexp(1, 128);
    return ref_bf16_to_f32((uint16_t)hb);
}

static inline uint16_t ref_f32_to_bf16(float f)
{
    if (isnan(f))
        return (uint16_t)((ref_f32_to_bits(f) >> 16) | 0x40);
    if (isinf(f))
        return (uint16_t)(ref_f32_to_bits(f) >> 16);
    uint32_t lo = ref_f32_to_bits(f) >> 16, hi = lo + 1; /* truncated, and one away from zero */
    double dl = fabs((double)f - ref_bf16_value(lo)), dh = fabs((double)f - ref_bf16_value(hi));
    if (dl < dh || (dl == dh && (lo & 1) == 0))
        return (uint16_t)lo;
    return (uint16_t)hi;
}

/* The value of fp8 code c from the OCP definition: E4M3 (e5m2 = 0) has bias 7, 3 mantissa bits
 * and NaN at S.1111.111 (no infinities); E5M2 has bias 15, 2 mantissa bits and IEEE's infinities
 * and NaNs at exponent 31. */
static inline double ref_fp8_value(int e5m2, unsigned c)
{
    int mb = e5m2 ? 2 : 3, eb = e5m2 ? 5 : 4, bias = e5m2 ? 15 : 7;
    unsigned m = c & ((1u << mb) - 1), e = (c >> mb) & ((1u << eb) - 1);
    double sign = (c & 0x80) ? -1.0 : 1.0;
    if (e5m2 && e == 31)
        return m ? NAN : sign * INFINITY;
    if (!e5m2 && e == 15 && m == 7)
        return NAN;
    if (e == 0)
        return sign * ldexp(m, 1 - bias - mb);
    return sign * ldexp((double)((1u << mb) + m), (int)e - bias - mb);
}

/* f rounded to fp8 as the OCP formats do it in saturating E4M3 and IEEE E5M2: the code of the same
 * sign whose value is nearest, ties to the even code; E4M3 clamps to +-448 first, and E5M2 reads
 * infinity as 2^16, the next value with an unbounded exponent. A NaN gives the format's NaN (the
 * tests accept any NaN code for it). */
static inline uint8_t ref_f32_to_fp8(int e5m2, float f)
{
    unsigned sign = signbit(f) ? 0x80 : 0, best = sign;
    if (isnan(f))
        return (uint8_t)(sign | (e5m2 ? 0x7e : 0x7f));
    double v = f, bestd = INFINITY;
    if (!e5m2 && fabs(v) > 448)
        v = copysign(448, v);
    if (isinf(v))
        return (uint8_t)(sign | 0x7c);
    static double mag[2][0x80]; /* the magnitudes, computed once: the search runs per element */
    static int have[2];
    if (!have[e5m2]) {
        for (unsigned c = 0; c < 0x80; c++)
            mag[e5m2][c] = ref_fp8_value(e5m2, c);
        have[e5m2] = 1;
    }
    double a = fabs(v);
    for (unsigned c = 0; c < 0x80; c++) {
        double x = mag[e5m2][c];
        if (isnan(x))
            continue;
        if (isinf(x))
            x = 65536;
        double d = fabs(a - x);
        if (d < bestd || (d == bestd && !(c & 1))) {
            bestd = d;
            best = sign | c;
        }
    }
    return (uint8_t)best;
}

static inline int ref_fp8_is_nan(int e5m2, unsigned c)
{
    return isnan(ref_fp8_value(e5m2, c));
}

#endif
