/* The flight recorder, driven by tests/flight.sh, which reads the files back (Python's json) and
 * runs gcoll-info --trace on them. Modes (argv[1], then the directory for the files):
 *   record: known operations on the world (the last two small allreduces in a group, fused where
 *           there are several ranks) and a duplicate, then gcoll_comm_dump of both, 300
 *           operations on a third (only the newest 256 are kept), and dump's refusals;
 *   lag:    three allreduces, then rank 1 stays away from the fourth (GCOLL_TIMEOUT ends it on
 *           the others, whose GCOLL_FLIGHT_RECORDER files are written) and dumps its own;
 *   mismatch: rank 0 broadcasts where the others allreduce #2;
 *   kill:   the last rank dies by SIGKILL in allreduce #2 (mpirun --enable-recovery).
 * Each rank prints "FLIGHT rank=R status=..." once its failure is in. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static char dir[512];

static void path(char *out, size_t len, const char *file)
{
    snprintf(out, len, "%s/%s", dir, file);
}

static void record(gcoll_comm_t world)
{
    float f[1000];
    int32_t i7[7];
    int64_t l3[3], lall[3 * 64];
    double d5[5 * 64], dout[5];
    for (int k = 0; k < 1000; k++)
        f[k] = 1.0f;
    memset(i7, 0, sizeof(i7));
    memset(l3, 0, sizeof(l3));
    for (int k = 0; k < 5 * h_size; k++)
        d5[k] = k;
    gcoll_attr_t a = GCOLL_ATTR_INIT;
    gcoll_request_t r;
    a.name = "grad.0";
    CHECK_OK(gcoll_iallreduce(f, f, 1000, GCOLL_FLOAT32, GCOLL_SUM, world, &a, &r));
    CHECK_OK(gcoll_wait(&r));
    a.name = "params";
    CHECK_OK(gcoll_ibcast(i7, 7, GCOLL_INT32, h_size - 1, world, &a, &r));
    CHECK_OK(gcoll_wait(&r));
    CHECK_OK(gcoll_barrier(world));
    int32_t ga = 1, gb = 2;
    gcoll_request_t ra, rb;
    CHECK_OK(gcoll_group_start());
    a.name = "fused.a";
    CHECK_OK(gcoll_iallreduce(&ga, &ga, 1, GCOLL_INT32, GCOLL_SUM, world, &a, &ra));
    a.name = "fused.b";
    CHECK_OK(gcoll_iallreduce(&gb, &gb, 1, GCOLL_INT32, GCOLL_SUM, world, &a, &rb));
    CHECK_OK(gcoll_group_end());
    CHECK_OK(gcoll_wait(&ra));
    CHECK_OK(gcoll_wait(&rb));
    CHECK(ga == h_size && gb == 2 * h_size, "the group's sums: %d %d", (int)ga, (int)gb);
    gcoll_comm_t dup;
    CHECK_OK(gcoll_comm_dup(world, &dup));
    a.name = "gather";
    CHECK_OK(gcoll_iallgather(l3, lall, 3, GCOLL_INT64, dup, &a, &r));
    CHECK_OK(gcoll_wait(&r));
    if (h_size > 1) {
        gcoll_request_t s;
        a.name = "p2p";
        CHECK_OK(gcoll_isend(f, 10, GCOLL_FLOAT32, (h_rank + 1) % h_size, dup, &a, &s));
        CHECK_OK(gcoll_irecv(f + 10, 10, GCOLL_FLOAT32, (h_rank + h_size - 1) % h_size, dup, &a, &r));
        CHECK_OK(gcoll_wait(&s));
        CHECK_OK(gcoll_wait(&r));
    }
    CHECK_OK(gcoll_reduce_scatter(d5, dout, 5, GCOLL_FLOAT64, GCOLL_MAX, dup));
    char p[600];
    path(p, sizeof(p), "rec.c%c.r%r.json");
    CHECK_OK(gcoll_comm_dump(world, p));
    CHECK_OK(gcoll_comm_dump(dup, p));

    gcoll_comm_t many;
    CHECK_OK(gcoll_comm_dup(world, &many));
    int x = 1;
    for (int k = 0; k < 300; k++)
        CHECK_OK(gcoll_allreduce(&x, &x, 1, GCOLL_INT32, GCOLL_MAX, many));
    path(p, sizeof(p), "many.r%r.json");
    CHECK_OK(gcoll_comm_dump(many, p));

    gcoll_status_t st = gcoll_comm_dump(NULL, p);
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), "comm"), "dump(NULL comm): %s %s",
          gcoll_status_name(st), gcoll_last_error());
    st = gcoll_comm_dump(world, NULL);
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), "path"), "dump(NULL path): %s %s",
          gcoll_status_name(st), gcoll_last_error());
    st = gcoll_comm_dump(world, "");
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), "path is empty"), "dump(\"\"): %s %s",
          gcoll_status_name(st), gcoll_last_error());
    st = gcoll_comm_dump(world, "/nonexistent-gcoll-dir/x.json");
    CHECK(st == GCOLL_ERR_SYSTEM && strstr(gcoll_last_error(), "/nonexistent-gcoll-dir/x.json"),
          "dump to a missing directory: %s %s", gcoll_status_name(st), gcoll_last_error());
    CHECK_OK(gcoll_comm_free(&many));
    CHECK_OK(gcoll_comm_free(&dup));
}

/* Three allreduces named "step", then the fourth (#3) where the others call it: the
 * status of this rank's fourth. */
