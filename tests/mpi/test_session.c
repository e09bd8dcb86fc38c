/* The gradient session: parameter sets of every dtype and both ops (sum, avg), fused into
 * buckets, started in an order that differs per rank and per iteration, waited with
 * gcoll_session_wait, _test and _wait_all; every gradient checked against the independent
 * reference each iteration. Then misuse: a set started twice, a wait on a bucket not all started,
 * sets added after commit, ranks that registered different sets. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reference.h"
#include "adasum_ref.h"

#define NSETS 29
#define ITERS 4

static size_t set_count(int i)
{
    static const size_t counts[] = {1, 7, 64, 1000, 3, 4099, 65537, 17, 250000, 2};
    return counts[i % 10] + (size_t)i;
}

static gcoll_dtype_t set_dtype(int i)
{
    static const gcoll_dtype_t d[] = {GCOLL_FLOAT32, GCOLL_FLOAT32, GCOLL_FLOAT16, GCOLL_BFLOAT16,
                                      GCOLL_FLOAT64, GCOLL_FLOAT32, GCOLL_INT32};
    return i < 12 ? GCOLL_FLOAT32 : d[i % 7]; /* a long run of one type fuses; the rest breaks buckets */
}

/* Rank r's gradient of set s in iteration it: the reference inputs, shifted per set and iteration. */
static void fill(void *p, int s, int it, int rank)
{
    size_t n = set_count(s), es = gcoll_dtype_size(set_dtype(s)), off = (size_t)s * 7919 + (size_t)it * 104729;
    gcoll_op_t op = s % 3 == 0 ? GCOLL_AVG : GCOLL_SUM;
    for (size_t i = 0; i < n; i++)
        ref_encode(set_dtype(s), ref_value(rank, off + i, set_dtype(s), op), (char *)p + i * es);
}

/* ---- Adasum sets: each its own tensor, checked against the independent reference */

#define NADA 7
static const size_t ada_count[NADA] = {1000, 7, 4099, 12, 65537, 300, 513};
static const gcoll_dtype_t ada_dtype[NADA] = {GCOLL_FLOAT32,  GCOLL_FLOAT32,  GCOLL_FLOAT32, GCOLL_FLOAT32,
                                              GCOLL_BFLOAT16, GCOLL_BFLOAT16, GCOLL_FLOAT64};

typedef struct {
    int set, it;
    gcoll_dtype_t d;
} ada_ctx_t;

/* Rank q's input of an Adasum set, as stored in its dtype: values in [-1, 1) that differ per
 * rank, set and iteration. */
static double ada_value(int q, size_t i, void *p)
{
    const ada_ctx_t *c = p;
    uint32_t h = ref_hash((uint32_t)q, (uint32_t)i, (uint32_t)(c->set * 131 + c->it));
    char buf[8];
    ref_encode(c->d, (double)(int32_t)h / 2147483648.0, buf);
    return adasum_decode(c->d, buf);
}

