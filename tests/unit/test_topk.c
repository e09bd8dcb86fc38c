/* Top-k selection and sparse merge (src/collectives/topk.h), and the 16-bit wire conversions of every
 * kernel table, against references written here: selection by a full sort (|v| descending, index
 * ascending), the wire encoding by a decoder of its documented form, merging by plain loops, fp16
 * by _Float16, bf16 by integer rounding. Inputs with many ties, both zeros, infinities and NaN;
 * candidate buffers large enough and too small; every kernel table the CPU has, scans bit by bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/topk.h"
#include "base/reduce.h"
#include "unit.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* kind 0: spread values; 1: a few magnitudes of both signs (ties); 2: specials mixed in. */
static float value(int kind)
{
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -3.0f, 3.0f};
    switch (kind) {
    case 0: return (float)((double)(int64_t)rnd() / 9.2e18);
    case 1: return (float)((int)(rnd() % 7) - 3);
    default: return rnd() % 4 == 0 ? special[rnd() % 8] : (float)((double)(int64_t)rnd() / 9.2e18);
    }
}

typedef struct {
    uint32_t key; /* |v|'s bits: NaN above infinity, as documented */
    size_t idx;
} ent_t;

static int by_rank(const void *pa, const void *pb)
{
    const ent_t *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : 1;
}

static uint32_t mag_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return u & 0x7fffffffu;
}

/* kind 3 and 4: large vectors whose sample (the first 256 entries of each 1/256th) misleads the
 * sampled selection: 3 shows it only small values (too many candidates), 4 only large ones
 * (fewer candidates than k); both must fall back to the exact select. */
static float biased(int kind, size_t i, size_t n)
{
    int in_sample = i % (n / 256) < 256;
    return (kind == 3) == in_sample ? value(0) * 1e-3f : value(0) + 2.0f;
}

typedef struct {
    size_t k, cap; /* cap: candidate room (0: none, the whole vector scanned again) */
} case_t;

static const gcoll__kernels_t *const tables[] = {&gcoll__kernels_generic, &gcoll__kernels_avx2, &gcoll__kernels_avx512};

/* One input of n entries (sorted once by the reference), selected for every case; with
 * every_table, under each kernel table the CPU has (GCOLL_REDUCE_ISA's choices): the scans of
 * the sampled selection differ, the answers must not. */
static void check_select(size_t n, int kind, int with_residual, const case_t *cases, size_t ncases, int every_table)
{
    float *x = malloc((n + 1) * sizeof(float)), *res0 = malloc((n + 1) * sizeof(float));
    float *res = malloc((n + 1) * sizeof(float)), *v = malloc((n + 1) * sizeof(float));
    ent_t *e = malloc((n + 1) * sizeof(ent_t));
    gcoll__topk_pair_t *out = malloc((n + 1) * sizeof(*out));
    uint32_t *hist = malloc(2 * 65536 * sizeof(uint32_t)), *cand = malloc((2 * n + 65536) * sizeof(uint32_t));
    char *kept = malloc(n + 1);
    const gcoll__kernels_t *was = gcoll__kernels;
    for (size_t i = 0; i < n; i++) {
        x[i] = kind >= 3 ? biased(kind, i, n) : value(kind);
        res0[i] = with_residual ? value(kind == 1 ? 1 : 0) * (kind >= 3 ? 1e-4f : 1) : 0;
        v[i] = with_residual ? x[i] + res0[i] : x[i];
        e[i] = (ent_t){mag_bits(v[i]), i};
    }
    qsort(e, n, sizeof(*e), by_rank);
    for (size_t c = 0; c < ncases * (every_table ? 3 : 1); c++) {
        if (every_table && !gcoll__kernels_supported(tables[c % 3]))
            continue;
        gcoll__kernels = every_table ? tables[c % 3] : was;
        size_t k = cases[c / (every_table ? 3 : 1)].k, cap = cases[c / (every_table ? 3 : 1)].cap, bad = 0;
        memcpy(res, res0, n * sizeof(float));
        memset(kept, 0, n);
        // cppcheck-suppress uninitdata ; scratch space that gcoll__topk_select writes before it reads
        gcoll__topk_work_t w = {hist, cand, cap};
        gcoll__topk_select(x, with_residual ? res : NULL, n, k, out, &w);
        for (size_t j = 0; j < k; j++)
            kept[e[j].idx] = 1;
        size_t descents = 0; /* the encoding takes two ascending runs at most */
        for (size_t j = 1; j < k; j++)
            descents += out[j].idx < out[j - 1].idx;
        CK_EXPECT(descents <= 1, "%s n=%zu k=%zu kind=%d: pairs in %zu ascending runs", gcoll__kernels->name, n, k,
                  kind, descents + 1);
        for (size_t j = 0; j < k; j++) {
            size_t i = out[j].idx;
            bad += i >= n || kept[i] != 1 || memcmp(&out[j].val, &v[i], 4) != 0;
            if (i < n)
                kept[i] = 2; /* each index once */
        }
        CK_EXPECT(bad == 0, "%s n=%zu k=%zu kind=%d cap=%zu: %zu pairs not the reference's top-k", gcoll__kernels->name,
                  n, k, kind, cap, bad);
        if (with_residual)
            for (size_t i = 0; i < n; i++) {
                float want = kept[i] ? 0.0f : v[i];
                CK_EXPECT(memcmp(&want, &res[i], 4) == 0, "%s n=%zu k=%zu: residual[%zu] = %g, want %g",
                          gcoll__kernels->name, n, k, i, res[i], want);
            }
    }
    gcoll__kernels = was;
    free(x);
    free(res0);
    free(res);
    free(v);
    free(e);
    free(out);
    free(hist);
    free(cand);
    free(kept);
}

