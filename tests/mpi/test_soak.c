/* Soak: thousands of mixed collectives (allreduce, reduce_scatter, allgather, bcast, reduce,
 * alltoall, barrier, adasum) of random sizes, dtypes, ops and priorities, blocking and several at
 * once, on the world, a dup and a split, from one seed. Every result is checked against the exact
 * reference (reference/reference.c) with a running checksum; after a warm-up, RSS may grow at most
 * 8 MiB + 5% and the heap in use 1 MiB beside the scratch cache's bound, and repeating a large
 * in-place allreduce faults in less than one call's scratch over three calls (its scratch is
 * reused, not mapped afresh each call; not checked under the sanitizers). */
#include <malloc.h>
#include <mpi.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reference.h"

#define NCOMMS 3      /* world, a dup, a split */
#define MAX_OUT 4     /* operations outstanding at once */
#define MAX_TENSORS 4 /* per adasum call */
#define RSS_SLACK_KIB (8 * 1024)
#define RSS_SLACK_PCT 5
#define HEAP_SLACK_KIB 1024     /* bytes malloc has handed out and not had back: a leak shows here first */
#define SCRATCH_CACHE_KIB 16384 /* GCOLL_SCRATCH_CACHE here: kept scratch counts as heap in use */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

enum { K_ALLREDUCE, K_REDUCE_SCATTER, K_ALLGATHER, K_BCAST, K_REDUCE, K_ALLTOALL, K_BARRIER, K_ADASUM, NKINDS };
static const char *const kind_names[NKINDS] = {"allreduce", "reduce_scatter", "allgather", "bcast",
                                               "reduce",    "alltoall",       "barrier",   "adasum"};

typedef struct {
    int kind, comm, root, inplace, blocking;
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    size_t count; /* the call's count argument */
    size_t ntensors, tcounts[MAX_TENSORS];
    long iter;
    gcoll_attr_t attr;
    unsigned char *in, *out, *want; /* the slot's buffers */
    unsigned char *result;          /* where the result lands: out, or in when in place */
    size_t result_bytes;            /* 0: nothing to compare (barrier, a non-root's reduce) */
    gcoll_request_t req;
} op_t;

/* xorshift64*: every rank draws the same numbers from the same seed. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static size_t below(size_t n)
{
    return n ? (size_t)(rnd() % n) : 0;
}

static gcoll_comm_t comms[NCOMMS];
static int crank[NCOMMS], csize[NCOMMS];
static size_t cap_bytes; /* per buffer */
static size_t max_bytes; /* the usual largest message; a few go up to cap_bytes */
static uint64_t sum_all, sum_replicated;

