/* Adasum's per-tensor kernels: dot product and squared norms in double (eight independent lanes,
 * so the compiler may vectorize without reassociating), and ca a + cb b. fp16 and bf16 go
 * through float as DESIGN.md says; fp32 combines in double and rounds once. Built at -O3 (see
 * the Makefile), with an AVX2 clone chosen at load time where the CPU has it. */
#include <stdatomic.h>
#include <stdint.h>

#include "base/dtype.h"
#include "collectives/adasum.h"

#define LANES 8

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
/* by feature: an "arch=haswell" clone is chosen on Haswell CPUs alone (the resolver tests the
 * model), so every later CPU ran the default one */
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

/* The f32 lanes, inlined into a plain and an FMA build: with FMA each lane costs a conversion and
 * three fused multiply-adds instead of six operations; the products are exact in double either
 * way, only the rounding of each sum differs. */
static inline __attribute__((always_inline)) void dot_f32_lanes(const float *a, const float *b, size_t n, double out[3],
                                                                int fused)
{
    double d[LANES] = {0}, x[LANES] = {0}, y[LANES] = {0}, td = 0, tx = 0, ty = 0;
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            double p = a[i + l], q = b[i + l];
            d[l] = fused ? __builtin_fma(p, q, d[l]) : d[l] + p * q;
            x[l] = fused ? __builtin_fma(p, p, x[l]) : x[l] + p * p;
            y[l] = fused ? __builtin_fma(q, q, y[l]) : y[l] + q * q;
        }
    for (; i < n; i++) { /* the tail apart, so that the lanes stay a vector */
        double p = a[i], q = b[i];
        td += p * q;
        tx += p * p;
        ty += q * q;
    }
    for (int l = 0; l < LANES; l++) {
        td += d[l];
        tx += x[l];
        ty += y[l];
    }
    out[0] += td;
    out[1] += tx;
    out[2] += ty;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target("avx2,fma"))) static void dot_f32_fma(const float *a, const float *b, size_t n, double out[3])
{
    dot_f32_lanes(a, b, n, out, 1);
}
#define HAVE_FMA_DOT 1
#endif

CLONES static void dot_f32_plain(const float *a, const float *b, size_t n, double out[3])
{
    dot_f32_lanes(a, b, n, out, 0);
}

CLONES static void dot_f64(const double *a, const double *b, size_t n, double out[3])
{
    double d[LANES] = {0}, x[LANES] = {0}, y[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            double p = a[i + l], q = b[i + l];
            d[l] += p * q;
            x[l] += p * p;
            y[l] += q * q;
        }
    for (; i < n; i++) {
        d[0] += a[i] * b[i];
        x[0] += a[i] * a[i];
        y[0] += b[i] * b[i];
    }
    for (int l = 0; l < LANES; l++) {
        out[0] += d[l];
        out[1] += x[l];
        out[2] += y[l];
    }
}

static void dot_f32(const float *a, const float *b, size_t n, double out[3])
{
#ifdef HAVE_FMA_DOT
    static _Atomic int fma = -1; /* whether the CPU has it, found at the first call */
    if (fma < 0)
        fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (fma) {
        dot_f32_fma(a, b, n, out);
        return;
    }
#endif
    dot_f32_plain(a, b, n, out);
}

static float half_load(gcoll_dtype_t d, const uint16_t *p, size_t i)
{
    return d == GCOLL_FLOAT16 ? gcoll__f16_to_f32(p[i]) : gcoll__bf16_to_f32(p[i]);
}

static void dot_half(gcoll_dtype_t dt, const uint16_t *a, const uint16_t *b, size_t n, double out[3])
{
    double d = 0, x = 0, y = 0;
    for (size_t i = 0; i < n; i++) {
        double p = half_load(dt, a, i), q = half_load(dt, b, i);
        d += p * q;
        x += p * p;
        y += q * q;
    }
    out[0] += d;
    out[1] += x;
    out[2] += y;
}

/* fp32 combines in float: DESIGN.md asks double of the dot and norms only, and float keeps the
 * pass at memory speed */
