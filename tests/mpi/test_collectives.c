/* Every collective, algorithm, dtype, op, count (0, 1, primes, n+-1, 1 Mi+3) and in-place or
 * not, at unaligned offsets, checked against a reference computed from all ranks' regenerated
 * inputs (reference/reference.c); then every allreduce algorithm's bits on rounding sums.
 * By default each case runs one (algorithm, in-place) of each collective in turn, and the end
 * checks that every pair of parameters met; TEST_FULL=1 runs every algorithm in every case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#include "harness.h"
#include "reference.h"

static gcoll_comm_t world;

/* The covering design. Cases are counts x dtypes x ops (movement: counts x dtypes); collective
 * c runs, in its k-th case, algorithm k mod nalgo, in place when (k / nalgo) is odd, and k moves
 * on by one per case and one or more per count, so that a count's cases move it on by a number
 * prime to nalgo: every algorithm meets every count, dtype, op and placement, and every
 * placement every count and dtype. met[][] records what met. */
enum { C_ALLREDUCE, C_REDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BCAST, C_ALLTOALL, C_AGREE, NCOLL };
#define MAX_ALGO 16
static int full;
static unsigned turn[NCOLL];
static int cur_count; /* index into main's counts */
typedef struct {
    uint32_t dtypes, ops, counts, placed; /* bit masks of what this algorithm met */
} met_t;
static met_t met[NCOLL][MAX_ALGO];
static uint32_t placed_counts[NCOLL][2], placed_dtypes[NCOLL][2];

/* Whether collective c runs algorithm a, in place (ip) or not, in this case. */
static int chosen(int c, size_t a, int ip, size_t nalgo)
{
    if (full)
        return 1;
    return a == turn[c] % nalgo && ip == (int)(turn[c] / nalgo % 2);
}

static void record(int c, size_t a, gcoll_dtype_t d, gcoll_op_t op, int ip)
{
    met_t *m = &met[c][a];
    m->dtypes |= 1u << d;
    m->ops |= 1u << op;
    m->counts |= 1u << cur_count;
    m->placed |= 1u << ip;
    placed_counts[c][ip] |= 1u << cur_count;
    placed_dtypes[c][ip] |= 1u << d;
}

/* A buffer at an odd offset from malloc's alignment, so kernels see unaligned elements. */
typedef struct {
    char *base, *p;
} buf_t;

static buf_t balloc(size_t bytes, int salt)
{
    buf_t b;
    b.base = malloc(bytes + 16);
    if (!b.base) {
        fprintf(stderr, "test: out of memory\n");
        exit(2);
    }
    b.p = b.base + 1 + (size_t)((h_rank + salt) % 7);
    return b;
}

/* Index of the first element that differs, or -1. */
static long first_diff(const char *a, const char *b, size_t n, size_t es)
{
    if (memcmp(a, b, n * es) == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i * es, b + i * es, es) != 0)
            return (long)i;
    return -1;
}

static void algos(const char *coll, const char *const **names, size_t *count)
{
    if (gcoll_algorithms(coll, names, count) != GCOLL_SUCCESS) {
        fprintf(stderr, "test: gcoll_algorithms(%s) failed\n", coll);
        exit(2);
    }
}

static unsigned gcd(unsigned a, unsigned b)
{
    return b ? gcd(b, a % b) : a;
}

/* The design's step between counts: turn[c] moves on by at least one, until the whole count
 * (its cases and this step) moved it by a number prime to the collective's algorithm count,
 * whatever the number of dtypes and ops per count. */
static void next_count(void)
{
    static const char *const names[NCOLL] = {"allreduce", "reduce",   "reduce_scatter", "allgather",
                                             "bcast",     "alltoall", "allreduce"};
    static unsigned start[NCOLL];
    for (int c = 0; c < NCOLL; c++) {
        const char *const *nm;
        size_t nalgo;
        algos(names[c], &nm, &nalgo);
        do
            turn[c]++;
        while (gcd((turn[c] - start[c]) % (unsigned)nalgo, (unsigned)nalgo) != 1);
        start[c] = turn[c];
    }
}

