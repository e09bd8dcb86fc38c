/* The node channel: in use on one host (unless GCOLL_TRANSPORT_INTRA=mpi), its segment already
 * unlinked from /dev/shm once communicators exist, and, with "kill", rank 1 dies by SIGKILL
 * in the middle of the job (tests/shm_leak.sh then checks that nothing was left behind). */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int segments_in_dev_shm(void)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, "gcoll-", 6) == 0;
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    int kill_one = argc > 1 && strcmp(argv[1], "kill") == 0;
    const char *intra = getenv("GCOLL_TRANSPORT_INTRA");
    int want_shm = h_size > 1 && !(intra && strcmp(intra, "shm") != 0);
    gcoll_comm_t dup, half;
    CHECK_OK(gcoll_comm_dup(world, &dup));
    CHECK_OK(gcoll_comm_split(world, h_rank % 2, 0, &half));
    CHECK_OK(gcoll_barrier(world));
    CHECK(segments_in_dev_shm() == 0, "%d gcoll segment(s) still named in /dev/shm after set-up",
          segments_in_dev_shm());

    const char *algo = NULL;
    CHECK_OK(gcoll_comm_algorithm(dup, "allreduce", 4, GCOLL_FLOAT32, &algo));
    CHECK(algo && (strncmp(algo, "shm_", 4) == 0) == want_shm, "allreduce of 4 floats uses %s (shm expected: %d)",
          algo ? algo : "?", want_shm);
    CHECK_OK(gcoll_comm_algorithm(dup, "allgather", 1 << 20, GCOLL_FLOAT32, &algo));
    CHECK(algo && (strncmp(algo, "shm_", 4) == 0) == want_shm, "allgather of 4 MiB uses %s", algo ? algo : "?");

    double x = h_rank, sum = 0;
    CHECK_OK(gcoll_allreduce(&x, &sum, 1, GCOLL_FLOAT64, GCOLL_SUM, dup));
    CHECK(sum == h_size * (h_size - 1) / 2.0, "sum %g", sum);
    if (kill_one && h_rank == 1)
        raise(SIGKILL);
    if (!kill_one) {
        CHECK_OK(gcoll_comm_free(&half));
        CHECK_OK(gcoll_comm_free(&dup));
    }
    return h_finish(kill_one ? "shm-kill" : "shm");
}
