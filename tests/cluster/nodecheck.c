/* The cluster's hosts are distinct nodes to MPI: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), which
 * gcoll uses to decide "same host", must give each rank exactly the ranks of its own namespace
 * host, and every node a hostname of its own. Usage: cluster_nodecheck HOSTS RANKS_PER_HOST.
 * Prints "RESULT NAME passed=N failed=M" from rank 0 (NAME from argv[3], default nodes). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, lrank, lsize, len;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_set_rank(rank, size);
    int hosts = argc > 1 ? atoi(argv[1]) : 0, rph = argc > 2 ? atoi(argv[2]) : 0;
    const char *name = argc > 3 ? argv[3] : "nodes";

    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &lsize);
    char host[MPI_MAX_PROCESSOR_NAME] = {0};
    MPI_Get_processor_name(host, &len);

    /* per rank: its node's size, whether it leads its node, and its hostname */
    int mine[2] = {lsize, lrank == 0}, *all = malloc(sizeof(int) * 2 * size);
    char *names = calloc(size, MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    /* every rank of one node must carry one hostname, and no other node that hostname */
    char *lead = calloc(1, MPI_MAX_PROCESSOR_NAME);
    if (lrank == 0)
        memcpy(lead, host, MPI_MAX_PROCESSOR_NAME);
    MPI_Bcast(lead, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, node);
    int same = strcmp(lead, host) == 0, all_same = 0;
    MPI_Reduce(&same, &all_same, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        int nodes = 0, distinct = 0;
        for (int r = 0; r < size; r++) {
            nodes += all[2 * r + 1];
            CHECK(all[2 * r] == rph, "rank %d on %s: %d ranks share its node, want %d", r,
                  names + (size_t)r * MPI_MAX_PROCESSOR_NAME, all[2 * r], rph);
            int seen = 0;
            for (int q = 0; q < r; q++)
                seen |=
                    strcmp(names + (size_t)q * MPI_MAX_PROCESSOR_NAME, names + (size_t)r * MPI_MAX_PROCESSOR_NAME) == 0;
            distinct += !seen;
        }
        CHECK(nodes == hosts && distinct == hosts && all_same,
              "%d nodes and %d distinct hostnames (one per node: %s), want %d", nodes, distinct,
              all_same ? "yes" : "no", hosts);
        printf("# %d ranks: %d nodes by MPI_COMM_TYPE_SHARED, %d hostnames:", size, nodes, distinct);
        for (int r = 0; r < size; r++)
            printf(" %d@%s", r, names + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        printf("\n");
        fflush(stdout);
    }
    int rc = check_summary(name, 0); /* rank 0 made every check */
    free(all);
    free(names);
    free(lead);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return rc;
}