static gcoll_status_t run_req(gcoll_status_t started, gcoll_request_t *req, int poll)
{
    if (started != GCOLL_SUCCESS)
        return started;
    if (!poll)
        return gcoll_wait(req);
    int done = 0;
    gcoll_status_t st;
    while ((st = gcoll_test(req, &done)) == GCOLL_SUCCESS && !done)
        ;
    return st;
}

#define CTX "%s/%s dtype=%s op=%s count=%zu %s"
#define CTX_ARGS(coll, algo, d, op, cnt, ip) \
    coll, algo, gcoll_dtype_name(d), gcoll_op_name(op), cnt, (ip) ? "in-place" : "out-of-place"

static void test_reductions(gcoll_dtype_t d, gcoll_op_t op, size_t cnt)
{
    int n = h_size, r = h_rank;
    size_t es = gcoll_dtype_size(d);
    const char *const *names;
    size_t nalgo;
    char *exp = malloc(cnt * es + 1);
    ref_fill_expected(exp, 0, cnt, d, op, n);
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.name = "test";

    /* allreduce: every algorithm */
    algos("allreduce", &names, &nalgo);
    for (size_t a = 0; a < nalgo; a++)
        for (int ip = 0; ip < 2; ip++) {
            if (!chosen(C_ALLREDUCE, a, ip, nalgo))
                continue;
            record(C_ALLREDUCE, a, d, op, ip);
            buf_t in = balloc(cnt * es, 1), out = balloc(cnt * es, 2);
            ref_fill_values(in.p, cnt, r, d, op);
            attr.algorithm = names[a];
            gcoll_request_t req;
            gcoll_status_t st = run_req(gcoll_iallreduce(in.p, ip ? in.p : out.p, cnt, d, op, world, &attr, &req), &req,
                                        (int)(a + cnt) % 2);
            CHECK(st == GCOLL_SUCCESS, CTX ": %s", CTX_ARGS("allreduce", names[a], d, op, cnt, ip), gcoll_last_error());
            long bad = first_diff(ip ? in.p : out.p, exp, cnt, es);
            CHECK(bad < 0, CTX ": wrong result at element %ld", CTX_ARGS("allreduce", names[a], d, op, cnt, ip), bad);
            if (!ip) {
                ref_fill_values(out.p, cnt, r, d, op);
                CHECK(memcmp(in.p, out.p, cnt * es) == 0, CTX ": sendbuf was modified",
                      CTX_ARGS("allreduce", names[a], d, op, cnt, ip));
            }
            free(in.base);
            free(out.base);
        }

    /* reduce: root moves with the count; non-roots' buffers must stay untouched */
    algos("reduce", &names, &nalgo);
    int root = (int)((cnt + turn[C_REDUCE]) % (size_t)n);
    for (size_t a = 0; a < nalgo; a++)
        for (int ip = 0; ip < 2; ip++) {
            if (!chosen(C_REDUCE, a, ip, nalgo))
                continue;
            record(C_REDUCE, a, d, op, ip);
            buf_t in = balloc(cnt * es, 3), out = balloc(cnt * es, 4);
            ref_fill_values(in.p, cnt, r, d, op);
            memset(out.p, 0xA5, cnt * es);
            attr.algorithm = names[a];
            gcoll_request_t req;
            gcoll_status_t st =
                run_req(gcoll_ireduce(in.p, ip ? in.p : out.p, cnt, d, op, root, world, &attr, &req), &req, 0);
            CHECK(st == GCOLL_SUCCESS, CTX " root=%d: %s", CTX_ARGS("reduce", names[a], d, op, cnt, ip), root,
                  gcoll_last_error());
            if (r == root) {
                long bad = first_diff(ip ? in.p : out.p, exp, cnt, es);
                CHECK(bad < 0, CTX " root=%d: wrong result at element %ld",
                      CTX_ARGS("reduce", names[a], d, op, cnt, ip), root, bad);
            } else {
                char *orig = malloc(cnt * es + 1);
                ref_fill_values(orig, cnt, r, d, op);
                CHECK(memcmp(in.p, orig, cnt * es) == 0, CTX ": non-root input modified",
                      CTX_ARGS("reduce", names[a], d, op, cnt, ip));
                free(orig);
            }
            free(in.base);
            free(out.base);
        }
    free(exp);

    /* reduce_scatter: recvcount = cnt, the input is cnt * n elements */
    size_t total = cnt * (size_t)n;
    exp = malloc(cnt * es + 1);
    ref_fill_expected(exp, (size_t)r * cnt, cnt, d, op, n);
    algos("reduce_scatter", &names, &nalgo);
    for (size_t a = 0; a < nalgo; a++)
        for (int ip = 0; ip < 2; ip++) {
            if (!chosen(C_REDUCE_SCATTER, a, ip, nalgo))
                continue;
            record(C_REDUCE_SCATTER, a, d, op, ip);
            buf_t in = balloc(total * es, 5), out = balloc(cnt * es, 6);
            ref_fill_values(in.p, total, r, d, op);
            attr.algorithm = names[a];
            gcoll_request_t req;
            gcoll_status_t st =
                run_req(gcoll_ireduce_scatter(in.p, ip ? in.p : out.p, cnt, d, op, world, &attr, &req), &req, 1);
            CHECK(st == GCOLL_SUCCESS, CTX ": %s", CTX_ARGS("reduce_scatter", names[a], d, op, cnt, ip),
                  gcoll_last_error());
            long bad = first_diff(ip ? in.p : out.p, exp, cnt, es);
            CHECK(bad < 0, CTX ": wrong result at element %ld", CTX_ARGS("reduce_scatter", names[a], d, op, cnt, ip),
                  bad);
            free(in.base);
            free(out.base);
        }
    free(exp);
    turn[C_ALLREDUCE]++;
    turn[C_REDUCE]++;
    turn[C_REDUCE_SCATTER]++;
}

