/* gcoll_comm_set_algorithm: bad input gets a status and a message naming the argument and
 * leaves the table as it was; a table forces what gcoll_comm_algorithm reports and what the
 * blocking calls run (results against reference/reference.c, bytes on the wire against the forced
 * algorithm's own count); ranges; NULL goes back to GCOLL_ALLREDUCE (set to direct below) and
 * "auto" to the built-in choice; a duplicate does not inherit the table. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reference.h"

static gcoll_comm_t world;

static const char *pick(gcoll_comm_t c, const char *coll, size_t count)
{
    const char *a = NULL;
    gcoll_status_t st = gcoll_comm_algorithm(c, coll, count, GCOLL_FLOAT32, &a);
    CHECK(st == GCOLL_SUCCESS, "gcoll_comm_algorithm(%s, %zu): %s", coll, count, gcoll_last_error());
    return a ? a : "(none)";
}

static void expect_bad(gcoll_comm_t c, const char *coll, const char *table, const char *needle)
{
    gcoll_status_t st = gcoll_comm_set_algorithm(c, coll, table);
    const char *msg = gcoll_last_error();
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(msg, needle), "set_algorithm(%s, %s): %s '%s', want '%s' in it",
          coll ? coll : "NULL", table ? table : "NULL", gcoll_status_name(st), msg, needle);
}

static void test_bad_input(void)
{
    expect_bad(NULL, "allreduce", "ring", "comm");
    expect_bad(world, NULL, "ring", "collective is NULL");
    expect_bad(world, "allreducee", "ring", "collective 'allreducee' is unknown");
    expect_bad(world, "adasum", "ring", "collective 'adasum' is unknown"); /* GCOLL_ADASUM's */
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", "ring"));
    expect_bad(world, "allreduce", "fastest", "table: unknown allreduce algorithm 'fastest'");
    expect_bad(world, "allreduce", "ring:8K-1K", "LO < HI");
    expect_bad(world, "allreduce", "ring:8K", "LO-HI");
    expect_bad(world, "allreduce", "", "empty");
    expect_bad(world, "bcast", "ring", "accepts binomial"); /* ring is not a bcast algorithm */
    CHECK(strcmp(pick(world, "allreduce", 1000), "ring") == 0, "a refused table replaced the one set before");
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", NULL));
}

/* The point-to-point algorithms, which serve any communicator: each forced, reported, and run. */
static void test_forced(void)
{
    static const struct {
        const char *coll, *algos[4];
    } p2p[] = {
        {"allreduce", {"ring", "recursive_doubling", "rabenseifner", "direct"}},
        {"reduce_scatter", {"ring", "recursive_halving"}},
        {"allgather", {"ring", "recursive_doubling"}},
        {"bcast", {"binomial", "scatter_allgather", "chain"}},
        {"reduce", {"binomial", "rabenseifner", "chain"}},
        {"alltoall", {"pairwise"}},
    };
    for (size_t c = 0; c < sizeof(p2p) / sizeof(p2p[0]); c++) {
        for (int a = 0; a < 4 && p2p[c].algos[a]; a++) {
            CHECK_OK(gcoll_comm_set_algorithm(world, p2p[c].coll, p2p[c].algos[a]));
            for (size_t count = 1; count <= 100000; count *= 317)
                CHECK(strcmp(pick(world, p2p[c].coll, count), p2p[c].algos[a]) == 0, "%s forced to %s: picks %s at %zu",
                      p2p[c].coll, p2p[c].algos[a], pick(world, p2p[c].coll, count), count);
        }
        CHECK_OK(gcoll_comm_set_algorithm(world, p2p[c].coll, NULL));
    }

    /* blocking allreduce under each table: the reference's result, and each rank sends what the
     * algorithm sends (direct: its whole vector to every other rank) */
    const size_t cnt = 6007; /* prime: blocks of unequal size */
    float *in = malloc(cnt * sizeof(float)), *out = malloc(cnt * sizeof(float)), *exp = malloc(cnt * sizeof(float));
    ref_fill_values(in, cnt, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_expected(exp, 0, cnt, GCOLL_FLOAT32, GCOLL_SUM, h_size);
    unsigned long long sent[4] = {0};
    for (int a = 0; a < 4; a++) {
        const char *name = p2p[0].algos[a];
        CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", name));
        unsigned long long b0 = 0, b1 = 0;
        CHECK_OK(gcoll_comm_bytes_sent(world, &b0));
        memset(out, 0, cnt * sizeof(float));
        CHECK_OK(gcoll_allreduce(in, out, cnt, GCOLL_FLOAT32, GCOLL_SUM, world));
        CHECK_OK(gcoll_comm_bytes_sent(world, &b1));
        sent[a] = b1 - b0;
        CHECK(memcmp(out, exp, cnt * sizeof(float)) == 0, "allreduce forced to %s: wrong result", name);
    }
    unsigned long long vec = cnt * sizeof(float);
    CHECK(sent[3] == vec * (unsigned long long)(h_size - 1), "direct sent %llu bytes, want %llu", sent[3],
          vec * (unsigned long long)(h_size - 1));
    if (h_size >= 3) /* ring sends 2(n-1)/n of the vector, less than direct's n-1 from 3 ranks on */
        CHECK(sent[0] < sent[3] && sent[0] >= vec, "ring sent %llu bytes, direct %llu (vector %llu)", sent[0], sent[3],
              vec);
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", NULL));
    free(in);
    free(out);
    free(exp);
}

static void test_ranges_and_resets(void)
{
    const size_t small = 16, large = 1 << 20; /* 64 B and 4 MiB of floats */
    CHECK(strcmp(pick(world, "allreduce", large), "direct") == 0, "GCOLL_ALLREDUCE=direct: picks %s",
          pick(world, "allreduce", large));
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", "recursive_doubling:0-1K;ring:1K-max"));
    CHECK(strcmp(pick(world, "allreduce", small), "recursive_doubling") == 0, "64 B: picks %s",
          pick(world, "allreduce", small));
    CHECK(strcmp(pick(world, "allreduce", large), "ring") == 0, "4 MiB: picks %s", pick(world, "allreduce", large));
    /* a range the table leaves out gets the built-in choice, never the variable's direct */
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", "ring:0-1K"));
    CHECK(strcmp(pick(world, "allreduce", large), "direct") != 0, "4 MiB outside the table: picks direct");
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", "auto"));
    CHECK(strcmp(pick(world, "allreduce", large), "direct") != 0, "auto: picks GCOLL_ALLREDUCE's direct");

    gcoll_comm_t dup;
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", "ring"));
    CHECK_OK(gcoll_comm_dup(world, &dup));
    CHECK(strcmp(pick(dup, "allreduce", small), "direct") == 0, "a duplicate inherited the table: picks %s",
          pick(dup, "allreduce", small));
    CHECK(strcmp(pick(world, "reduce", small), pick(dup, "reduce", small)) == 0,
          "a table for allreduce changed reduce's choice");
    CHECK_OK(gcoll_comm_free(&dup));
    CHECK_OK(gcoll_comm_set_algorithm(world, "allreduce", NULL));
    CHECK(strcmp(pick(world, "allreduce", small), "direct") == 0, "NULL: picks %s, not GCOLL_ALLREDUCE's direct",
          pick(world, "allreduce", small));
}

int main(int argc, char **argv)
{
    setenv("GCOLL_ALLREDUCE", "direct", 1); /* what NULL must go back to */
    world = h_init(&argc, &argv);
    test_bad_input();
    test_forced();
    test_ranges_and_resets();
    return h_finish("select");
}
