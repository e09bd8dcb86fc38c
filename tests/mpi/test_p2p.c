/* Point-to-point and groups: blocking send/recv between every pair (random sizes and dtypes, 0
 * and a few MiB among them), many messages per pair matching in posting order, nonblocking ones
 * waited for in any order, messages to oneself; groups whose blocking sends and receives every
 * rank lists in an order that would deadlock without the group, nested groups, groups of small
 * allreduces (fused), a bcast and nonblocking allreduces waited for one by one after the end; a
 * wait inside an open group refused; a receive of another length refused naming both sides; bad
 * arguments. Contents come from reference/ (ref_fill_bytes) and are checked byte for byte. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "harness.h"
#include "reference.h"

#define MAXN 64
#define TAIL 8
#define SENT 0x5A
#define LARGE_BYTES (3u << 20)
#define PER_PAIR 24 /* messages per ordered pair in the ordering section */

static unsigned gcd(unsigned a, unsigned b)
{
    while (b) {
        unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static gcoll_comm_t world;
static int n, r;

typedef struct {
    char *base, *p;
} buf_t;

static buf_t balloc(size_t bytes, int salt)
{
    buf_t b;
    b.base = malloc(bytes + TAIL + 16);
    if (!b.base) {
        fprintf(stderr, "test: out of memory\n");
        exit(2);
    }
    b.p = b.base + 1 + (size_t)((r + salt) % 7);
    memset(b.p, SENT, bytes + TAIL);
    return b;
}

/* Message k from src to dst in section sec: its dtype and count (some 0) and contents. */
typedef struct {
    gcoll_dtype_t d;
    size_t count, bytes;
} msg_t;

static msg_t msg_shape(int sec, int src, int dst, int k, size_t maxcount)
{
    uint32_t h = ref_hash((uint32_t)(src * MAXN + dst), (uint32_t)k, (uint32_t)sec);
    msg_t m;
    m.d = (gcoll_dtype_t)(h % GCOLL_DTYPE_COUNT);
    m.count = (h >> 8) % 5 == 0 ? 0 : 1 + (h >> 11) % maxcount;
    m.bytes = m.count * gcoll_dtype_size(m.d);
    return m;
}

static void msg_fill(void *p, size_t bytes, int sec, int src, int dst, int k)
{
    ref_fill_bytes(p, bytes, (src * MAXN + dst) * 4096 + k, (uint32_t)sec);
}

/* The received bytes against what src sent, and the TAIL bytes after them untouched. */
static void msg_check(const char *got, size_t bytes, int sec, int src, int k, const char *what)
{
    char *exp = malloc(bytes + TAIL);
    msg_fill(exp, bytes, sec, src, r, k);
    memset(exp + bytes, SENT, TAIL);
    size_t i = 0;
    while (i < bytes + TAIL && got[i] == exp[i])
        i++;
    CHECK(i == bytes + TAIL, "%s: message %d from rank %d (%zu bytes) differs at byte %zu%s: got 0x%02x want 0x%02x",
          what, k, src, bytes, i, i >= bytes ? " (past its end)" : "", i < bytes + TAIL ? (unsigned char)got[i] : 0,
          i < bytes + TAIL ? (unsigned char)exp[i] : 0);
    free(exp);
}

#define ST_OK(st, ...)                                                             \
    do {                                                                           \
        gcoll_status_t s_ = (st);                                                  \
        if (s_ != GCOLL_SUCCESS) {                                                 \
            char w_[160];                                                          \
            snprintf(w_, sizeof(w_), __VA_ARGS__);                                 \
            CHECK(0, "%s: %s: %s", w_, gcoll_status_name(s_), gcoll_last_error()); \
        }                                                                          \
    } while (0)

/* ---- every pair, blocking --------------------------------------------------------------------- */

/* The rounds of a round robin (circle method) over n ranks, a bye for the odd one out: in round
 * k, rank r's partner, or -1. */
static int partner(int k, int rank)
{
    int m = n % 2 ? n + 1 : n; /* with the bye as rank n */
    int fixed = m - 1, p;
    if (rank == fixed)
        p = k;
    else if (rank == k)
        p = fixed;
    else
        p = ((2 * k - rank) % (m - 1) + (m - 1)) % (m - 1);
    return p >= n ? -1 : p;
}

/* Blocking send and receive between every pair: in each round the lower rank sends first, the
 * higher receives first. In pass 1, ranks 0 and 1 exchange LARGE_BYTES both ways. */
static void all_pairs(void)
{
    int m = n % 2 ? n + 1 : n;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < m - 1; k++) {
            int q = partner(k, r);
            if (q < 0 || q == r)
                continue;
            msg_t out = msg_shape(1 + pass, r, q, k, 3000), in = msg_shape(1 + pass, q, r, k, 3000);
            int large = pass == 1 && r + q == 1 && r * q == 0;
            if (large) {
                out.count = LARGE_BYTES / gcoll_dtype_size(out.d) + 3;
                out.bytes = out.count * gcoll_dtype_size(out.d);
                in.count = LARGE_BYTES / gcoll_dtype_size(in.d) + 3;
                in.bytes = in.count * gcoll_dtype_size(in.d);
            }
            buf_t sb = balloc(out.bytes, 1), rb = balloc(in.bytes, 2);
            msg_fill(sb.p, out.bytes, 1 + pass, r, q, k);
            for (int step = 0; step < 2; step++) {
                if ((step == 0) == (r < q))
                    ST_OK(gcoll_send(sb.p, out.count, out.d, q, world), "send of %zu %s to rank %d", out.count,
                          gcoll_dtype_name(out.d), q);
                else
                    ST_OK(gcoll_recv(rb.p, in.count, in.d, q, world), "recv of %zu %s from rank %d", in.count,
                          gcoll_dtype_name(in.d), q);
            }
            char what[96];
            snprintf(what, sizeof(what), "all pairs, pass %d, %s", pass, gcoll_dtype_name(in.d));
            msg_check(rb.p, in.bytes, 1 + pass, q, k, what);
            free(sb.base);
            free(rb.base);
        }
}

/* ---- many messages per pair, nonblocking, in order; waited for in any order --------------------- */

static void ordering(void)
{
    const int sec = 3, total = n * PER_PAIR;
    gcoll_request_t *sreq = calloc((size_t)total, sizeof(*sreq)), *rreq = calloc((size_t)total, sizeof(*rreq));
    buf_t *sb = calloc((size_t)total, sizeof(*sb)), *rb = calloc((size_t)total, sizeof(*rb));
    msg_t *in = calloc((size_t)total, sizeof(*in));
    /* even ranks post their receives first, odd ranks their sends; oneself included */
    for (int phase = 0; phase < 2; phase++) {
        int recv_phase = (phase == 0) == (r % 2 == 0);
        for (int k = 0; k < PER_PAIR; k++)
            for (int i = 0; i < n; i++) {
                int q = (r + i) % n, j = q * PER_PAIR + k;
                if (recv_phase) {
                    in[j] = msg_shape(sec, q, r, k, 700);
                    rb[j] = balloc(in[j].bytes, j);
                    ST_OK(gcoll_irecv(rb[j].p, in[j].count, in[j].d, q, world, NULL, &rreq[j]), "irecv %d from rank %d",
                          k, q);
                } else {
                    msg_t out = msg_shape(sec, r, q, k, 700);
                    sb[j] = balloc(out.bytes, j + 1);
                    msg_fill(sb[j].p, out.bytes, sec, r, q, k);
                    ST_OK(gcoll_isend(sb[j].p, out.count, out.d, q, world, NULL, &sreq[j]), "isend %d to rank %d", k,
                          q);
                }
            }
    }
    /* receives in reverse posting order, every third by polling; then the sends in a shuffle */
    for (int j = total - 1; j >= 0; j--) {
        gcoll_status_t st;
        if (j % 3 == 0) {
            int done = 0;
            while ((st = gcoll_test(&rreq[j], &done)) == GCOLL_SUCCESS && !done)
                ;
        } else {
            st = gcoll_wait(&rreq[j]);
        }
        ST_OK(st, "receive %d from rank %d", j % PER_PAIR, j / PER_PAIR);
        CHECK(rreq[j] == NULL, "a finished receive's request was not cleared");
        msg_check(rb[j].p, in[j].bytes, sec, j / PER_PAIR, j % PER_PAIR, "ordering");
    }
    unsigned stride = 7; /* coprime with total, so that the shuffle visits every send */
    while (gcd(stride, (unsigned)total) != 1)
        stride += 2;
    for (int i = 0; i < total; i++) {
        int j = (int)(((unsigned)i * stride + (unsigned)r) % (unsigned)total);
        if (sreq[j])
            ST_OK(gcoll_wait(&sreq[j]), "send %d to rank %d", j % PER_PAIR, j / PER_PAIR);
    }
    for (int j = 0; j < total; j++)
        CHECK(sreq[j] == NULL, "send %d to rank %d was never waited for", j % PER_PAIR, j / PER_PAIR);
    for (int j = 0; j < total; j++) {
        free(sb[j].base);
        free(rb[j].base);
    }
    free(sreq);
    free(rreq);
    free(sb);
    free(rb);
    free(in);
}

/* Messages to oneself: a receive posted before its send and after it, zero bytes with NULL, and
 * point-to-point interleaved with a collective on the same communicator. */
static void self_and_mixed(void)
{
    int a = 7, b = 0, c = 0;
    gcoll_request_t s1, r1, s2, r2;
    ST_OK(gcoll_irecv(&b, 1, GCOLL_INT32, r, world, NULL, &r1), "irecv from oneself");
    ST_OK(gcoll_isend(&a, 1, GCOLL_INT32, r, world, NULL, &s1), "isend to oneself");
    ST_OK(gcoll_isend(&a, 1, GCOLL_INT32, r, world, NULL, &s2), "second isend to oneself");
    ST_OK(gcoll_irecv(&c, 1, GCOLL_INT32, r, world, NULL, &r2), "second irecv from oneself");
    ST_OK(gcoll_wait(&r2), "wait second irecv");
    ST_OK(gcoll_wait(&s1), "wait isend");
    ST_OK(gcoll_wait(&r1), "wait irecv");
    ST_OK(gcoll_wait(&s2), "wait second isend");
    CHECK(b == 7 && c == 7, "messages to oneself: got %d and %d, want 7", b, c);
    ST_OK(gcoll_isend(NULL, 0, GCOLL_FLOAT32, r, world, NULL, &s1), "isend of nothing to oneself");
    ST_OK(gcoll_irecv(NULL, 0, GCOLL_FLOAT32, r, world, NULL, &r1), "irecv of nothing from oneself");
    ST_OK(gcoll_wait(&s1), "wait isend of nothing");
    ST_OK(gcoll_wait(&r1), "wait irecv of nothing");

    /* a send posted before an allreduce is received after it */
    int right = (r + 1) % n, left = (r + n - 1) % n;
    buf_t sb = balloc(1000, 1), rb = balloc(1000, 2);
    msg_fill(sb.p, 1000, 4, r, right, 0);
    ST_OK(gcoll_isend(sb.p, 1000, GCOLL_UINT8, right, world, NULL, &s1), "isend before an allreduce");
    int one = 1, sum = 0;
    CHECK_OK(gcoll_allreduce(&one, &sum, 1, GCOLL_INT32, GCOLL_SUM, world));
    CHECK(sum == n, "allreduce between point-to-point messages: %d, want %d", sum, n);
    ST_OK(gcoll_irecv(rb.p, 1000, GCOLL_UINT8, left, world, NULL, &r1), "irecv after an allreduce");
    ST_OK(gcoll_wait(&r1), "wait irecv after an allreduce");
    ST_OK(gcoll_wait(&s1), "wait isend before an allreduce");
    msg_check(rb.p, 1000, 4, left, 0, "point-to-point around an allreduce");
    free(sb.base);
    free(rb.base);
}

/* ---- groups ----------------------------------------------------------------------------------- */

/* Every rank lists its blocking receives first (from every peer, itself included, highest rank
 * first; two from its left neighbour) and then its sends (lowest first; two to its right): each
 * would wait forever without the group. */
static void group_opposite(void)
{
    const int sec = 5;
    int right = (r + 1) % n, left = (r + n - 1) % n;
    buf_t sb[MAXN + 2], rb[MAXN + 2];
    msg_t in[MAXN + 2];
    CHECK_OK(gcoll_group_start());
    for (int q = n - 1; q >= 0; q--) {
        in[q] = msg_shape(sec, q, r, 0, 2000);
        rb[q] = balloc(in[q].bytes, q);
        ST_OK(gcoll_recv(rb[q].p, in[q].count, in[q].d, q, world), "grouped recv from rank %d", q);
    }
    for (int k = 1; k <= 2; k++) {
        in[n + k - 1] = msg_shape(sec, left, r, k, 2000);
        rb[n + k - 1] = balloc(in[n + k - 1].bytes, k);
        ST_OK(gcoll_recv(rb[n + k - 1].p, in[n + k - 1].count, in[n + k - 1].d, left, world),
              "grouped recv %d from the left", k);
    }
    for (int q = 0; q < n + 2; q++) {
        int to = q < n ? q : right, k = q < n ? 0 : q - n + 1;
        msg_t out = msg_shape(sec, r, to, k, 2000);
        sb[q] = balloc(out.bytes, q + 3);
        msg_fill(sb[q].p, out.bytes, sec, r, to, k);
        ST_OK(gcoll_send(sb[q].p, out.count, out.d, to, world), "grouped send %d to rank %d", k, to);
    }
    CHECK_OK(gcoll_group_end());
    for (int q = 0; q < n + 2; q++) {
        msg_check(rb[q].p, in[q].bytes, sec, q < n ? q : left, q < n ? 0 : q - n + 1, "group, opposite orders");
        free(rb[q].base);
        free(sb[q].base);
    }
}

/* Nested groups: only the outermost end launches, so the receive in the inner group waits for
 * the send listed after it. */
static void group_nested(void)
{
    int right = (r + 1) % n, left = (r + n - 1) % n;
    int64_t out[3] = {r, 10 * r, 100 * r}, in[3] = {-1, -1, -1};
    CHECK_OK(gcoll_group_start());
    CHECK_OK(gcoll_group_start());
    ST_OK(gcoll_recv(&in[0], 1, GCOLL_INT64, left, world), "nested recv");
    CHECK_OK(gcoll_group_start());
    ST_OK(gcoll_recv(&in[1], 2, GCOLL_INT64, left, world), "doubly nested recv");
    CHECK_OK(gcoll_group_end());
    CHECK_OK(gcoll_group_end());
    ST_OK(gcoll_send(&out[0], 1, GCOLL_INT64, right, world), "outer send");
    ST_OK(gcoll_send(&out[1], 2, GCOLL_INT64, right, world), "outer send of two");
    CHECK_OK(gcoll_group_end());
    CHECK(in[0] == left && in[1] == 10 * left && in[2] == 100 * left, "nested groups: got %lld %lld %lld from rank %d",
          (long long)in[0], (long long)in[1], (long long)in[2], left);
    gcoll_status_t st = gcoll_group_end();
    CHECK(st == GCOLL_ERR_INVALID_USAGE, "gcoll_group_end without a group: %s", gcoll_status_name(st));
}

/* Collectives in a group: small blocking allreduces of one dtype and op (fused), one of another
 * op between them, a bcast, nonblocking allreduces waited for one by one after the end (the last
 * first), and a ring exchange; every result against reference/. */
static void group_collectives(void)
{
    enum { NA = 10, NI = 3 };
    const size_t counts[NA] = {1, 7, 100, 3, 1000, 0, 257, 64, 5, 4099};
    buf_t in[NA], out[NA], ireq_buf[NI];
    gcoll_request_t req[NI];
    int imax[17], ibc[33], right = (r + 1) % n, left = (r + n - 1) % n;
    double ring_out = r + 0.5, ring_in = -1;
    for (int i = 0; i < 17; i++)
        imax[i] = (int)(ref_hash((uint32_t)r, (uint32_t)i, 8) % 1000);
    for (int i = 0; i < 33; i++)
        ibc[i] = r == n / 2 ? i * 3 + 1 : -1;
    CHECK_OK(gcoll_group_start());
    for (int i = 0; i < NA; i++) {
        in[i] = balloc(counts[i] * 4, i);
        out[i] = balloc(counts[i] * 4, i + 1);
        ref_fill_values(in[i].p, counts[i], r, GCOLL_FLOAT32, GCOLL_SUM);
        char *dst = i % 2 ? in[i].p : out[i].p;
        CHECK_OK(gcoll_allreduce(in[i].p, dst, counts[i], GCOLL_FLOAT32, GCOLL_SUM, world));
        if (i == 4) {
            CHECK_OK(gcoll_allreduce(imax, imax, 17, GCOLL_INT32, GCOLL_MAX, world));
            CHECK_OK(gcoll_bcast(ibc, 33, GCOLL_INT32, n / 2, world));
        }
    }
    for (int i = 0; i < NI; i++) {
        ireq_buf[i] = balloc(counts[i + 1] * 8, i + 2);
        ref_fill_values(ireq_buf[i].p, counts[i + 1], r, GCOLL_FLOAT64, GCOLL_SUM);
        CHECK_OK(gcoll_iallreduce(ireq_buf[i].p, ireq_buf[i].p, counts[i + 1], GCOLL_FLOAT64, GCOLL_SUM, world, NULL,
                                  &req[i]));
    }
    ST_OK(gcoll_recv(&ring_in, 1, GCOLL_FLOAT64, left, world), "grouped ring recv");
    ST_OK(gcoll_send(&ring_out, 1, GCOLL_FLOAT64, right, world), "grouped ring send");
    CHECK_OK(gcoll_group_end());
    for (int i = NI - 1; i >= 0; i--) {
        CHECK_OK(gcoll_wait(&req[i]));
        char *exp = malloc(counts[i + 1] * 8 + 1);
        ref_fill_expected(exp, 0, counts[i + 1], GCOLL_FLOAT64, GCOLL_SUM, n);
        CHECK(memcmp(exp, ireq_buf[i].p, counts[i + 1] * 8) == 0, "group: iallreduce %d (%zu doubles) wrong", i,
              counts[i + 1]);
        free(exp);
        free(ireq_buf[i].base);
    }
    for (int i = 0; i < NA; i++) {
        char *exp = malloc(counts[i] * 4 + TAIL);
        ref_fill_expected(exp, 0, counts[i], GCOLL_FLOAT32, GCOLL_SUM, n);
        memset(exp + counts[i] * 4, SENT, TAIL);
        const char *got = i % 2 ? in[i].p : out[i].p;
        size_t e = 0;
        while (e < counts[i] * 4 + TAIL && got[e] == exp[e])
            e++;
        CHECK(e == counts[i] * 4 + TAIL, "group: allreduce %d (%zu floats, %s) differs at byte %zu", i, counts[i],
              i % 2 ? "in place" : "out of place", e);
        free(exp);
        free(in[i].base);
        free(out[i].base);
    }
    int ok = 1;
    for (int i = 0; i < 17; i++) {
        int want = 0;
        for (int q = 0; q < n; q++) {
            int v = (int)(ref_hash((uint32_t)q, (uint32_t)i, 8) % 1000);
            want = q == 0 || v > want ? v : want;
        }
        ok &= imax[i] == want;
    }
    CHECK(ok, "group: the int32 max allreduce between the fused ones is wrong");
    ok = 1;
    for (int i = 0; i < 33; i++)
        ok &= ibc[i] == i * 3 + 1;
    CHECK(ok, "group: the bcast from rank %d is wrong", n / 2);
    CHECK(ring_in == left + 0.5, "group: ring message %g, want %g", ring_in, left + 0.5);
}

/* A wait inside the group that posted the request is refused at once (it could never end: the
 * matching send is listed after it); the request completes after the group. On a communicator of
 * its own, so that a hang there (GCOLL_TIMEOUT) leaves c to the later sections. */
static void group_wait_refused(void)
{
    gcoll_comm_t c;
    CHECK_OK(gcoll_comm_dup(world, &c));
    int right = (r + 1) % n, left = (r + n - 1) % n;
    float x[4] = {1, 2, 3, (float)r}, y = -1, z = (float)r;
    gcoll_request_t ar = NULL, rr = NULL, sr = NULL;
    CHECK_OK(gcoll_group_start());
    CHECK_OK(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, NULL, &ar));
    CHECK_OK(gcoll_irecv(&y, 1, GCOLL_FLOAT32, left, c, NULL, &rr));
    double t0 = h_now();
    gcoll_status_t st1 = gcoll_wait(&ar), st2 = gcoll_wait(&rr);
    double took = h_now() - t0;
    CHECK(st1 == GCOLL_ERR_INVALID_USAGE, "wait for an iallreduce in an open group: %s, want GCOLL_ERR_INVALID_USAGE",
          gcoll_status_name(st1));
    CHECK(st2 == GCOLL_ERR_INVALID_USAGE, "wait for an irecv in an open group: %s, want GCOLL_ERR_INVALID_USAGE (%s)",
          gcoll_status_name(st2), gcoll_last_error());
    CHECK(took < 5, "a wait in an open group took %.3f s to be refused", took);
    gcoll_status_t sst = gcoll_isend(&z, 1, GCOLL_FLOAT32, right, c, NULL, &sr);
    CHECK(sst == GCOLL_SUCCESS, "isend in the group: %s: %s", gcoll_status_name(sst), gcoll_last_error());
    CHECK_OK(gcoll_group_end());
    if (ar)
        CHECK_OK(gcoll_wait(&ar));
    if (rr)
        CHECK_OK(gcoll_wait(&rr));
    if (sr)
        CHECK_OK(gcoll_wait(&sr));
    CHECK(x[0] == (float)n && x[2] == 3 * (float)n && x[3] == (float)(n * (n - 1) / 2) && y == (float)left,
          "after the refused waits: allreduce %g %g %g (want %g %g %d), message %g (want %d)", (double)x[0],
          (double)x[2], (double)x[3], (double)n, 3.0 * n, n * (n - 1) / 2, (double)y, left);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OK(gcoll_comm_free(&c));
}

