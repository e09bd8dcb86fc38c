/* Failure detection, run by tests/faults.sh (not by run_mpi: a rank dies on purpose): a rank
 * killed mid-allreduce, gcoll_comm_abort, a rank that stalls, a link cut mid-run. Each rank prints
 * "FAULTS rank=R passed=N failed=N" (kill: survivors only). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"

#define BIG (8u << 20) /* floats: 32 MiB, long enough in flight to die in the middle */

static void report(void)
{
    printf("FAULTS rank=%d passed=%ld failed=%ld\n", h_rank, check_passed, check_failed);
    fflush(stdout);
}

static int kill_test(gcoll_comm_t world, const char *file)
{
    int victim = h_size - 1;
    gcoll_comm_t c;
    CHECK_OK(gcoll_comm_dup(world, &c));
    float *v = malloc(sizeof(float) * BIG), *small = calloc(64 * (size_t)h_size, sizeof(float));
    if (!v || !small)
        return 2;
    for (size_t i = 0; i < BIG; i++)
        v[i] = 1;
    /* a few operations first, so the one that fails has sequence number 3 */
    for (int i = 0; i < 3; i++)
        CHECK_OK(gcoll_allreduce(small, small, 64, GCOLL_FLOAT32, GCOLL_SUM, c));
    gcoll_request_t big, later = NULL;
    CHECK_OK(gcoll_iallreduce(v, v, BIG, GCOLL_FLOAT32, GCOLL_SUM, c, NULL, &big));
    /* pending behind it (it needs the victim's part, which never comes); a survivor that has
     * found the death already refuses to start it */
    gcoll_status_t st_later =
        h_rank == victim ? GCOLL_SUCCESS : gcoll_iallgather(small, small, 64, GCOLL_FLOAT32, c, NULL, &later);
    char later_msg[512];
    snprintf(later_msg, sizeof(later_msg), "%s", gcoll_last_error());
    if (h_rank == victim) { /* the others are inside it now, waiting for this rank's part */
        FILE *f = fopen(file, "w");
        if (f) {
            fprintf(f, "%.6f\n", h_now());
            fclose(f);
        }
        raise(SIGKILL);
    }
    /* The allreduce fails, or had finished (its data all moved) before the death: on a crowded
     * host the victim's progress thread may complete its part before the victim reaches the
     * kill. Then the allgather, which needs a part the victim never sent, is the first to fail. */
    gcoll_status_t st = gcoll_wait(&big);
    char msg[512], want_rank[32];
    snprintf(msg, sizeof(msg), "%s", gcoll_last_error());
    snprintf(want_rank, sizeof(want_rank), "rank %d", victim);
    if (st == GCOLL_SUCCESS)
        CHECK(v[0] == (float)h_size && v[BIG - 1] == (float)h_size, "an allreduce that completed has %g, %g",
              (double)v[0], (double)v[BIG - 1]);
    if (st_later == GCOLL_SUCCESS) {
        st_later = gcoll_wait(&later);
        snprintf(later_msg, sizeof(later_msg), "%s", gcoll_last_error());
        CHECK(strstr(later_msg, "allgather #4") != NULL, "pending allgather's message: %s", later_msg);
    }
    double t_err = h_now();
    if (st == GCOLL_SUCCESS) {
        st = st_later;
        snprintf(msg, sizeof(msg), "%s", later_msg);
    }
    CHECK(st == GCOLL_ERR_REMOTE, "first failure: got %s: %s", gcoll_status_name(st), msg);
    CHECK((strstr(msg, "allreduce #3") || strstr(msg, "allgather #4")) && strstr(msg, want_rank),
          "message lacks the collective, its sequence or the dead rank: %s", msg);
    double t_kill = 0;
    FILE *f = fopen(file, "r");
    CHECK(f && fscanf(f, "%lf", &t_kill) == 1, "no time of death in %s", file);
    if (f)
        fclose(f);
    double bound = getenv("FAULT_BOUND_S") ? atof(getenv("FAULT_BOUND_S")) : 5.0;
    CHECK(t_kill > 0 && t_err - t_kill < bound, "detected %.3f s after the death (bound %g s)", t_err - t_kill, bound);
    printf("DETECTED rank=%d after=%.3f s: %s\n", h_rank, t_err - t_kill, msg);
    /* the operation pending behind it, and every later one, say so too */
    CHECK(st_later == GCOLL_ERR_REMOTE, "pending allgather: got %s: %s", gcoll_status_name(st_later), later_msg);
    CHECK(strstr(later_msg, want_rank), "pending allgather's message: %s", later_msg);
    st = gcoll_barrier(c);
    CHECK(st == GCOLL_ERR_REMOTE && strstr(gcoll_last_error(), want_rank), "later barrier: got %s: %s",
          gcoll_status_name(st), gcoll_last_error());
    /* Lingers past the detection bound before closing its connections: a survivor gone early
     * is a failed peer too, and the others might name it instead (README, "Failure handling"). */
    sleep(2);
    CHECK(gcoll_comm_free(&c) == GCOLL_SUCCESS, "free of the failed comm: %s", gcoll_last_error());
    free(v);
    free(small);
    report();
    /* no h_finish: its MPI_Allreduce would wait for the dead rank; finalizing needs no peer */
    CHECK_OK(gcoll_finalize());
    return check_failed ? 1 : 0;
}

