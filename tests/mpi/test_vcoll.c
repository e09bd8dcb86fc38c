/* The vector collectives (allgatherv, reduce_scatterv, alltoallv, gather(v), scatter(v)) at any
 * rank count: counts of each pattern (random with zeros, all zero, one rank or peer, primes, one
 * rank holding half), packed (displs NULL) or with gaps whose bytes must stay untouched, in place
 * by MPI's rules, every dtype (and op for reduce_scatterv), every algorithm forced and the blocking
 * call's own choice, at unaligned addresses, checked against reference/. A pairwise covering
 * design picks each case's variants and the end checks that every pair met (TEST_FULL=1: every
 * variant in every case); then a few MiB through every variant (not with TEST_QUICK=1), and the
 * arguments that must be refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reference.h"
#include "vref.h"

#define MAXN 64         /* ranks this test takes */
#define MAX_VAR 16      /* algorithms of one collective, and the blocking call */
#define TAIL 8          /* bytes after every output that must stay untouched */
#define SENT 0x5A       /* what untouched bytes hold */
#define NOPS 5          /* SUM, PROD, MIN, MAX, AVG: one per pattern (see main) */
#define LARGE (3 << 20) /* bytes of the large runs */

enum { V_ALLGATHERV, V_REDUCE_SCATTERV, V_ALLTOALLV, V_GATHER, V_GATHERV, V_SCATTER, V_SCATTERV, NV };
static const char *const coll_names[NV] = {"allgatherv", "reduce_scatterv", "alltoallv", "gather",
                                           "gatherv",    "scatter",         "scatterv"};
/* Displacement modes. allgatherv, alltoallv: 0 displs NULL, 1 with gaps. gather, scatter: the
 * root's buffer at the other ranks is 0 a buffer that must stay untouched, 1 NULL. gatherv,
 * scatterv: 0 displs NULL at the root and NULL counts, displs and buffer elsewhere; 1 gaps, and
 * the other ranks pass the root's arrays and a buffer that must stay untouched; 2 gaps, NULLs
 * elsewhere. reduce_scatterv has blocks back to back only. */
static const int ndm[NV] = {2, 1, 2, 2, 3, 2, 3};

static gcoll_comm_t world;
static int n, r, full;
static const char *const *algo_names[NV];
static size_t nalgo[NV];
static unsigned turn[NV];

/* The covering design: per case (pattern, dtype, op) of collective c, the variant (a, ip, dm) —
 * algorithm a (nalgo[c]: the blocking call), in place or not, displacement mode — that meets the
 * most pairs not met yet, ties going round by turn[c]; while pairs remain, a case runs up to
 * `cap` variants. met_* record which pairs met. */
typedef struct {
    uint32_t dtypes, ops, pats, placed, dms;
} met_t;
static met_t met_a[NV][MAX_VAR], met_ip[NV][2], met_dm[NV][3];

typedef struct {
    int a, ip, dm;
} var_t;

static int bit(uint32_t m, int i)
{
    return (int)(m >> i & 1);
}

static int score(int c, var_t v, int p, int d, int o)
{
    const met_t *a = &met_a[c][v.a], *ip = &met_ip[c][v.ip], *dm = &met_dm[c][v.dm];
    return !bit(a->dtypes, d) + !bit(a->ops, o) + !bit(a->pats, p) + !bit(a->placed, v.ip) + !bit(a->dms, v.dm) +
        !bit(ip->dtypes, d) + !bit(ip->ops, o) + !bit(ip->pats, p) + !bit(ip->dms, v.dm) + !bit(dm->dtypes, d) +
        !bit(dm->ops, o) + !bit(dm->pats, p);
}

static void record(int c, var_t v, int p, int d, int o)
{
    met_t *m[3] = {&met_a[c][v.a], &met_ip[c][v.ip], &met_dm[c][v.dm]};
    for (int i = 0; i < 3; i++) {
        m[i]->dtypes |= 1u << d;
        m[i]->ops |= 1u << o;
        m[i]->pats |= 1u << p;
        m[i]->placed |= 1u << v.ip;
        m[i]->dms |= 1u << v.dm;
    }
}

static int nvar(int c)
{
    return (int)nalgo[c] + 1;
}

static var_t var_at(int c, int k)
{
    var_t v = {k % nvar(c), k / nvar(c) % 2, k / nvar(c) / 2};
    return v;
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
    b.p = b.base + 1 + (size_t)((r + salt) % 7);
    return b;
}