static void adasum_sets(gcoll_comm_t world)
{
    gcoll_session_t s;
    size_t id[NADA + 1];
    void *grad[NADA + 1];
    CHECK_OK(gcoll_session_create(world, &s));
    for (int i = 0; i < NADA; i++) {
        char name[16];
        snprintf(name, sizeof(name), "ada%d", i);
        CHECK_OK(gcoll_session_add(s, name, ada_count[i], ada_dtype[i], GCOLL_ADASUM, &id[i]));
        grad[i] = malloc(ada_count[i] * 8);
    }
    size_t extra; /* a sum set among them: buckets keep the ops apart */
    CHECK_OK(gcoll_session_add(s, "bias", 5, GCOLL_FLOAT32, GCOLL_SUM, &extra));
    CHECK(gcoll_session_add(s, "i", 5, GCOLL_INT32, GCOLL_ADASUM, &id[NADA]) == GCOLL_ERR_INVALID_ARG,
          "Adasum over int32 was accepted");
    CHECK_OK(gcoll_session_commit(s));
    float bias[5];
    for (int it = 0; it < 2; it++) {
        for (int k = 0; k < NADA; k++) {
            int i = (k * 3 + h_rank + it) % NADA; /* a start order of each rank's own */
            ada_ctx_t c = {i, it, ada_dtype[i]};
            size_t es = gcoll_dtype_size(ada_dtype[i]);
            for (size_t e = 0; e < ada_count[i]; e++)
                ref_encode(ada_dtype[i], ada_value(h_rank, e, &c), (char *)grad[i] + e * es);
            CHECK_OK(gcoll_session_start(s, id[i], grad[i]));
        }
        for (int e = 0; e < 5; e++)
            bias[e] = (float)(h_rank + e);
        CHECK_OK(gcoll_session_start(s, extra, bias));
        CHECK_OK(gcoll_session_wait_all(s));
        for (int i = 0; i < NADA; i++) {
            ada_ctx_t c = {i, it, ada_dtype[i]};
            adasum_ref_t r;
            double *eye = calloc((size_t)h_size * (size_t)h_size, sizeof(double));
            for (int q = 0; q < h_size; q++)
                eye[q * h_size + q] = 1;
            CHECK(adasum_ref_init(&r, h_size, h_size, eye, ada_count[i], NULL, 0, ada_value, &c) == 0, "reference");
            size_t worst;
            double err = adasum_ref_error(&r, grad[i], ada_dtype[i], &worst);
            CHECK(err <= adasum_ref_tolerance(ada_dtype[i]), "iteration %d Adasum set %d (%s, %zu): error %g", it, i,
                  gcoll_dtype_name(ada_dtype[i]), ada_count[i], err);
            adasum_ref_free(&r);
            free(eye);
        }
        for (int e = 0; e < 5; e++)
            CHECK(bias[e] == (float)(h_size * (h_size - 1) / 2 + h_size * e), "sum set beside Adasum: %g", bias[e]);
    }
    CHECK_OK(gcoll_session_free(&s));
    for (int i = 0; i < NADA; i++)
        free(grad[i]);
}

/* ---- a bucket of one set runs on the set's own buffer, and through a fused buffer once that
 * buffer moves: with A, B, A, each iteration's result must land in the buffer it was given, and
 * the buffer not passed must keep what it held */

static void moving_buffer(gcoll_comm_t world)
{
    enum { BIG = 300007, SMALL = 11 };
    gcoll_session_t s;
    size_t big, small, bb, bs, nb;
    CHECK_OK(gcoll_session_create(world, &s));
    CHECK_OK(gcoll_session_add(s, "small", SMALL, GCOLL_FLOAT32, GCOLL_SUM, &small));
    CHECK_OK(gcoll_session_add(s, "big", BIG, GCOLL_FLOAT32, GCOLL_SUM, &big));
    CHECK_OK(gcoll_session_commit(s));
    CHECK_OK(gcoll_session_buckets(s, &nb));
    CHECK_OK(gcoll_session_bucket_of(s, big, &bb));
    CHECK_OK(gcoll_session_bucket_of(s, small, &bs));
    /* 1.2 MB is over the first bucket's limit (1M, or 4K in the small-bucket run): alone */
    CHECK(nb == 2 && bb == 0 && bs == 1, "%zu buckets, big in %zu, small in %zu: big alone first expected", nb, bb, bs);
    float *buf[2], *sm = malloc(SMALL * sizeof(float)), *want = malloc(BIG * sizeof(float));
    buf[0] = malloc(BIG * sizeof(float));
    buf[1] = malloc(BIG * sizeof(float));
    for (int it = 0; it < 3; it++) {
        float *g = buf[it % 2], *other = buf[(it + 1) % 2];
        size_t off = (size_t)it * 7777;
        for (size_t i = 0; i < BIG; i++) {
            g[i] = (float)ref_value(h_rank, off + i, GCOLL_FLOAT32, GCOLL_SUM);
            other[i] = -1.0f - (float)it;
        }
        for (size_t i = 0; i < SMALL; i++)
            sm[i] = (float)(h_rank + 1);
        CHECK_OK(gcoll_session_start(s, big, g));
        CHECK_OK(gcoll_session_start(s, small, sm));
        CHECK_OK(gcoll_session_wait_all(s));
        for (size_t i = 0; i < BIG; i++)
            want[i] = (float)ref_expected(off + i, GCOLL_FLOAT32, GCOLL_SUM, h_size);
        CHECK(memcmp(g, want, BIG * sizeof(float)) == 0, "iteration %d: the big set's buffer %c holds a wrong result",
              it, "AB"[it % 2]);
        size_t touched = 0;
        for (size_t i = 0; i < BIG; i++)
            touched += other[i] != -1.0f - (float)it;
        CHECK(touched == 0, "iteration %d: %zu elements of buffer %c, not passed, were written", it, touched,
              "AB"[(it + 1) % 2]);
        for (size_t i = 0; i < SMALL; i++)
            CHECK(sm[i] == (float)(h_size * (h_size + 1) / 2), "iteration %d: small set %g", it, sm[i]);
    }
    CHECK_OK(gcoll_session_free(&s));
    free(buf[0]);
    free(buf[1]);
    free(sm);
    free(want);
}

