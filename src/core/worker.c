/* The lanes and their worker threads (see lane.h). A worker spins briefly after each pass that
 * moved something, for latency, then sleeps on its communicators' transport events, so an idle
 * worker takes no CPU from the backprop it overlaps. By default it sleeps for lack of work as
 * SCHED_BATCH, so that waking it does not preempt the application's threads, and drives work
 * under the default policy (GCOLL_WORKER_POLICY). The first worker, idle, runs the transports'
 * service every GCOLL__TP_SERVICE_MS. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm.h"
#include "base/config.h"
#include "core/context.h"
#include "base/error.h"
#include "core/lane.h"
#include "base/log.h"
#include "core/request.h"
#include "base/topo.h"
#include "transports/registry.h"

/* Passes without movement before a worker sleeps: a short spin, the span in which a reply to a
 * message just sent usually lands. */
#define WORKER_SPIN 64
#define WORKER_SLEEP_US 1000

static gcoll__lane_t *lanes; /* nworker lanes (at least one), then the lane of MPI routes */
static size_t nlanes;

gcoll__lane_t *gcoll__lane_for(unsigned comm_id, int uses_mpi)
{
    return uses_mpi ? &lanes[nlanes - 1] : &lanes[comm_id % (nlanes - 1)];
}

gcoll__lane_t *gcoll__lane_at(size_t index)
{
    return &lanes[index];
}

size_t gcoll__lane_count(void)
{
    return nlanes;
}

void gcoll__lane_kick(gcoll__lane_t *l)
{
    if (l->has_worker)
        pthread_cond_signal(&l->wake);
}

int gcoll__worker_cpus(const char *spec, const cpu_set_t *allowed, int local, int nlocal, int workers, int *cpus,
                       int max)
{
    int n = 0;
    if (strcmp(spec, "none") == 0 || workers <= 0)
        return 0;
    if (strcmp(spec, "auto") == 0) {
        /* Ranks and their threads fill a host's cores from the front (binding by core does, and
         * the scheduler starts there too): workers take the allowed cores from the back, this
         * rank's after those of the local ranks before it. */
        int avail[CPU_SETSIZE], na = 0;
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, allowed))
                avail[na++] = c;
        (void)nlocal;
        for (int w = 0; w < workers && n < max && na > 0; w++)
            cpus[n++] = avail[na - 1 - (local * workers + w) % na];
        return n;
    }
    for (const char *p = spec; *p && n < max;) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        for (long c = lo; c <= hi && n < max; c++)
            cpus[n++] = (int)c;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Moves the calling worker to SCHED_BATCH (batch) or back to the default policy. A refusal is said
 * once and ends the switching (*mode becomes normal). Returns whether it is SCHED_BATCH now. */
static int switch_policy(const gcoll__lane_t *l, int batch, int *mode)
{
    struct sched_param sp = {0};
    int rc = pthread_setschedparam(pthread_self(), batch ? SCHED_BATCH : SCHED_OTHER, &sp);
    if (rc == 0)
        return batch;
    GCOLL_LOG(GCOLL_LOG_WARN, "progress thread %d: cannot switch to %s: %s", l->index,
              batch ? "SCHED_BATCH" : "SCHED_OTHER", strerror(rc));
    *mode = GCOLL__WORKER_NORMAL;
    return !batch;
}

