/* Lanes: the unit of progress. Every communicator belongs to one lane (its id modulo the lane
 * count); a lane has its own lock, its list of requests in flight, its budget of bytes in
 * flight, and, with GCOLL_WORKER_COUNT > 0, a worker thread that drives those requests while
 * the application computes. Lanes share nothing, so workers never contend with each other. */
#ifndef GCOLL_LANE_H
#define GCOLL_LANE_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "gcoll.h"

typedef struct gcoll__lane {
    pthread_mutex_t lock;
    pthread_cond_t wake;          /* a worker with nothing to do sleeps here */
    struct gcoll_request *active; /* highest priority first, issue order among equals */
    size_t inflight;              /* bytes of sends posted and not yet complete, each operation's first aside */
    unsigned passes;              /* progress passes, for the clock's sampling */
    int local_wait;               /* the last pass left a step waiting on local hardware (a GPU):
                                     waiters poll, since no peer's message will wake them */
    int waiters;                  /* application threads in gcoll_wait: they drive the lane, so
                                     the worker stands down rather than compete for the cores */
    int index;
    int has_worker, stop;
    pthread_t worker;
} gcoll__lane_t;

/* At init, after the configuration: the lanes and their workers (pinned per
 * GCOLL_WORKER_AFFINITY). At finalize, after every request has ended: joins and frees them. */
gcoll_status_t gcoll__lanes_start(void);
void gcoll__lanes_stop(void);
/* The lane of a new communicator: by its id among the worker lanes, or, for one that reaches a
 * peer through MPI, the lane no worker drives (Open MPI 4.1's TCP BTL loses connections that
 * two threads of a process open to one peer at once: the application's own MPI calls and a
 * worker would). */
gcoll__lane_t *gcoll__lane_for(unsigned comm_id, int uses_mpi);
/* Every lane, for finalize: index 0 .. gcoll__lane_count() - 1. */
gcoll__lane_t *gcoll__lane_at(size_t index);
size_t gcoll__lane_count(void);
/* Wakes the lane's worker, if it sleeps for lack of work. Lock held. */
void gcoll__lane_kick(gcoll__lane_t *l);
/* One progress pass over the lane's requests; returns how many steps moved. Lock held. */
unsigned gcoll__lane_progress(gcoll__lane_t *l);

/* The cores the worker threads get, one per worker in turn: spec is GCOLL_WORKER_AFFINITY
 * ("none", "auto" or a CPU list), allowed the rank's binding, local/nlocal its place among the
 * ranks of its host, workers the worker count. Pure, for tests. Returns the number of CPUs
 * written to cpus (0: leave the workers unpinned), at most max. */
int gcoll__worker_cpus(const char *spec, const cpu_set_t *allowed, int local, int nlocal, int workers, int *cpus,
                       int max);

#endif
