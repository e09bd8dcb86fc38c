/* Adasum against the independent reference (reference/adasum_ref.c), computed by every rank from
 * all ranks' regenerated inputs: every algorithm (halving, shm_cma, hierarchical), every float
 * dtype, in and out of place, one tensor and many fused ones. Orthogonal inputs must give their
 * sum and identical ones their mean, bit for bit, the same bits on every rank; zero, tiny and huge
 * inputs. Then the GCOLL_ADASUM op of gcoll_allreduce, the nonblocking form, bad arguments. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "adasum_ref.h"
#include "harness.h"
#include "reference.h"

static gcoll_comm_t world;
static int *host_of, nhosts; /* host of each rank, numbered in order of first rank */
static int default_hier;     /* GCOLL_ADASUM's choice here is the hierarchical variant */
static int shm_cma_here;     /* and whether, for large vectors, it is shm_cma (one host, single copy) */

enum { C_RANDOM, C_ORTHOGONAL, C_IDENTICAL, C_ZEROS, C_TINY, C_HUGE, C_NCASES };
static const char *const case_names[] = {"random", "orthogonal", "identical", "zeros", "tiny", "huge"};

typedef struct {
    int kind;
    gcoll_dtype_t d;
    int n;
    uint32_t seed;
} gen_t;

static double raw_value(const gen_t *g, int q, size_t i)
{
    double u = (double)ref_hash((uint32_t)q, (uint32_t)i, g->seed) / 4294967296.0 - 0.5; /* [-0.5, 0.5) */
    int dbl = g->d == GCOLL_FLOAT64;
    switch (g->kind) {
    case C_ORTHOGONAL: /* rank q alone holds the elements i with i % n == q */
        return (int)(i % (size_t)g->n) == q ? ((double)(ref_hash(7, (uint32_t)i, g->seed) % 64) + 1) / 8 : 0;
    case C_IDENTICAL: return ((double)ref_hash(0, (uint32_t)i, g->seed) / 4294967296.0 - 0.5) * 3;
    case C_ZEROS: /* every third rank's vector is zero, and runs of elements are zero everywhere
                   * (whole small tensors among the fused ones) */
        return q % 3 == 0 || (i / 5) % 4 == 0 ? 0 : u * 3;
    case C_TINY: /* fp32: near FLT_MIN; fp64: squares below sqrt(DBL_MIN), so c = 1 throughout */
        return (u + (u < 0 ? -0.5 : 0.5)) * (dbl ? 1e-160 : 4 * (double)FLT_MIN);
    case C_HUGE: return u * (dbl ? 1e150 : 1e36);
    default: return u * 3;
    }
}

/* Rank q's input at element i as stored in the dtype. */
static double value(int q, size_t i, void *ctx)
{
    const gen_t *g = ctx;
    char enc[8];
    ref_encode(g->d, raw_value(g, q, i), enc);
    return adasum_decode(g->d, enc);
}