static void test_movement(gcoll_dtype_t d, size_t cnt)
{
    int n = h_size, r = h_rank;
    size_t es = gcoll_dtype_size(d), bytes = cnt * es;
    const char *const *names;
    size_t nalgo;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    uint32_t salt = (uint32_t)(d * 1000003u + cnt);

    algos("allgather", &names, &nalgo);
    for (size_t a = 0; a < nalgo; a++)
        for (int ip = 0; ip < 2; ip++) {
            if (!chosen(C_ALLGATHER, a, ip, nalgo))
                continue;
            record(C_ALLGATHER, a, d, GCOLL_SUM, ip);
            buf_t in = balloc(bytes, 7), out = balloc(bytes * (size_t)n, 8), exp = balloc(bytes * (size_t)n, 0);
            for (int q = 0; q < n; q++)
                ref_fill_bytes(exp.p + (size_t)q * bytes, bytes, q, salt);
            ref_fill_bytes(in.p, bytes, r, salt);
            memset(out.p, 0x5A, bytes * (size_t)n);
            if (ip)
                memcpy(out.p + (size_t)r * bytes, in.p, bytes);
            attr.algorithm = names[a];
            gcoll_request_t req;
            gcoll_status_t st =
                run_req(gcoll_iallgather(ip ? out.p : in.p, out.p, cnt, d, world, &attr, &req), &req, 0);
            CHECK(st == GCOLL_SUCCESS, CTX ": %s", CTX_ARGS("allgather", names[a], d, GCOLL_SUM, cnt, ip),
                  gcoll_last_error());
            CHECK(memcmp(out.p, exp.p, bytes * (size_t)n) == 0, CTX ": wrong result",
                  CTX_ARGS("allgather", names[a], d, GCOLL_SUM, cnt, ip));
            free(in.base);
            free(out.base);
            free(exp.base);
        }

    algos("bcast", &names, &nalgo);
    for (size_t a = 0; a < nalgo; a++)
        for (int root = 0; root < n; root += (n > 3 ? n / 2 + 1 : 1)) {
            if (!full && a != turn[C_BCAST] % nalgo)
                continue;
            record(C_BCAST, a, d, GCOLL_SUM, 1);
            buf_t b = balloc(bytes, 9), exp = balloc(bytes, 0);
            ref_fill_bytes(exp.p, bytes, root, salt);
            if (r == root)
                memcpy(b.p, exp.p, bytes);
            else
                memset(b.p, 0x33, bytes);
            attr.algorithm = names[a];
            gcoll_request_t req;
            gcoll_status_t st = run_req(gcoll_ibcast(b.p, cnt, d, root, world, &attr, &req), &req, 1);
            CHECK(st == GCOLL_SUCCESS, CTX " root=%d: %s", CTX_ARGS("bcast", names[a], d, GCOLL_SUM, cnt, 1), root,
                  gcoll_last_error());
            CHECK(memcmp(b.p, exp.p, bytes) == 0, CTX " root=%d: wrong result",
                  CTX_ARGS("bcast", names[a], d, GCOLL_SUM, cnt, 1), root);
            free(b.base);
            free(exp.base);
        }

    /* alltoall: block q of rank r's input is meant for rank q */
    algos("alltoall", &names, &nalgo);
    for (size_t a = 0; a < nalgo; a++)
        for (int ip = 0; ip < 2; ip++) {
            if (!chosen(C_ALLTOALL, a, ip, nalgo))
                continue;
            record(C_ALLTOALL, a, d, GCOLL_SUM, ip);
            buf_t in = balloc(bytes * (size_t)n, 10), out = balloc(bytes * (size_t)n, 11),
                  exp = balloc(bytes * (size_t)n, 0);
            for (int q = 0; q < n; q++) {
                ref_fill_bytes(in.p + (size_t)q * bytes, bytes, r * 64 + q, salt);
                ref_fill_bytes(exp.p + (size_t)q * bytes, bytes, q * 64 + r, salt);
            }
            attr.algorithm = names[a];
            gcoll_request_t req;
            gcoll_status_t st = run_req(gcoll_ialltoall(in.p, ip ? in.p : out.p, cnt, d, world, &attr, &req), &req, 0);
            CHECK(st == GCOLL_SUCCESS, CTX ": %s", CTX_ARGS("alltoall", names[a], d, GCOLL_SUM, cnt, ip),
                  gcoll_last_error());
            CHECK(memcmp(ip ? in.p : out.p, exp.p, bytes * (size_t)n) == 0, CTX ": wrong result",
                  CTX_ARGS("alltoall", names[a], d, GCOLL_SUM, cnt, ip));
            free(in.base);
            free(out.base);
            free(exp.base);
        }
    turn[C_ALLGATHER]++;
    turn[C_BCAST]++;
    turn[C_ALLTOALL]++;
}

