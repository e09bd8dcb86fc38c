/* GCOLL_PREMUL_SUM: iallreduce, ireduce_scatter, ireduce_scatterv and ireduce with a scalar of each
 * rank's own (attr.premul), every algorithm forced and the default, in place or not, for every
 * floating-point dtype; the gradient session's sets with gcoll_session_set_premul. Inputs are made
 * so that every product and partial sum is exact in the dtype whatever the order: premul a signed
 * power of two and the input s / premul with small integers s (the sum of the s is the result),
 * and where the dtype has the bits premul 0.25 (rank + 1) with quarters. The expected sums are
 * computed here, in double. Integer dtypes and the blocking calls must refuse the op. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reference.h"
#include "vref.h"

#define MAXN 64

static gcoll_comm_t world;
static int n, r;

/* Input sets: 0, powers of two; 1, quarters (fp16, fp32, fp64 only). */
static double premul_of(int set, int rank)
{
    static const double pow2[8] = {0.5, 2, -1, 0.25, -2, 4, -0.5, 1};
    return set == 0 ? pow2[rank % 8] : 0.25 * (rank + 1);
}

/* The largest |s| of set 0 whose sums over 8 ranks stay exact in d. */
static int smax(gcoll_dtype_t d)
{
    switch (d) {
    case GCOLL_FLOAT8_E5M2: return 1; /* sums up to 8: 3 significant bits */
    case GCOLL_FLOAT8_E4M3: return 2; /* up to 16: 4 bits */
    case GCOLL_BFLOAT16: return 15;   /* up to 120: 8 bits */
    case GCOLL_FLOAT16: return 100;   /* up to 800: 11 bits */
    default: return 1000;
    }
}

static int set_fits(int set, gcoll_dtype_t d)
{
    return set == 0 || d == GCOLL_FLOAT16 || d == GCOLL_FLOAT32 || d == GCOLL_FLOAT64;
}

/* Rank q's input at element i, and (in *term) premul times it. */
static double input(int set, int q, size_t i, gcoll_dtype_t d, double *term)
{
    uint32_t h = ref_hash((uint32_t)q, (uint32_t)i, 0x9e37u + (uint32_t)(d * 2 + set));
    if (set == 0) {
        int s = smax(d), k = (int)(h % (uint32_t)(2 * s + 1)) - s;
        *term = k;
        return k / premul_of(set, q);
    }
    double x = ((int)(h % 31) - 15) / 4.0;
    *term = x * premul_of(set, q);
    return x;
}

static void fill_input(void *p, size_t count, int set, gcoll_dtype_t d)
{
    size_t es = gcoll_dtype_size(d);
    double t;
    for (size_t i = 0; i < count; i++)
        ref_encode(d, input(set, r, i, d, &t), (char *)p + i * es);
}

static double expected(int set, size_t i, gcoll_dtype_t d)
{
    double sum = 0, t;
    for (int q = 0; q < n; q++) {
        input(set, q, i, d, &t);
        sum += t;
    }
    return sum;
}

/* got[0..count) against the sums of elements first.. (values, so that -0 equals 0). */
static void check_sum(const char *got, size_t first, size_t count, int set, gcoll_dtype_t d, const char *ctx)
{
    size_t es = gcoll_dtype_size(d);
    for (size_t i = 0; i < count; i++) {
        double g = ref_decode(d, got + i * es), want = expected(set, first + i, d);
        if (g != want) {
            CHECK(0, "%s: element %zu is %g, want %g", ctx, i, g, want);
            return;
        }
    }
    CHECK(1, "%s", ctx);
}

static char *balloc(size_t bytes, int salt, char **base)
{
    *base = malloc(bytes + 16);
    if (!*base) {
        fprintf(stderr, "test: out of memory\n");
        exit(2);
    }
    return *base + 1 + (size_t)((r + salt) % 7);
}

enum { P_ALLREDUCE, P_REDUCE_SCATTER, P_REDUCE_SCATTERV, P_REDUCE, NP };
static const char *const pnames[NP] = {"allreduce", "reduce_scatter", "reduce_scatterv", "reduce"};
static const char *const *algo_names[NP];
static size_t nalgo[NP];

/* Collective c of count (reduce_scatter: per rank; reduce_scatterv: counts drawn from count) with
 * algorithm a (nalgo: the default). */
