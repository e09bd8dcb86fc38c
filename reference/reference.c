/* See reference.h: the deterministic test inputs every rank regenerates, and the exact expected
 * results of each collective and op. */
#include <math.h>
#include <string.h>

#include "reference.h"

uint32_t ref_hash(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t x = ((uint64_t)a * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)b * 0xC2B2AE3D27D4EB4Full) ^
        ((uint64_t)c * 0x165667B19E3779F9ull);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint32_t)(x >> 16);
}

static int is_fp8(gcoll_dtype_t d)
{
    return d == GCOLL_FLOAT8_E4M3 || d == GCOLL_FLOAT8_E5M2;
}

static int is_float(gcoll_dtype_t d)
{
    return d == GCOLL_FLOAT16 || d == GCOLL_BFLOAT16 || d == GCOLL_FLOAT32 || d == GCOLL_FLOAT64 || is_fp8(d);
}

static int is_unsigned(gcoll_dtype_t d)
{
    return d == GCOLL_UINT8 || d == GCOLL_UINT16 || d == GCOLL_UINT32 || d == GCOLL_UINT64;
}

/* The value of fp8 code c by the OCP definition: sign, exponent field, mantissa field. E4M3: bias
 * 7, 3 mantissa bits, S.1111.111 is NaN and there is no infinity. E5M2: bias 15, 2 mantissa
 * bits, exponent field 31 is infinity (mantissa 0) or NaN. */
static double fp8_value(gcoll_dtype_t d, unsigned c)
{
    int e5 = d == GCOLL_FLOAT8_E5M2, mbits = e5 ? 2 : 3, bias = e5 ? 15 : 7;
    unsigned mant = c & ((1u << mbits) - 1), exp = (c & 0x7f) >> mbits;
    double sign = c & 0x80 ? -1 : 1;
    if (e5 && exp == 31)
        return mant ? NAN : sign * INFINITY;
    if (!e5 && exp == 15 && mant == 7)
        return NAN;
    if (exp == 0)
        return sign * ldexp(mant, 1 - bias - mbits);
    return sign * ldexp((double)(mant | 1u << mbits), (int)exp - bias - mbits);
}

/* v rounded to the nearest fp8 value, ties to the even code: the positive codes in order of value
 * are searched for the last one at or below |v|, and it or the next is taken. E4M3 saturates past
 * 448; E5M2 takes infinity from 61440 on (halfway to 2^16, whose code 0x7c is the even one). */