static buf_t bsent(size_t bytes, int salt)
{
    buf_t b = balloc(bytes, salt);
    memset(b.p, SENT, bytes);
    return b;
}

static size_t *zcounts(size_t k)
{
    size_t *p = calloc(k ? k : 1, sizeof(size_t));
    if (!p) {
        fprintf(stderr, "test: out of memory\n");
        exit(2);
    }
    return p;
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

/* Where element e of a buffer of blocks (counts, displs) lies, for messages: "the block of rank
 * 3 (element 5 of 17)", "a gap" or "past the end". */
static const char *where(size_t e, const size_t *counts, const size_t *displs, size_t extent, char *out, size_t len)
{
    for (int q = 0; q < n; q++)
        if (e >= displs[q] && e < displs[q] + counts[q]) {
            snprintf(out, len, "the block of rank %d (element %zu of %zu)", q, e - displs[q], counts[q]);
            return out;
        }
    snprintf(out, len, "%s", e < extent ? "a gap between blocks" : "the bytes past the end");
    return out;
}

/* got against exp over bytes; names the first element that differs and where it lies (counts and
 * displs NULL: one block). */
static void check_buf(const char *got, const char *exp, size_t bytes, size_t es, const size_t *counts,
                      const size_t *displs, size_t extent, const char *ctx, const char *what)
{
    if (memcmp(got, exp, bytes) == 0) {
        CHECK(1, "%s", ctx);
        return;
    }
    size_t i = 0;
    while (got[i] == exp[i])
        i++;
    char w[128];
    if (counts)
        where(i / es, counts, displs, extent, w, sizeof(w));
    else
        snprintf(w, sizeof(w), "%s", i / es < extent ? "the block" : "the bytes past the end");
    CHECK(0, "%s: %s differs at byte %zu, element %zu, in %s: got 0x%02x want 0x%02x", ctx, what, i, i / es, w,
          (unsigned char)got[i], (unsigned char)exp[i]);
}

static gcoll_attr_t attr_for(int c, int a)
{
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.name = "test_vcoll";
    attr.algorithm = a < (int)nalgo[c] ? algo_names[c][a] : NULL;
    return attr;
}

/* Rank src's block for rank dst (dst n: a block every rank gets alike), bytes of salt's pattern. */
static void fill(void *p, size_t bytes, int src, int dst, uint32_t salt)
{
    ref_fill_bytes(p, bytes, src * (MAXN + 1) + dst, salt);
}

/* ---- the collectives, each against its reference -------------------------------------------- */

typedef struct {
    int c;
    var_t v;
    gcoll_dtype_t d;
    gcoll_op_t op;
    int root, poll;
    uint32_t salt;
    const char *ctx;
} run_t;

static void t_allgatherv(const run_t *t, const size_t *counts)
{
    size_t es = gcoll_dtype_size(t->d), displs[MAXN];
    size_t extent = vref_displs(displs, counts, n, t->v.dm, t->salt), rbytes = extent * es + TAIL;
    const size_t *dp = t->v.dm ? displs : NULL;
    buf_t in = balloc(counts[r] * es, 1), out = bsent(rbytes, 2), exp = bsent(rbytes, 0);
    for (int q = 0; q < n; q++)
        fill(exp.p + displs[q] * es, counts[q] * es, q, n, t->salt);
    fill(in.p, counts[r] * es, r, n, t->salt);
    if (t->v.ip)
        memcpy(out.p + displs[r] * es, in.p, counts[r] * es);
    const void *sb = t->v.ip ? out.p : in.p;
    gcoll_status_t st;
    if (t->v.a == (int)nalgo[t->c]) {
        st = gcoll_allgatherv(sb, counts[r], out.p, counts, dp, t->d, world);
    } else {
        gcoll_attr_t attr = attr_for(t->c, t->v.a);
        gcoll_request_t req;
        st = run_req(gcoll_iallgatherv(sb, counts[r], out.p, counts, dp, t->d, world, &attr, &req), &req, t->poll);
    }
    CHECK(st == GCOLL_SUCCESS, "%s: %s: %s", t->ctx, gcoll_status_name(st), gcoll_last_error());
    check_buf(out.p, exp.p, rbytes, es, counts, displs, extent, t->ctx, "recvbuf");
    if (!t->v.ip) {
        fill(exp.p, counts[r] * es, r, n, t->salt);
        check_buf(in.p, exp.p, counts[r] * es, es, NULL, NULL, counts[r], t->ctx, "sendbuf (modified)");
    }
    free(in.base);
    free(out.base);
    free(exp.base);
}

static void t_reduce_scatterv(const run_t *t, const size_t *counts)
{
    size_t es = gcoll_dtype_size(t->d), total = vref_sum(counts, n), first = vref_sum(counts, r);
    size_t obytes = counts[r] * es;
    buf_t in = balloc(total * es, 3), out = bsent(obytes + TAIL, 4), exp = bsent(obytes + TAIL, 0);
    ref_fill_values(in.p, total, r, t->d, t->op);
    ref_fill_expected(exp.p, first, counts[r], t->d, t->op, n);
    char *res = t->v.ip ? in.p : out.p;
    gcoll_status_t st;
    if (t->v.a == (int)nalgo[t->c]) {
        st = gcoll_reduce_scatterv(in.p, res, counts, t->d, t->op, world);
    } else {
        gcoll_attr_t attr = attr_for(t->c, t->v.a);
        gcoll_request_t req;
        st = run_req(gcoll_ireduce_scatterv(in.p, res, counts, t->d, t->op, world, &attr, &req), &req, t->poll);
    }
    CHECK(st == GCOLL_SUCCESS, "%s: %s: %s", t->ctx, gcoll_status_name(st), gcoll_last_error());
    /* in place, what follows the result is the library's; out of place it stays untouched */
    check_buf(res, exp.p, t->v.ip ? obytes : obytes + TAIL, es, NULL, NULL, counts[r], t->ctx, "the result");
    if (!t->v.ip) {
        buf_t orig = balloc(total * es, 0);
        ref_fill_values(orig.p, total, r, t->d, t->op);
        check_buf(in.p, orig.p, total * es, es, NULL, NULL, total, t->ctx, "sendbuf (modified)");
        free(orig.base);
    }
    free(in.base);
    free(out.base);
    free(exp.base);
}

/* m[src * n + dst]: what src sends dst; in place m is symmetric and sdispls are rdispls. */
static void t_alltoallv(const run_t *t, const size_t *m)
{
    size_t es = gcoll_dtype_size(t->d), sc[MAXN], rc[MAXN], sd[MAXN], rd[MAXN];
    for (int q = 0; q < n; q++) {
        sc[q] = m[(size_t)r * (size_t)n + (size_t)q];
        rc[q] = m[(size_t)q * (size_t)n + (size_t)r];
    }
    size_t sext = vref_displs(sd, sc, n, t->v.dm, t->salt + (uint32_t)r);
    size_t rext = vref_displs(rd, rc, n, t->v.dm, t->salt + 7 * (uint32_t)r + 1);
    int ip = t->v.ip;
    if (ip) {
        sext = rext;
        memcpy(sd, rd, sizeof(size_t) * (size_t)n);
    }
    size_t sbytes = sext * es, rbytes = rext * es + TAIL;
    buf_t in = bsent(sbytes, 5), out = bsent(rbytes, 6), exp = bsent(sbytes + rbytes, 0);
    char *src = ip ? out.p : in.p;
    for (int q = 0; q < n; q++) {
        fill(src + sd[q] * es, sc[q] * es, r, q, t->salt);
        fill(exp.p + rd[q] * es, rc[q] * es, q, r, t->salt);
    }
    const size_t *sdp = t->v.dm ? sd : NULL, *rdp = t->v.dm ? rd : NULL;
    gcoll_status_t st;
    if (t->v.a == (int)nalgo[t->c]) {
        st = gcoll_alltoallv(src, sc, sdp, out.p, rc, rdp, t->d, world);
    } else {
        gcoll_attr_t attr = attr_for(t->c, t->v.a);
        gcoll_request_t req;
        st = run_req(gcoll_ialltoallv(src, sc, sdp, out.p, rc, rdp, t->d, world, &attr, &req), &req, t->poll);
    }
    CHECK(st == GCOLL_SUCCESS, "%s: %s: %s", t->ctx, gcoll_status_name(st), gcoll_last_error());
    check_buf(out.p, exp.p, rbytes, es, rc, rd, rext, t->ctx, "recvbuf");
    if (!ip) {
        memset(exp.p, SENT, sbytes);
        for (int q = 0; q < n; q++)
            fill(exp.p + sd[q] * es, sc[q] * es, r, q, t->salt);
        check_buf(in.p, exp.p, sbytes, es, sc, sd, sext, t->ctx, "sendbuf (modified)");
    }
    free(in.base);
    free(out.base);
    free(exp.base);
}

/* gather (counts NULL: count each) and gatherv: blocks of every rank at the root. */
static void t_gather(const run_t *t, const size_t *vcounts, size_t count)
{
    int v = vcounts != NULL, root = t->root, am_root = r == root, dm = t->v.dm;
    size_t es = gcoll_dtype_size(t->d), counts[MAXN], displs[MAXN];
    for (int q = 0; q < n; q++)
        counts[q] = vcounts ? vcounts[q] : count;
    size_t extent = vref_displs(displs, counts, n, v && dm > 0, t->salt), rbytes = extent * es + TAIL;
    /* the root's arrays and buffer at the other ranks: see ndm */
    int others_null = v ? dm != 1 : dm == 1;
    int ip = t->v.ip && am_root;
    buf_t in = balloc(counts[r] * es, 7), out = bsent(rbytes, 8), exp = bsent(rbytes, 0);
    fill(in.p, counts[r] * es, r, n, t->salt);
    if (am_root)
        for (int q = 0; q < n; q++)
            fill(exp.p + displs[q] * es, counts[q] * es, q, n, t->salt);
    if (ip)
        memcpy(out.p + displs[r] * es, in.p, counts[r] * es);
    const void *sb = ip ? out.p : in.p;
    void *rb = !am_root && others_null ? NULL : out.p;
    const size_t *rcp = !am_root && others_null ? NULL : counts;
    const size_t *dp = !am_root && others_null ? NULL : dm > 0 ? displs : NULL;
    gcoll_status_t st;
    int blocking = t->v.a == (int)nalgo[t->c];
    gcoll_attr_t attr = attr_for(t->c, t->v.a);
    gcoll_request_t req;
    if (v)
        st = blocking
            ? gcoll_gatherv(sb, counts[r], rb, rcp, dp, t->d, root, world)
            : run_req(gcoll_igatherv(sb, counts[r], rb, rcp, dp, t->d, root, world, &attr, &req), &req, t->poll);
    else
        st = blocking ? gcoll_gather(sb, rb, count, t->d, root, world)
                      : run_req(gcoll_igather(sb, rb, count, t->d, root, world, &attr, &req), &req, t->poll);
    CHECK(st == GCOLL_SUCCESS, "%s: %s: %s", t->ctx, gcoll_status_name(st), gcoll_last_error());
    check_buf(out.p, exp.p, rbytes, es, counts, displs, extent, t->ctx,
              am_root ? "the root's recvbuf" : "a non-root's recvbuf (written)");
    if (!ip) {
        fill(exp.p, counts[r] * es, r, n, t->salt);
        check_buf(in.p, exp.p, counts[r] * es, es, NULL, NULL, counts[r], t->ctx, "sendbuf (modified)");
    }
    free(in.base);
    free(out.base);
    free(exp.base);
}

/* scatter (counts NULL: count each) and scatterv: the root's blocks to every rank. */
static void t_scatter(const run_t *t, const size_t *vcounts, size_t count)
{
    int v = vcounts != NULL, root = t->root, am_root = r == root, dm = t->v.dm;
    size_t es = gcoll_dtype_size(t->d), counts[MAXN], displs[MAXN];
    for (int q = 0; q < n; q++)
        counts[q] = vcounts ? vcounts[q] : count;
    size_t extent = vref_displs(displs, counts, n, v && dm > 0, t->salt), sbytes = extent * es;
    int others_null = v ? dm != 1 : dm == 1;
    int ip = t->v.ip && am_root;
    size_t obytes = counts[r] * es;
    buf_t in = bsent(sbytes, 9), out = bsent(obytes + TAIL, 10), exp = bsent(sbytes + obytes + TAIL, 0);
    if (am_root)
        for (int q = 0; q < n; q++)
            fill(in.p + displs[q] * es, counts[q] * es, root, q, t->salt);
    fill(exp.p, obytes, root, r, t->salt);
    const void *sb = !am_root && others_null ? NULL : in.p;
    const size_t *scp = !am_root && others_null ? NULL : counts;
    const size_t *dp = !am_root && others_null ? NULL : dm > 0 ? displs : NULL;
    void *rb = ip ? in.p : out.p;
    gcoll_status_t st;
    int blocking = t->v.a == (int)nalgo[t->c];
    gcoll_attr_t attr = attr_for(t->c, t->v.a);
    gcoll_request_t req;
    if (v)
        st = blocking
            ? gcoll_scatterv(sb, scp, dp, rb, counts[r], t->d, root, world)
            : run_req(gcoll_iscatterv(sb, scp, dp, rb, counts[r], t->d, root, world, &attr, &req), &req, t->poll);
    else
        st = blocking ? gcoll_scatter(sb, rb, count, t->d, root, world)
                      : run_req(gcoll_iscatter(sb, rb, count, t->d, root, world, &attr, &req), &req, t->poll);
    CHECK(st == GCOLL_SUCCESS, "%s: %s: %s", t->ctx, gcoll_status_name(st), gcoll_last_error());
    if (!ip)
        check_buf(out.p, exp.p, obytes + TAIL, es, NULL, NULL, counts[r], t->ctx, "recvbuf");
    /* the root's sendbuf, its own block included when in place, stays as it was */
    memset(exp.p, SENT, sbytes);
    if (am_root)
        for (int q = 0; q < n; q++)
            fill(exp.p + displs[q] * es, counts[q] * es, root, q, t->salt);
    check_buf(in.p, exp.p, sbytes, es, counts, displs, extent, t->ctx,
              am_root ? "the root's sendbuf (modified)" : "a non-root's sendbuf (written)");
    free(in.base);
    free(out.base);
    free(exp.base);
}

/* One run of collective c in variant v on counts (a matrix for alltoallv). */
static void run_one(int c, var_t v, int p, gcoll_dtype_t d, gcoll_op_t op, const size_t *counts, const char *tag)
{
    run_t t = {c, v, d, op, 0, 0, 0, NULL};
    t.salt = ref_hash(turn[c], (uint32_t)(p * 64 + d), (uint32_t)(c * 8 + op));
    t.root = (int)(ref_hash(turn[c], 5, t.salt) % (uint32_t)n);
    t.poll = (int)((turn[c] + (unsigned)v.a) % 2);
    char ctx[256];
    snprintf(ctx, sizeof(ctx), "%s/%s dtype=%s%s%s counts=%s %s displs-mode=%d root=%d", coll_names[c],
             v.a == (int)nalgo[c] ? "blocking" : algo_names[c][v.a], gcoll_dtype_name(d),
             c == V_REDUCE_SCATTERV ? " op=" : "", c == V_REDUCE_SCATTERV ? gcoll_op_name(op) : "", tag,
             v.ip ? "in-place" : "out-of-place", v.dm, t.root);
    t.ctx = ctx;
    size_t avg = vref_sum(counts, n) / (size_t)n;
    switch (c) {
    case V_ALLGATHERV: t_allgatherv(&t, counts); break;
    case V_REDUCE_SCATTERV: t_reduce_scatterv(&t, counts); break;
    case V_ALLTOALLV: t_alltoallv(&t, counts); break;
    case V_GATHER: t_gather(&t, NULL, avg); break;
    case V_GATHERV: t_gather(&t, counts, 0); break;
    case V_SCATTER: t_scatter(&t, NULL, avg); break;
    default: t_scatter(&t, counts, 0); break;
    }
}

/* One case of the design: the chosen variants of collective c (every one with TEST_FULL=1). */
static void run_case(int c, vref_pattern_t p, gcoll_dtype_t d, gcoll_op_t op)
{
    int nk = nvar(c) * 2 * ndm[c], o = c == V_REDUCE_SCATTERV ? (int)op : 0;
    size_t *counts = zcounts((size_t)n * (size_t)n);
    uint32_t seed = ref_hash((uint32_t)p, (uint32_t)d, turn[c]);
    int cap = full ? nk : 1 + (nvar(c) + VREF_PATTERNS - 1) / VREF_PATTERNS;
    for (int picks = 0; picks < cap; picks++) {
        var_t best = var_at(c, picks);
        int best_score = -1;
        for (int i = 0; i < nk && !full; i++) {
            var_t v = var_at(c, (int)((turn[c] + (unsigned)i) % (unsigned)nk));
            int s = score(c, v, (int)p, (int)d, o);
            if (s > best_score) {
                best = v;
                best_score = s;
            }
        }
        if (picks > 0 && best_score == 0)
            break;
        if (c == V_ALLTOALLV)
            vref_matrix(counts, n, p, seed, best.ip);
        else
            vref_counts(counts, n, p, seed);
        record(c, best, (int)p, (int)d, o);
        run_one(c, best, (int)p, d, op, counts, vref_pattern_name(p));
        turn[c]++;
    }
    free(counts);
}

/* A few MiB through each collective once, in a variant that goes round with the rank count: block
 * counts around LARGE / n bytes (an alltoallv row's cells around LARGE / n^2), one rank (one
 * destination) holding half. */
static void run_large(void)
{
    size_t *counts = zcounts((size_t)n * (size_t)n);
    for (int c = 0; c < NV; c++) {
        var_t v = {n % nvar(c), n / nvar(c) % 2, ndm[c] - 1};
        gcoll_dtype_t d = c == V_REDUCE_SCATTERV ? GCOLL_FLOAT32 : (gcoll_dtype_t)((c + n) % GCOLL_DTYPE_COUNT);
        gcoll_op_t op = n % 2 ? GCOLL_MAX : GCOLL_SUM;
        size_t es = gcoll_dtype_size(d), cells = c == V_ALLTOALLV ? (size_t)n * (size_t)n : (size_t)n;
        size_t base = LARGE / es / cells + 1;
        if (c == V_ALLTOALLV && v.ip) { /* symmetric */
            vref_matrix(counts, n, VREF_RANDOM, (uint32_t)c, 1);
            for (size_t i = 0; i < cells; i++)
                counts[i] = base / 2 + counts[i] * base / 40;
        } else {
            for (size_t i = 0; i < cells; i++)
                counts[i] = base / 2 + ref_hash((uint32_t)i, (uint32_t)c, 99) % base;
            int half = (c + 1) % n;
            for (int s = 0; s < (c == V_ALLTOALLV ? n : 1); s++) {
                size_t *row = counts + (size_t)s * (size_t)n;
                row[half] = 0;
                row[half] = vref_sum(row, n);
            }
        }
        run_one(c, v, VREF_RANDOM, d, op, counts, "large");
        turn[c]++;
    }
    free(counts);
}

/* ---- refusals ----------------------------------------------------------------------------- */

static void expect_arg(gcoll_status_t st, const char *needle, const char *alt, const char *what)
{
    const char *msg = gcoll_last_error();
    CHECK(st == GCOLL_ERR_INVALID_ARG, "%s: got %s want GCOLL_ERR_INVALID_ARG (%s)", what, gcoll_status_name(st), msg);
    CHECK(strstr(msg, needle) || (alt && strstr(msg, alt)), "%s: the message '%s' does not name '%s'%s%s", what, msg,
          needle, alt ? " or " : "", alt ? alt : "");
}

/* Every rank makes the same bad call, so every rank refuses it before any message; the
 * communicator still works after. Root-only arguments are tried on a communicator of one rank. */
static void wrong_arguments(void)
{
    float buf[64] = {0}, out[64 * MAXN];
    size_t counts[MAXN], huge[MAXN], displs[MAXN];
    gcoll_request_t req = NULL;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    for (int q = 0; q < n; q++) {
        counts[q] = 2;
        huge[q] = SIZE_MAX / 2 + 1;
        displs[q] = 2 * (size_t)q;
    }
    expect_arg(gcoll_allgatherv(buf, 2, out, NULL, NULL, GCOLL_FLOAT32, world), "recvcounts", NULL,
               "allgatherv recvcounts NULL");
    expect_arg(gcoll_iallgatherv(buf, 2, out, NULL, displs, GCOLL_FLOAT32, world, &attr, &req), "recvcounts", NULL,
               "iallgatherv recvcounts NULL");
    CHECK(req == NULL, "a refused iallgatherv left a request");
    expect_arg(gcoll_allgatherv(buf, 3, out, counts, NULL, GCOLL_FLOAT32, world), "sendcount", "recvcounts",
               "allgatherv sendcount 3, recvcounts[rank] 2");
    expect_arg(gcoll_allgatherv(buf, huge[r], out, huge, NULL, GCOLL_FLOAT32, world), "count", NULL,
               "allgatherv sendcount whose bytes overflow");
    if (n > 1) { /* rank r's own block fits, the sum of the others overflows */
        size_t mixed[MAXN];
        for (int q = 0; q < n; q++)
            mixed[q] = q == r ? 2 : huge[q];
        expect_arg(gcoll_allgatherv(buf, 2, out, mixed, NULL, GCOLL_FLOAT32, world), "recvcounts", NULL,
                   "allgatherv recvcounts whose sum overflows");
    }
    expect_arg(gcoll_allgatherv(NULL, 2, out, counts, NULL, GCOLL_FLOAT32, world), "sendbuf", NULL,
               "allgatherv sendbuf NULL");
    expect_arg(gcoll_allgatherv(buf, 2, out, counts, NULL, (gcoll_dtype_t)GCOLL_DTYPE_COUNT, world), "dtype", NULL,
               "allgatherv invalid dtype");
    expect_arg(gcoll_iallgatherv(buf, 2, out, counts, NULL, GCOLL_FLOAT32, world, &attr, NULL), "req", NULL,
               "iallgatherv req NULL");
    expect_arg(gcoll_reduce_scatterv(buf, out, NULL, GCOLL_FLOAT32, GCOLL_SUM, world), "recvcounts", NULL,
               "reduce_scatterv recvcounts NULL");
    expect_arg(gcoll_reduce_scatterv(buf, out, huge, GCOLL_FLOAT32, GCOLL_SUM, world), "recvcounts", "overflow",
               "reduce_scatterv counts whose bytes overflow");
    expect_arg(gcoll_reduce_scatterv(buf, out, counts, GCOLL_FLOAT32, (gcoll_op_t)GCOLL_OP_COUNT, world), "op", NULL,
               "reduce_scatterv invalid op");
    expect_arg(gcoll_reduce_scatterv(buf, out, counts, GCOLL_FLOAT32, GCOLL_ADASUM, world), "op", NULL,
               "reduce_scatterv with GCOLL_ADASUM");
    expect_arg(gcoll_reduce_scatterv(buf, out, counts, GCOLL_FLOAT32, GCOLL_PREMUL_SUM, world), "op", "premul",
               "blocking reduce_scatterv with GCOLL_PREMUL_SUM");
    expect_arg(gcoll_alltoallv(buf, NULL, NULL, out, counts, NULL, GCOLL_FLOAT32, world), "sendcounts", NULL,
               "alltoallv sendcounts NULL");
    expect_arg(gcoll_alltoallv(buf, counts, NULL, out, NULL, NULL, GCOLL_FLOAT32, world), "recvcounts", NULL,
               "alltoallv recvcounts NULL");
    expect_arg(gcoll_alltoallv(buf, huge, NULL, out, counts, NULL, GCOLL_FLOAT32, world), "sendcounts", "overflow",
               "alltoallv sendcounts whose bytes overflow");
    size_t ones[MAXN], sd[MAXN];
    for (int q = 0; q < n; q++) {
        ones[q] = 1;
        sd[q] = 2 * (size_t)q + 1;
    }
    expect_arg(gcoll_alltoallv(out, ones, NULL, out, counts, NULL, GCOLL_FLOAT32, world), "sendcounts", "recvcounts",
               "alltoallv in place, sendcounts 1 and recvcounts 2");
    expect_arg(gcoll_alltoallv(out, counts, sd, out, counts, displs, GCOLL_FLOAT32, world), "sdispls", "rdispls",
               "alltoallv in place, sdispls != rdispls");
    for (int bad = -1; bad <= n; bad += n + 1) {
        char what[64];
        snprintf(what, sizeof(what), "gather root %d", bad);
        expect_arg(gcoll_gather(buf, out, 2, GCOLL_FLOAT32, bad, world), "root", NULL, what);
        snprintf(what, sizeof(what), "scatter root %d", bad);
        expect_arg(gcoll_scatter(out, buf, 2, GCOLL_FLOAT32, bad, world), "root", NULL, what);
        snprintf(what, sizeof(what), "igatherv root %d", bad);
        expect_arg(gcoll_igatherv(buf, 2, out, counts, NULL, GCOLL_FLOAT32, bad, world, &attr, &req), "root", NULL,
                   what);
        snprintf(what, sizeof(what), "scatterv root %d", bad);
        expect_arg(gcoll_scatterv(out, counts, NULL, buf, 2, GCOLL_FLOAT32, bad, world), "root", NULL, what);
    }
    gcoll_comm_t self;
    CHECK_OK(gcoll_comm_split(world, r, 0, &self));
    expect_arg(gcoll_gatherv(buf, 2, out, NULL, NULL, GCOLL_FLOAT32, 0, self), "recvcounts", NULL,
               "gatherv recvcounts NULL at the root");
    expect_arg(gcoll_scatterv(out, NULL, NULL, buf, 2, GCOLL_FLOAT32, 0, self), "sendcounts", NULL,
               "scatterv sendcounts NULL at the root");
    expect_arg(gcoll_gatherv(buf, 3, out, counts, NULL, GCOLL_FLOAT32, 0, self), "sendcount", "recvcounts",
               "gatherv sendcount 3, recvcounts[root] 2");
    expect_arg(gcoll_scatterv(out, counts, NULL, buf, 3, GCOLL_FLOAT32, 0, self), "recvcount", "sendcounts",
               "scatterv recvcount 3, sendcounts[root] 2");
    CHECK_OK(gcoll_comm_free(&self));
    /* the refusals left world as it was */
    for (int q = 0; q < n; q++)
        buf[q] = (float)q;
    size_t one[MAXN];
    for (int q = 0; q < n; q++)
        one[q] = 1;
    CHECK_OK(gcoll_allgatherv(buf + r, 1, out, one, NULL, GCOLL_FLOAT32, world));
    int ok = 1;
    for (int q = 0; q < n; q++)
        ok &= out[q] == (float)q;
    CHECK(ok, "allgatherv after the refusals: wrong result");
}

/* ---- the design's end check ------------------------------------------------------------------ */

static void cover_check(void)
{
    const uint32_t all_dtypes = (1u << GCOLL_DTYPE_COUNT) - 1, all_pats = (1u << VREF_PATTERNS) - 1;
    for (int c = 0; c < NV; c++) {
        uint32_t ops = c == V_REDUCE_SCATTERV ? (1u << NOPS) - 1 : 1, dms = (1u << ndm[c]) - 1;
        for (int a = 0; a < nvar(c); a++) {
            const met_t *m = &met_a[c][a];
            CHECK(m->dtypes == all_dtypes && m->ops == ops && m->pats == all_pats && m->placed == 3 && m->dms == dms,
                  "design: %s/%s met dtypes %#x of %#x, ops %#x of %#x, patterns %#x of %#x, placements %#x of 3, "
                  "displacement modes %#x of %#x",
                  coll_names[c], a == (int)nalgo[c] ? "blocking" : algo_names[c][a], m->dtypes, all_dtypes, m->ops, ops,
                  m->pats, all_pats, m->placed, m->dms, dms);
        }
        for (int ip = 0; ip < 2; ip++) {
            const met_t *m = &met_ip[c][ip];
            CHECK(m->dtypes == all_dtypes && m->ops == ops && m->pats == all_pats && m->dms == dms,
                  "design: %s %s met dtypes %#x, ops %#x, patterns %#x, displacement modes %#x", coll_names[c],
                  ip ? "in place" : "out of place", m->dtypes, m->ops, m->pats, m->dms);
        }
        for (int dm = 0; dm < ndm[c]; dm++) {
            const met_t *m = &met_dm[c][dm];
            CHECK(m->dtypes == all_dtypes && m->ops == ops && m->pats == all_pats,
                  "design: %s displacement mode %d met dtypes %#x, ops %#x, patterns %#x", coll_names[c], dm, m->dtypes,
                  m->ops, m->pats);
        }
    }
}

int main(int argc, char **argv)
{
    world = h_init(&argc, &argv);
    n = h_size;
    r = h_rank;
    if (n > MAXN) {
        fprintf(stderr, "test_vcoll takes at most %d ranks\n", MAXN);
        return h_finish("vcoll");
    }
    const char *f = getenv("TEST_FULL"), *q = getenv("TEST_QUICK");
    full = f && *f == '1';
    for (int c = 0; c < NV; c++) {
        const char *name = coll_names[c];
        gcoll_status_t st = gcoll_algorithms(name, &algo_names[c], &nalgo[c]);
        CHECK(st == GCOLL_SUCCESS && nalgo[c] > 0, "gcoll_algorithms(%s): %s: %s", name, gcoll_status_name(st),
              gcoll_last_error());
        if (st != GCOLL_SUCCESS)
            nalgo[c] = 0;
        if (nalgo[c] >= MAX_VAR)
            nalgo[c] = MAX_VAR - 1;
    }
    _Static_assert(NOPS == VREF_PATTERNS, "reduce_scatterv takes op p with pattern p");
    static const gcoll_op_t ops[NOPS] = {GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG};
    /* movement: every pattern with every dtype; reduce_scatterv: every dtype with every op, the
     * pattern going round so that it meets every dtype and every op too */
    for (int p = 0; p < VREF_PATTERNS; p++)
        for (int d = 0; d < GCOLL_DTYPE_COUNT; d++) {
            for (int c = 0; c < NV; c++)
                if (c != V_REDUCE_SCATTERV)
                    run_case(c, (vref_pattern_t)p, (gcoll_dtype_t)d, GCOLL_SUM);
            run_case(V_REDUCE_SCATTERV, (vref_pattern_t)((p + d) % VREF_PATTERNS), (gcoll_dtype_t)d, ops[p]);
        }
    if (!(q && *q == '1'))
        run_large();
    wrong_arguments();
    cover_check();
    return h_finish("vcoll");
}
