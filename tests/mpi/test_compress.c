/* Gradient compression against independent references. fp16/bf16 wire formats: within the
 * documented rounding bound of the exact sum, the same bits on every rank, half the bytes. Top-k:
 * the kept entries chosen here by a sort, their dense sum compared bit for bit (ties, duplicate
 * indices, k = 0 and k = count). The session: error feedback over several iterations against a
 * reference keeping every rank's residual, and its accounting. Argument checks. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reference.h"

/* Rank q's input at element i: in [-1, 1), or from {-2, -1, 0, 1, 2} when tied (many equal
 * magnitudes), or the same on every rank when shared (every rank keeps the same indices). */
enum { PLAIN, TIED, SHARED };
static float input(int q, size_t i, uint32_t salt, int kind)
{
    uint32_t h = ref_hash(kind == SHARED ? 0u : (uint32_t)q, (uint32_t)i, salt);
    if (kind == TIED)
        return (float)((int)(h % 5) - 2);
    return (float)((double)(int32_t)h / 2147483648.0);
}

static void fill(float *x, size_t n, int q, uint32_t salt, int kind)
{
    for (size_t i = 0; i < n; i++)
        x[i] = input(q, i, salt, kind);
}

/* Whether every rank holds the same n floats (plain MPI compares them). */
static int same_everywhere(const float *x, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)x;
    for (size_t i = 0; i < n * sizeof(float); i++)
        h = (h ^ p[i]) * 1099511628211ull;
    uint64_t lo, hi;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

static unsigned long long sent(gcoll_comm_t c)
{
    unsigned long long b = 0;
    CHECK_OK(gcoll_comm_bytes_sent(c, &b));
    return b;
}

static gcoll_status_t allreduce(gcoll_comm_t c, const float *in, float *out, size_t n, gcoll_op_t op,
                                const gcoll_attr_t *attr)
{
    gcoll_request_t r;
    gcoll_status_t st = gcoll_iallreduce(in, out, n, GCOLL_FLOAT32, op, c, attr, &r);
    return st == GCOLL_SUCCESS ? gcoll_wait(&r) : st;
}

/* ---- 16-bit wire formats */

/* README "Gradient compression": every operand that crosses the wire and the final result are
 * rounded once each, at most n + 1 roundings of partial sums no larger than sum |x|. Unit
 * roundoff u: 2^-11 fp16, 2^-8 bf16; fp16 subnormals add 2^-25 absolute per rounding. */
static void wire_case(gcoll_comm_t c, gcoll_compress_t kind, size_t n, gcoll_op_t op, const char *algo, int inplace)
{
    int P = h_size;
    float *in = malloc((n + 1) * sizeof(float)), *out = malloc((n + 1) * sizeof(float));
    float *plain = malloc((n + 1) * sizeof(float));
    uint32_t salt = (uint32_t)(n * 31 + (size_t)kind * 7 + (size_t)op);
    fill(in, n, h_rank, salt, PLAIN);
    memcpy(out, in, n * sizeof(float));
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.algorithm = algo;
    attr.compress = kind;
    unsigned long long b0 = sent(c);
    CHECK_OK(allreduce(c, inplace ? out : in, out, n, op, &attr));
    unsigned long long b1 = sent(c);
    double u = kind == GCOLL_COMPRESS_FP16 ? ldexp(1, -11) : ldexp(1, -8);
    double tiny = kind == GCOLL_COMPRESS_FP16 ? ldexp(1, -25) : 0;
    size_t bad = 0, worst = 0;
    double worst_err = 0;
    for (size_t i = 0; i < n; i++) {
        double exact = 0, mag = 0;
        for (int q = 0; q < P; q++) {
            double v = input(q, i, salt, PLAIN);
            exact += v;
            mag += fabs(v);
        }
        double bound = (P + 1) * (u * mag + tiny), err = fabs(out[i] - exact);
        if (op == GCOLL_AVG) {
            exact /= P;
            bound /= P;
            err = fabs(out[i] - exact);
        }
        if (!(err <= bound))
            bad++;
        if (err > worst_err) {
            worst_err = err;
            worst = i;
        }
    }
    CHECK(bad == 0, "%s n=%zu %s algo=%s: %zu results outside the bound (worst at %zu: error %g)",
          kind == GCOLL_COMPRESS_FP16 ? "fp16" : "bf16", n, gcoll_op_name(op), algo ? algo : "auto", bad, worst,
          worst_err);
    CHECK(same_everywhere(out, n), "fp16/bf16 n=%zu algo=%s: ranks hold different results", n, algo ? algo : "auto");
    if (algo && P > 1 && n) { /* the same algorithm uncompressed sends twice the bytes */
        attr.compress = GCOLL_COMPRESS_NONE;
        CHECK_OK(allreduce(c, in, plain, n, op, &attr));
        unsigned long long b2 = sent(c);
        CHECK((b2 - b1) == 2 * (b1 - b0), "%s n=%zu: %llu bytes compressed vs %llu plain, not half", algo, n, b1 - b0,
              b2 - b1);
    }
    free(in);
    free(out);
    free(plain);
}

