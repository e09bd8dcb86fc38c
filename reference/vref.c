/* See vref.h: the block counts, matrices and displacements the vector-collective tests draw, and
 * each dtype's store and load from its format (OCP fp8: e4m3 bias 7, e5m2 bias 15). */
#include <math.h>
#include <string.h>

#include "reference.h"
#include "vref.h"

static const size_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67};
#define NPRIMES (sizeof(primes) / sizeof(primes[0]))

const char *vref_pattern_name(vref_pattern_t p)
{
    static const char *const names[VREF_PATTERNS] = {"random", "zero", "single", "primes", "half"};
    return p < VREF_PATTERNS ? names[p] : "?";
}

/* One in four random counts is 0; the rest 1..40. */
static size_t random_count(uint32_t a, uint32_t b, uint32_t seed)
{
    uint32_t h = ref_hash(a, b, seed);
    return h % 4 == 0 ? 0 : 1 + (h >> 2) % 40;
}

size_t vref_sum(const size_t *counts, int n)
{
    size_t s = 0;
    for (int i = 0; i < n; i++)
        s += counts[i];
    return s;
}

void vref_counts(size_t *counts, int n, vref_pattern_t p, uint32_t seed)
{
    int one = (int)(seed % (uint32_t)n);
    for (int r = 0; r < n; r++) {
        switch (p) {
        case VREF_RANDOM: counts[r] = random_count((uint32_t)r, 0, seed); break;
        case VREF_SINGLE: counts[r] = r == one ? 1000 + seed % 37 : 0; break;
        case VREF_PRIMES: counts[r] = primes[((size_t)r + seed) % NPRIMES]; break;
        case VREF_HALF: counts[r] = 1 + ref_hash((uint32_t)r, 1, seed) % 300; break;
        default: counts[r] = 0; break;
        }
    }
    if (p == VREF_HALF) {
        counts[one] = 0;
        counts[one] = n == 1 ? 500 : vref_sum(counts, n);
    }
}

void vref_matrix(size_t *m, int n, vref_pattern_t p, uint32_t seed, int sym)
{
    int half = (int)(seed % (uint32_t)n); /* VREF_HALF: the destination of half of everything */
    for (int s = 0; s < n; s++) {
        int peer = (int)(((uint32_t)s + 1 + seed) % (uint32_t)n); /* VREF_SINGLE's only destination */
        size_t *row = m + (size_t)s * (size_t)n;
        for (int d = 0; d < n; d++) {
            uint32_t cell = (uint32_t)(s * n + d);
            switch (p) {
            case VREF_RANDOM: row[d] = random_count(cell, 1, seed); break;
            case VREF_SINGLE: row[d] = d == peer ? 700 + ref_hash(cell, 2, seed) % 300 : 0; break;
            case VREF_PRIMES: row[d] = primes[(cell + seed) % NPRIMES]; break;
            case VREF_HALF: row[d] = 1 + ref_hash(cell, 3, seed) % 200; break;
            default: row[d] = 0; break;
            }
        }
        if (p == VREF_HALF) {
            row[half] = 0;
            row[half] = n == 1 ? 300 : vref_sum(row, n);
        }
    }
    if (sym)
        for (int a = 0; a < n; a++)
            for (int b = 0; b < a; b++)
                m[(size_t)a * (size_t)n + (size_t)b] = m[(size_t)b * (size_t)n + (size_t)a];
}

size_t vref_displs(size_t *displs, const size_t *counts, int n, int gaps, uint32_t seed)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        int r = gaps ? n - 1 - i : i;
        if (gaps)
            at += 1 + ref_hash((uint32_t)r, 4, seed) % 5;
        displs[r] = at;
        at += counts[r];
    }
    return at + (gaps ? 1 + seed % 5 : 0);
}

int vref_is_float(gcoll_dtype_t d)
{
    switch (d) {
    case GCOLL_FLOAT16:
    case GCOLL_BFLOAT16:
    case GCOLL_FLOAT32:
    case GCOLL_FLOAT64:
    case GCOLL_FLOAT8_E4M3:
    case GCOLL_FLOAT8_E5M2: return 1;
    default: return 0;
    }
}

/* An OCP 8-bit float of mbits mantissa bits and exponent bias. e4m3 (mbits 3) has no infinity:
 * its largest finite, 448, is where it saturates, and S.1111.111 is its NaN; e5m2 (mbits 2) is
 * IEEE-like, exponent field 31 for infinities and NaNs. */