CLONES static void axpby_f32(float *dst, const float *a, const float *b, size_t n, double ca, double cb)
{
    float fa = (float)ca, fb = (float)cb;
    for (size_t i = 0; i < n; i++)
        dst[i] = fa * a[i] + fb * b[i];
}

CLONES static void axpby_f64(double *dst, const double *a, const double *b, size_t n, double ca, double cb)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = ca * a[i] + cb * b[i];
}

static void axpby_half(gcoll_dtype_t dt, uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n, double ca,
                       double cb)
{
    for (size_t i = 0; i < n; i++) {
        float v = (float)(ca * half_load(dt, a, i) + cb * half_load(dt, b, i));
        dst[i] = dt == GCOLL_FLOAT16 ? gcoll__f32_to_f16(v) : gcoll__f32_to_bf16(v);
    }
}

/* The tensor that holds element i: the last t with off[t] <= i (empty tensors end earlier). */
static size_t tensor_at(const gcoll__adasum_shape_t *sh, size_t i)
{
    size_t lo = 0, hi = sh->nt;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (sh->off[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void gcoll__adasum_partials(const gcoll__adasum_shape_t *sh, const void *a, const void *b, size_t first, size_t n,
                            double *acc)
{
    const char *pa = a, *pb = b;
    size_t end = first + n;
    for (size_t t = n ? tensor_at(sh, first) : sh->nt, i = first; t < sh->nt && i < end; t++) {
        size_t j = sh->off[t + 1] < end ? sh->off[t + 1] : end;
        if (j <= i)
            continue;
        size_t at = (i - first) * sh->es, len = j - i;
        double *o = acc + 3 * t;
        switch (sh->dtype) {
        // cppcheck-suppress invalidPointerCast ; the bytes are the caller's tensors of this dtype
        case GCOLL_FLOAT32: dot_f32((const float *)(pa + at), (const float *)(pb + at), len, o); break;
        // cppcheck-suppress invalidPointerCast ; the bytes are the caller's tensors of this dtype
        case GCOLL_FLOAT64: dot_f64((const double *)(pa + at), (const double *)(pb + at), len, o); break;
        default: dot_half(sh->dtype, (const uint16_t *)(pa + at), (const uint16_t *)(pb + at), len, o); break;
        }
        i = j;
    }
}

double gcoll__adasum_coeff(double dot, double nv)
{
    return nv >= 0x1p-511 ? 1.0 - dot / (2.0 * nv) : 1.0;
}

void gcoll__adasum_apply(const gcoll__adasum_shape_t *sh, void *dst, const void *a, const void *b, size_t first,
                         size_t n, const double *sums)
{
    char *pd = dst;
    const char *pa = a, *pb = b;
    size_t end = first + n;
    for (size_t t = n ? tensor_at(sh, first) : sh->nt, i = first; t < sh->nt && i < end; t++) {
        size_t j = sh->off[t + 1] < end ? sh->off[t + 1] : end;
        if (j <= i)
            continue;
        size_t at = (i - first) * sh->es, len = j - i;
        const double *s = sums + 3 * t;
        double ca = gcoll__adasum_coeff(s[0], s[1]), cb = gcoll__adasum_coeff(s[0], s[2]);
        switch (sh->dtype) {
        case GCOLL_FLOAT32:
            // cppcheck-suppress invalidPointerCast ; the bytes are the caller's tensors of this dtype
            axpby_f32((float *)(pd + at), (const float *)(pa + at), (const float *)(pb + at), len, ca, cb);
            break;
        case GCOLL_FLOAT64:
            // cppcheck-suppress invalidPointerCast ; the bytes are the caller's tensors of this dtype
            axpby_f64((double *)(pd + at), (const double *)(pa + at), (const double *)(pb + at), len, ca, cb);
            break;
        default:
            axpby_half(sh->dtype, (uint16_t *)(pd + at), (const uint16_t *)(pa + at), (const uint16_t *)(pb + at), len,
                       ca, cb);
            break;
        }
        i = j;
    }
}