/* FNV-1a of the result, compared across ranks with plain MPI. */
static int same_everywhere(const void *p, size_t bytes)
{
    unsigned long long h = 1469598103934665603ull, lo, hi;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

typedef struct {
    const char *name;
    size_t count;
    size_t nt;
    size_t tc[48];
} layout_t;

static void run_case(const char *algo, gcoll_dtype_t d, int kind, const layout_t *lay, int inplace)
{
    int n = h_size, r = h_rank, hier = algo ? strcmp(algo, "hierarchical") == 0 : default_hier;
    size_t es = gcoll_dtype_size(d), cnt = lay->count;
    gen_t g = {.kind = kind, .d = d, .n = n, .seed = 101u + (uint32_t)(kind * 16 + d)};
    char *in = malloc(cnt * es + 1), *out = malloc(cnt * es + 1);
    for (size_t i = 0; i < cnt; i++)
        ref_encode(d, raw_value(&g, r, i), in + i * es);
    memset(out, 0x7f, cnt * es + 1);
    char *res = inplace ? in : out;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.algorithm = algo;
    gcoll_request_t req;
    const size_t *tc = lay->nt ? lay->tc : NULL;
    gcoll_status_t st = gcoll_iadasum(in, res, cnt, d, tc, lay->nt, world, &attr, &req);
    if (st == GCOLL_SUCCESS)
        st = gcoll_wait(&req);
#define WHAT "adasum %s %s %s %s%s"
#define WHAT_ARGS algo ? algo : "default", gcoll_dtype_name(d), case_names[kind], lay->name, inplace ? " in place" : ""
    CHECK(st == GCOLL_SUCCESS, WHAT ": %s", WHAT_ARGS, gcoll_last_error());
    CHECK(same_everywhere(res, cnt * es), WHAT ": the ranks' results differ", WHAT_ARGS);
    /* the reference: flat over ranks, or (hierarchical) over the sums of each host */
    int m = hier ? nhosts : n;
    double *init = calloc((size_t)m * (size_t)n, sizeof(double));
    for (int q = 0; q < n; q++)
        init[(size_t)(hier ? host_of[q] : q) * (size_t)n + (size_t)q] = 1;
    adasum_ref_t ref;
    if (adasum_ref_init(&ref, n, m, init, cnt, tc, lay->nt, value, &g) != 0) {
        CHECK(0, WHAT ": the reference is out of memory", WHAT_ARGS);
    } else {
        size_t worst;
        double err = adasum_ref_error(&ref, res, d, &worst), tol = adasum_ref_tolerance(d);
        CHECK(err <= tol, WHAT ": tensor %zu is %g off the reference (relative), over %g", WHAT_ARGS, worst, err, tol);
        adasum_ref_free(&ref);
    }
    /* exact properties of the operator, independent of the reference */
    if ((kind == C_ORTHOGONAL || kind == C_IDENTICAL) && !hier) {
        size_t bad = cnt;
        for (size_t i = 0; i < cnt && bad == cnt; i++) {
            double want = kind == C_IDENTICAL ? value(0, i, &g) : value((int)(i % (size_t)n), i, &g);
            if (adasum_decode(d, res + i * es) != want)
                bad = i;
        }
        CHECK(bad == cnt, WHAT ": element %zu is not the %s", WHAT_ARGS, bad,
              kind == C_IDENTICAL ? "mean (the common input)" : "sum");
    }
    free(init);
    free(in);
    free(out);
}

static void test_errors(void)
{
    float buf[16] = {0};
    int32_t ibuf[4] = {0};
    size_t tc[3] = {4, 4, 4};
    gcoll_request_t req;
#define EXPECT(call, needle)                                                      \
    do {                                                                          \
        gcoll_status_t st_ = (call);                                              \
        CHECK(st_ == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), needle), \
              "%s -> %s (%s), want "                                              \
              "GCOLL_ERR_INVALID_ARG naming %s",                                  \
              #call, gcoll_status_name(st_), gcoll_last_error(), needle);         \
    } while (0)
    EXPECT(gcoll_reduce_scatter(buf, buf, 1, GCOLL_FLOAT32, GCOLL_ADASUM, world), "op");
    EXPECT(gcoll_reduce(buf, buf, 4, GCOLL_FLOAT32, GCOLL_ADASUM, 0, world), "op");
    EXPECT(gcoll_reduce_local(buf, buf, 4, GCOLL_FLOAT32, GCOLL_ADASUM), "op");
    EXPECT(gcoll_allreduce(ibuf, ibuf, 4, GCOLL_INT32, GCOLL_ADASUM, world), "dtype");
    EXPECT(gcoll_adasum(ibuf, ibuf, 4, GCOLL_INT32, NULL, 0, world), "dtype");
    EXPECT(gcoll_adasum(buf, buf, 16, GCOLL_FLOAT32, tc, 3, world), "tensor_counts");
    EXPECT(gcoll_adasum(buf, buf, 8, GCOLL_FLOAT32, tc, 3, world), "tensor_counts");
    EXPECT(gcoll_adasum(buf, buf, 12, GCOLL_FLOAT32, NULL, 3, world), "tensor_counts");
    EXPECT(gcoll_adasum(buf, buf, 12, GCOLL_FLOAT32, tc, 0, world), "ntensors");
    EXPECT(gcoll_adasum(NULL, buf, 12, GCOLL_FLOAT32, tc, 3, world), "sendbuf");
    EXPECT(gcoll_adasum(buf, buf, 12, GCOLL_FLOAT32, tc, 3, NULL), "comm");
    EXPECT(gcoll_iadasum(buf, buf, 12, GCOLL_FLOAT32, tc, 3, world, NULL, NULL), "req");
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.algorithm = "ring";
    EXPECT(gcoll_iadasum(buf, buf, 12, GCOLL_FLOAT32, tc, 3, world, &attr, &req), "algorithm");
    if (!shm_cma_here) { /* an algorithm that cannot serve gives way to the built-in choice */
        attr.algorithm = "shm_cma";
        gcoll_status_t st = gcoll_iadasum(buf, buf, 12, GCOLL_FLOAT32, tc, 3, world, &attr, &req);
        CHECK(st == GCOLL_SUCCESS && gcoll_wait(&req) == GCOLL_SUCCESS, "shm_cma where it cannot serve: %s",
              gcoll_last_error());
    }
    CHECK_OK(gcoll_adasum(NULL, NULL, 0, GCOLL_FLOAT32, NULL, 0, world)); /* count 0 is legal */
    CHECK(strcmp(gcoll_op_name(GCOLL_ADASUM), "adasum") == 0, "gcoll_op_name(GCOLL_ADASUM) is '%s'",
          gcoll_op_name(GCOLL_ADASUM));
}