static void *worker_main(void *arg)
{
    gcoll__lane_t *l = arg;
    int mode = gcoll__config.worker_policy;
    int batch = mode != GCOLL__WORKER_NORMAL ? switch_policy(l, 1, &mode) : 0;
    pthread_mutex_lock(&l->lock);
    unsigned idle = 0;
    while (!l->stop) {
        if (!l->active || l->waiters) {
            idle = 0;
            /* A nonblocking call wakes it, and a caller that waits right away then drives the
             * operation itself: a worker that preempted that caller (or the peer it waits for)
             * on a busy host would cost the wait a trip through the scheduler. */
            if (mode == GCOLL__WORKER_AUTO && !batch)
                batch = switch_policy(l, 1, &mode);
            if (l->index != 0 || l->active) {
                pthread_cond_wait(&l->wake, &l->lock);
                continue;
            }
            /* The first lane's worker also keeps the transports' connections answered while
             * nothing runs (a lazy peer's dial, a notice owed): the process may be away computing
             * for longer than a peer can wait. */
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_nsec += GCOLL__TP_SERVICE_MS * 1000000L;
            until.tv_sec += until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            if (pthread_cond_timedwait(&l->wake, &l->lock, &until) == ETIMEDOUT) {
                pthread_mutex_unlock(&l->lock);
                gcoll__tp_service();
                pthread_mutex_lock(&l->lock);
            }
            continue;
        }
        /* Driving work alone, beside compute: a batch thread would wait a tick for the core at
         * each of the transport's events, and the operation would stall behind backprop. */
        if (mode == GCOLL__WORKER_AUTO && batch)
            batch = switch_policy(l, 0, &mode);
        idle = gcoll__lane_progress(l) ? 0 : idle + 1;
        /* with more ranks than cores, a spinning worker takes the core of the rank it waits for */
        unsigned spin = l->active && gcoll__comm_crowded(l->active->comm) ? 1 : WORKER_SPIN;
        if (!l->active || idle < spin || l->local_wait) {
            /* let a thread that waits or starts an operation take the lock between passes */
            pthread_mutex_unlock(&l->lock);
            sched_yield();
            pthread_mutex_lock(&l->lock);
            continue;
        }
        /* Sleep on the events of the first request's communicator (the highest priority); the
         * others are looked at again within WORKER_SLEEP_US. */
        gcoll_comm_t c = l->active->comm;
        c->refs++;
        uint32_t ticket = gcoll__comm_ticket(c);
        pthread_mutex_unlock(&l->lock);
        gcoll__comm_idle(c, ticket, WORKER_SLEEP_US);
        pthread_mutex_lock(&l->lock);
        gcoll__comm_release(c);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* This rank's place among the ranks of its host, for GCOLL_WORKER_AFFINITY=auto. */
static void local_place(int *local, int *nlocal)
{
    gcoll__boot_t *node = NULL;
    *local = 0;
    *nlocal = 1;
    if (!gcoll__context.boot || gcoll__boot_split_node(gcoll__context.boot, &node) != GCOLL_SUCCESS)
        return;
    *local = node->rank;
    *nlocal = node->size;
    gcoll__boot_free(node);
}

gcoll_status_t gcoll__lanes_start(void)
{
    int workers = gcoll__config.worker_count;
    nlanes = (workers > 0 ? (size_t)workers : 1) + 1;
    lanes = calloc(nlanes, sizeof(*lanes));
    if (!lanes)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for %zu progress lanes", nlanes);
    int cpus[64], ncpus = 0;
    if (workers > 0 && strcmp(gcoll__config.worker_affinity, "none") != 0) {
        int local, nlocal;
        local_place(&local, &nlocal);
        ncpus = gcoll__worker_cpus(gcoll__config.worker_affinity, &gcoll__topo()->binding, local, nlocal, workers, cpus,
                                   64);
    }
    pthread_condattr_t mono; /* the service's timed waits are not moved by the wall clock */
    pthread_condattr_init(&mono);
    pthread_condattr_setclock(&mono, CLOCK_MONOTONIC);
    for (size_t i = 0; i < nlanes; i++) {
        gcoll__lane_t *l = &lanes[i];
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->wake, &mono);
        l->index = (int)i;
        if (workers == 0 || i == nlanes - 1)
            continue;
        int rc = pthread_create(&l->worker, NULL, worker_main, l);
        if (rc != 0) {
            pthread_condattr_destroy(&mono);
            gcoll__lanes_stop();
            return gcoll__error(GCOLL_ERR_SYSTEM, "starting progress thread %zu: %s", i, strerror(rc));
        }
        l->has_worker = 1;
        char name[16];
        snprintf(name, sizeof(name), "gcoll-wk%u", (unsigned)i % 1000u);
        pthread_setname_np(l->worker, name);
        if (ncpus > 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpus[i % (size_t)ncpus], &set);
            rc = pthread_setaffinity_np(l->worker, sizeof(set), &set);
            if (rc != 0)
                GCOLL_LOG(GCOLL_LOG_WARN, "progress thread %zu: cannot pin it to CPU %d: %s", i,
                          cpus[i % (size_t)ncpus], strerror(rc));
            else
                GCOLL_LOG(GCOLL_LOG_INFO, "progress thread %zu runs on CPU %d", i, cpus[i % (size_t)ncpus]);
        }
    }
    pthread_condattr_destroy(&mono);
    GCOLL_LOG(GCOLL_LOG_INFO, "%d progress thread%s", workers, workers == 1 ? "" : "s");
    return GCOLL_SUCCESS;
}

void gcoll__lanes_stop(void)
{
    for (size_t i = 0; i < nlanes; i++) {
        gcoll__lane_t *l = &lanes[i];
        if (!l->has_worker)
            continue;
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_cond_signal(&l->wake);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->worker, NULL);
        l->has_worker = 0;
    }
    for (size_t i = 0; i < nlanes; i++) {
        pthread_mutex_destroy(&lanes[i].lock);
        pthread_cond_destroy(&lanes[i].wake);
    }
    free(lanes);
    lanes = NULL;
    nlanes = 0;
}