int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    gcoll_session_t s;
    CHECK_OK(gcoll_session_create(world, &s));
    size_t ids[NSETS];
    void *grad[NSETS], *want[NSETS];
    for (int i = 0; i < NSETS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "layer%d.weight", i);
        gcoll_op_t op = i % 3 == 0 ? GCOLL_AVG : GCOLL_SUM;
        CHECK_OK(gcoll_session_add(s, name, set_count(i), set_dtype(i), op, &ids[i]));
        CHECK(ids[i] == (size_t)i, "set %d got id %zu", i, ids[i]);
        size_t bytes = set_count(i) * gcoll_dtype_size(set_dtype(i));
        grad[i] = malloc(bytes);
        want[i] = malloc(bytes);
    }
    CHECK(gcoll_session_start(s, 0, grad[0]) == GCOLL_ERR_INVALID_USAGE, "start before commit was accepted");
    CHECK_OK(gcoll_session_commit(s));
    size_t nb = 0, b0 = 0, blast = 0;
    CHECK_OK(gcoll_session_buckets(s, &nb));
    CHECK_OK(gcoll_session_bucket_of(s, 0, &b0));
    CHECK_OK(gcoll_session_bucket_of(s, NSETS - 1, &blast));
    CHECK(nb > 1 && nb <= NSETS, "%zu buckets for %d sets", nb, NSETS);
    CHECK(blast == 0 && b0 == nb - 1, "the last set's bucket is %zu, the first's %zu of %zu: backprop order expected",
          blast, b0, nb);
    size_t id;
    CHECK(gcoll_session_add(s, "late", 4, GCOLL_FLOAT32, GCOLL_SUM, &id) == GCOLL_ERR_INVALID_USAGE,
          "add after commit was accepted");

    for (int it = 0; it < ITERS; it++) {
        /* backprop: last layers first, in an order shuffled per rank and iteration */
        int order[NSETS];
        for (int i = 0; i < NSETS; i++)
            order[i] = NSETS - 1 - i;
        for (int i = 0; i < NSETS; i++) {
            int j = (int)(ref_hash((uint32_t)h_rank, (uint32_t)it, (uint32_t)i) % NSETS);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int k = 0; k < NSETS; k++) {
            int i = order[k];
            fill(grad[i], i, it, h_rank);
            CHECK_OK(gcoll_session_start(s, (size_t)i, grad[i]));
            if (it == 0 && k == 0)
                CHECK(gcoll_session_start(s, (size_t)i, grad[i]) == GCOLL_ERR_INVALID_USAGE,
                      "a set started twice was accepted");
        }
        if (it % 2 == 0) {
            for (int i = 0; i < NSETS; i++) { /* the next forward pass: first layers first */
                int done = 0;
                CHECK_OK(gcoll_session_test(s, (size_t)i, &done));
                CHECK_OK(gcoll_session_wait(s, (size_t)i));
            }
        } else {
            CHECK_OK(gcoll_session_wait_all(s));
        }
        for (int i = 0; i < NSETS; i++) {
            size_t n = set_count(i), es = gcoll_dtype_size(set_dtype(i)), off = (size_t)i * 7919 + (size_t)it * 104729;
            gcoll_op_t op = i % 3 == 0 ? GCOLL_AVG : GCOLL_SUM;
            for (size_t e = 0; e < n; e++)
                ref_encode(set_dtype(i), ref_expected(off + e, set_dtype(i), op, h_size), (char *)want[i] + e * es);
            CHECK(memcmp(grad[i], want[i], n * es) == 0, "iteration %d set %d (%s, %s, %zu): wrong gradient", it, i,
                  gcoll_dtype_name(set_dtype(i)), gcoll_op_name(op), n);
        }
    }

    /* a bucket with a set not started cannot complete: the wait says which set is missing */
    size_t bucket_of_0;
    CHECK_OK(gcoll_session_bucket_of(s, 0, &bucket_of_0));
    int partner = -1;
    for (int i = 1; i < NSETS && partner < 0; i++) {
        size_t b;
        CHECK_OK(gcoll_session_bucket_of(s, (size_t)i, &b));
        if (b == bucket_of_0)
            partner = i;
    }
    if (partner > 0) {
        fill(grad[0], 0, 0, h_rank);
        CHECK_OK(gcoll_session_start(s, 0, grad[0]));
        gcoll_status_t st = gcoll_session_wait(s, 0);
        CHECK(st == GCOLL_ERR_INVALID_USAGE && strstr(gcoll_last_error(), "was not started"),
              "wait on a partly started bucket: %s: %s", gcoll_status_name(st), gcoll_last_error());
        fill(grad[partner], partner, 0, h_rank);
        for (int i = 1; i < NSETS; i++) {
            size_t b;
            CHECK_OK(gcoll_session_bucket_of(s, (size_t)i, &b));
            if (b == bucket_of_0)
                CHECK_OK(gcoll_session_start(s, (size_t)i, grad[i]));
        }
        CHECK_OK(gcoll_session_wait(s, 0));
    }
    CHECK(gcoll_session_wait(s, NSETS) == GCOLL_ERR_INVALID_ARG, "an id out of range was accepted");
    CHECK(gcoll_session_add(NULL, "x", 1, GCOLL_FLOAT32, GCOLL_SUM, &id) == GCOLL_ERR_INVALID_ARG, "NULL session");
    CHECK_OK(gcoll_session_free(&s));
    CHECK(s == NULL, "free did not clear the handle");

    /* ranks that disagree on the sets: commit fails on every rank */
    gcoll_session_t bad;
    CHECK_OK(gcoll_session_create(world, &bad));
    CHECK(gcoll_session_add(bad, "x", 8, GCOLL_FLOAT32, GCOLL_PROD, &id) == GCOLL_ERR_INVALID_ARG,
          "a session took GCOLL_PROD");
    CHECK_OK(gcoll_session_add(bad, "x", h_size > 1 && h_rank == h_size - 1 ? 9 : 8, GCOLL_FLOAT32, GCOLL_SUM, &id));
    gcoll_status_t st = gcoll_session_commit(bad);
    CHECK(h_size == 1 ? st == GCOLL_SUCCESS : st == GCOLL_ERR_INVALID_USAGE, "commit of disagreeing sets: %s",
          gcoll_status_name(st));
    CHECK_OK(gcoll_session_free(&bad));
    for (int i = 0; i < NSETS; i++) {
        free(grad[i]);
        free(want[i]);
    }
    adasum_sets(world);
    moving_buffer(world);
    return h_finish("session");
}
