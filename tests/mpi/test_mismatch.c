/* Mismatch detection: the last rank calls another collective, count, dtype or root than the
 * others, on a fresh communicator after two matching operations (so the odd one is #2). Every
 * rank must get GCOLL_ERR_INVALID_USAGE naming both sides, from that call or (where its part
 * completed before the evidence arrived) the next one; later calls on the communicator too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "harness.h"

#define BIG 100000 /* floats: 400 KB, eager over tcp by default, by rendezvous under GCOLL_TCP_EAGER=64K */

typedef struct {
    const char *name;
    int coll[2]; /* the others', the last rank's: 0 allreduce, 1 bcast, 2 allgather, 3 allgatherv
                    (count from every rank), 4 gather, 5 scatter */
    gcoll_dtype_t dtype[2];
    size_t count[2];
    int root[2];
    const char *said[2]; /* what the message must name of each side */
} mcase_t;

static gcoll_status_t call(int coll, void *buf, void *out, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t c)
{
    size_t counts[64];
    for (int i = 0; i < h_size && i < 64; i++)
        counts[i] = count;
    switch (coll) {
    case 0: return gcoll_allreduce(buf, out, count, dtype, GCOLL_SUM, c);
    case 1: return gcoll_bcast(buf, count, dtype, root, c);
    case 3: return gcoll_allgatherv(buf, count, out, counts, NULL, dtype, c);
    case 4: return gcoll_gather(buf, out, count, dtype, root, c);
    case 5: return gcoll_scatter(out, buf, count, dtype, root, c);
    default: return gcoll_allgather(buf, out, count, dtype, c);
    }
}

static void run_case(gcoll_comm_t world, const mcase_t *m)
{
    int odd = h_rank == h_size - 1;
    gcoll_comm_t c;
    CHECK_OK(gcoll_comm_dup(world, &c));
    size_t n = m->count[0] > m->count[1] ? m->count[0] : m->count[1];
    float *buf = calloc(n, sizeof(float)), *out = calloc(n * (size_t)h_size, sizeof(float));
    if (!buf || !out) {
        CHECK(0, "no memory");
        return;
    }
    for (int i = 0; i < 2; i++)
        CHECK_OK(gcoll_allreduce(buf, buf, 16, GCOLL_FLOAT32, GCOLL_SUM, c));
    /* every rank is past them: a mismatch fails whatever is still pending on the communicator,
     * an earlier operation that a slow rank has not finished included */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = h_now();
    gcoll_status_t st = call(m->coll[odd], buf, out, m->count[odd], m->dtype[odd], m->root[odd], c);
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", gcoll_last_error());
    const char *where = "the odd call";
    if (st == GCOLL_SUCCESS) { /* this rank's part was done before the evidence came: the next call */
        st = gcoll_barrier(c);
        snprintf(msg, sizeof(msg), "%s", gcoll_last_error());
        where = "the barrier after it";
    }
    double took = h_now() - t0;
    CHECK(st == GCOLL_ERR_INVALID_USAGE, "%s: %s: got %s: %s", m->name, where, gcoll_status_name(st), msg);
    CHECK(strstr(msg, m->said[0]) && strstr(msg, m->said[1]) && strstr(msg, "does not match"),
          "%s: %s: the message does not name both '%s' and '%s': %s", m->name, where, m->said[0], m->said[1], msg);
    CHECK(took < 5, "%s: the error came after %.3f s", m->name, took);
    st = gcoll_allreduce(buf, buf, 16, GCOLL_FLOAT32, GCOLL_SUM, c);
    CHECK(st == GCOLL_ERR_INVALID_USAGE && strstr(gcoll_last_error(), "does not match"),
          "%s: a later call on the failed communicator: %s: %s", m->name, gcoll_status_name(st), gcoll_last_error());
    /* every rank has its error before any closes its connections: a peer that finds one closed
     * before it has read the notice behind it reports the loss (GCOLL_ERR_REMOTE) instead */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(gcoll_comm_free(&c) == GCOLL_SUCCESS, "%s: free: %s", m->name, gcoll_last_error());
    free(buf);
    free(out);
}