START_TEST(selection_matches_a_full_sort)
{
    static const size_t sizes[] = {1, 2, 17, 1000, 70001};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s], ks[] = {0, 1, n / 100, n / 3, n - 1, n};
        case_t cases[12];
        for (size_t j = 0; j < 6; j++) {
            cases[2 * j] = (case_t){ks[j], ks[j] + 4096};
            cases[2 * j + 1] = (case_t){ks[j], 0};
        }
        for (int kind = 0; kind < 3; kind++)
            for (int r = 0; r < 2; r++)
                check_select(n, kind, r, cases, 12, 0);
    }
}
END_TEST

START_TEST(sampled_selection_on_large_vectors_is_exact)
{
    size_t n = ((size_t)1 << 18) + 3;
    /* the room the allreduce gives, and (k = n/100) too little: the full select */
    const case_t cases[] = {
        {1, 65538}, {n / 100, 2 * (n / 100) + 65536}, {n / 3, 2 * (n / 3) + 65536}, {n / 100, n / 100}};
    for (int kind = 0; kind < 5; kind++)
        if (kind != 2) /* NaN and infinities: the smaller sizes have them */
            check_select(n, kind, kind % 2, cases, kind == 0 ? 4 : 3, kind <= 1); /* fallbacks: one table */
}
END_TEST

START_TEST(k_follows_the_documented_formula)
{
    ck_assert_uint_eq(gcoll__topk_k(1000, 0.01), 10);
    ck_assert_uint_eq(gcoll__topk_k(99, 0.01), 0);
    ck_assert_uint_eq(gcoll__topk_k(7, 1.0), 7);
    ck_assert_uint_eq(gcoll__topk_k(100, 0.5), 50);
    ck_assert_uint_eq(gcoll__topk_k(0, 0.3), 0);
}
END_TEST

/* The documented wire form, decoded here: (uint16 gap, fp32 value) entries; gap 0xffff moves
 * on 65535 and names nothing. Returns the entries read to find k values (0: malformed). */
static size_t decode_ref(const unsigned char *b, size_t entries, size_t k, uint32_t *idx, float *val)
{
    size_t next = 0, got = 0, q = 0;
    for (; q < entries && got < k; q++) {
        uint16_t d;
        memcpy(&d, b + 6 * q, 2);
        if (d == 0xffff) {
            next += 65535;
            continue;
        }
        idx[got] = (uint32_t)(next + d);
        memcpy(&val[got++], b + 6 * q + 2, 4);
        next += (size_t)d + 1;
    }
    return got == k ? q : 0;
}

/* Two ascending runs of indices (odd positions of a sorted set, then even ones), with gaps on
 * both sides of 65535 and indices at both ends of the vector. */