static void wire_formats(gcoll_comm_t c)
{
    static const size_t sizes[] = {0, 1, 7, 1000, 65537, 300000};
    static const char *const algos[] = {NULL, "ring", "rabenseifner"};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 2; k++) {
                gcoll_compress_t kind = k ? GCOLL_COMPRESS_BF16 : GCOLL_COMPRESS_FP16;
                wire_case(c, kind, sizes[s], (s + (size_t)a) % 2 ? GCOLL_AVG : GCOLL_SUM, algos[a], (int)(s % 2));
            }
}

/* ---- top-k */

typedef struct {
    float mag;
    size_t idx;
} ent_t;

/* Larger magnitude first, then the lower index. */
static int by_rank(const void *pa, const void *pb)
{
    const ent_t *a = pa, *b = pb;
    if (a->mag != b->mag)
        return a->mag > b->mag ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Marks in keep the k entries of v with the largest |v|, ties to the lower index. */
static void ref_topk(const float *v, size_t n, size_t k, char *keep, ent_t *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = (ent_t){fabsf(v[i]), i};
    qsort(tmp, n, sizeof(*tmp), by_rank);
    memset(keep, 0, n);
    for (size_t j = 0; j < k; j++)
        keep[tmp[j].idx] = 1;
}

static size_t ref_k(size_t n, double density)
{
    double k = density * (double)n;
    return k >= (double)n ? n : (size_t)k;
}

static void topk_case(gcoll_comm_t c, size_t n, double density, int kind, gcoll_op_t op, int inplace)
{
    int P = h_size;
    uint32_t salt = (uint32_t)(n * 13 + (size_t)(density * 1e6) + (size_t)kind);
    float *in = malloc((n + 1) * sizeof(float)), *out = malloc((n + 1) * sizeof(float));
    float *v = calloc(n + 1, sizeof(float)), *want = calloc(n + 1, sizeof(float));
    double *mag = calloc(n + 1, sizeof(double));
    char *keep = malloc(n + 1);
    ent_t *tmp = malloc((n + 1) * sizeof(ent_t));
    fill(in, n, h_rank, salt, kind);
    memcpy(out, in, n * sizeof(float));
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.compress = GCOLL_COMPRESS_TOPK;
    attr.topk_density = density;
    CHECK_OK(allreduce(c, inplace ? out : in, out, n, op, &attr));
    size_t k = ref_k(n, density);
    for (int q = 0; q < P; q++) { /* every rank's choice, in rank order */
        fill(v, n, q, salt, kind);
        ref_topk(v, n, k, keep, tmp);
        for (size_t i = 0; i < n; i++)
            if (keep[i]) {
                want[i] += v[i];
                mag[i] += fabs(v[i]);
            }
    }
    /* above density 1/P the kept entries go through a dense ring: its order of additions, so
     * within P roundings of the rank-order sum rather than equal to it */
    int dense = (size_t)P * k > n;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        float w = op == GCOLL_AVG ? want[i] / (float)P : want[i];
        double tol = dense ? (P + 1) * ldexp(1, -24) * mag[i] : 0;
        int ok = dense ? fabs((double)out[i] - w) <= tol : memcmp(&w, &out[i], sizeof(float)) == 0;
        if (!ok && bad++ == 0)
            first = i;
    }
    CHECK(same_everywhere(out, n), "topk n=%zu density=%g: ranks hold different results", n, density);
    CHECK(bad == 0, "topk n=%zu density=%g kind=%d %s: %zu entries differ (first %zu: %g, want %g)", n, density, kind,
          gcoll_op_name(op), bad, first, n ? out[first] : 0.0, n ? want[first] : 0.0);
    free(in);
    free(out);
    free(v);
    free(want);
    free(keep);
    free(tmp);
    free(mag);
}

