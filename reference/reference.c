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

static int is_float(gcoll_dtype_t d)
{
    return d >= GCOLL_FLOAT16;
}

static int is_unsigned(gcoll_dtype_t d)
{
    return d == GCOLL_UINT8 || d == GCOLL_UINT32 || d == GCOLL_UINT64;
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

double ref_value(int rank, size_t i, gcoll_dtype_t d, gcoll_op_t op)
{
    uint32_t h = ref_hash((uint32_t)rank, (uint32_t)i, (uint32_t)(d * 8 + op));
    double k;
    switch (op) {
    case GCOLL_PROD: {
        static const double small[] = {1, 2, -1, 0.5}, tail[] = {1, -1};
        if (rank < 3) /* at most three factors of 2: products stay in int8 */
            return small[h % (is_unsigned(d) ? 2 : is_float(d) ? 4 : 3)];
        return tail[h % (is_unsigned(d) ? 1 : 2)];
    }
    case GCOLL_MIN:
    case GCOLL_MAX: k = is_unsigned(d) ? h % 201 : (double)(h % 201) - 100; break;
    default: /* sums of 8 ranks stay within int8 and uint8 */
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