/* Run with GCOLL_TIMEOUT well above the time a case may take, so that a hang fails instead of
 * passing late. */
int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    if (h_size < 2) {
        fprintf(stderr, "test_mismatch needs 2 or more ranks\n");
        return h_finish("mismatch");
    }
    const mcase_t cases[] = {
        {"allreduce against bcast",
         {0, 1},
         {GCOLL_FLOAT32, GCOLL_INT32},
         {1000, 16},
         {0, 0},
         {"allreduce #2 (float32 sum, count 1000)", "bcast #2 (int32, count 16, root 0)"}},
        {"allreduce against allgather, large",
         {0, 2},
         {GCOLL_FLOAT32, GCOLL_FLOAT32},
         {BIG, BIG / 4},
         {0, 0},
         {"allreduce #2 (float32 sum, count 100000)", "allgather #2 (float32, count 25000)"}},
        {"allreduce counts",
         {0, 0},
         {GCOLL_FLOAT32, GCOLL_FLOAT32},
         {1000, 999},
         {0, 0},
         {"allreduce #2 (float32 sum, count 1000)", "allreduce #2 (float32 sum, count 999)"}},
        {"allreduce counts, large",
         {0, 0},
         {GCOLL_FLOAT32, GCOLL_FLOAT32},
         {BIG, BIG - 1},
         {0, 0},
         {"allreduce #2 (float32 sum, count 100000)", "allreduce #2 (float32 sum, count 99999)"}},
        {"allreduce dtypes",
         {0, 0},
         {GCOLL_FLOAT32, GCOLL_INT32},
         {1000, 1000},
         {0, 0},
         {"allreduce #2 (float32 sum, count 1000)", "allreduce #2 (int32 sum, count 1000)"}},
        {"bcast roots",
         {1, 1},
         {GCOLL_FLOAT32, GCOLL_FLOAT32},
         {1000, 1000},
         {0, 1},
         {"bcast #2 (float32, count 1000, root 0)", "bcast #2 (float32, count 1000, root 1)"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(world, &cases[i]);
    /* the vector and rooted collectives: allgatherv's messages carry the total of its counts */
    char v0[96], v1[96], s1[96];
    snprintf(v0, sizeof(v0), "allgatherv #2 (float32, count %d)", 1000 * h_size);
    snprintf(v1, sizeof(v1), "allgatherv #2 (float32, count %d)", 999 * h_size);
    /* rooted: the odd rank scatters from itself, so that a message crosses (two ranks that both
     * wait to receive can only time out) */
    int last = h_size - 1;
    snprintf(s1, sizeof(s1), "scatter #2 (float32, count 16, root %d)", last);
    const mcase_t vcases[] = {
        {"allgatherv totals", {3, 3}, {GCOLL_FLOAT32, GCOLL_FLOAT32}, {1000, 999}, {0, 0}, {v0, v1}},
        {"allgatherv against allreduce",
         {3, 0},
         {GCOLL_FLOAT32, GCOLL_FLOAT32},
         {1000, 1000},
         {0, 0},
         {v0, "allreduce #2 (float32 sum, count 1000)"}},
        {"gather against scatter",
         {4, 5},
         {GCOLL_FLOAT32, GCOLL_FLOAT32},
         {16, 16},
         {0, last},
         {"gather #2 (float32, count 16, root 0)", s1}},
        {"scatter roots",
         {5, 5},
         {GCOLL_FLOAT32, GCOLL_FLOAT32},
         {16, 16},
         {0, last},
         {"scatter #2 (float32, count 16, root 0)", s1}},
    };
    for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++)
        run_case(world, &vcases[i]);
    /* the world, which saw none of it, still works */
    int one = 1, sum = 0;
    CHECK_OK(gcoll_allreduce(&one, &sum, 1, GCOLL_INT32, GCOLL_SUM, world));
    CHECK(sum == h_size, "world allreduce after the mismatches: %d", sum);
    return h_finish("mismatch");
}