START_TEST(encoding_round_trips)
{
    static const uint32_t gaps[] = {0, 1, 65533, 65534, 65535, 65536, 131069, 131070, 131071, 300000};
    const size_t count = ((size_t)1 << 22) + 17;
    size_t k = 0;
    uint32_t sorted[64];
    for (uint32_t i = 0, g = 0; i < count && k < 62; g++) {
        sorted[k++] = i;
        i += gaps[g % 10] + 1;
    }
    sorted[k++] = (uint32_t)count - 1;
    gcoll__topk_pair_t pairs[64];
    size_t np = 0;
    for (int parity = 1; parity >= 0; parity--)
        for (size_t j = (size_t)parity; j < k; j += 2)
            pairs[np++] = (gcoll__topk_pair_t){sorted[j], j % 3 ? value(2) : -(float)j};
    size_t entries = gcoll__topk_wire_entries(count, k);
    ck_assert_uint_eq(entries, k + count / 65535 + 1);
    unsigned char *b = malloc(entries * 6);
    memset(b, 0xa5, entries * 6);
    gcoll__topk_encode(b, pairs, k, count);
    uint32_t idx[64];
    float val[64];
    size_t used = decode_ref(b, entries, k, idx, val);
    ck_assert_msg(used > 0, "the block does not hold %zu values", k);
    for (size_t j = 0; j < k; j++) {
        const gcoll__topk_pair_t *p = NULL;
        for (size_t q = 0; q < k; q++)
            p = pairs[q].idx == sorted[j] ? &pairs[q] : p;
        CK_EXPECT(idx[j] == sorted[j] && memcmp(&val[j], &p->val, 4) == 0, "entry %zu: index %u, want %u", j, idx[j],
                  sorted[j]);
    }
    for (size_t q = used * 6; q < entries * 6; q++)
        CK_EXPECT(b[q] == 0, "byte %zu past the values is %#x, want 0", q, b[q]);
    free(b);
    /* the largest vector, its last index alone: the most escapes a block can need */
    size_t big = 0xffffffffu;
    gcoll__topk_pair_t last = {(uint32_t)(big - 1), 2.5f};
    entries = gcoll__topk_wire_entries(big, 1);
    b = malloc(entries * 6);
    gcoll__topk_encode(b, &last, 1, big);
    ck_assert(decode_ref(b, entries, 1, idx, val) > 0 && idx[0] == big - 1 && val[0] == 2.5f);
    free(b);
    ck_assert_uint_eq(gcoll__topk_wire_entries(100, 0), 0);
}
END_TEST

START_TEST(merge_sums_blocks_in_rank_order)
{
    /* three ranks, k = 2, index 1 kept by all and index 3 by two: duplicates add up */
    gcoll__topk_pair_t p[6] = {{1, 1e8f}, {3, 2.5f}, {1, 1.0f}, {0, -4.0f}, {1, -1e8f}, {3, 0.25f}};
    size_t bytes = gcoll__topk_wire_entries(5, 2) * 6;
    unsigned char blocks[3 * 64];
    ck_assert_uint_le(bytes, 64);
    for (int j = 0; j < 3; j++)
        gcoll__topk_encode(blocks + j * bytes, p + 2 * j, 2, 5);
    float out[5] = {0, 0, 0, 0, 0};
    ck_assert_int_eq(gcoll__topk_merge(out, 5, blocks, 3, 2), GCOLL_SUCCESS);
    float want1 = 1e8f;
    want1 += 1.0f; /* rank order: (1e8 + 1) - 1e8 = 0 in float, where another order gives 1 */
    want1 += -1e8f;
    ck_assert(out[0] == -4.0f && out[1] == want1 && out[2] == 0 && out[3] == 2.75f && out[4] == 0);
    p[5].idx = 5; /* past the vector: refused, naming the rank */
    gcoll__topk_encode(blocks + 2 * bytes, p + 4, 2, 5);
    ck_assert_int_eq(gcoll__topk_merge(out, 5, blocks, 3, 2), GCOLL_ERR_TRANSPORT);
    ck_assert_ptr_nonnull(strstr(gcoll_last_error(), "rank 2"));
    memset(blocks + bytes, 0xff, bytes); /* escapes only: no values */
    ck_assert_int_eq(gcoll__topk_merge(out, 5, blocks, 3, 2), GCOLL_ERR_TRANSPORT);
    ck_assert_ptr_nonnull(strstr(gcoll_last_error(), "rank 1"));
}
END_TEST

/* Each table's scan against the definition, bit by bit: keys (|v|'s bits) on both sides of
 * every bound, bounds that leave a range empty or take all, with and without a residual. */