/* ---- a receive of another length -------------------------------------------------------------- */

/* Rank 0 sends sent floats to rank 1, which receives got: rank 1 must fail naming both sides (both
 * counts, both byte sizes or both ranks); rank 0's send ends, with whatever status. Then the
 * communicator is freed. */
static void length_mismatch(size_t sent, size_t got, int self)
{
    gcoll_comm_t c;
    CHECK_OK(gcoll_comm_dup(world, &c));
    int sender = 0, receiver = self ? 0 : 1;
    float *buf = calloc(sent > got ? sent : got, sizeof(float));
    double t0 = h_now();
    gcoll_status_t sst = GCOLL_SUCCESS, rst = GCOLL_SUCCESS;
    char msg[1024] = "";
    gcoll_request_t sreq = NULL, rreq = NULL;
    if (r == sender)
        sst = gcoll_isend(buf, sent, GCOLL_FLOAT32, receiver, c, NULL, &sreq);
    if (r == receiver) {
        rst = gcoll_irecv(buf, got, GCOLL_FLOAT32, sender, c, NULL, &rreq);
        if (rst == GCOLL_SUCCESS)
            rst = gcoll_wait(&rreq);
        snprintf(msg, sizeof(msg), "%s", gcoll_last_error());
    }
    if (sreq && sst == GCOLL_SUCCESS)
        sst = gcoll_wait(&sreq);
    double took = h_now() - t0;
    char what[96];
    snprintf(what, sizeof(what), "%s%zu floats sent, %zu received", self ? "to oneself: " : "", sent, got);
    if (r == receiver) {
        CHECK(rst == GCOLL_ERR_INVALID_USAGE || rst == GCOLL_ERR_TRANSPORT, "%s: the receive got %s: %s", what,
              gcoll_status_name(rst), msg);
        char a[32], b[32], sa[32], sb[32];
        snprintf(a, sizeof(a), "%zu", sent);
        snprintf(b, sizeof(b), "%zu", got);
        snprintf(sa, sizeof(sa), "%zu", sent * 4);
        snprintf(sb, sizeof(sb), "%zu", got * 4);
        int counts = strstr(msg, a) && strstr(msg, b), bytes = strstr(msg, sa) && strstr(msg, sb);
        int ranks = strstr(msg, "0") && (self || strstr(msg, "1"));
        CHECK((strstr(msg, "count") || strstr(msg, "bytes")) && (counts || bytes || ranks),
              "%s: the message does not name both sides' counts or ranks: %s", what, msg);
    }
    CHECK(took < 10, "%s: the failure took %.3f s (sender: %s)", what, took, gcoll_status_name(sst));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OK(gcoll_comm_free(&c));
    free(buf);
}