/* A float input whose sums round: full mantissas, both signs. */
static double inexact_value(int rank, size_t i, gcoll_dtype_t d)
{
    return ((double)ref_hash((uint32_t)rank, (uint32_t)i, 977u + (uint32_t)d) / 4294967296.0 - 0.5) * 3.0;
}

/* Each rank's result of every allreduce algorithm, gathered: all must equal rank 0's bit for
 * bit, and each element must lie within n roundings (machine epsilon of the dtype, relative to
 * the sum of magnitudes, and for fp8 half its smallest subnormal) of the exact sum of the inputs
 * as stored. */
static void test_agreement(void)
{
    int n = h_size, r = h_rank;
    const gcoll_dtype_t dts[] = {GCOLL_FLOAT16, GCOLL_BFLOAT16,    GCOLL_FLOAT32,
                                 GCOLL_FLOAT64, GCOLL_FLOAT8_E4M3, GCOLL_FLOAT8_E5M2};
    const double eps[] = {0x1p-10, 0x1p-7, 0x1p-23, 0x1p-52, 0x1p-3, 0x1p-2};
    const double tiny[] = {0, 0, 0, 0, 0x1p-10, 0x1p-17}; /* a subnormal rounding's most */
    const gcoll_op_t ops[] = {GCOLL_SUM, GCOLL_AVG};
    const size_t counts[] = {1, (size_t)n + 1, 61, 4099};
    const char *const *names;
    size_t nalgo;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    algos("allreduce", &names, &nalgo);
    for (size_t t = 0; t < sizeof(dts) / sizeof(dts[0]); t++)
        for (size_t o = 0; o < 2; o++)
            for (size_t c = 0; c < 4; c++, turn[C_AGREE]++)
                for (size_t a = 0; a < nalgo; a++)
                    for (int ip = 0; ip < 2; ip++) {
                        if (!chosen(C_AGREE, a, ip, nalgo))
                            continue;
                        cur_count = (int)c;
                        record(C_AGREE, a, dts[t], ops[o], ip);
                        gcoll_dtype_t d = dts[t];
                        size_t cnt = counts[c], es = gcoll_dtype_size(d), bytes = cnt * es;
                        buf_t in = balloc(bytes, 12), out = balloc(bytes, 13);
                        char *all = malloc(bytes * (size_t)n);
                        for (size_t i = 0; i < cnt; i++)
                            ref_encode(d, inexact_value(r, i, d), in.p + i * es);
                        attr.algorithm = names[a];
                        char *res = ip ? in.p : out.p;
                        gcoll_request_t req;
                        CHECK_OK(run_req(gcoll_iallreduce(in.p, res, cnt, d, ops[o], world, &attr, &req), &req, 0));
                        CHECK_OK(gcoll_allgather(res, all, bytes, GCOLL_UINT8, world));
                        int differs = -1;
                        for (int q = n - 1; q > 0; q--)
                            if (memcmp(all + (size_t)q * bytes, all, bytes) != 0)
                                differs = q;
                        CHECK(differs < 0, CTX ": rank %d's result differs from rank 0's",
                              CTX_ARGS("allreduce", names[a], d, ops[o], cnt, ip), differs);
                        long bad = -1;
                        for (size_t i = 0; i < cnt && bad < 0; i++) {
                            double sum = 0, mag = 0;
                            char enc[8];
                            for (int q = 0; q < n; q++) {
                                ref_encode(d, inexact_value(q, i, d), enc);
                                double x = ref_decode(d, enc);
                                sum += x;
                                mag += fabs(x);
                            }
                            if (ops[o] == GCOLL_AVG) {
                                sum /= n;
                                mag /= n;
                            }
                            double err = fabs(ref_decode(d, res + i * es) - sum);
                            if (err > n * (eps[t] * mag + tiny[t]) + eps[t] * fabs(sum))
                                bad = (long)i;
                        }
                        CHECK(bad < 0, CTX ": element %ld is not within rounding of the exact sum",
                              CTX_ARGS("allreduce", names[a], d, ops[o], cnt, ip), bad);
                        free(all);
                        free(in.base);
                        free(out.base);
                    }
}