static void topk(gcoll_comm_t c)
{
    static const size_t sizes[] = {1, 10, 99, 1000, 4099, 100000};
    static const double dens[] = {1.0, 0.01, 0.5, 0.0001, 0.3};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t d = 0; d < sizeof(dens) / sizeof(dens[0]); d++)
            for (int kind = PLAIN; kind <= SHARED; kind++)
                topk_case(c, sizes[s], dens[d], kind, (s + d) % 2 ? GCOLL_AVG : GCOLL_SUM, (int)((s + d + 1) % 2));
    topk_case(c, 300000, 0.01, PLAIN, GCOLL_AVG, 1); /* past 256 Ki: the sampled selection */
    /* bytes on the wire grow with k, not with the vector: 6 (k + n / 65535 + 1) (size - 1) per
     * rank (6-byte entries, room for the gap escapes) */
    size_t n = 100000;
    float *x = calloc(n, sizeof(float));
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.compress = GCOLL_COMPRESS_TOPK;
    attr.topk_density = 0.01;
    unsigned long long b0 = sent(c);
    CHECK_OK(allreduce(c, x, x, n, GCOLL_SUM, &attr));
    unsigned long long b1 = sent(c);
    CHECK(b1 - b0 == 6ull * 1002 * (unsigned long long)(h_size - 1), "topk 1%% of %zu: %llu bytes sent, want %llu", n,
          b1 - b0, 6ull * 1002 * (unsigned long long)(h_size - 1));
    /* k = count: dense, the bytes of a plain ring */
    attr.topk_density = 1;
    CHECK_OK(allreduce(c, x, x, n, GCOLL_SUM, &attr));
    unsigned long long b2 = sent(c);
    gcoll_attr_t ring = GCOLL_ATTR_INIT;
    ring.algorithm = "ring";
    CHECK_OK(allreduce(c, x, x, n, GCOLL_SUM, &ring));
    unsigned long long b3 = sent(c);
    CHECK(h_size == 1 || b2 - b1 == b3 - b2, "topk k = count: %llu bytes sent, a ring sends %llu", b2 - b1, b3 - b2);
    free(x);
}

/* ---- the session: error feedback */

#define ITERS 6
enum { S_TOPK, S_FP16, S_PLAIN, S_TOPK0, S_TOPK_ALL, NS };
static const size_t s_count[NS] = {3000, 5000, 100, 50, 257};
static const gcoll_compress_t s_comp[NS] = {GCOLL_COMPRESS_TOPK, GCOLL_COMPRESS_FP16, GCOLL_COMPRESS_NONE,
                                            GCOLL_COMPRESS_TOPK, GCOLL_COMPRESS_TOPK};
static const double s_dens[NS] = {0.02, 1, 1, 0.01 /* k = 0 */, 1.0};

