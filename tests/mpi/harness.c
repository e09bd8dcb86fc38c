/* See harness.h. */
#include <mpi.h>
#include <stdlib.h>

#include "harness.h"
#include "reference.h"

int h_rank, h_size;

gcoll_comm_t h_init(int *argc, char ***argv)
{
    gcoll_comm_t world;
    if (gcoll_init(argc, argv) != GCOLL_SUCCESS || gcoll_comm_world(&world) != GCOLL_SUCCESS) {
        fprintf(stderr, "test: gcoll_init failed: %s\n", gcoll_last_error());
        exit(2);
    }
    h_rank = gcoll_comm_rank(world);
    h_size = gcoll_comm_size(world);
    check_set_rank(h_rank, h_size);
    ref_set_ranks(h_size);
    return world;
}

int h_finish(const char *name)
{
    int mpi = 0, rc;
    MPI_Initialized(&mpi);
    if (mpi)
        rc = check_summary(name, CHECK_NP);
    else /* launched without MPI: each rank reports, the launching script sums (tests/boot.sh) */
        rc = check_summary_rank(name, CHECK_NP);
    gcoll_finalize();
    return rc;
}