/* gcoll_allreduce with GCOLL_ADASUM is gcoll_adasum over one tensor, bit for bit; and several
 * gcoll_iadasum in flight at once (each size takes its own algorithm) give what the blocking
 * calls give. */
static void test_allreduce_op(void)
{
    size_t cnt = 100003, sizes[3] = {100003, 1031, 5};
    gen_t g = {.kind = C_RANDOM, .d = GCOLL_FLOAT32, .n = h_size, .seed = 5};
    float *in = malloc(cnt * 4), *a = malloc(cnt * 4), *b = malloc(cnt * 4), *c[3];
    for (size_t i = 0; i < cnt; i++)
        in[i] = (float)value(h_rank, i, &g);
    CHECK_OK(gcoll_allreduce(in, a, 1031, GCOLL_FLOAT32, GCOLL_ADASUM, world));
    CHECK_OK(gcoll_adasum(in, b, 1031, GCOLL_FLOAT32, NULL, 1, world));
    CHECK(memcmp(a, b, 1031 * 4) == 0, "allreduce GCOLL_ADASUM differs from gcoll_adasum");
    gcoll_request_t req[3];
    for (int k = 0; k < 3; k++) {
        c[k] = malloc(sizes[k] * 4);
        CHECK_OK(gcoll_iadasum(in, c[k], sizes[k], GCOLL_FLOAT32, NULL, 0, world, NULL, &req[k]));
    }
    for (int k = 2; k >= 0; k--) {
        CHECK_OK(gcoll_wait(&req[k]));
        CHECK_OK(gcoll_adasum(in, b, sizes[k], GCOLL_FLOAT32, NULL, 0, world));
        CHECK(memcmp(c[k], b, sizes[k] * 4) == 0, "iadasum of %zu elements in flight with others differs", sizes[k]);
        free(c[k]);
    }
    free(in);
    free(a);
    free(b);
}