/* 64-bit mix of a buffer, word at a time; the same bytes give the same value on every rank. */
static uint64_t checksum(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

static size_t heap_kib(void)
{
    struct mallinfo2 m = mallinfo2();
    return (m.uordblks + m.hblkhd) >> 10;
}

static size_t vm_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kib = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %zu kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* Element counts: 0, 1, primes, mostly log-uniform bytes up to max_bytes, a few up to cap_bytes. */
static size_t draw_count(size_t es)
{
    static const size_t primes[] = {2, 3, 5, 7, 13, 31, 61, 127, 257, 509, 1021, 4093, 16381, 65521, 262139};
    size_t r = below(100), bytes;
    if (r < 8)
        return 0;
    if (r < 16)
        return 1;
    if (r < 36)
        return primes[below(sizeof(primes) / sizeof(primes[0]))];
    if (r < 97) {
        int bits = 0;
        while (((size_t)2 << bits) <= max_bytes)
            bits++;
        bytes = ((size_t)1 << below((size_t)bits + 1)) + below((size_t)1 << below((size_t)bits + 1));
    } else {
        bytes = max_bytes + below(cap_bytes - max_bytes);
    }
    return bytes / es;
}

/* The types Adasum takes (fp8 is not among them). */
static int adasum_type(gcoll_dtype_t d)
{
    return d == GCOLL_FLOAT16 || d == GCOLL_BFLOAT16 || d == GCOLL_FLOAT32 || d == GCOLL_FLOAT64;
}

/* Adasum inputs with disjoint supports: element i is nonzero on rank i mod n only, so every dot
 * product in the tree is 0, every coefficient 1, and the result is exactly the plain sum. */
static double adasum_value(int r, int n, size_t i, long iter, gcoll_dtype_t d)
{
    return (int)(i % (size_t)n) == r ? ref_value(r, i + (size_t)iter * 7919u, d, GCOLL_SUM) : 0;
}

/* The reduction inputs of (rank, element, iteration): the reference's inputs, shifted per iteration. */
static size_t shift(long iter)
{
    return (size_t)iter * 1000003u;
}

/* Draws one operation (the same on every rank) and fills its input and expected result. */
static void draw(op_t *o, long iter)
{
    o->iter = iter;
    o->kind = (int)below(NKINDS);
    o->comm = (int)below(NCOMMS);
    int r = crank[o->comm], n = csize[o->comm];
    static const gcoll_op_t rops[] = {GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG};
    o->dtype =
        o->kind == K_ADASUM ? (gcoll_dtype_t)(GCOLL_FLOAT16 + below(4)) : (gcoll_dtype_t)below(GCOLL_DTYPE_COUNT);
    o->op = o->kind == K_ADASUM ? GCOLL_ADASUM : rops[below(5)];
    /* allreduce also takes GCOLL_ADASUM on fp16, bf16, fp32 and fp64, one tensor */
    if (o->kind == K_ALLREDUCE && adasum_type(o->dtype) && below(6) == 0)
        o->op = GCOLL_ADASUM;
    size_t es = gcoll_dtype_size(o->dtype);
    o->count = draw_count(es);
    /* the largest buffer of reduce_scatter, allgather and alltoall holds a block per rank */
    size_t blocks = o->kind == K_REDUCE_SCATTER || o->kind == K_ALLGATHER || o->kind == K_ALLTOALL ? (size_t)n : 1;
    if (o->count * es * blocks > cap_bytes)
        o->count = cap_bytes / (es * blocks);
    o->root = (int)below((size_t)n);
    o->inplace = below(3) == 0;
    o->blocking = below(4) == 0;
    o->attr = (gcoll_attr_t)GCOLL_ATTR_INIT;
    o->attr.name = kind_names[o->kind];
    /* half the time the ranks disagree on the priorities, so their engines order work differently */
    o->attr.priority = (int)below(7) - 3 + (below(2) ? h_rank % 3 : 0);
    /* a nonblocking call may force an algorithm (one that cannot serve falls back to the built-in choice) */
    if (!o->blocking && o->kind != K_ADASUM && o->kind != K_BARRIER && o->op != GCOLL_ADASUM && below(4) == 0) {
        const char *const *names;
        size_t nn;
        if (gcoll_algorithms(kind_names[o->kind], &names, &nn) == GCOLL_SUCCESS && nn)
            o->attr.algorithm = names[below(nn)];
    }
    o->ntensors = 1;
    if (o->kind == K_ADASUM) {
        o->ntensors = 1 + below(MAX_TENSORS);
        size_t left = o->count;
        for (size_t t = 0; t + 1 < o->ntensors; t++) {
            o->tcounts[t] = below(left + 1);
            left -= o->tcounts[t];
        }
        o->tcounts[o->ntensors - 1] = left;
    }

    size_t c = o->count, bytes = c * es, off = shift(iter);
    uint32_t salt = (uint32_t)ref_hash((uint32_t)iter, (uint32_t)o->comm, 77);
    o->result = o->inplace ? o->in : o->out;
    o->result_bytes = bytes;
    memset(o->out, 0x5A, cap_bytes);
    switch (o->kind) {
    case K_ALLREDUCE:
    case K_REDUCE:
        for (size_t i = 0; i < c; i++) {
            if (o->op == GCOLL_ADASUM) {
                ref_encode(o->dtype, adasum_value(r, n, i, iter, o->dtype), o->in + i * es);
                ref_encode(o->dtype, adasum_value((int)(i % (size_t)n), n, i, iter, o->dtype), o->want + i * es);
            } else {
                ref_encode(o->dtype, ref_value(r, off + i, o->dtype, o->op), o->in + i * es);
                ref_encode(o->dtype, ref_expected(off + i, o->dtype, o->op, n), o->want + i * es);
            }
        }
        if (o->kind == K_REDUCE && r != o->root) { /* a non-root's input must stay as it was */
            memcpy(o->want, o->in, bytes);
            o->result = o->in;
        }
        break;
    case K_ADASUM:
        for (size_t i = 0; i < c; i++) {
            ref_encode(o->dtype, adasum_value(r, n, i, iter, o->dtype), o->in + i * es);
            ref_encode(o->dtype, adasum_value((int)(i % (size_t)n), n, i, iter, o->dtype), o->want + i * es);
        }
        break;
    case K_REDUCE_SCATTER:
        for (size_t i = 0; i < c * (size_t)n; i++)
            ref_encode(o->dtype, ref_value(r, off + i, o->dtype, o->op), o->in + i * es);
        for (size_t i = 0; i < c; i++)
            ref_encode(o->dtype, ref_expected(off + (size_t)r * c + i, o->dtype, o->op, n), o->want + i * es);
        break;
    case K_ALLGATHER:
        for (int q = 0; q < n; q++)
            ref_fill_bytes(o->want + (size_t)q * bytes, bytes, q, salt);
        ref_fill_bytes(o->in, bytes, r, salt);
        if (o->inplace) /* MPI_IN_PLACE's meaning: this rank's block already in place */
            memcpy(o->out + (size_t)r * bytes, o->in, bytes);
        o->result = o->out;
        o->result_bytes = bytes * (size_t)n;
        break;
    case K_BCAST:
        ref_fill_bytes(o->want, bytes, o->root, salt);
        if (r == o->root)
            memcpy(o->in, o->want, bytes);
        else
            memset(o->in, 0x33, bytes);
        o->result = o->in;
        break;
    case K_ALLTOALL:
        for (int q = 0; q < n; q++) {
            ref_fill_bytes(o->in + (size_t)q * bytes, bytes, r * 64 + q, salt);
            ref_fill_bytes(o->want + (size_t)q * bytes, bytes, q * 64 + r, salt);
        }
        o->result_bytes = bytes * (size_t)n;
        break;
    default: /* barrier */ o->result_bytes = 0; break;
    }
}

/* Posts the operation; a blocking one has completed on return. */
static gcoll_status_t post(op_t *o)
{
    gcoll_comm_t c = comms[o->comm];
    void *rb = o->result;
    const void *sb = o->inplace ? (const void *)rb : o->in;
    gcoll_request_t *q = &o->req;
    const gcoll_attr_t *a = &o->attr;
    const size_t *tc = o->ntensors > 1 ? o->tcounts : NULL;
    o->req = NULL;
    if (o->blocking) {
        switch (o->kind) {
        case K_ALLREDUCE: return gcoll_allreduce(sb, rb, o->count, o->dtype, o->op, c);
        case K_REDUCE_SCATTER: return gcoll_reduce_scatter(o->inplace ? rb : o->in, rb, o->count, o->dtype, o->op, c);
        case K_ALLGATHER: return gcoll_allgather(o->inplace ? rb : o->in, rb, o->count, o->dtype, c);
        case K_BCAST: return gcoll_bcast(rb, o->count, o->dtype, o->root, c);
        case K_REDUCE: return gcoll_reduce(sb, rb, o->count, o->dtype, o->op, o->root, c);
        case K_ALLTOALL: return gcoll_alltoall(sb, rb, o->count, o->dtype, c);
        case K_BARRIER: return gcoll_barrier(c);
        default: return gcoll_adasum(sb, rb, o->count, o->dtype, tc, o->ntensors, c);
        }
    }
    switch (o->kind) {
    case K_ALLREDUCE: return gcoll_iallreduce(sb, rb, o->count, o->dtype, o->op, c, a, q);
    case K_REDUCE_SCATTER:
        return gcoll_ireduce_scatter(o->inplace ? rb : o->in, rb, o->count, o->dtype, o->op, c, a, q);
    case K_ALLGATHER: return gcoll_iallgather(o->inplace ? rb : o->in, rb, o->count, o->dtype, c, a, q);
    case K_BCAST: return gcoll_ibcast(rb, o->count, o->dtype, o->root, c, a, q);
    case K_REDUCE: return gcoll_ireduce(sb, rb, o->count, o->dtype, o->op, o->root, c, a, q);
    case K_ALLTOALL: return gcoll_ialltoall(sb, rb, o->count, o->dtype, c, a, q);
    case K_BARRIER: return gcoll_ibarrier(c, a, q);
    default: return gcoll_iadasum(sb, rb, o->count, o->dtype, tc, o->ntensors, c, a, q);
    }
}

/* "op 12 iallreduce float32/sum count=61 comm=2 in place algorithm=ring" */
static const char *describe(const op_t *o)
{
    static char buf[256];
    int reduces = o->kind == K_ALLREDUCE || o->kind == K_REDUCE_SCATTER || o->kind == K_REDUCE || o->kind == K_ADASUM;
    int rooted = o->kind == K_BCAST || o->kind == K_REDUCE;
    snprintf(buf, sizeof(buf), "op %ld %s%s %s%s%s count=%zu comm=%d", o->iter, o->blocking ? "" : "i",
             kind_names[o->kind], gcoll_dtype_name(o->dtype), reduces ? "/" : "", reduces ? gcoll_op_name(o->op) : "",
             o->count, o->comm);
    size_t n = strlen(buf);
    if (rooted)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, " root=%d", o->root);
    if (o->inplace && o->kind != K_BCAST && o->kind != K_BARRIER)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, " in place");
    if (o->attr.algorithm)
        snprintf(buf + n, sizeof(buf) - n, " algorithm=%s", o->attr.algorithm);
    return buf;
}

