/* Every kernel table this CPU supports, every dtype and op, lengths 0..300 and large ones, at
 * unaligned offsets and in place, against a scalar reference written here; and the scaling of
 * every floating-point dtype. Float inputs mix NaN, infinities, subnormals, negative zero and
 * random bit patterns. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/reduce.h"
#include "ref.h"
#include "unit.h"

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int is_flt(int d)
{
    return d == GCOLL_FLOAT16 || d == GCOLL_BFLOAT16 || d == GCOLL_FLOAT32 || d == GCOLL_FLOAT64 ||
        d == GCOLL_FLOAT8_E4M3 || d == GCOLL_FLOAT8_E5M2;
}

static double special(int d)
{
    static const double v[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, 3.0, -2.5};
    uint64_t k = rnd() % 14;
    if (k < sizeof(v) / sizeof(v[0]))
        return v[k];
    switch (d) { /* the smallest subnormal and the largest finite value of the type */
    case GCOLL_FLOAT16: return k == 10 ? ldexp(1, -24) : 65504.0;
    case GCOLL_BFLOAT16: return k == 10 ? ldexp(1, -133) : 3.3895313892515355e38;
    case GCOLL_FLOAT32: return k == 10 ? ldexp(1, -149) : 3.4028234663852886e38;
    case GCOLL_FLOAT8_E4M3: return k == 10 ? ldexp(1, -9) : 448.0;
    case GCOLL_FLOAT8_E5M2: return k == 10 ? ldexp(1, -16) : 57344.0;
    default: return k == 10 ? ldexp(1, -1074) : 1.7976931348623157e308;
    }
}

static double ld_flt(int d, const char *p)
{
    uint16_t h;
    float f;
    double x;
    switch (d) {
    case GCOLL_FLOAT8_E4M3: return ref_fp8_value(0, (uint8_t)*p);
    case GCOLL_FLOAT8_E5M2: return ref_fp8_value(1, (uint8_t)*p);
    case GCOLL_FLOAT16: memcpy(&h, p, 2); return ref_f16_to_f32(h);
    case GCOLL_BFLOAT16: memcpy(&h, p, 2); return ref_bf16_to_f32(h);
    case GCOLL_FLOAT32: memcpy(&f, p, 4); return f;
    default: memcpy(&x, p, 8); return x;
    }
}

/* Stores v, a value already in fp32 for every type but fp64 (so the conversion from double is
 * exact and the one rounding is the dtype's). */
static void st_flt(int d, char *p, double v)
{
    uint16_t h;
    float f;
    switch (d) {
    case GCOLL_FLOAT8_E4M3: *p = (char)ref_f32_to_fp8(0, (float)v); break;
    case GCOLL_FLOAT8_E5M2: *p = (char)ref_f32_to_fp8(1, (float)v); break;
    case GCOLL_FLOAT16:
        h = ref_f32_to_f16((float)v);
        memcpy(p, &h, 2);
        break;
    case GCOLL_BFLOAT16:
        h = ref_f32_to_bf16((float)v);
        memcpy(p, &h, 2);
        break;
    case GCOLL_FLOAT32:
        f = (float)v;
        memcpy(p, &f, 4);
        break;
    default: memcpy(p, &v, 8); break;
    }
}

static void fill(int d, char *p, size_t n)
{
    size_t es = gcoll_dtype_size((gcoll_dtype_t)d);
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = rnd();
        memcpy(p + i * es, &bits, es);
        if (is_flt(d) && rnd() % 4 == 0) {
            st_flt(d, p + i * es, special(d));
        } else if (is_flt(d) && rnd() % 2) { /* ordinary magnitudes, where sums round */
            double v = ((double)(int64_t)(rnd() % 2000001) - 1000000) / 1024.0;
            if (d == GCOLL_FLOAT16)
                v /= 64;
            else if (d == GCOLL_FLOAT8_E4M3 || d == GCOLL_FLOAT8_E5M2)
                v /= 4096; /* within +-245, mostly below E4M3's saturation */
            st_flt(d, p + i * es, (double)(float)v);
        }
    }
}

