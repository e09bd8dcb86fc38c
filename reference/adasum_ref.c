/* See adasum_ref.h: the Adasum reference in double, the dtype decoding and the tolerance the
 * tests and the benchmark's validation allow per dtype. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adasum_ref.h"
#include "reference.h"

double adasum_decode(gcoll_dtype_t d, const void *p)
{
    switch (d) {
    case GCOLL_FLOAT16: {
        _Float16 x;
        memcpy(&x, p, 2);
        return x;
    }
    case GCOLL_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        uint32_t b = (uint32_t)h << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    case GCOLL_FLOAT32: {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    default: {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    }
}

double adasum_ref_input(gcoll_dtype_t d, int q, size_t i, uint32_t salt)
{
    char enc[8];
    ref_encode(d, ((double)ref_hash((uint32_t)q, (uint32_t)i, salt) / 4294967296.0 - 0.5) * 3, enc);
    return adasum_decode(d, enc);
}

double adasum_ref_tolerance(gcoll_dtype_t d)
{
    switch (d) {
    case GCOLL_FLOAT16: return 5e-3;
    case GCOLL_BFLOAT16: return 4e-2;
    case GCOLL_FLOAT32: return 1e-5;
    default: return 1e-10; /* 1-element tensors amplify rounding by |b|/|a| */
    }
}

/* u^T G v for the n x n Gram matrix G. */
static double gram_dot(const double *g, const double *u, const double *v, int n)
{
    double s = 0;
    for (int p = 0; p < n; p++)
        for (int q = 0; q < n; q++)
            s += u[p] * g[p * n + q] * v[q];
    return s;
}

/* docs/adasum.md's combination of vectors a and b, on their weights: wa = ca wa + cb wb. */
static void combine(const double *g, double *wa, const double *wb, int n)
{
    double dot = gram_dot(g, wa, wb, n), na = gram_dot(g, wa, wa, n), nb = gram_dot(g, wb, wb, n);
    const double floor_ = sqrt(2.2250738585072014e-308); /* sqrt(DBL_MIN) */
    double ca = na >= floor_ ? 1 - dot / (2 * na) : 1, cb = nb >= floor_ ? 1 - dot / (2 * nb) : 1;
    for (int q = 0; q < n; q++)
        wa[q] = ca * wa[q] + cb * wb[q];
}

int adasum_ref_init(adasum_ref_t *r, int n, int m, const double *init, size_t count, const size_t *tensor_counts,
                    size_t ntensors, adasum_value_fn value, void *ctx)
{
    size_t nt = tensor_counts ? ntensors : 1;
    memset(r, 0, sizeof(*r));
    r->n = n;
    r->nt = nt;
    r->value = value;
    r->ctx = ctx;
    r->off = malloc((nt + 1) * sizeof(size_t));
    r->w = malloc(nt * (size_t)n * sizeof(double));
    r->scale = malloc(nt * sizeof(double));
    double *g = calloc((size_t)n * (size_t)n, sizeof(double)), *x = malloc((size_t)n * sizeof(double));
    double *vw = malloc((size_t)m * (size_t)n * sizeof(double));
    if (!r->off || !r->w || !r->scale || !g || !x || !vw) {
        free(g);
        free(x);
        free(vw);
        adasum_ref_free(r);
        return -1;
    }
    r->off[0] = 0;
    for (size_t t = 0; t < nt; t++)
        r->off[t + 1] = r->off[t] + (tensor_counts ? tensor_counts[t] : count);
    int P = 1;
    while (P * 2 <= m)
        P *= 2;
    for (size_t t = 0; t < nt; t++) {
        memset(g, 0, (size_t)n * (size_t)n * sizeof(double));
        for (size_t i = r->off[t]; i < r->off[t + 1]; i++) {
            for (int q = 0; q < n; q++)
                x[q] = value(q, i, ctx);
            for (int p = 0; p < n; p++)
                for (int q = 0; q < n; q++)
                    g[p * n + q] += x[p] * x[q];
        }
        memcpy(vw, init, (size_t)m * (size_t)n * sizeof(double));
        r->scale[t] = 0;
        for (int v = 0; v < m; v++) {
            double nv = sqrt(gram_dot(g, vw + (size_t)v * n, vw + (size_t)v * n, n));
            r->scale[t] = nv > r->scale[t] ? nv : r->scale[t];
        }
        for (int v = P; v < m; v++) /* the fold */
            combine(g, vw + (size_t)(v - P) * n, vw + (size_t)v * n, n);
        for (int d = 1; d < P; d *= 2) /* adjacent pairs, level by level */
            for (int i = 0; i < P; i += 2 * d)
                combine(g, vw + (size_t)i * n, vw + (size_t)(i + d) * n, n);
        memcpy(r->w + t * (size_t)n, vw, (size_t)n * sizeof(double));
    }
    free(g);
    free(x);
    free(vw);
    return 0;
}

void adasum_ref_free(adasum_ref_t *r)
{
    free(r->off);
    free(r->w);
    free(r->scale);
    r->off = NULL;
    r->w = NULL;
    r->scale = NULL;
}

/* The tensor holding element i. */
static size_t tensor_of(const adasum_ref_t *r, size_t i)
{
    size_t lo = 0, hi = r->nt;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->off[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

double adasum_ref_at(const adasum_ref_t *r, size_t i)
{
    const double *w = r->w + tensor_of(r, i) * (size_t)r->n;
    double s = 0;
    for (int q = 0; q < r->n; q++)
        s += w[q] * r->value(q, i, r->ctx);
    return s;
}

double adasum_ref_error(const adasum_ref_t *r, const void *got, gcoll_dtype_t d, size_t *worst)
{
    size_t es = gcoll_dtype_size(d);
    double max = 0;
    *worst = 0;
    for (size_t t = 0; t < r->nt; t++) {
        double e2 = 0, r2 = 0;
        for (size_t i = r->off[t]; i < r->off[t + 1]; i++) {
            double ref = adasum_ref_at(r, i), g = adasum_decode(d, (const char *)got + i * es);
            e2 += (g - ref) * (g - ref);
            r2 += ref * ref;
        }
        double norm = sqrt(r2) > r->scale[t] ? sqrt(r2) : r->scale[t];
        double err = norm > 0 ? sqrt(e2) / norm : sqrt(e2);
        if (isnan(err))
            err = INFINITY;
        if (err > max) {
            max = err;
            *worst = t;
        }
    }
    return max;
}