static void verify(op_t *o, gcoll_status_t st)
{
    CHECK(st == GCOLL_SUCCESS, "%s: %s: %s", describe(o), gcoll_status_name(st), gcoll_last_error());
    if (st != GCOLL_SUCCESS || !o->result_bytes)
        return;
    int ok = memcmp(o->result, o->want, o->result_bytes) == 0;
    size_t es = gcoll_dtype_size(o->dtype), bad = 0;
    while (!ok && bad + es <= o->result_bytes && memcmp(o->result + bad, o->want + bad, es) == 0)
        bad += es;
    CHECK(ok, "%s: wrong result from element %zu on", describe(o), bad / es);
    uint64_t h = checksum(o->result, o->result_bytes);
    sum_all = (sum_all ^ h) * 0x100000001B3ull + (uint64_t)o->iter;
    /* the same on every rank: results every rank holds alike, on the communicators of all ranks */
    int everywhere = o->kind == K_ALLREDUCE || o->kind == K_ALLGATHER || o->kind == K_BCAST || o->kind == K_ADASUM;
    if (everywhere && o->comm < 2)
        sum_replicated = (sum_replicated ^ h) * 0x100000001B3ull + (uint64_t)o->iter;
}

/* One batch: up to MAX_OUT operations posted in turn (blocking ones complete at once), then the
 * rest completed in a drawn order, by wait or by polling test. */