static void find_hosts(void)
{
    int n = h_size;
    char mine[MPI_MAX_PROCESSOR_NAME] = "";
    int len;
    MPI_Get_processor_name(mine, &len);
    char *all = calloc((size_t)n, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    host_of = malloc(sizeof(int) * (size_t)n);
    nhosts = 0;
    for (int q = 0; q < n; q++) {
        host_of[q] = -1;
        for (int p = 0; p < q && host_of[q] < 0; p++)
            if (strcmp(all + (size_t)p * MPI_MAX_PROCESSOR_NAME, all + (size_t)q * MPI_MAX_PROCESSOR_NAME) == 0)
                host_of[q] = host_of[p];
        if (host_of[q] < 0)
            host_of[q] = nhosts++;
    }
    free(all);
}

int main(int argc, char **argv)
{
    world = h_init(&argc, &argv);
    int n = h_size;
    find_hosts();
    const char *choice = "";
    CHECK_OK(gcoll_comm_algorithm(world, "adasum", 1 << 20, GCOLL_FLOAT32, &choice)); /* past any slot */
    default_hier = strcmp(choice, "adasum/hierarchical") == 0;
    shm_cma_here = strcmp(choice, "adasum/shm_cma") == 0;
    if (h_rank == 0)
        printf("note: %d host%s; GCOLL_ADASUM picks %s\n", nhosts, nhosts == 1 ? "" : "s", choice);
    const char *quick = getenv("TEST_QUICK"); /* fewer sizes, for sanitizer runs */
    int q = quick && *quick == '1';
    layout_t lays[5] = {{"1 element", 1, 0, {0}},
                        {"n+1 elements", (size_t)n + 1, 0, {0}},
                        {"4099 elements", 4099, 0, {0}},
                        {"40 fused tensors", 0, 40, {0}},
                        {"200003 elements", 200003, 0, {0}}};
    /* sizes 3..25 in a scrambled order, empty ones among them. Not 1 or 2: Adasum is discontinuous
     * where a combination cancels to exactly zero (adasum(0, b) = b, while adasum(e, b) tends to
     * (e + b) / 2 for e parallel to b), and the few elements of a tiny tensor are nearly parallel
     * often enough for fp16/bf16 rounding to land on either side of that. */
    for (size_t t = 0; t < 40; t++) {
        lays[3].tc[t] = t % 7 == 3 ? 0 : 3 + (t * 37 + 5) % 23;
        lays[3].count += lays[3].tc[t];
    }
    int nlays = q ? 4 : 5;
    /* the shm ones on one host; where they cannot serve a call (no single copy, a vector larger
     * than a slot) they give way to the built-in choice, which then is flat as well */
    const char *algos[] = {"halving", "shm_slots", "shm_cma", "hierarchical", NULL};
    const gcoll_dtype_t dts[] = {GCOLL_FLOAT16, GCOLL_BFLOAT16, GCOLL_FLOAT32, GCOLL_FLOAT64};
    for (int a = 0; a < 5; a++) {
        if ((a == 1 || a == 2) && (nhosts > 1 || default_hier)) {
            if (h_rank == 0)
                printf("note: %s not run here (ranks on several hosts, or GCOLL_ADASUM=hierarchical)\n", algos[a]);
            continue;
        }
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < C_NCASES; k++) {
                if ((k == C_TINY || k == C_HUGE) && dts[t] != GCOLL_FLOAT32 && dts[t] != GCOLL_FLOAT64)
                    continue; /* magnitudes of fp32 and fp64 */
                for (int l = 0; l < nlays; l++) {
                    if (l == 4 && (t != 2 || (k != C_RANDOM && k != C_ORTHOGONAL)))
                        continue; /* the large size: fp32 only, two cases */
                    for (int ip = 0; ip < 2; ip++)
                        run_case(algos[a], dts[t], k, &lays[l], ip);
                }
            }
    }
    test_allreduce_op();
    test_errors();
    free(host_of);
    return h_finish("adasum");
}