/* One float op in the precision gcoll specifies: double for fp64, float for the others. */
static double flt_op(int d, int op, double x, double y)
{
    if (op == GCOLL_MIN || op == GCOLL_MAX) {
        if (isnan(x) || isnan(y))
            return NAN;
        if (x == 0 && y == 0) /* zeros of either sign: min prefers -0, max prefers +0 */
            return (op == GCOLL_MIN ? signbit(x) || signbit(y) : signbit(x) && signbit(y)) ? -0.0 : 0.0;
        return (op == GCOLL_MIN) == (x < y) ? x : y;
    }
    if (d == GCOLL_FLOAT64)
        return op == GCOLL_PROD ? x * y : x + y;
    float fx = (float)x, fy = (float)y;
    return op == GCOLL_PROD ? (double)(fx * fy) : (double)(fx + fy);
}

static int64_t ld_int(int d, const char *p)
{
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    switch (d) {
    case GCOLL_INT8: memcpy(&i8, p, 1); return i8;
    case GCOLL_UINT8: memcpy(&u8, p, 1); return u8;
    case GCOLL_INT16: memcpy(&i16, p, 2); return i16;
    case GCOLL_UINT16: memcpy(&u16, p, 2); return u16;
    case GCOLL_INT32: memcpy(&i32, p, 4); return i32;
    case GCOLL_UINT32: memcpy(&u32, p, 4); return u32;
    default: memcpy(&i64, p, 8); return i64;
    }
}

static int int_less(int d, int64_t x, int64_t y)
{
    return d == GCOLL_UINT64 ? (uint64_t)x < (uint64_t)y : x < y;
}

static void ref_reduce(int d, int op, char *dst, const char *a, const char *b, size_t n)
{
    size_t es = gcoll_dtype_size((gcoll_dtype_t)d);
    for (size_t i = 0; i < n; i++) {
        if (is_flt(d)) {
            st_flt(d, dst + i * es, flt_op(d, op, ld_flt(d, a + i * es), ld_flt(d, b + i * es)));
            continue;
        }
        int64_t x = ld_int(d, a + i * es), y = ld_int(d, b + i * es);
        uint64_t r;
        switch (op) {
        case GCOLL_SUM: r = (uint64_t)x + (uint64_t)y; break;
        case GCOLL_PROD: r = (uint64_t)x * (uint64_t)y; break;
        case GCOLL_MIN: r = (uint64_t)(int_less(d, x, y) ? x : y); break;
        default: r = (uint64_t)(int_less(d, y, x) ? x : y); break;
        }
        memcpy(dst + i * es, &r, es); /* little-endian: the low bytes are the wrapped result */
    }
}

static void ref_div(int d, char *buf, size_t n, unsigned k)
{
    size_t es = gcoll_dtype_size((gcoll_dtype_t)d);
    for (size_t i = 0; i < n; i++) {
        if (d == GCOLL_FLOAT64) {
            st_flt(d, buf + i * es, ld_flt(d, buf + i * es) / k);
        } else if (is_flt(d)) {
            st_flt(d, buf + i * es, (double)((float)ld_flt(d, buf + i * es) / (float)k));
        } else {
            int64_t x = ld_int(d, buf + i * es);
            uint64_t r = d == GCOLL_UINT64 ? (uint64_t)x / k : (uint64_t)(x / (int64_t)k);
            memcpy(buf + i * es, &r, es);
        }
    }
}

/* GCOLL_PREMUL_SUM's scaling: in double for fp64, else in fp32 by the factor rounded to fp32. */
static void ref_scale(int d, char *dst, const char *src, size_t n, double f)
{
    size_t es = gcoll_dtype_size((gcoll_dtype_t)d);
    for (size_t i = 0; i < n; i++) {
        double x = ld_flt(d, src + i * es);
        st_flt(d, dst + i * es, d == GCOLL_FLOAT64 ? x * f : (double)((float)x * (float)f));
    }
}

