/* gcoll_mpi.h: MPI interop. Kept apart from gcoll.h so that programs that only use gcoll need no
 * MPI header. A communicator built here is independent of the MPI one (a private duplicate). */
#ifndef GCOLL_MPI_H
#define GCOLL_MPI_H

#include <mpi.h>
#include "gcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over mpi_comm. gcoll must be initialized. */
GCOLL_API gcoll_status_t gcoll_comm_from_mpi(MPI_Comm mpi_comm, gcoll_comm_t *comm);

/* Whether GCOLL_MPI_COLLS lets the MPI interposer (lib/libgcoll_mpi.so) take over MPI's call
 * named call: "allreduce", "iallreduce", "reduce_scatter_block", "allgather", "bcast", "reduce"
 * or "barrier". gcoll must be initialized. */
GCOLL_API gcoll_status_t gcoll_mpi_coll_enabled(const char *call, int *enabled);

#ifdef __cplusplus
}
#endif
#endif /* GCOLL_MPI_H */
