/* Datatype sizes and names, and scalar fp16/bf16 conversions (round-to-nearest-even) that the
 * vector kernels must match bit for bit. */
#ifndef GCOLL_DTYPE_H
#define GCOLL_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "gcoll.h"

static inline int gcoll__dtype_valid(gcoll_dtype_t d)
{
    return (unsigned)d < GCOLL_DTYPE_COUNT;
}
static inline int gcoll__op_valid(gcoll_op_t o)
{
    return (unsigned)o < GCOLL_OP_COUNT;
}

static inline float gcoll__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    if (e == 0x1f) {
        x = sign | 0x7f800000 | (m << 13) | (m ? 0x400000 : 0); /* NaNs come out quiet */
    } else if (e) {
        x = sign | ((e + 112) << 23) | (m << 13);
    } else if (!m) {
        x = sign;
    } else { /* subnormal half: normalize */
        e = 113;
        while (!(m & 0x400)) {
            m <<= 1;
            e--;
        }
        x = sign | (e << 23) | ((m & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static inline uint16_t gcoll__f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
    if (ax > 0x7f800000) /* NaN: quiet, keep the top payload bits */
        return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000) /* 65520 and up, and infinity: round to infinity */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000) {   /* below the smallest normal half: subnormal or zero */
        if (ax < 0x33000000) /* at most 2^-25: rounds to zero (the tie goes to even) */
            return (uint16_t)sign;
        uint32_t mant = (ax & 0x7fffff) | 0x800000, shift = 126 - (ax >> 23);
        uint32_t r = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        r += (rem > half) || (rem == half && (r & 1));
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax - 0x38000000; /* rebias the exponent from 127 to 15 */
    uint32_t res = r >> 13, rem = r & 0x1fff;
    res += (rem > 0x1000) || (rem == 0x1000 && (res & 1));
    return (uint16_t)(sign | res);
}

static inline float gcoll__bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static inline uint16_t gcoll__f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

#endif