static int abort_test(gcoll_comm_t world)
{
    gcoll_comm_t c;
    CHECK_OK(gcoll_comm_dup(world, &c));
    float v[256] = {0};
    gcoll_request_t req = NULL;
    if (h_rank == 0) { /* a bcast from rank 1 that rank 1 never starts stays pending here */
        CHECK_OK(gcoll_ibcast(v, 256, GCOLL_FLOAT32, 1, c, NULL, &req));
        double t0 = h_now();
        CHECK_OK(gcoll_comm_abort(c));
        gcoll_status_t st = gcoll_wait(&req);
        CHECK(st == GCOLL_ERR_ABORTED && strstr(gcoll_last_error(), "bcast #0") &&
                  strstr(gcoll_last_error(), "aborted by the application"),
              "pending bcast after abort: got %s: %s", gcoll_status_name(st), gcoll_last_error());
        CHECK(h_now() - t0 < 1, "abort took %.3f s", h_now() - t0);
    } else {
        CHECK_OK(gcoll_comm_abort(c));
    }
    gcoll_status_t st = gcoll_allreduce(v, v, 256, GCOLL_FLOAT32, GCOLL_SUM, c);
    CHECK(st == GCOLL_ERR_ABORTED && strstr(gcoll_last_error(), "aborted by the application"),
          "allreduce after abort: got %s: %s", gcoll_status_name(st), gcoll_last_error());
    CHECK(gcoll_comm_abort(c) == GCOLL_SUCCESS, "a second abort: %s", gcoll_last_error());
    st = gcoll_comm_abort(NULL);
    CHECK(st == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), "comm"), "abort(NULL): %s", gcoll_status_name(st));
    CHECK(gcoll_comm_free(&c) == GCOLL_SUCCESS, "free of an aborted comm: %s", gcoll_last_error());
    /* the world is unaffected */
    int one = 1, n = 0;
    CHECK_OK(gcoll_allreduce(&one, &n, 1, GCOLL_INT32, GCOLL_SUM, world));
    CHECK(n == h_size, "world allreduce after an abort: %d", n);
    return 0;
}

static int stall_test(gcoll_comm_t world)
{
    float v[1024];
    for (int i = 0; i < 1024; i++)
        v[i] = 1;
    if (h_rank == 0)
        usleep(2500000);
    CHECK_OK(gcoll_allreduce(v, v, 1024, GCOLL_FLOAT32, GCOLL_SUM, world));
    CHECK(v[0] == (float)h_size && v[1023] == (float)h_size, "late allreduce: %g", (double)v[0]);
    return 0;
}

static int linkcut_test(gcoll_comm_t world, const char *dir)
{
    float *v = malloc(sizeof(float) * BIG);
    if (!v)
        return 2;
    for (size_t i = 0; i < BIG; i++)
        v[i] = 1;
    char path[512];
    double t_ok = h_now(), t_end = t_ok + 120; /* the script cuts the link well before */
    gcoll_status_t st = GCOLL_SUCCESS;
    for (int n = 0; st == GCOLL_SUCCESS && h_now() < t_end; n++) {
        st = gcoll_allreduce(v, v, BIG, GCOLL_FLOAT32, GCOLL_AVG, world);
        if (st != GCOLL_SUCCESS)
            break;
        t_ok = h_now();
        /* whole or not there: the script reads it while the loop goes on, and a file caught
         * between truncation and write read as no progress at all */
        snprintf(path, sizeof(path), "%s/progress.%d.tmp", dir, h_rank);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%d\n", n + 1);
            fclose(f);
            char final[512];
            snprintf(final, sizeof(final), "%s/progress.%d", dir, h_rank);
            rename(path, final);
        }
    }
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", gcoll_last_error());
    snprintf(path, sizeof(path), "%s/result.%d.tmp", dir, h_rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "status=%s since_ok=%.3f pid=%d %s\n", gcoll_status_name(st), h_now() - t_ok, (int)getpid(), msg);
        fclose(f);
        char final[512];
        snprintf(final, sizeof(final), "%s/result.%d", dir, h_rank);
        rename(path, final); /* whole, or not there */
    }
    free(v);
    /* MPI_Finalize would wait on the other side of the cut for good: leave now */
    _exit(st == GCOLL_ERR_TIMEOUT || st == GCOLL_ERR_REMOTE ? 0 : 1);
}

/* Modes:
 *   kill FILE    the last rank SIGKILLs itself mid-allreduce after writing its CLOCK_MONOTONIC time
 *                to FILE; every survivor must get GCOLL_ERR_REMOTE naming the collective, its
 *                sequence number and the dead rank within FAULT_BOUND_S (default 5), then finalize.
 *                Needs mpirun --enable-recovery.
 *   abort        gcoll_comm_abort: that communicator's pending and later operations end with
 *                GCOLL_ERR_ABORTED at once, other communicators go on.
 *   stall        rank 0 joins an allreduce 2.5 s late with GCOLL_STALL_WARN_S=1: the others log
 *                stall warnings (checked by the script), and it still completes.
 *   linkcut DIR  32 MiB allreduces in a loop while tests/cluster/linkcut.sh cuts a link; each rank
 *                writes DIR/progress.R after each, DIR/result.R when one fails, then exits without
 *                MPI_Finalize (mpirun's own channel crosses the cut link). */
int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "kill") == 0 && argc > 2 && h_size >= 2)
        return kill_test(world, argv[2]);
    if (strcmp(mode, "linkcut") == 0 && argc > 2)
        return linkcut_test(world, argv[2]);
    if (strcmp(mode, "abort") == 0)
        abort_test(world);
    else if (strcmp(mode, "stall") == 0)
        stall_test(world);
    else
        CHECK(0, "usage: test_faults kill FILE | linkcut DIR | abort | stall (kill: 2 ranks or more)");
    report();
    return h_finish("faults");
}