static void session_ef(gcoll_comm_t c)
{
    int P = h_size;
    gcoll_session_t s;
    size_t id[NS];
    float *g[NS], *res[NS], *sum_given[NS], *sum_got[NS], *v = malloc(5000 * sizeof(float));
    char *keep = malloc(5000);
    ent_t *tmp = malloc(5000 * sizeof(ent_t));
    CHECK_OK(gcoll_session_create(c, &s));
    for (int i = 0; i < NS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "set%d", i);
        CHECK_OK(gcoll_session_add(s, name, s_count[i], GCOLL_FLOAT32, i == S_TOPK ? GCOLL_AVG : GCOLL_SUM, &id[i]));
        if (s_comp[i] != GCOLL_COMPRESS_NONE)
            CHECK_OK(gcoll_session_set_compress(s, id[i], s_comp[i], s_dens[i]));
        g[i] = malloc(s_count[i] * sizeof(float));
        res[i] = calloc(s_count[i] * (size_t)P, sizeof(float)); /* every rank's residual */
        sum_given[i] = calloc(s_count[i], sizeof(float));
        sum_got[i] = calloc(s_count[i], sizeof(float));
    }
    CHECK_OK(gcoll_session_commit(s));
    size_t bk[NS];
    for (int i = 0; i < NS; i++)
        CHECK_OK(gcoll_session_bucket_of(s, id[i], &bk[i]));
    for (int i = 0; i < NS; i++)
        for (int j = 0; j < i; j++)
            CHECK(bk[i] != bk[j], "sets %d and %d of different compression share bucket %zu", i, j, bk[i]);
    for (int it = 0; it < ITERS; it++) {
        for (int i = NS; i-- > 0;) {
            fill(g[i], s_count[i], h_rank, (uint32_t)(it * 97 + i), it % 2 ? TIED : PLAIN);
            CHECK_OK(gcoll_session_start(s, id[i], g[i]));
        }
        CHECK_OK(gcoll_session_wait_all(s));
        CHECK(same_everywhere(g[S_FP16], s_count[S_FP16]), "iteration %d: the fp16 set differs across ranks", it);
        for (int i = 0; i < NS; i++) {
            if (s_comp[i] != GCOLL_COMPRESS_TOPK)
                continue;
            size_t n = s_count[i], k = ref_k(n, s_dens[i]), bad = 0;
            float *want = calloc(n, sizeof(float));
            double *mag = calloc(n, sizeof(double));
            int dense = (size_t)P * k > n; /* a dense ring's order of additions (see topk_case) */
            for (int q = 0; q < P; q++) {
                float *r = res[i] + (size_t)q * n;
                fill(v, n, q, (uint32_t)(it * 97 + i), it % 2 ? TIED : PLAIN);
                for (size_t e = 0; e < n; e++) {
                    sum_given[i][e] += v[e];
                    v[e] += r[e];
                }
                ref_topk(v, n, k, keep, tmp);
                for (size_t e = 0; e < n; e++) {
                    r[e] = keep[e] ? 0 : v[e];
                    want[e] += keep[e] ? v[e] : 0;
                    mag[e] += keep[e] ? fabs(v[e]) : 0;
                }
            }
            gcoll_op_t op = i == S_TOPK ? GCOLL_AVG : GCOLL_SUM;
            for (size_t e = 0; e < n; e++) {
                float w = op == GCOLL_AVG ? want[e] / (float)P : want[e];
                bad += dense ? !(fabs((double)g[i][e] - w) <= (P + 1) * ldexp(1, -24) * mag[e])
                             : memcmp(&w, &g[i][e], sizeof(float)) != 0;
                sum_got[i][e] += op == GCOLL_AVG ? g[i][e] * (float)P : g[i][e];
            }
            CHECK(bad == 0, "iteration %d set %d: %zu entries differ from the error-feedback reference", it, i, bad);
            free(want);
            free(mag);
        }
    }
    /* accounting: everything given went out or is still in a residual */
    for (int i = 0; i < NS; i++) {
        if (s_comp[i] != GCOLL_COMPRESS_TOPK)
            continue;
        size_t n = s_count[i], bad = 0;
        for (size_t e = 0; e < n; e++) {
            double left = 0;
            for (int q = 0; q < P; q++)
                left += res[i][(size_t)q * n + e];
            double tol = 1e-4 * (fabs(sum_given[i][e]) + 2 * ITERS * P);
            bad += !(fabs(sum_got[i][e] + left - sum_given[i][e]) <= tol);
        }
        CHECK(bad == 0, "set %d: %zu entries where sent + residual != given", i, bad);
        if (i == S_TOPK0)
            for (size_t e = 0; e < n; e++)
                bad += g[i][e] != 0;
        CHECK(bad == 0, "set %d with k = 0 received something", i);
    }
    CHECK_OK(gcoll_session_free(&s));
    for (int i = 0; i < NS; i++) {
        free(g[i]);
        free(res[i]);
        free(sum_given[i]);
        free(sum_got[i]);
    }
    free(v);
    free(keep);
    free(tmp);
}