/* No rank may leave the barrier before the last one entered (one host: one monotonic clock). */
static void test_barrier(void)
{
    for (int iter = 0; iter < 3; iter++) {
        struct timespec ts = {0, 20000000L * ((h_rank + iter) % h_size == 0)};
        nanosleep(&ts, NULL);
        double t[2] = {h_now(), 0};
        CHECK_OK(gcoll_barrier(world));
        t[1] = h_now();
        double *all = malloc(sizeof(double) * 2 * (size_t)h_size);
        CHECK_OK(gcoll_allgather(t, all, 2, GCOLL_FLOAT64, world));
        double last_in = 0, first_out = 1e300;
        for (int q = 0; q < h_size; q++) {
            last_in = all[2 * q] > last_in ? all[2 * q] : last_in;
            first_out = all[2 * q + 1] < first_out ? all[2 * q + 1] : first_out;
        }
        CHECK(first_out >= last_in, "barrier: a rank left at %.6f before the last entered at %.6f", first_out, last_in);
        free(all);
    }
}

/* Every algorithm of every collective met every dtype, op, count and placement it can take, and
 * each placement every count and dtype: what the design promises, whatever the rank count. */
static void cover_check(uint32_t counts_run)
{
    static const char *const coll_names[NCOLL] = {"allreduce", "reduce",   "reduce_scatter",       "allgather",
                                                  "bcast",     "alltoall", "allreduce (agreement)"};
    const uint32_t all_dtypes = (1u << GCOLL_DTYPE_COUNT) - 1;
    const uint32_t all_ops = ((1u << GCOLL_OP_COUNT) - 1) & ~(1u << GCOLL_ADASUM | 1u << GCOLL_PREMUL_SUM);
    const uint32_t floats = 1u << GCOLL_FLOAT16 | 1u << GCOLL_BFLOAT16 | 1u << GCOLL_FLOAT32 | 1u << GCOLL_FLOAT64 |
        1u << GCOLL_FLOAT8_E4M3 | 1u << GCOLL_FLOAT8_E5M2;
    for (int c = 0; c < NCOLL; c++) {
        const char *const *names;
        size_t nalgo;
        algos(c == C_AGREE ? "allreduce" : coll_names[c], &names, &nalgo);
        int reducing = c <= C_REDUCE_SCATTER;
        uint32_t dt = c == C_AGREE ? floats : all_dtypes, cn = c == C_AGREE ? 0xF : counts_run;
        uint32_t ops = c == C_AGREE ? (1u << GCOLL_SUM | 1u << GCOLL_AVG) : reducing ? all_ops : 1u << GCOLL_SUM;
        uint32_t placed = c == C_BCAST ? 2 : 3;
        for (size_t a = 0; a < nalgo && a < MAX_ALGO; a++) {
            const met_t *m = &met[c][a];
            CHECK(m->dtypes == dt && m->ops == ops && m->counts == cn && m->placed == placed,
                  "design: %s/%s met dtypes %#x of %#x, ops %#x of %#x, counts %#x of %#x, placements %#x of %#x",
                  coll_names[c], names[a], m->dtypes, dt, m->ops, ops, m->counts, cn, m->placed, placed);
        }
        for (int ip = 0; ip < 2; ip++)
            CHECK(!(placed >> ip & 1) || (placed_counts[c][ip] == cn && placed_dtypes[c][ip] == dt),
                  "design: %s %s met counts %#x of %#x, dtypes %#x of %#x", coll_names[c],
                  ip ? "in place" : "out of place", placed_counts[c][ip], cn, placed_dtypes[c][ip], dt);
    }
}