static void batch(op_t *slots, long *iter, long end)
{
    int k = 1 + (int)below(MAX_OUT), posted = 0;
    int pending[MAX_OUT];
    for (int j = 0; j < k && *iter < end; j++, (*iter)++) {
        op_t *o = &slots[j];
        draw(o, *iter);
        gcoll_status_t st = post(o);
        if (o->blocking || st != GCOLL_SUCCESS)
            verify(o, st);
        else
            pending[posted++] = j;
    }
    while (posted > 0) {
        int pick = (int)below((size_t)posted);
        op_t *o = &slots[pending[pick]];
        pending[pick] = pending[--posted];
        gcoll_status_t st;
        if (below(2)) {
            st = gcoll_wait(&o->req);
        } else {
            int done = 0;
            do
                st = gcoll_test(&o->req, &done);
            while (st == GCOLL_SUCCESS && !done);
        }
        verify(o, st);
    }
}

static long minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

/* An in-place allreduce of 4 MiB, again and again: a ring or halving algorithm receives into
 * scratch as large as a block, which must come back from the cache rather than from the kernel
 * (a page fault per 4 KiB, every call). malloc maps a buffer of its own above its mmap threshold,
 * which an application may set low (glibc raises its own default to 32 MiB as large blocks come
 * and go): here 256 KiB. After two calls that fill the cache, the faults of two windows of three
 * calls each; returns the smaller: a buffer the cache meets for the first time late (a message
 * that happened to arrive before its receive, held in a block-sized buffer) shows in one window,
 * a buffer faulted in every call in both. */
static long repeat_faults(gcoll_comm_t comm, int rank, int size)
{
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    size_t count = (4 << 20) / sizeof(float);
    float *v = malloc(count * sizeof(float));
    long window[2] = {0, 0};
    for (int i = 0; i < 8 && v; i++) {
        for (size_t k = 0; k < count; k++)
            v[k] = (float)(rank + 1);
        long f0 = minor_faults();
        CHECK_OK(gcoll_allreduce(v, v, count, GCOLL_FLOAT32, GCOLL_SUM, comm));
        if (i >= 2) /* the first calls fill the cache */
            window[i >= 5] += minor_faults() - f0;
        float want = (float)size * (float)(size + 1) / 2;
        CHECK(v[0] == want && v[count - 1] == want, "in-place allreduce: %g and %g where %g", (double)v[0],
              (double)v[count - 1], (double)want);
    }
    free(v);
    return window[0] < window[1] ? window[0] : window[1];
}

static long env_long(const char *name, long def)
{
    const char *s = getenv(name);
    return s && *s ? strtol(s, NULL, 10) : def;
}

