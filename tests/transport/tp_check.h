/* What every transport-level test shares on top of tests/common/check.h (CHECK, the counts, the
 * RESULT line, check_now): its rank and size in MPI_COMM_WORLD, and the bootstrap group the
 * transports are created with. */
#ifndef GCOLL_TP_CHECK_H
#define GCOLL_TP_CHECK_H

#include <stdio.h>

#include <mpi.h>

#include "base/boot.h"
#include "check.h"

static int rank, size;

/* MPI_Init, then rank and size (also for the failure lines). */
static void tp_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_set_rank(rank, size);
}

/* The bootstrap group transports are created with: MPI_COMM_WORLD's, made at the first call and
 * kept to the end. */
static gcoll__boot_t *world_group(void)
{
    static gcoll__boot_t *g;
    if (!g && gcoll__boot_from_mpi(MPI_COMM_WORLD, &g) != GCOLL_SUCCESS) {
        fprintf(stderr, "test: no bootstrap group: %s\n", gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return g;
}

#endif