static void run(int c, int set, gcoll_dtype_t d, size_t count, size_t a, int ip)
{
    size_t es = gcoll_dtype_size(d), counts[MAXN], total = count, first = 0, rcount = count;
    int root = (int)(count % (size_t)n);
    if (c == P_REDUCE_SCATTER || c == P_REDUCE_SCATTERV) {
        for (int q = 0; q < n; q++)
            counts[q] = count;
        if (c == P_REDUCE_SCATTERV)
            vref_counts(counts, n, count % 2 ? VREF_RANDOM : VREF_HALF, (uint32_t)count);
        total = vref_sum(counts, n);
        first = vref_sum(counts, r);
        rcount = counts[r];
    }
    char *ib, *ob;
    char *in = balloc(total * es, 1, &ib), *out = balloc(total * es, 2, &ob);
    fill_input(in, total, set, d);
    char *res = ip ? in : out;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.premul = premul_of(set, r);
    attr.algorithm = a < nalgo[c] ? algo_names[c][a] : NULL;
    gcoll_request_t req;
    gcoll_status_t st;
    switch (c) {
    case P_ALLREDUCE: st = gcoll_iallreduce(in, res, count, d, GCOLL_PREMUL_SUM, world, &attr, &req); break;
    case P_REDUCE_SCATTER: st = gcoll_ireduce_scatter(in, res, count, d, GCOLL_PREMUL_SUM, world, &attr, &req); break;
    case P_REDUCE_SCATTERV:
        st = gcoll_ireduce_scatterv(in, res, counts, d, GCOLL_PREMUL_SUM, world, &attr, &req);
        break;
    default: st = gcoll_ireduce(in, res, count, d, GCOLL_PREMUL_SUM, root, world, &attr, &req); break;
    }
    int done = 0;
    if (st == GCOLL_SUCCESS && (count + a) % 2) /* by polling */
        while ((st = gcoll_test(&req, &done)) == GCOLL_SUCCESS && !done)
            ;
    else if (st == GCOLL_SUCCESS)
        st = gcoll_wait(&req);
    char ctx[192];
    snprintf(ctx, sizeof(ctx), "%s/%s premul_sum dtype=%s premul=%g (%s) count=%zu %s", pnames[c],
             attr.algorithm ? attr.algorithm : "default", gcoll_dtype_name(d), attr.premul,
             set ? "quarters" : "powers of two", count, ip ? "in-place" : "out-of-place");
    CHECK(st == GCOLL_SUCCESS, "%s: %s: %s", ctx, gcoll_status_name(st), gcoll_last_error());
    if (st == GCOLL_SUCCESS && (c != P_REDUCE || r == root))
        check_sum(res, first, c == P_REDUCE ? count : rcount, set, d, ctx);
    if (!ip) { /* the input is the caller's: unscaled */
        char *eb, *exp = balloc(total * es, 0, &eb);
        fill_input(exp, total, set, d);
        CHECK(memcmp(exp, in, total * es) == 0, "%s: sendbuf was modified", ctx);
        free(eb);
    }
    free(ib);
    free(ob);
}

static void expect_arg(gcoll_status_t st, const char *what)
{
    const char *msg = gcoll_last_error();
    CHECK(st == GCOLL_ERR_INVALID_ARG && (strstr(msg, "op") || strstr(msg, "dtype") || strstr(msg, "premul")),
          "%s: got %s (%s), want GCOLL_ERR_INVALID_ARG naming op, dtype or premul", what, gcoll_status_name(st), msg);
}

/* Integer dtypes in every nonblocking call, and every blocking call, refuse GCOLL_PREMUL_SUM. */
static void refusals(void)
{
    double buf[8 * MAXN] = {0}, out[8 * MAXN];
    size_t counts[MAXN];
    for (int q = 0; q < n; q++)
        counts[q] = 2;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.premul = 2;
    gcoll_request_t req = NULL;
    char what[96];
    for (int d = 0; d < GCOLL_DTYPE_COUNT; d++) {
        if (vref_is_float((gcoll_dtype_t)d))
            continue;
        const char *dn = gcoll_dtype_name((gcoll_dtype_t)d);
        snprintf(what, sizeof(what), "iallreduce premul_sum %s", dn);
        expect_arg(gcoll_iallreduce(buf, out, 4, (gcoll_dtype_t)d, GCOLL_PREMUL_SUM, world, &attr, &req), what);
        snprintf(what, sizeof(what), "ireduce_scatter premul_sum %s", dn);
        expect_arg(gcoll_ireduce_scatter(buf, out, 2, (gcoll_dtype_t)d, GCOLL_PREMUL_SUM, world, &attr, &req), what);
        snprintf(what, sizeof(what), "ireduce_scatterv premul_sum %s", dn);
        expect_arg(gcoll_ireduce_scatterv(buf, out, counts, (gcoll_dtype_t)d, GCOLL_PREMUL_SUM, world, &attr, &req),
                   what);
        snprintf(what, sizeof(what), "ireduce premul_sum %s", dn);
        expect_arg(gcoll_ireduce(buf, out, 4, (gcoll_dtype_t)d, GCOLL_PREMUL_SUM, 0, world, &attr, &req), what);
        CHECK(req == NULL, "a refused premul_sum of %s left a request", dn);
    }
    expect_arg(gcoll_allreduce(buf, out, 4, GCOLL_FLOAT32, GCOLL_PREMUL_SUM, world), "blocking allreduce premul_sum");
    expect_arg(gcoll_reduce_scatter(buf, out, 2, GCOLL_FLOAT32, GCOLL_PREMUL_SUM, world),
               "blocking reduce_scatter premul_sum");
    expect_arg(gcoll_reduce_scatterv(buf, out, counts, GCOLL_FLOAT32, GCOLL_PREMUL_SUM, world),
               "blocking reduce_scatterv premul_sum");
    expect_arg(gcoll_reduce(buf, out, 4, GCOLL_FLOAT32, GCOLL_PREMUL_SUM, 0, world), "blocking reduce premul_sum");
}