int main(int argc, char **argv)
{
    world = h_init(&argc, &argv);
    const char *f = getenv("TEST_FULL");
    full = f && *f == '1';
    int n = h_size;
    size_t counts[] = {0, 1, 2, (size_t)n - 1, (size_t)n + 1, 3, 13, 61, 257, 4099, (1u << 20) + 3};
    size_t ncounts = sizeof(counts) / sizeof(counts[0]);
    const char *quick = getenv("TEST_QUICK"); /* drops the 1 Mi+3 case, for sanitizer runs */
    if (quick && *quick == '1')
        ncounts--;
    uint32_t counts_run = 0;
    for (size_t c = 0; c < ncounts; c++) {
        int dup = 0; /* n-1 and n+1 may repeat another count */
        for (size_t e = 0; e < c; e++)
            dup |= counts[e] == counts[c];
        if (dup)
            continue;
        cur_count = (int)c;
        counts_run |= 1u << c;
        next_count();
        /* the 1 Mi+3 case, most of the run's time: reductions for a quarter of the dtypes
         * (d = n mod 4: the runs at 1 to 4 ranks meet them all) with the sum and two other ops,
         * which two turning with the dtype and rank count; movement for half of them (d = n mod
         * 2): enough cases for every algorithm and placement to meet it */
        int large = c == sizeof(counts) / sizeof(counts[0]) - 1;
        for (int d = 0; d < GCOLL_DTYPE_COUNT; d++) {
            if (large && d % 2 != n % 2)
                continue;
            for (int op = 0; op < GCOLL_OP_COUNT; op++)
                if (op != GCOLL_ADASUM && op != GCOLL_PREMUL_SUM && /* test_adasum's, and tested apart */
                    (!large || (d % 4 == n % 4 && (op == GCOLL_SUM || (op + d + n + 1) % 2 == 0))))
                    test_reductions((gcoll_dtype_t)d, (gcoll_op_t)op, counts[c]);
            test_movement((gcoll_dtype_t)d, counts[c]);
        }
    }
    test_agreement();
    test_barrier();
    cover_check(counts_run);
    return h_finish("collectives");
}