/* After the failures, a communicator made before them still works. */
static void after_mismatch(gcoll_comm_t fresh)
{
    int right = (r + 1) % n, left = (r + n - 1) % n;
    int out = 1000 + r, in = -1;
    CHECK_OK(gcoll_group_start());
    CHECK_OK(gcoll_send(&out, 1, GCOLL_INT32, right, fresh));
    CHECK_OK(gcoll_recv(&in, 1, GCOLL_INT32, left, fresh));
    CHECK_OK(gcoll_group_end());
    CHECK(in == 1000 + left, "the communicator made before the mismatches: got %d from rank %d", in, left);
}

/* ---- bad arguments ---------------------------------------------------------------------------- */

static void expect_arg(gcoll_status_t st, const char *needle, const char *what)
{
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), needle),
          "%s: got %s (%s), want GCOLL_ERR_INVALID_ARG naming '%s'", what, gcoll_status_name(st), gcoll_last_error(),
          needle);
}

static void bad_arguments(void)
{
    float x[4] = {0};
    gcoll_request_t req = NULL;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    expect_arg(gcoll_send(x, 4, GCOLL_FLOAT32, -1, world), "peer", "send to peer -1");
    expect_arg(gcoll_send(x, 4, GCOLL_FLOAT32, n, world), "peer", "send to peer n");
    expect_arg(gcoll_recv(x, 4, GCOLL_FLOAT32, n, world), "peer", "recv from peer n");
    expect_arg(gcoll_irecv(x, 4, GCOLL_FLOAT32, -5, world, NULL, &req), "peer", "irecv from peer -5");
    CHECK(req == NULL, "a refused irecv left a request");
    expect_arg(gcoll_isend(x, 4, (gcoll_dtype_t)GCOLL_DTYPE_COUNT, r, world, NULL, &req), "dtype",
               "isend of an invalid dtype");
    expect_arg(gcoll_recv(x, 4, (gcoll_dtype_t)-1, r, world), "dtype", "recv of dtype -1");
    expect_arg(gcoll_send(NULL, 4, GCOLL_FLOAT32, r, world), "buf", "send from NULL");
    expect_arg(gcoll_irecv(NULL, 4, GCOLL_FLOAT32, r, world, NULL, &req), "buf", "irecv into NULL");
    expect_arg(gcoll_isend(x, 4, GCOLL_FLOAT32, r, world, NULL, NULL), "req", "isend with req NULL");
    expect_arg(gcoll_isend(x, SIZE_MAX / 2, GCOLL_FLOAT32, r, world, NULL, &req), "count", "isend count overflow");
    attr.compress = GCOLL_COMPRESS_FP16;
    expect_arg(gcoll_isend(x, 4, GCOLL_FLOAT32, r, world, &attr, &req), "compress", "isend with compression");
    CHECK(req == NULL, "a refused isend left a request");
}

int main(int argc, char **argv)
{
    world = h_init(&argc, &argv);
    n = h_size;
    r = h_rank;
    if (n > MAXN) {
        fprintf(stderr, "test_p2p takes at most %d ranks\n", MAXN);
        return h_finish("p2p");
    }
    gcoll_comm_t fresh;
    CHECK_OK(gcoll_comm_dup(world, &fresh));
    bad_arguments();
    all_pairs();
    ordering();
    self_and_mixed();
    group_opposite();
    group_nested();
    group_collectives();
    group_wait_refused();
    if (n >= 2) {
        length_mismatch(10, 12, 0);
        length_mismatch(100000, 99999, 0);
    }
    length_mismatch(10, 8, 1);
    after_mismatch(fresh);
    CHECK_OK(gcoll_comm_free(&fresh));
    return h_finish("p2p");
}