/* Two sets of the gradient session (fp32 and fp64, so never one bucket), each with its own
 * scalar, over three iterations. */
static void session(void)
{
    gcoll_session_t s;
    size_t id[2], counts[2] = {1000, 77};
    gcoll_dtype_t dts[2] = {GCOLL_FLOAT32, GCOLL_FLOAT64};
    CHECK_OK(gcoll_session_create(world, &s));
    for (int k = 0; k < 2; k++) {
        CHECK_OK(gcoll_session_add(s, k ? "b" : "a", counts[k], dts[k], GCOLL_PREMUL_SUM, &id[k]));
        CHECK_OK(gcoll_session_set_premul(s, id[k], premul_of(k, r)));
    }
    CHECK_OK(gcoll_session_commit(s));
    char *base[2], *buf[2];
    for (int k = 0; k < 2; k++)
        buf[k] = balloc(counts[k] * 8, k, &base[k]);
    for (int it = 0; it < 3; it++) {
        for (int k = 1; k >= 0; k--) {
            fill_input(buf[k], counts[k], k, dts[k]);
            CHECK_OK(gcoll_session_start(s, id[k], buf[k]));
        }
        CHECK_OK(gcoll_session_wait_all(s));
        for (int k = 0; k < 2; k++) {
            char ctx[96];
            snprintf(ctx, sizeof(ctx), "session premul_sum set %d (%s), iteration %d", k, gcoll_dtype_name(dts[k]), it);
            check_sum(buf[k], 0, counts[k], k, dts[k], ctx);
        }
    }
    CHECK_OK(gcoll_session_free(&s));
    free(base[0]);
    free(base[1]);
}

int main(int argc, char **argv)
{
    world = h_init(&argc, &argv);
    n = h_size;
    r = h_rank;
    if (n > MAXN) {
        fprintf(stderr, "test_premul takes at most %d ranks\n", MAXN);
        return h_finish("premul");
    }
    for (int c = 0; c < NP; c++) {
        gcoll_status_t st = gcoll_algorithms(pnames[c], &algo_names[c], &nalgo[c]);
        CHECK(st == GCOLL_SUCCESS, "gcoll_algorithms(%s): %s", pnames[c], gcoll_last_error());
        if (st != GCOLL_SUCCESS)
            nalgo[c] = 0;
    }
    const size_t counts[] = {0, 1, (size_t)n + 1, 61, 1031};
    unsigned turn = 0;
    for (int d = 0; d < GCOLL_DTYPE_COUNT; d++) {
        if (!vref_is_float((gcoll_dtype_t)d))
            continue;
        /* every algorithm (and the default) of each collective once, then the counts in turn */
        for (int c = 0; c < NP; c++)
            for (size_t a = 0; a <= nalgo[c]; a++)
                run(c, 0, (gcoll_dtype_t)d, 61, a, (int)(a + (size_t)d) % 2);
        for (int set = 0; set < 2; set++) {
            if (!set_fits(set, (gcoll_dtype_t)d))
                continue;
            for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++, turn++)
                for (int c = 0; c < NP; c++) {
                    size_t a = turn % (nalgo[c] + 1);
                    run(c, set, (gcoll_dtype_t)d, counts[k], a, (int)(turn / (nalgo[c] + 1)) % 2);
                }
        }
    }
    refusals();
    session();
    return h_finish("premul");
}
