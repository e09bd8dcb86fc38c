/* fp8 (OCP E4M3 and E5M2) conversions against the format's definition (ref.h): every code's
 * value, and fp32 rounding at every midpoint between adjacent values and one float either side,
 * overflow, NaN, infinities, signed zero and subnormals, through the scalar encoder and through
 * every kernel table's scaling (the vector encoders), plus random and swept floats. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/fp8.h"
#include "base/reduce.h"
#include "ref.h"
#include "unit.h"

static const char *fmt_name(int e5m2)
{
    return e5m2 ? "e5m2" : "e4m3";
}

static uint8_t enc(int e5m2, float f)
{
    return e5m2 ? gcoll__f32_to_e5m2(f) : gcoll__f32_to_e4m3(f);
}

static float dec(int e5m2, uint8_t c)
{
    return e5m2 ? gcoll__e5m2_to_f32(c) : gcoll__e4m3_to_f32(c);
}

static const gcoll__kernels_t *const tables[] = {&gcoll__kernels_generic, &gcoll__kernels_avx2, &gcoll__kernels_avx512};

/* f through table k's fp8 scaling: 1.0 times f, so the one rounding is the encoder's, in the
 * vector block (16 elements) and in the scalar tail (1 element). Both must agree; returns it. */
static uint8_t enc_table(const gcoll__kernels_t *k, int e5m2, float f)
{
    uint8_t one[17], out[17];
    memset(one, e5m2 ? 0x3c : 0x38, sizeof(one));
    gcoll_dtype_t d = e5m2 ? GCOLL_FLOAT8_E5M2 : GCOLL_FLOAT8_E4M3;
    k->scale[d](out, one, 17, (double)f);
    CK_EXPECT(out[0] == out[16] || (ref_fp8_is_nan(e5m2, out[0]) && ref_fp8_is_nan(e5m2, out[16])),
              "%s %s: %a gives 0x%02x in a block and 0x%02x in the tail", k->name, fmt_name(e5m2), (double)f, out[0],
              out[16]);
    return out[0];
}

/* Checks that f encodes to want (any NaN code when want is one) in the scalar encoder and in every
 * kernel table the CPU supports. */
static void expect_enc(int e5m2, float f, unsigned want, const char *why)
{
    for (int t = -1; t < 3; t++) {
        if (t >= 0 && !gcoll__kernels_supported(tables[t]))
            continue;
        uint8_t got = t < 0 ? enc(e5m2, f) : enc_table(tables[t], e5m2, f);
        int ok = ref_fp8_is_nan(e5m2, want) ? ref_fp8_is_nan(e5m2, got) : got == want;
        CK_EXPECT(ok, "%s %s: %a (%s) gives 0x%02x, want 0x%02x", t < 0 ? "scalar" : tables[t]->name, fmt_name(e5m2),
                  (double)f, why, got, want);
    }
}

START_TEST(fp8_decode_every_code)
{
    for (int e5m2 = 0; e5m2 < 2; e5m2++)
        for (unsigned c = 0; c < 256; c++) {
            double want = ref_fp8_value(e5m2, c);
            float got = dec(e5m2, (uint8_t)c);
            if (isnan(want)) {
                CK_EXPECT(isnan(got), "%s 0x%02x: got %a, want NaN", fmt_name(e5m2), c, (double)got);
                continue;
            }
            CK_EXPECT(ref_f32_to_bits(got) == ref_f32_to_bits((float)want), "%s 0x%02x: got %a, want %a",
                      fmt_name(e5m2), c, (double)got, want);
        }
    /* the format's landmarks, written out */
    ck_assert(gcoll__e4m3_to_f32(0x7e) == 448.0f && gcoll__e4m3_to_f32(0xfe) == -448.0f);
    ck_assert(gcoll__e4m3_to_f32(0x01) == 0x1p-9f && gcoll__e4m3_to_f32(0x08) == 0x1p-6f);
    ck_assert(isnan(gcoll__e4m3_to_f32(0x7f)) && isnan(gcoll__e4m3_to_f32(0xff)));
    ck_assert(gcoll__e4m3_to_f32(0x78) == 256.0f && gcoll__e4m3_to_f32(0x38) == 1.0f);
    ck_assert(gcoll__e5m2_to_f32(0x7b) == 57344.0f && gcoll__e5m2_to_f32(0x01) == 0x1p-16f);
    ck_assert(isinf(gcoll__e5m2_to_f32(0x7c)) && gcoll__e5m2_to_f32(0xfc) < 0);
    ck_assert(isnan(gcoll__e5m2_to_f32(0x7d)) && isnan(gcoll__e5m2_to_f32(0xfe)));
    ck_assert(gcoll__e5m2_to_f32(0x3c) == 1.0f && signbit(gcoll__e5m2_to_f32(0x80)));
}
END_TEST