static uint8_t fp8_encode(gcoll_dtype_t d, double v)
{
    int e5 = d == GCOLL_FLOAT8_E5M2;
    unsigned sign = signbit(v) ? 0x80 : 0, top = e5 ? 0x7b : 0x7e; /* top: the largest finite */
    double a = fabs(v);
    if (isnan(v))
        return (uint8_t)(sign | (e5 ? 0x7e : 0x7f));
    if (a >= fp8_value(d, top))
        return (uint8_t)(sign | (e5 && a >= (fp8_value(d, top) + 65536) / 2 ? 0x7c : top));
    unsigned lo = 0, hi = top;
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (fp8_value(d, mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    double below = a - fp8_value(d, lo), above = fp8_value(d, lo + 1) - a;
    return (uint8_t)(sign | (above < below || (above == below && (lo & 1)) ? lo + 1 : lo));
}

/* Round to p significant bits, nearest-even (the FPU's default mode). */
static double round_sig(double v, int p)
{
    if (v == 0 || !isfinite(v))
        return v;
    int e;
    frexp(v, &e);
    return ldexp(nearbyint(ldexp(v, p - e)), e - p);
}

void ref_encode(gcoll_dtype_t d, double v, void *out)
{
    switch (d) {
    case GCOLL_INT8: {
        int8_t x = (int8_t)(int64_t)v;
        memcpy(out, &x, 1);
        break;
    }
    case GCOLL_UINT8: {
        uint8_t x = (uint8_t)(uint64_t)v;
        memcpy(out, &x, 1);
        break;
    }
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
    case GCOLL_FLOAT8_E4M3:
    case GCOLL_FLOAT8_E5M2: {
        uint8_t x = fp8_encode(d, v);
        memcpy(out, &x, 1);
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
    case GCOLL_FLOAT16: {
        _Float16 x = (_Float16)v;
        memcpy(out, &x, 2);
        break;
    }
    case GCOLL_BFLOAT16: {
        float f = (float)round_sig(v, 8);
        uint32_t b;
        memcpy(&b, &f, 4);
        uint16_t h = (uint16_t)(b >> 16);
        memcpy(out, &h, 2);
        break;
    }
    case GCOLL_FLOAT32: {
        float x = (float)v;
        memcpy(out, &x, 4);
        break;
    }
    default: memcpy(out, &v, 8); break;
    }
}

double ref_decode(gcoll_dtype_t d, const void *p)
{
    union {
        int8_t i8;
        uint8_t u8;
        int16_t i16;
        uint16_t u16;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        _Float16 f16;
        float f32;
        double f64;
    } x;
    memcpy(&x, p, gcoll_dtype_size(d));
    switch (d) {
    case GCOLL_INT8: return x.i8;
    case GCOLL_UINT8: return x.u8;
    case GCOLL_INT16: return x.i16;
    case GCOLL_UINT16: return x.u16;
    case GCOLL_INT32: return x.i32;
    case GCOLL_UINT32: return x.u32;
    case GCOLL_INT64: return (double)x.i64;
    case GCOLL_UINT64: return (double)x.u64;
    case GCOLL_FLOAT8_E4M3:
    case GCOLL_FLOAT8_E5M2: return fp8_value(d, x.u8);
    case GCOLL_FLOAT16: return x.f16;
    case GCOLL_BFLOAT16: {
        uint32_t b = (uint32_t)x.u16 << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    case GCOLL_FLOAT32: return x.f32;
    default: return x.f64;
    }
}

static int ref_ranks = 8;

void ref_set_ranks(int nranks)
{
    ref_ranks = nranks > 8 ? nranks : 8;
}

double ref_value(int rank, size_t i, gcoll_dtype_t d, gcoll_op_t op)
{
    uint32_t h = ref_hash((uint32_t)rank, (uint32_t)i, (uint32_t)(d * 8 + op));
    int wide = d == GCOLL_INT16 || d == GCOLL_UINT16; /* 16-bit integers: values past int8's range */
    double k;
    switch (op) {
    case GCOLL_PROD: {
        static const double small[] = {1, 2, -1, 0.5}, tail[] = {1, -1};
        if (rank < 3) /* at most three factors of 2: products stay in int8 */
            return small[h % (is_unsigned(d) ? 2 : is_float(d) ? 4 : 3)];
        return tail[h % (is_unsigned(d) ? 1 : 2)];
    }
    case GCOLL_MIN:
    case GCOLL_MAX:
        if (is_fp8(d)) /* +-(0..7) * 2^e over the format's range, subnormals included */
            return ((double)(h % 15) - 7) *
                ldexp(1, d == GCOLL_FLOAT8_E4M3 ? (int)(h / 15 % 16) - 9 : (int)(h / 15 % 29) - 16);
        if (wide)
            return is_unsigned(d) ? h % 65536 : (double)(h % 65535) - 32767;
        k = is_unsigned(d) ? h % 201 : (double)(h % 201) - 100;
        break;
    default:
        /* one rank in every `stride` adds to element i: at most 8 nonzero terms a sum */
        if (((size_t)rank + i) % (size_t)((ref_ranks + 7) / 8))
            return 0;
        /* any partial sum of 8 ranks is exact: within int8 and uint8 (int16 and uint16), and
         * integers up to 16 (E4M3) and 8 (E5M2) */
        if (d == GCOLL_FLOAT8_E4M3)
            return (double)(h % 5) - 2;
        if (d == GCOLL_FLOAT8_E5M2)
            return (double)(h % 3) - 1;
        if (wide)
            return is_unsigned(d) ? h % 8192 : (double)(h % 8191) - 4095;
        k = is_unsigned(d) ? h % 32 : (double)(h % 31) - 15;
        break;
    }
    return is_float(d) ? k / 4 : k;
}

double ref_expected(size_t i, gcoll_dtype_t d, gcoll_op_t op, int n)
{
    double acc = ref_value(0, i, d, op);
    for (int r = 1; r < n; r++) {
        double v = ref_value(r, i, d, op);
        switch (op) {
        case GCOLL_PROD: acc *= v; break;
        case GCOLL_MIN: acc = v < acc ? v : acc; break;
        case GCOLL_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (op == GCOLL_AVG)
        acc = is_float(d) ? acc / n : (double)((int64_t)acc / n);
    return acc;
}

void ref_fill_values(void *p, size_t n, int rank, gcoll_dtype_t d, gcoll_op_t op)
{
    size_t es = gcoll_dtype_size(d);
    for (size_t i = 0; i < n; i++)
        ref_encode(d, ref_value(rank, i, d, op), (char *)p + i * es);
}

void ref_fill_expected(void *p, size_t first, size_t n, gcoll_dtype_t d, gcoll_op_t op, int nranks)
{
    size_t es = gcoll_dtype_size(d);
    for (size_t i = 0; i < n; i++)
        ref_encode(d, ref_expected(first + i, d, op, nranks), (char *)p + i * es);
}

void ref_fill_bytes(void *p, size_t bytes, int rank, uint32_t salt)
{
    for (size_t i = 0; i < bytes; i += 4) {
        uint32_t h = ref_hash((uint32_t)rank, (uint32_t)i, salt);
        memcpy((char *)p + i, &h, bytes - i < 4 ? bytes - i : 4);
    }
}

void ref_topk_expected(float *out, size_t count, double density, gcoll_op_t op, int nranks)
{
    double kd = density * (double)count;
    size_t k = kd >= (double)count ? count : (size_t)kd;
    memset(out, 0, count * sizeof(float));
    for (int q = 0; q < nranks; q++) {
        size_t hist[16] = {0}, above = 0;
        for (size_t i = 0; i < count; i++)
            hist[(int)fabs(ref_value(q, i, GCOLL_FLOAT32, op) * 4)]++;
        int t = 15; /* the magnitude (in quarters) of the k-th largest */
        while (t > 0 && above + hist[t] < k)
            above += hist[t--];
        size_t ties = k - above;
        for (size_t i = 0; i < count && k; i++) {
            double v = ref_value(q, i, GCOLL_FLOAT32, op);
            int m = (int)fabs(v * 4);
            if (m > t || (m == t && ties && ties--))
                out[i] += (float)v;
        }
    }
    if (op == GCOLL_AVG)
        for (size_t i = 0; i < count; i++)
            out[i] /= (float)nranks;
}