static uint8_t fp8_encode(double v, int mbits, int bias)
{
    int e4m3 = mbits == 3;
    uint8_t sign = signbit(v) ? 0x80 : 0;
    if (isnan(v))
        return (uint8_t)(sign | 0x7F);
    double a = fabs(v);
    uint8_t maxfin = e4m3 ? 0x7E : 0x7B, inf = e4m3 ? 0x7E : 0x7C;
    if (isinf(a))
        return (uint8_t)(sign | inf);
    if (a == 0)
        return sign;
    int emin = 1 - bias, e;
    frexp(a, &e);
    e -= 1; /* a = 1.f * 2^e */
    if (e < emin)
        e = emin;
    double q = nearbyint(ldexp(a, mbits - e)); /* the significand in units of the last place */
    if (q >= ldexp(1, mbits + 1)) {
        e++;
        q /= 2;
    }
    unsigned mant = (unsigned)q, expf = 0;
    if (mant >= 1u << mbits) {
        expf = (unsigned)(e + bias);
        mant -= 1u << mbits;
    }
    unsigned maxexp = e4m3 ? 15 : 30;
    if (expf > maxexp || (e4m3 && expf == 15 && mant == 7))
        return (uint8_t)(sign | (e4m3 ? maxfin : inf));
    return (uint8_t)(sign | expf << mbits | mant);
}

static double fp8_decode(uint8_t b, int mbits, int bias)
{
    int e4m3 = mbits == 3;
    double s = b & 0x80 ? -1 : 1;
    unsigned expf = (b & 0x7F) >> mbits, mant = b & ((1u << mbits) - 1);
    if (e4m3 && expf == 15 && mant == 7)
        return NAN;
    if (!e4m3 && expf == 31)
        return mant ? NAN : s * INFINITY;
    if (expf == 0)
        return s * ldexp(mant, 1 - bias - mbits);
    return s * ldexp((double)((1u << mbits) + mant), (int)expf - bias - mbits);
}

static uint16_t bf16_encode(double v)
{
    if (isnan(v))
        return 0x7FC0;
    int e;
    if (v != 0 && isfinite(v)) {
        frexp(v, &e);
        v = ldexp(nearbyint(ldexp(v, 8 - e)), e - 8); /* 8 significant bits, nearest even */
    }
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)(b >> 16);
}

void vref_encode(gcoll_dtype_t d, double v, void *out)
{
    switch (d) {
    case GCOLL_INT8: *(int8_t *)out = (int8_t)(int64_t)v; break;
    case GCOLL_UINT8: *(uint8_t *)out = (uint8_t)(uint64_t)v; break;
    case GCOLL_FLOAT8_E4M3: *(uint8_t *)out = fp8_encode(v, 3, 7); break;
    case GCOLL_FLOAT8_E5M2: *(uint8_t *)out = fp8_encode(v, 2, 15); break;
    case GCOLL_INT16: {
        int16_t x = (int16_t)(int64_t)v;
        memcpy(out, &x, 2);
        break;
    }
    case GCOLL_UINT16: {
        uint16_t x = (uint16_t)(uint64_t)v;
        memcpy(out, &x, 2);
        break;
    }
    case GCOLL_FLOAT16: {
        _Float16 x = (_Float16)v;
        memcpy(out, &x, 2);
        break;
    }
    case GCOLL_BFLOAT16: {
        uint16_t x = bf16_encode(v);
        memcpy(out, &x, 2);
        break;
    }
    case GCOLL_INT32: {
        int32_t x = (int32_t)(int64_t)v;
        memcpy(out, &x, 4);
        break;
    }
    case GCOLL_UINT32: {
        uint32_t x = (uint32_t)(uint64_t)v;
        memcpy(out, &x, 4);
        break;
    }
    case GCOLL_FLOAT32: {
        float x = (float)v;
        memcpy(out, &x, 4);
        break;
    }
    case GCOLL_INT64: {
        int64_t x = (int64_t)v;
        memcpy(out, &x, 8);
        break;
    }
    case GCOLL_UINT64: {
        uint64_t x = (uint64_t)v;
        memcpy(out, &x, 8);
        break;
    }
    default: memcpy(out, &v, 8); break;
    }
}

double vref_decode(gcoll_dtype_t d, const void *p)
{
    switch (d) {
    case GCOLL_INT8: return *(const int8_t *)p;
    case GCOLL_UINT8: return *(const uint8_t *)p;
    case GCOLL_FLOAT8_E4M3: return fp8_decode(*(const uint8_t *)p, 3, 7);
    case GCOLL_FLOAT8_E5M2: return fp8_decode(*(const uint8_t *)p, 2, 15);
    case GCOLL_INT16: {
        int16_t x;
        memcpy(&x, p, 2);
        return x;
    }
    case GCOLL_UINT16: {
        uint16_t x;
        memcpy(&x, p, 2);
        return x;
    }
    case GCOLL_FLOAT16: {
        _Float16 x;
        memcpy(&x, p, 2);
        return (double)x;
    }
    case GCOLL_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        uint32_t b = (uint32_t)h << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    case GCOLL_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        return x;
    }
    case GCOLL_UINT32: {
        uint32_t x;
        memcpy(&x, p, 4);
        return x;
    }
    case GCOLL_FLOAT32: {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    case GCOLL_INT64: {
        int64_t x;
        memcpy(&x, p, 8);
        return (double)x;
    }
    case GCOLL_UINT64: {
        uint64_t x;
        memcpy(&x, p, 8);
        return (double)x;
    }
    default: {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    }
}
