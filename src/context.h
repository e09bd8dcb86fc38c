/* The library context: init state, the world communicator, the transport in use, and the
 * engine lock that serializes progress (schedules and transport calls). */
#ifndef GCOLL_CONTEXT_H
#define GCOLL_CONTEXT_H

#include <pthread.h>

#include "gcoll.h"
#include "transport.h"

typedef struct {
    int initialized;
    int init_count;
    int mpi_owned; /* gcoll_init called MPI_Init_thread, so gcoll_finalize ends MPI */
    gcoll_comm_t world;
    const gcoll__transport_t *transport; /* between hosts */
    const char *transport_why;           /* why it was chosen, for the logs */
    pthread_mutex_t lock;
    struct gcoll_request *active; /* requests in flight, highest priority first */
} gcoll__context_t;

extern gcoll__context_t gcoll__context;

void gcoll__context_lock(void);
void gcoll__context_unlock(void);

#endif