static gcoll_status_t steps(gcoll_comm_t world, int away)
{
    float v[4096];
    for (int k = 0; k < 4096; k++)
        v[k] = 1.0f;
    gcoll_attr_t a = GCOLL_ATTR_INIT;
    a.name = "step";
    gcoll_request_t r;
    for (int k = 0; k < 3; k++) {
        CHECK_OK(gcoll_iallreduce(v, v, 4096, GCOLL_FLOAT32, GCOLL_SUM, world, &a, &r));
        CHECK_OK(gcoll_wait(&r));
    }
    if (away)
        return GCOLL_SUCCESS;
    gcoll_status_t st = gcoll_iallreduce(v, v, 4096, GCOLL_FLOAT32, GCOLL_SUM, world, &a, &r);
    return st == GCOLL_SUCCESS ? gcoll_wait(&r) : st;
}

static void report(gcoll_status_t st)
{
    printf("FLIGHT rank=%d status=%s\n", h_rank, gcoll_status_name(st));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    if (argc != 3) {
        fprintf(stderr, "usage: test_flight record|lag|mismatch|kill DIR\n");
        return 2;
    }
    snprintf(dir, sizeof(dir), "%s", argv[2]);
    const char *mode = argv[1];
    if (strcmp(mode, "record") == 0) {
        record(world);
    } else if (strcmp(mode, "lag") == 0) {
        gcoll_status_t st = steps(world, h_rank == 1);
        if (h_rank == 1) {
            sleep(4); /* the others' GCOLL_TIMEOUT=2 ends their fourth meanwhile */
            char p[600];
            path(p, sizeof(p), "fr.c%c.r%r.json");
            CHECK_OK(gcoll_comm_dump(world, p));
        } else {
            CHECK(st == GCOLL_ERR_TIMEOUT, "the fourth allreduce without rank 1: %s", gcoll_status_name(st));
        }
        report(st);
    } else if (strcmp(mode, "mismatch") == 0) {
        int x = 1;
        CHECK_OK(gcoll_allreduce(&x, &x, 1, GCOLL_INT32, GCOLL_SUM, world));
        CHECK_OK(gcoll_allreduce(&x, &x, 1, GCOLL_INT32, GCOLL_SUM, world));
        float v[256] = {0};
        gcoll_status_t st = h_rank == 0 ? gcoll_bcast(v, 256, GCOLL_FLOAT32, 0, world)
                                        : gcoll_allreduce(v, v, 256, GCOLL_FLOAT32, GCOLL_SUM, world);
        CHECK(st != GCOLL_SUCCESS, "a bcast against allreduces succeeded");
        report(st);
    } else if (strcmp(mode, "kill") == 0) {
        int x = 1;
        float v[1 << 16] = {0};
        CHECK_OK(gcoll_allreduce(&x, &x, 1, GCOLL_INT32, GCOLL_SUM, world));
        CHECK_OK(gcoll_allreduce(&x, &x, 1, GCOLL_INT32, GCOLL_SUM, world));
        if (h_rank == h_size - 1)
            raise(SIGKILL);
        gcoll_status_t st = gcoll_allreduce(v, v, 1 << 16, GCOLL_FLOAT32, GCOLL_SUM, world);
        CHECK(st == GCOLL_ERR_REMOTE, "allreduce #2 without the last rank: %s", gcoll_status_name(st));
        report(st);
        /* the others' MPI reduction of the counts would wait for the dead rank; the pause lets
         * every survivor see the death before one of them leaves too */
        sleep(1);
        printf("FLIGHT rank=%d passed=%ld failed=%ld\n", h_rank, check_passed, check_failed);
        fflush(stdout);
        _exit(check_failed ? 1 : 0);
    } else {
        fprintf(stderr, "test_flight: unknown mode %s\n", mode);
        return 2;
    }
    return h_finish("flight");
}