/* ---- misuse */

static void expect_invalid(gcoll_status_t st, const char *what, const char *names)
{
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), names), "%s: got %s '%s', want an error naming %s",
          what, gcoll_status_name(st), gcoll_last_error(), names);
}

static void errors(gcoll_comm_t c)
{
    float x[4] = {0};
    double d[4] = {0};
    gcoll_request_t r;
    gcoll_attr_t a = GCOLL_ATTR_INIT;
    a.compress = (gcoll_compress_t)9;
    expect_invalid(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, &a, &r), "compress 9", "attr->compress");
    a.compress = GCOLL_COMPRESS_TOPK;
    static const double bad_density[] = {0, -0.5, 1.5, NAN};
    for (int i = 0; i < 4; i++) {
        a.topk_density = bad_density[i];
        expect_invalid(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, &a, &r), "density", "attr->topk_density");
    }
    a.topk_density = 0.5;
    expect_invalid(gcoll_iallreduce(d, d, 4, GCOLL_FLOAT64, GCOLL_SUM, c, &a, &r), "float64", "attr->compress");
    expect_invalid(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_MAX, c, &a, &r), "max", "attr->compress");
    expect_invalid(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_ADASUM, c, &a, &r), "adasum", "attr->compress");
    expect_invalid(gcoll_iallgather(x, d, 1, GCOLL_FLOAT32, c, &a, &r), "allgather", "attr->compress");
    a.compress = GCOLL_COMPRESS_FP16;
    a.algorithm = "recursive_doubling";
    expect_invalid(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, &a, &r), "fp16 over rd", "attr->algorithm");
    a.compress = GCOLL_COMPRESS_TOPK;
    a.algorithm = "ring";
    expect_invalid(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, &a, &r), "topk over ring", "attr->algorithm");

    gcoll_session_t s;
    size_t id, id8;
    CHECK_OK(gcoll_session_create(c, &s));
    CHECK_OK(gcoll_session_add(s, "w", 100, GCOLL_FLOAT32, GCOLL_SUM, &id));
    CHECK_OK(gcoll_session_add(s, "i", 100, GCOLL_INT32, GCOLL_SUM, &id8));
    expect_invalid(gcoll_session_set_compress(s, id, GCOLL_COMPRESS_TOPK, 0), "session density", "density");
    expect_invalid(gcoll_session_set_compress(s, id8, GCOLL_COMPRESS_BF16, 1), "session int32", "compress");
    expect_invalid(gcoll_session_set_compress(s, 7, GCOLL_COMPRESS_BF16, 1), "session id", "id");
    CHECK_OK(gcoll_session_commit(s));
    CHECK(gcoll_session_set_compress(s, id, GCOLL_COMPRESS_FP16, 1) == GCOLL_ERR_INVALID_USAGE,
          "set_compress after commit was accepted");
    CHECK_OK(gcoll_session_free(&s));
}

int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    errors(world);
    wire_formats(world);
    topk(world);
    session_ef(world);
    return h_finish("compress");
}
