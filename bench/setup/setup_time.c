/* gcoll_setup_bench: how long a job takes to set up: gcoll_init, the first allreduce, a dup and a
 * split in two, each from the last rank's start to the last rank's end (CLOCK_REALTIME, shared by
 * one machine's ranks). Rank 0's "SETUP" line adds the most sockets of any rank and what /dev/shm
 * holds once the three communicators have carried allreduces of 4 B-4 MiB; each rank's "START"
 * line is for bench/setup_time.sh. Runs under mpirun or launched without MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
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

/* MiB of the machine's /dev/shm in use: the node channels' segments are there, unnamed. */
static double shm_mib(void)
{
    struct statvfs v;
    return statvfs("/dev/shm", &v) == 0 ? (double)(v.f_blocks - v.f_bfree) * (double)v.f_frsize / 1048576.0 : 0;
}

/* Allreduces of 4 B to 4 MiB (every 16th power of two) on c, each checked. */
static int use(gcoll_comm_t c)
{
    size_t max = (size_t)1 << 20;
    float *v = malloc(max * sizeof(float));
    int n = gcoll_comm_size(c), ok = v != NULL;
    for (size_t count = 1; ok && count <= max; count *= 16) {
        for (size_t i = 0; i < count; i++)
            v[i] = 1.0f;
        ok = gcoll_allreduce(v, v, count, GCOLL_FLOAT32, GCOLL_SUM, c) == GCOLL_SUCCESS && v[count - 1] == (float)n;
    }
    free(v);
    return ok;
}

static int fail(const char *what)
{
    fprintf(stderr, "gcoll_setup_bench: %s: %s\n", what, gcoll_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    double t[2 * PHASES + 1], shm0 = shm_mib(); /* no rank's segment exists before rank 0's gcoll_init */
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
    if (!use(world) || !use(dup) || !use(half))
        return fail("the allreduces of 4 B-4 MiB");
    double most[2 * PHASES + 1];
    if (gcoll_allreduce(t, most, 2 * PHASES + 1, GCOLL_FLOAT64, GCOLL_MAX, world) != GCOLL_SUCCESS)
        return fail("gcoll_allreduce of the times");
    printf("START rank=%d wall=%.6f\n", rank, t[0]);
    if (rank == 0)
        printf("SETUP np=%d init=%.4f first_allreduce=%.4f dup=%.4f split=%.4f sockets=%d shm_mib=%.1f\n", n,
               most[1] - most[0], most[3] - most[2], most[5] - most[4], most[7] - most[6], (int)most[8],
               shm_mib() - shm0);
    gcoll_comm_free(&half);
    gcoll_comm_free(&dup);
    gcoll_finalize();
    return 0;
}