static void expect_same(int d, const char *got, const char *want, size_t n, const char *what, size_t len)
{
    size_t es = gcoll_dtype_size((gcoll_dtype_t)d);
    for (size_t i = 0; i < n; i++) {
        if (is_flt(d) && isnan(ld_flt(d, want + i * es)) && isnan(ld_flt(d, got + i * es)))
            continue;
        if (memcmp(got + i * es, want + i * es, es) != 0)
            ck_abort_msg("%s %s len=%zu: element %zu differs (got %g want %g)", what,
                         gcoll_dtype_name((gcoll_dtype_t)d), len, i,
                         is_flt(d) ? ld_flt(d, got + i * es) : (double)ld_int(d, got + i * es),
                         is_flt(d) ? ld_flt(d, want + i * es) : (double)ld_int(d, want + i * es));
    }
}

static const gcoll__kernels_t *const tables[] = {&gcoll__kernels_generic, &gcoll__kernels_avx2, &gcoll__kernels_avx512};

/* Every op at three alignments, or (!every) the sum at one unaligned placement: the long case. */
static void check_table_len(const gcoll__kernels_t *k, int d, size_t len, int every)
{
    size_t es = gcoll_dtype_size((gcoll_dtype_t)d), bytes = len * es;
    char *a = malloc(bytes + 8), *b = malloc(bytes + 8), *out = malloc(bytes + 8), *want = malloc(bytes + 8);
    static const size_t offs[][3] = {{0, 0, 0}, {1, 3, 5}, {7, 2, 0}};
    int nops = every ? 4 : 1;
    size_t first = every ? 0 : 1, last = every ? 2 : 1; /* offs[1]: every buffer unaligned */
    for (int op = 0; op < nops; op++) {
        for (size_t o = first; o <= last; o++) {
            char *pa = a + offs[o][0], *pb = b + offs[o][1], *po = out + offs[o][2];
            fill(d, pa, len);
            fill(d, pb, len);
            ref_reduce(d, op, want, pa, pb, len);
            k->reduce[d][op](po, pa, pb, len);
            char what[64];
            snprintf(what, sizeof(what), "%s %s", k->name, gcoll_op_name((gcoll_op_t)op));
            expect_same(d, po, want, len, what, len);
            k->reduce[d][op](pa, pa, pb, len); /* in place: dst aliases a */
            expect_same(d, pa, want, len, what, len);
        }
    }
    /* rank counts, some past what the narrow integer types hold */
    static const unsigned divisors[] = {2, 3, 4, 5, 7, 8, 127, 128, 255, 256, 257, 65536, 100003};
    unsigned divisor = divisors[len % (sizeof(divisors) / sizeof(divisors[0]))];
    fill(d, a + 3, len);
    memcpy(want, a + 3, bytes);
    ref_div(d, want, len, divisor);
    k->div[d](a + 3, len, divisor);
    expect_same(d, a + 3, want, len, "div", len);
    free(a);
    free(b);
    free(out);
    free(want);
}

START_TEST(kernels_every_length)
{
    const gcoll__kernels_t *k = tables[_i / GCOLL_DTYPE_COUNT];
    int d = _i % GCOLL_DTYPE_COUNT;
    if (!gcoll__kernels_supported(k)) {
        printf("SKIP %s kernels: this CPU lacks the instructions\n", k->name);
        return;
    }
    rng_state = 0x9E3779B97F4A7C15ull + (uint64_t)_i;
    for (size_t len = 0; len <= 300; len++)
        check_table_len(k, d, len, 1);
    check_table_len(k, d, 4099, 1);
    check_table_len(k, d, 65536 + 13, 0);
}
END_TEST