/* Every pair of adjacent finite values of either sign: each value itself, the midpoint (ties to
 * the even code), and the floats just below and just above the midpoint. */
START_TEST(fp8_encode_midpoints)
{
    for (int e5m2 = 0; e5m2 < 2; e5m2++) {
        unsigned top = e5m2 ? 0x7b : 0x7e; /* the largest finite code */
        for (unsigned sign = 0; sign <= 0x80; sign += 0x80)
            for (unsigned c = 0; c < top; c++) {
                float lo = (float)ref_fp8_value(e5m2, sign | c), hi = (float)ref_fp8_value(e5m2, sign | (c + 1));
                float mid = (lo + hi) / 2; /* exact: a few bits, well inside fp32's range */
                ck_assert((double)mid == (ref_fp8_value(e5m2, sign | c) + ref_fp8_value(e5m2, sign | (c + 1))) / 2);
                expect_enc(e5m2, lo, sign | c, "a value");
                expect_enc(e5m2, hi, sign | (c + 1), "a value");
                expect_enc(e5m2, mid, sign | (c & 1 ? c + 1 : c), "a midpoint: ties to even");
                expect_enc(e5m2, nextafterf(mid, 0), sign | c, "below a midpoint");
                expect_enc(e5m2, nextafterf(mid, sign ? -INFINITY : INFINITY), sign | (c + 1), "above a midpoint");
            }
    }
}
END_TEST

START_TEST(fp8_encode_special)
{
    for (unsigned s = 0; s <= 0x80; s += 0x80) {
        float g = s ? -1.0f : 1.0f;
        /* E4M3 saturates: everything past 448, infinity included, is +-448 */
        expect_enc(0, g * 448.0f, s | 0x7e, "the largest");
        expect_enc(0, g * nextafterf(448.0f, INFINITY), s | 0x7e, "just past the largest");
        expect_enc(0, g * 464.0f, s | 0x7e, "halfway to 480");
        expect_enc(0, g * 480.0f, s | 0x7e, "the NaN code's pattern as a value");
        expect_enc(0, g * 1e6f, s | 0x7e, "far out");
        expect_enc(0, g * FLT_MAX, s | 0x7e, "FLT_MAX");
        expect_enc(0, g * INFINITY, s | 0x7e, "infinity");
        /* E5M2 rounds to nearest even with infinity as the next value after 57344 */
        expect_enc(1, g * 57344.0f, s | 0x7b, "the largest");
        expect_enc(1, g * nextafterf(61440.0f, 0), s | 0x7b, "just below the overflow threshold");
        expect_enc(1, g * 61440.0f, s | 0x7c, "the overflow threshold: a tie, to even (infinity)");
        expect_enc(1, g * 65536.0f, s | 0x7c, "2^16");
        expect_enc(1, g * FLT_MAX, s | 0x7c, "FLT_MAX");
        expect_enc(1, g * INFINITY, s | 0x7c, "infinity");
        for (int e5m2 = 0; e5m2 < 2; e5m2++) {
            float tiny = e5m2 ? 0x1p-16f : 0x1p-9f; /* the smallest subnormal */
            expect_enc(e5m2, g * 0.0f, s, "zero keeps its sign");
            expect_enc(e5m2, g * FLT_MIN, s, "fp32's smallest normal");
            expect_enc(e5m2, g * 0x1p-149f, s, "fp32's smallest subnormal");
            expect_enc(e5m2, g * tiny / 2, s, "half the smallest subnormal: a tie, to zero");
            expect_enc(e5m2, g * nextafterf(tiny / 2, 1), s | 1, "just over half the smallest subnormal");
            expect_enc(e5m2, g * tiny * 1.5f, s | 2, "1.5 subnormals: a tie, to 2");
            expect_enc(e5m2, g * tiny * 2.5f, s | 2, "2.5 subnormals: a tie, to 2");
            expect_enc(e5m2, g * NAN, s | (e5m2 ? 0x7e : 0x7f), "NaN");
            expect_enc(e5m2, ref_bits_to_f32(0x7f800001u | (unsigned)s << 24), 0x7f, "a signalling NaN");
        }
    }
}
END_TEST

