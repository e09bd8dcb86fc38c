/* The library context: init state, the world communicator and the transport in use. Progress
 * is serialized per lane (lane.h). */
#ifndef GCOLL_CONTEXT_H
#define GCOLL_CONTEXT_H

#include "base/boot.h"
#include "gcoll.h"
#include "transports/transport.h"

typedef struct {
    int initialized;
    int init_count;
    int mpi_owned; /* gcoll_init called MPI_Init_thread, so gcoll_finalize ends MPI */
    gcoll_comm_t world;
    const gcoll__transport_t *transport; /* between hosts */
    const char *transport_why;           /* why it was chosen, for the logs */
    gcoll__boot_mode_t boot_mode;        /* launched by MPI, or from the environment without it */
    gcoll__boot_t *boot;                 /* the world's group until the world communicator takes it */
} gcoll__context_t;

extern gcoll__context_t gcoll__context;

#endif
