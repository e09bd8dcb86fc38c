/* The MPI transport (mpi_transport.c): point-to-point over a private duplicate of the bootstrap
 * MPI communicator, framed (frame.h) so that its messages are checked for mismatches. */
#ifndef GCOLL_MPI_TRANSPORT_H
#define GCOLL_MPI_TRANSPORT_H

#include <stddef.h>

#include "transports/transport.h"

extern const gcoll__transport_t gcoll__transport_mpi;

/* For the transport list (registry.h): whether MPI can carry messages here (MPI is initialised
 * and not yet finalised), and why in why. */
int gcoll__mpi_serves(char *why, size_t len);

#endif
