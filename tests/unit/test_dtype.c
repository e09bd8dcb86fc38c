/* fp16 and bf16 conversions against independent references: every 16-bit pattern, and
 * floats around every rounding boundary, subnormals, infinities and NaN. */
#include <math.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "ref.h"
#include "unit.h"

START_TEST(f16_to_f32_every_pattern)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float got = gcoll__f16_to_f32((uint16_t)h), want = ref_f16_to_f32((uint16_t)h);
        if (isnan(want) ? !isnan(got) : ref_f32_to_bits(got) != ref_f32_to_bits(want))
            ck_abort_msg("half 0x%04x: got %a want %a", h, (double)got, (double)want);
    }
}
END_TEST

START_TEST(bf16_to_f32_every_pattern)
{
    for (uint32_t h = 0; h < 65536; h++)
        if (ref_f32_to_bits(gcoll__bf16_to_f32((uint16_t)h)) != (uint32_t)h << 16)
            ck_abort_msg("bf16 0x%04x widens wrongly", h);
}
END_TEST

/* Float patterns that straddle each 16-bit rounding point: the exact midpoints, one ulp either
 * side, across every exponent including subnormals and overflow. */
static void check_f32(uint32_t b)
{
    float f = ref_bits_to_f32(b);
    uint16_t gh = gcoll__f32_to_f16(f), wh = ref_f32_to_f16(f);
    uint16_t gb = gcoll__f32_to_bf16(f), wb = ref_f32_to_bf16(f);
    if (isnan(f)) {
        if (!((gh & 0x7c00) == 0x7c00 && (gh & 0x3ff)))
            ck_abort_msg("f32 0x%08x: fp16 not NaN", b);
        if (!((gb & 0x7f80) == 0x7f80 && (gb & 0x7f)))
            ck_abort_msg("f32 0x%08x: bf16 not NaN", b);
        return;
    }
    if (gh != wh)
        ck_abort_msg("f32 0x%08x (%a): fp16 got 0x%04x want 0x%04x", b, (double)f, gh, wh);
    if (gb != wb)
        ck_abort_msg("f32 0x%08x (%a): bf16 got 0x%04x want 0x%04x", b, (double)f, gb, wb);
}

START_TEST(f32_to_16bit_boundaries)
{
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t top = 0; top < (1u << 18); top++) { /* exponent and top 10 mantissa bits */
            uint32_t base = (sign << 31) | (top << 13);
            static const uint32_t lows[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
            for (size_t k = 0; k < sizeof(lows) / sizeof(lows[0]); k++)
                check_f32(base | lows[k]);
            /* bf16's midpoints sit at bit 15 */
            check_f32(base | 0x7fff);
            check_f32(base | 0x8000);
            check_f32(base | 0x8001);
        }
}
END_TEST

START_TEST(f32_to_16bit_random)
{
    srand(12345);
    for (int i = 0; i < 2000000; i++)
        check_f32(((uint32_t)rand() << 16) ^ (uint32_t)rand() ^ ((uint32_t)rand() << 31));
}
END_TEST

START_TEST(dtype_introspection)
{
    ck_assert_uint_eq(gcoll_dtype_size(GCOLL_FLOAT16), 2);
    ck_assert_uint_eq(gcoll_dtype_size(GCOLL_UINT64), 8);
    ck_assert_uint_eq(gcoll_dtype_size((gcoll_dtype_t)99), 0);
    ck_assert_str_eq(gcoll_dtype_name(GCOLL_BFLOAT16), "bfloat16");
    ck_assert_str_eq(gcoll_op_name(GCOLL_AVG), "avg");
    ck_assert_str_eq(gcoll_op_name(GCOLL_PREMUL_SUM), "premul_sum");
    ck_assert_str_eq(gcoll_op_name(GCOLL_OP_COUNT), "invalid");
    static const struct {
        gcoll_dtype_t d;
        size_t size;
        const char *name;
    } every[] = {{GCOLL_INT8, 1, "int8"},
                 {GCOLL_UINT8, 1, "uint8"},
                 {GCOLL_INT16, 2, "int16"},
                 {GCOLL_UINT16, 2, "uint16"},
                 {GCOLL_INT32, 4, "int32"},
                 {GCOLL_UINT32, 4, "uint32"},
                 {GCOLL_INT64, 8, "int64"},
                 {GCOLL_UINT64, 8, "uint64"},
                 {GCOLL_FLOAT8_E4M3, 1, "float8_e4m3"},
                 {GCOLL_FLOAT8_E5M2, 1, "float8_e5m2"},
                 {GCOLL_FLOAT16, 2, "float16"},
                 {GCOLL_BFLOAT16, 2, "bfloat16"},
                 {GCOLL_FLOAT32, 4, "float32"},
                 {GCOLL_FLOAT64, 8, "float64"}};
    ck_assert_int_eq(sizeof(every) / sizeof(every[0]), GCOLL_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
        ck_assert_uint_eq(gcoll_dtype_size(every[i].d), every[i].size);
        ck_assert_str_eq(gcoll_dtype_name(every[i].d), every[i].name);
    }
    for (int op = 0; op < GCOLL_OP_COUNT; op++)
        ck_assert_ptr_nonnull(gcoll_op_name((gcoll_op_t)op));
    ck_assert_str_eq(gcoll_op_name((gcoll_op_t)-1), "invalid");
}
END_TEST

Suite *dtype_suite(void)
{
    Suite *s = suite_create("dtype");
    TCase *tc = tcase_create("conversions");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, f16_to_f32_every_pattern);
    tcase_add_test(tc, bf16_to_f32_every_pattern);
    tcase_add_test(tc, f32_to_16bit_boundaries);
    tcase_add_test(tc, f32_to_16bit_random);
    tcase_add_test(tc, dtype_introspection);
    suite_add_tcase(s, tc);
    return s;
}
