/* The fp8 decoding tables of fp8.h: every code's value, from the format's definition, built by
 * the compiler. E4M3: bias 7, 3 mantissa bits, exponent field 0 subnormal, S.1111.111 NaN and
 * no infinities. E5M2: bias 15, 2 mantissa bits, exponent field 31 infinity or NaN. */
#include <math.h>

#include "base/fp8.h"

#define E4M3_ABS(c)                                                                                          \
    ((c) % 128 == 127      ? NAN                                                                             \
         : ((c) >> 3 & 15) ? (float)(8 + ((c)&7)) * (float)(1u << ((c) >> 3 & 15)) / 1024.0f /* 2^(e-7-3) */ \
                           : (float)((c)&7) / 512.0f)
#define E5M2_ABS(c)                                                                                             \
    (((c) >> 2 & 31) == 31 ? (((c)&3) ? NAN : INFINITY)                                                         \
         : ((c) >> 2 & 31) ? (float)(4 + ((c)&3)) * (float)(1u << ((c) >> 2 & 31)) / 131072.0f /* 2^(e-15-2) */ \
                           : (float)((c)&3) / 65536.0f)
#define E4M3(c) ((c)&0x80 ? -E4M3_ABS((c)&0x7f) : E4M3_ABS(c))
#define E5M2(c) ((c)&0x80 ? -E5M2_ABS((c)&0x7f) : E5M2_ABS(c))

#define CODES4(F, c) F(c), F((c) + 1), F((c) + 2), F((c) + 3)
#define CODES16(F, c) CODES4(F, c), CODES4(F, (c) + 4), CODES4(F, (c) + 8), CODES4(F, (c) + 12)
#define CODES64(F, c) CODES16(F, c), CODES16(F, (c) + 16), CODES16(F, (c) + 32), CODES16(F, (c) + 48)
#define CODES256(F) CODES64(F, 0), CODES64(F, 64), CODES64(F, 128), CODES64(F, 192)

const float gcoll__e4m3_values[256] = {CODES256(E4M3)};
const float gcoll__e5m2_values[256] = {CODES256(E5M2)};
