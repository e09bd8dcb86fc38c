/* gcoll_setup_bench: how long a job takes to set up. Each phase (gcoll_init: the bootstrap and the
 * world communicator; the first allreduce; a gcoll_comm_dup; a gcoll_comm_split in two) is timed
 * from the last rank's start to the last rank's end on CLOCK_REALTIME, which the ranks of one
 * machine share; rank 0 prints them on a "SETUP" line with the most sockets any rank holds, and
 * every rank its start on a "START" line (bench/setup_time.sh places the phases of gcoll_init's
 * log line with it). Runs under mpirun or launched without MPI. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcoll.h"
#include "sockets.h"

#define PHASES 4

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what)
{
    fprintf(stderr, "gcoll_setup_bench: %s: %s\n", what, gcoll_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    double t[2 * PHASES + 1];
    t[0] = wall();
    if (gcoll_init(&argc, &argv) != GCOLL_SUCCESS)
        return fail("gcoll_init");
    t[1] = wall();
    gcoll_comm_t world, dup, half;
    gcoll_comm_world(&world);
    int rank = gcoll_comm_rank(world), n = gcoll_comm_size(world);
    float one = 1.0f;
    t[2] = wall();
    if (gcoll_allreduce(&one, &one, 1, GCOLL_FLOAT32, GCOLL_SUM, world) != GCOLL_SUCCESS)
        return fail("gcoll_allreduce");
    t[3] = wall();
    if (one != (float)n) {
        fprintf(stderr, "gcoll_setup_bench: the allreduce gave %g, not %d\n", (double)one, n);
        return 1;
    }
    t[4] = wall();
    if (gcoll_comm_dup(world, &dup) != GCOLL_SUCCESS)
        return fail("gcoll_comm_dup");
    t[5] = wall();
    t[6] = wall();
    if (gcoll_comm_split(world, rank % 2, rank, &half) != GCOLL_SUCCESS)
        return fail("gcoll_comm_split");
    t[7] = wall();
    t[8] = (double)count_sockets();
    double most[2 * PHASES + 1];
    if (gcoll_allreduce(t, most, 2 * PHASES + 1, GCOLL_FLOAT64, GCOLL_MAX, world) != GCOLL_SUCCESS)
        return fail("gcoll_allreduce of the times");
    printf("START rank=%d wall=%.6f\n", rank, t[0]);
    if (rank == 0)
        printf("SETUP np=%d init=%.4f first_allreduce=%.4f dup=%.4f split=%.4f sockets=%d\n", n, most[1] - most[0],
               most[3] - most[2], most[5] - most[4], most[7] - most[6], (int)most[8]);
    gcoll_comm_free(&half);
    gcoll_comm_free(&dup);
    gcoll_finalize();
    return 0;
}