static void check_scale_len(const gcoll__kernels_t *k, int d, size_t len)
{
    static const double factors[] = {0.5, -3.0, 1.0 / 3.0, 1e-3, 7.25, 1e5, 0.0, -0.0, 1.0, 0.1};
    size_t es = gcoll_dtype_size((gcoll_dtype_t)d), bytes = len * es;
    char *a = malloc(bytes + 8), *out = malloc(bytes + 8), *want = malloc(bytes + 8);
    for (size_t f = 0; f < sizeof(factors) / sizeof(factors[0]); f++) {
        char *pa = a + f % 3, *po = out + (f + 1) % 5;
        fill(d, pa, len);
        ref_scale(d, want, pa, len, factors[f]);
        char what[64];
        snprintf(what, sizeof(what), "%s scale by %g", k->name, factors[f]);
        k->scale[d](po, pa, len, factors[f]);
        expect_same(d, po, want, len, what, len);
        k->scale[d](pa, pa, len, factors[f]); /* in place */
        expect_same(d, pa, want, len, what, len);
    }
    free(a);
    free(out);
    free(want);
}

/* The floating-point dtypes, for the scaling tests. */
static const int scaled[] = {GCOLL_FLOAT8_E4M3, GCOLL_FLOAT8_E5M2, GCOLL_FLOAT16,
                             GCOLL_BFLOAT16,    GCOLL_FLOAT32,     GCOLL_FLOAT64};
#define NSCALED ((int)(sizeof(scaled) / sizeof(scaled[0])))

START_TEST(scale_every_length)
{
    const gcoll__kernels_t *k = tables[_i / NSCALED];
    int d = scaled[_i % NSCALED];
    if (!gcoll__kernels_supported(k)) {
        printf("SKIP %s kernels: this CPU lacks the instructions\n", k->name);
        return;
    }
    rng_state = 0x2545F4914F6CDD1Dull + (uint64_t)_i;
    for (size_t len = 0; len <= 70; len++)
        check_scale_len(k, d, len);
    check_scale_len(k, d, 4099);
}
END_TEST

/* gcoll__scale goes through the selected table; integer dtypes have no scaling. */
START_TEST(scale_dispatch)
{
    ck_assert_int_eq(gcoll__kernels_select(0), GCOLL_SUCCESS);
    float x[37], y[37];
    for (int i = 0; i < 37; i++)
        x[i] = (float)i - 18.5f;
    gcoll__scale(y, x, 37, GCOLL_FLOAT32, -0.25);
    for (int i = 0; i < 37; i++)
        ck_assert(y[i] == x[i] * -0.25f);
    uint8_t e4[3] = {0x38, 0x7e, 0xb8}, w4[3] = {0x40, 0x7e, 0xc0}; /* 1, 448, -1 times 2 */
    gcoll__scale(e4, e4, 3, GCOLL_FLOAT8_E4M3, 2.0);
    ck_assert(memcmp(e4, w4, 3) == 0);
    uint8_t e5[2] = {0x7b, 0x3c}, w5[2] = {0x7c, 0x40}; /* 57344 and 1 times 2: infinity, 2 */
    gcoll__scale(e5, e5, 2, GCOLL_FLOAT8_E5M2, 2.0);
    ck_assert(memcmp(e5, w5, 2) == 0);
    for (int d = 0; d < GCOLL_DTYPE_COUNT; d++)
        for (size_t t = 0; t < 3; t++)
            ck_assert_msg((tables[t]->scale[d] != NULL) == is_flt(d), "%s scale of %s", tables[t]->name,
                          gcoll_dtype_name((gcoll_dtype_t)d));
}
END_TEST

START_TEST(kernel_selection)
{
    ck_assert_int_eq(gcoll__kernels_select(1), GCOLL_SUCCESS);
    ck_assert_ptr_eq(gcoll__kernels, &gcoll__kernels_generic);
    ck_assert_int_eq(gcoll__kernels_select(0), GCOLL_SUCCESS);
    ck_assert(gcoll__kernels_supported(gcoll__kernels));
}
END_TEST

Suite *reduce_suite(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, kernels_every_length, 0, 3 * GCOLL_DTYPE_COUNT);
    tcase_add_loop_test(tc, scale_every_length, 0, 3 * NSCALED);
    tcase_add_test(tc, scale_dispatch);
    tcase_add_test(tc, kernel_selection);
    suite_add_tcase(s, tc);
    return s;
}