START_TEST(scan_masks_match_their_definition)
{
    if (!gcoll__kernels_supported(tables[_i]))
        return;
    gcoll__topk_masks_fn fn = gcoll__topk_masks_for(tables[_i]);
    enum { N = 64 * 37 };
    static float x[N], res[N], got_res[N];
    uint64_t a[N / 64], m[N / 64];
    const uint32_t one = 0x3f800000u, two = 0x40000000u, inf = 0x7f800000u;
    const uint32_t bounds[][3] = {{one, two, 0x80000000u},    {one, one + 1, two}, {0, one, one},
                                  {0, 0, 0x80000000u},        {two, two, two},     {0, inf, 0x7fffffffu},
                                  {inf, inf + 1, 0x80000000u}};
    for (int r = 0; r < 2; r++)
        for (size_t c = 0; c < sizeof(bounds) / sizeof(bounds[0]); c++) {
            for (int i = 0; i < N; i++) {
                x[i] = i % 5 == 0 ? value(2) : i % 5 == 1 ? value(1) * 0.5f : value(0) * 4.0f;
                if (i % 7 == 0) /* exactly on a bound */
                    memcpy(&x[i], &bounds[c][i % 3], 4);
                res[i] = got_res[i] = r ? value(0) : 0;
            }
            fn(x, r ? got_res : NULL, N, bounds[c][0], bounds[c][1], bounds[c][2], a, m);
            for (int i = 0; i < N; i++) {
                float v = r ? res[i] + x[i] : x[i];
                uint32_t key = mag_bits(v), lo = bounds[c][0], mid = bounds[c][1], hi = bounds[c][2];
                int in_a = key >= mid && key < hi, in_m = key >= lo && key < mid;
                CK_EXPECT((int)(a[i / 64] >> (i % 64) & 1) == in_a && (int)(m[i / 64] >> (i % 64) & 1) == in_m,
                          "%s bounds %zu residual %d: entry %d (key %#x) a %d m %d, want %d %d", tables[_i]->name, c, r,
                          i, key, (int)(a[i / 64] >> (i % 64) & 1), (int)(m[i / 64] >> (i % 64) & 1), in_a, in_m);
                CK_EXPECT(!r || memcmp(&v, &got_res[i], 4) == 0 || (isnan(v) && isnan(got_res[i])),
                          "%s: residual[%d] = %g, want %g", tables[_i]->name, i, got_res[i], v);
            }
        }
}
END_TEST

static uint16_t bf16_ref(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

START_TEST(wire_conversions_round_to_nearest_even)
{
    const gcoll__kernels_t *k = tables[_i];
    if (!gcoll__kernels_supported(k))
        return;
    enum { N = 1037 };
    float f[N], back[N];
    uint16_t w[N];
    for (int i = 0; i < N; i++)
        f[i] = i % 3 ? value(0) * 70000.0f : value(2);
    k->to_wire[0](w, f, N);
    k->from_wire[0](back, w, N);
    for (int i = 0; i < N; i++) {
        _Float16 h = (_Float16)f[i];
        float want = (float)h;
        CK_EXPECT(memcmp(&want, &back[i], 4) == 0 || (isnan(want) && isnan(back[i])), "%s fp16 of %g: %g, want %g",
                  k->name, f[i], back[i], want);
    }
    k->to_wire[1](w, f, N);
    k->from_wire[1](back, w, N);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)bf16_ref(f[i]) << 16;
        float want;
        memcpy(&want, &u, 4);
        CK_EXPECT(memcmp(&want, &back[i], 4) == 0 || (isnan(want) && isnan(back[i])), "%s bf16 of %g: %g, want %g",
                  k->name, f[i], back[i], want);
    }
}
END_TEST

Suite *topk_suite(void)
{
    Suite *s = suite_create("topk");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, selection_matches_a_full_sort);
    tcase_add_test(tc, sampled_selection_on_large_vectors_is_exact);
    tcase_add_loop_test(tc, scan_masks_match_their_definition, 0, 3);
    tcase_add_test(tc, k_follows_the_documented_formula);
    tcase_add_test(tc, encoding_round_trips);
    tcase_add_test(tc, merge_sums_blocks_in_rank_order);
    tcase_add_loop_test(tc, wire_conversions_round_to_nearest_even, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}
