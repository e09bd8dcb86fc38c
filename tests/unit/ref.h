/* Independent references for the unit tests: the compiler's own _Float16 conversions, and a
 * bf16 rounding that picks the nearer of the two neighbouring bf16 values by distance. */
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

#endif