/* Floats whose top 16 bits take every value, with low bits at and around bf16-sized rounding
 * points, and random ones: the scalar encoder against the nearest-value reference. */
static void check_vs_ref(uint32_t b)
{
    float f = ref_bits_to_f32(b);
    for (int e5m2 = 0; e5m2 < 2; e5m2++) {
        uint8_t got = enc(e5m2, f), want = ref_f32_to_fp8(e5m2, f);
        int ok = isnan(f) ? ref_fp8_is_nan(e5m2, got) : got == want;
        CK_EXPECT(ok, "%s: 0x%08x (%a) gives 0x%02x, want 0x%02x", fmt_name(e5m2), b, (double)f, got, want);
    }
}

START_TEST(fp8_encode_sweep)
{
    static const uint32_t lows[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (uint32_t top = 0; top < 65536; top++)
        for (size_t k = 0; k < sizeof(lows) / sizeof(lows[0]); k++)
            check_vs_ref(top << 16 | lows[k]);
    srand(4242);
    for (int i = 0; i < 300000; i++)
        check_vs_ref(((uint32_t)rand() << 16) ^ (uint32_t)rand() ^ ((uint32_t)rand() << 31));
}
END_TEST

/* The vector encoders against the scalar one on random floats of fp8's range and beyond. */
START_TEST(fp8_encode_tables_random)
{
    srand(777);
    for (int i = 0; i < 20000; i++) {
        uint32_t e = 100 + (uint32_t)rand() % 60, b = (uint32_t)rand() << 31 | e << 23 | ((uint32_t)rand() & 0x7fffff);
        float f = ref_bits_to_f32(b);
        expect_enc(0, f, gcoll__f32_to_e4m3(f), "random");
        expect_enc(1, f, gcoll__f32_to_e5m2(f), "random");
    }
}
END_TEST

/* Every code through every table's scaling, in vector blocks and tails, by 1 (each code comes
 * back, NaNs as NaNs) and by 0.5 and 3 (each the nearest code of the exact product). */
START_TEST(fp8_tables_every_code)
{
    uint8_t src[260], out[260] = {0};
    for (int e5m2 = 0; e5m2 < 2; e5m2++)
        for (size_t t = 0; t < 3; t++) {
            if (!gcoll__kernels_supported(tables[t]))
                continue;
            static const double factors[] = {1.0, 0.5, 3.0};
            for (size_t f = 0; f < 3; f++)
                for (size_t off = 0; off < 3; off++) {
                    for (unsigned c = 0; c < 256; c++)
                        src[off + c] = (uint8_t)(c * 37 + 11); /* every code, mixed */
                    tables[t]->scale[e5m2 ? GCOLL_FLOAT8_E5M2 : GCOLL_FLOAT8_E4M3](out + 1, src + off, 256, factors[f]);
                    for (unsigned i = 0; i < 256; i++) {
                        unsigned c = src[off + i];
                        double v = ref_fp8_value(e5m2, c) * factors[f];
                        uint8_t want = ref_f32_to_fp8(e5m2, (float)v), got = out[1 + i];
                        int ok = isnan(v) ? ref_fp8_is_nan(e5m2, got) : got == want;
                        CK_EXPECT(ok, "%s %s: 0x%02x times %g at %u gives 0x%02x, want 0x%02x", tables[t]->name,
                                  fmt_name(e5m2), c, factors[f], i, got, want);
                    }
                }
        }
}
END_TEST

Suite *fp8_suite(void)
{
    Suite *s = suite_create("fp8");
    TCase *tc = tcase_create("conversions");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fp8_decode_every_code);
    tcase_add_test(tc, fp8_encode_midpoints);
    tcase_add_test(tc, fp8_encode_special);
    tcase_add_test(tc, fp8_encode_sweep);
    tcase_add_test(tc, fp8_encode_tables_random);
    tcase_add_test(tc, fp8_tables_every_code);
    suite_add_tcase(s, tc);
    return s;
}
