/* The sockets a job over tcp or ofi holds (run with GCOLL_TRANSPORT_INTRA=inter and
 * GCOLL_TRANSPORT_INTER=tcp or ofi). Over tcp:
 * eager (GCOLL_TCP_CONNECT=eager), the world opens one to every peer when created; lazy (the default), none until
 * a collective needs the peer, and a job that only allreduces (every size class, so every
 * algorithm the selection takes) opens at most 2 log2(n) + 2. Either way duplicates of the world
 * open none: one connection per pair of processes carries every communicator. Lazy under
 * GCOLL_TCP_MAX_CONNS, an alltoall opens a connection to every peer, and the idle ones close
 * back to the limit while the job goes on allreducing. Over ofi (tcp;ofi_rxm here), the process's
 * one endpoint carries every communicator: duplicates open no descriptor of any kind, and its
 * connections too come on demand. Each result is checked against the sum written out; rank 0
 * prints the counts on a "CONNS" line. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "sockets.h"

/* The counts (the most of any rank), on rank 0's CONNS line. Collective. */
static void report(const char *how, const int *mine)
{
    int m[4];
    MPI_Allreduce(mine, m, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (h_rank == 0)
        printf("CONNS np=%d %s (the most of any rank): %d after gcoll_init, %d after allreduces "
               "4 B-4 MiB, %d per duplicate so used, %d with 4 duplicates\n",
               h_size, how, m[0], m[1], m[2], m[3]);
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

/* Over ofi: the sockets and all descriptors, at init, after use, with 4 used duplicates. */
static void ofi_counts(gcoll_comm_t world, int bound)
{
    int s0 = count_sockets(), f0 = count_fds("");
    MPI_Barrier(MPI_COMM_WORLD); /* counted everywhere before any rank connects for the allreduces */
    allreduce_sizes(world);
    MPI_Barrier(MPI_COMM_WORLD);
    int s1 = count_sockets(), f1 = count_fds("");
    gcoll_comm_t dups[4];
    for (int k = 0; k < 4; k++) {
        CHECK_OK(gcoll_comm_dup(world, &dups[k]));
        allreduce_sizes(dups[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int s2 = count_sockets(), f2 = count_fds("");
    CHECK(s1 - s0 <= bound, "ofi: %d sockets opened by allreduces at %d ranks (bound %d)", s1 - s0, h_size, bound);
    CHECK(f2 == f1, "ofi: 4 used duplicates opened %d descriptors (%d sockets)", f2 - f1, s2 - s1);
    report("ofi sockets", (int[4]){s0, s1, (s2 - s1) / 4, s2});
    report("ofi descriptors", (int[4]){f0, f1, (f2 - f1) / 4, f2});
    for (int k = 0; k < 4; k++)
        CHECK_OK(gcoll_comm_free(&dups[k]));
}

/* Lazy with GCOLL_TCP_MAX_CONNS=limit: after an alltoall (every peer), small allreduces go on
 * until no rank holds more than limit + what a small allreduce touches (the sockets of the idle
 * connections close in those allreduces' progress passes). The most sockets any rank held then. */
static int idle_limit(gcoll_comm_t world, int limit, int nsocks, int bound, int before)
{
    size_t n = 256 * (size_t)h_size;
    int *out = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int));
    for (size_t i = 0; out && in && i < n; i++)
        out[i] = h_rank * 1000 + (int)(i / 256);
    CHECK_OK(gcoll_alltoall(out, in, 256, GCOLL_INT32, world));
    int bad = 0;
    for (size_t i = 0; out && in && i < n; i++)
        bad += in[i] != (int)(i / 256) * 1000 + h_rank;
    CHECK(out && in && bad == 0, "alltoall under GCOLL_TCP_MAX_CONNS=%d: %d wrong", limit, bad);
    free(out);
    free(in);
    int allowed = 2 + nsocks * (limit + bound), most = 0;
    for (int round = 0; round < 200; round++) {
        float v = 1;
        CHECK_OK(gcoll_allreduce(&v, &v, 1, GCOLL_FLOAT32, GCOLL_SUM, world));
        CHECK(v == (float)h_size, "allreduce of one float under the limit: %g", v);
        int mine = count_sockets() - before;
        MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (most <= allowed)
            break;
    }
    CHECK(most <= allowed,
          "GCOLL_TCP_MAX_CONNS=%d: a rank still holds %d sockets after an alltoall and 200 allreduces "
          "(at most %d expected)",
          limit, most, allowed);
    return most;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided); /* first: its own sockets are not counted */
    int before = count_sockets();
    gcoll_comm_t world = h_init(&argc, &argv);
    char mode[16], inter[16];
    CHECK_OK(gcoll_config_get("GCOLL_TCP_CONNECT", mode, sizeof(mode), NULL));
    int lazy = strcmp(mode, "lazy") == 0;
    int nsocks = getenv("GCOLL_TCP_NSOCKS") ? atoi(getenv("GCOLL_TCP_NSOCKS")) : 1;
    int log2n = 0;
    while ((1 << log2n) < h_size)
        log2n++;
    int bound = nsocks * (2 * log2n + 2);
    CHECK_OK(gcoll_config_get("GCOLL_TRANSPORT_INTER", inter, sizeof(inter), NULL));
    if (strcmp(inter, "ofi") == 0) {
        ofi_counts(world, 2 * log2n + 2);
        int rc = h_finish("conns");
        MPI_Finalize();
        return rc;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int at_init = count_sockets() - before;
    MPI_Barrier(MPI_COMM_WORLD); /* counted everywhere before any rank dials for the allreduces */
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
    report(lazy ? "connect=lazy sockets" : "connect=eager sockets", (int[4]){at_init, after_use, per_dup, with_dups});
    const char *max = getenv("GCOLL_TCP_MAX_CONNS");
    if (lazy && max && atoi(max) > 0) {
        int most = idle_limit(world, atoi(max), nsocks, log2n + 1, before);
        if (h_rank == 0)
            printf("CONNS np=%d GCOLL_TCP_MAX_CONNS=%s: %d sockets (the most of any rank) after an alltoall and "
                   "allreduces of one float\n",
                   h_size, max, most);
    }
    for (int k = 0; k < 4; k++)
        CHECK_OK(gcoll_comm_free(&dups[k]));
    int rc = h_finish("conns");
    MPI_Finalize();
    return rc;
}
