/* See harness.h. */
#include <mpi.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

int h_rank, h_size;
long h_passed, h_failed;

gcoll_comm_t h_init(int *argc, char ***argv)
{
    gcoll_comm_t world;
    if (gcoll_init(argc, argv) != GCOLL_SUCCESS || gcoll_comm_world(&world) != GCOLL_SUCCESS) {
        fprintf(stderr, "test: gcoll_init failed: %s\n", gcoll_last_error());
        exit(2);
    }
    h_rank = gcoll_comm_rank(world);
    h_size = gcoll_comm_size(world);
    return world;
}

void h_check(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        h_passed++;
        return;
    }
    h_failed++;
    if (h_failed > 20)
        return; /* enough to diagnose; the count still grows */
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL [rank %d/%d] %s:%d: %s\n", h_rank, h_size, file, line, msg);
}

int h_finish(const char *name)
{
    long mine[2] = {h_passed, h_failed}, all[2] = {0, 0};
    int mpi = 0;
    MPI_Initialized(&mpi);
    if (!mpi) { /* launched without MPI: each rank reports, the launching script sums (tests/boot.sh) */
        printf("RESULT %s rank=%d np=%d passed=%ld failed=%ld\n", name, h_rank, h_size, h_passed, h_failed);
        fflush(stdout);
        gcoll_finalize();
        return h_failed ? 1 : 0;
    }
    MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (h_rank == 0)
        printf("RESULT %s np=%d passed=%ld failed=%ld\n", name, h_size, all[0], all[1]);
    fflush(stdout);
    gcoll_finalize();
    return all[1] ? 1 : 0;
}

double h_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