/* SOAK_ITERS (or argv[1]): how many operations; SOAK_SEED; TEST_QUICK: fewer and smaller ones. */
int main(int argc, char **argv)
{
    setenv("GCOLL_SCRATCH_CACHE", "16M", 0);
    comms[0] = h_init(&argc, &argv);
    int quick = getenv("TEST_QUICK") != NULL;
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : env_long("SOAK_ITERS", quick ? 400 : 4000);
    rng_state = (uint64_t)env_long("SOAK_SEED", 20261125) | 1;
    max_bytes = quick ? 256 << 10 : 1 << 20;
    cap_bytes = quick ? (1 << 20) + 4099 : (4 << 20) + 4099;
    CHECK_OK(gcoll_comm_dup(comms[0], &comms[1]));
    /* two halves, each in reverse rank order */
    CHECK_OK(gcoll_comm_split(comms[0], h_size > 1 ? h_rank % 2 : 0, h_size - h_rank, &comms[2]));
    for (int c = 0; c < NCOMMS; c++) {
        crank[c] = gcoll_comm_rank(comms[c]);
        csize[c] = gcoll_comm_size(comms[c]);
    }
    op_t slots[MAX_OUT];
    for (int j = 0; j < MAX_OUT; j++) {
        /* touched now, so the buffers count in the resident size from the start */
        slots[j].in = calloc(1, cap_bytes);
        slots[j].out = calloc(1, cap_bytes);
        slots[j].want = calloc(1, cap_bytes);
        if (!slots[j].in || !slots[j].out || !slots[j].want) {
            fprintf(stderr, "test_soak: out of memory\n");
            return 2;
        }
        memset(slots[j].in, 1, cap_bytes);
        memset(slots[j].want, 1, cap_bytes);
    }

    /* warm-up: a tenth of the operations, then the resident size is the baseline */
    double t0 = h_now();
    long iter = 0, warm = iters / 10;
    while (iter < warm)
        batch(slots, &iter, warm);
    size_t rss_warm = vm_rss_kib(), heap_warm = heap_kib();
    while (iter < iters)
        batch(slots, &iter, iters);
    size_t rss_end = vm_rss_kib(), heap_end = heap_kib();
    double secs = h_now() - t0;

    long growth = (long)rss_end - (long)rss_warm, bound = RSS_SLACK_KIB + (long)rss_warm * RSS_SLACK_PCT / 100;
    long heap_growth = (long)heap_end - (long)heap_warm;
    if (!UNDER_SANITIZER) {
        CHECK(growth <= bound,
              "resident memory grew by %ld KiB (%zu -> %zu KiB) after the warm-up; the bound is %ld KiB", growth,
              rss_warm, rss_end, bound);
        CHECK(heap_growth <= HEAP_SLACK_KIB + SCRATCH_CACHE_KIB,
              "the heap in use grew by %ld KiB (%zu -> %zu KiB) after the warm-up; "
              "the bound is %d KiB and the scratch cache's %d",
              heap_growth, heap_warm, heap_end, HEAP_SLACK_KIB, SCRATCH_CACHE_KIB);
    }
    /* fewer than one call's scratch (a block: 4 MiB / n) over three calls: a kept buffer is reused */
    long faults = repeat_faults(comms[0], crank[0], csize[0]), fault_bound = (4 << 20) / csize[0] / 4096;
    if (!UNDER_SANITIZER)
        CHECK(faults < fault_bound,
              "3 in-place allreduces of 4 MiB faulted in %ld pages, the quieter of two windows (bound %ld)", faults,
              fault_bound);
    unsigned long long sums[2] = {sum_replicated, sum_replicated}, lo[2], hi[2];
    MPI_Allreduce(sums, lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(sums + 1, hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo[0] == hi[0], "the checksums of the results every rank holds differ between ranks");
    long g[4] = {growth, (long)rss_end, heap_growth, faults}, gmax[4];
    MPI_Reduce(g, gmax, 4, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (h_rank == 0)
        printf("SOAK np=%d ops=%ld seconds=%.1f checksum=%016llx replicated=%016llx rss_end_max=%ld KiB "
               "rss_growth_max=%ld KiB bound=%ld KiB heap_growth_max=%ld KiB repeat_faults_max=%ld%s\n",
               h_size, iters, secs, (unsigned long long)sum_all, (unsigned long long)sum_replicated, gmax[1], gmax[0],
               bound, gmax[2], gmax[3], UNDER_SANITIZER ? " (not checked under a sanitizer)" : "");
    for (int c = 1; c < NCOMMS; c++)
        CHECK_OK(gcoll_comm_free(&comms[c]));
    for (int j = 0; j < MAX_OUT; j++) {
        free(slots[j].in);
        free(slots[j].out);
        free(slots[j].want);
    }
    return h_finish("soak");
}
