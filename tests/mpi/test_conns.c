/* The sockets a job over tcp holds (run with GCOLL_TRANSPORT_INTRA=inter GCOLL_TRANSPORT_INTER=tcp):
 * eager (GCOLL_TCP_CONNECT=eager), the world opens one to every peer when created; lazy, none until
 * a collective needs the peer, and a job that only allreduces (every size class, so every
 * algorithm the selection takes) opens at most 2 log2(n) + 2. Either way duplicates of the world
 * open none: one connection per pair of processes carries every communicator. Each result is
 * checked against the sum written out; rank 0 prints the counts on a "CONNS" line. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "sockets.h"

/* The counts (the most of any rank), on rank 0's CONNS line. Collective. */
static void report(int lazy, const int *mine)
{
    int m[4];
    MPI_Allreduce(mine, m, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (h_rank == 0)
        printf("CONNS np=%d connect=%s sockets (the most of any rank): %d after gcoll_init, %d after allreduces "
               "4 B-4 MiB, %d per duplicate so used, %d with 4 duplicates\n",
               h_size, lazy ? "lazy" : "eager", m[0], m[1], m[2], m[3]);
}

/* Allreduces of every size class from 4 B to 4 MiB on c, each checked. */
static void allreduce_sizes(gcoll_comm_t c)
{
    size_t max = (size_t)1 << 20; /* floats: 4 MiB */
    float *v = malloc(max * sizeof(float));
    for (size_t count = 1; v && count <= max; count *= 4) {
        for (size_t i = 0; i < count; i++)
            v[i] = (float)(h_rank + 1 + (int)(i % 3));
        CHECK_OK(gcoll_allreduce(v, v, count, GCOLL_FLOAT32, GCOLL_SUM, c));
        int bad = 0;
        for (size_t i = 0; i < count; i++)
            bad += v[i] != (float)(h_size * (h_size + 1) / 2 + h_size * (int)(i % 3));
        CHECK(bad == 0, "allreduce of %zu floats: %d wrong", count, bad);
    }
    free(v);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided); /* first: its own sockets are not counted */
    int before = count_sockets();
    gcoll_comm_t world = h_init(&argc, &argv);
    const char *mode = getenv("GCOLL_TCP_CONNECT");
    int lazy = mode && strcmp(mode, "lazy") == 0;
    int nsocks = getenv("GCOLL_TCP_NSOCKS") ? atoi(getenv("GCOLL_TCP_NSOCKS")) : 1;
    int log2n = 0;
    while ((1 << log2n) < h_size)
        log2n++;
    int bound = nsocks * (2 * log2n + 2);
    MPI_Barrier(MPI_COMM_WORLD);
    int at_init = count_sockets() - before;
    allreduce_sizes(world);
    MPI_Barrier(MPI_COMM_WORLD);
    int after_use = count_sockets() - before;
    /* four duplicates, each used the same way */
    gcoll_comm_t dups[4];
    for (int k = 0; k < 4; k++) {
        CHECK_OK(gcoll_comm_dup(world, &dups[k]));
        allreduce_sizes(dups[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int with_dups = count_sockets() - before;
    int per_dup = (with_dups - after_use) / 4;
    if (lazy) {
        /* at init: the process's listening socket and the bootstrap's own, no peer yet */
        CHECK(at_init <= 2, "lazy: %d sockets right after gcoll_init", at_init);
        CHECK(after_use - at_init <= bound, "lazy: %d sockets opened by allreduces at %d ranks (bound %d)",
              after_use - at_init, h_size, bound);
        CHECK(with_dups - at_init <= bound, "lazy: %d sockets with 4 used duplicates at %d ranks (bound %d)",
              with_dups - at_init, h_size, bound);
    } else {
        CHECK(at_init >= nsocks * (h_size - 1), "eager: %d sockets after gcoll_init at %d ranks", at_init, h_size);
        CHECK(after_use == at_init, "eager: allreduces opened %d more", after_use - at_init);
        CHECK(with_dups == after_use, "eager: 4 duplicates opened %d sockets", with_dups - after_use);
    }
    report(lazy, (int[4]){at_init, after_use, per_dup, with_dups});
    for (int k = 0; k < 4; k++)
        CHECK_OK(gcoll_comm_free(&dups[k]));
    int rc = h_finish("conns");
    MPI_Finalize();
    return rc;
}
