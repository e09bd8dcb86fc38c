/* Library lifetime: the configuration, the world's bootstrap (MPI, THREAD_MULTIPLE unless the
 * caller started it, the TCP rendezvous of a launch without MPI, or the application's store:
 * boot.c), the kernel choice, and the world communicator. Init and finalize nest. */
#include <stdio.h>
#include <time.h>

#include <mpi.h>

#include "core/comm.h"
#include "base/config.h"
#include "core/context.h"
#include "base/error.h"
#include "base/log.h"
#include "base/reduce.h"
#include "base/scratch.h"
#include "core/lane.h"
#include "core/request.h"
#include "core/timeline.h"
#include "base/topo.h"
#include "transports/choose.h"
#include "cuda/cuda.h"

gcoll__context_t gcoll__context;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* The world's bootstrap group: the application's store when it gave one, else as launched. */
static gcoll_status_t boot_world(int *argc, char ***argv, const gcoll_store_t *store, int rank, int size)
{
    if (!store)
        return gcoll__boot_world(argc, argv, &gcoll__context.boot_mode, &gcoll__context.mpi_owned,
                                 &gcoll__context.boot);
    gcoll__context.boot_mode = GCOLL_BOOT_STORE;
    gcoll__context.mpi_owned = 0;
    GCOLL_CHECK(gcoll__boot_store(store, rank, size, &gcoll__context.boot));
    gcoll__log_set_identity(rank);
    return GCOLL_SUCCESS;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static gcoll_status_t start(int *argc, char ***argv, const gcoll_store_t *store, int rank, int size)
{
    double t0 = seconds(); /* the phases' times go on the "ready" line: where a slow start went */
    gcoll__log_set_identity(store ? -1 : gcoll__boot_env_rank()); /* the bootstrap confirms it */
    GCOLL_CHECK(gcoll__config_load());
    GCOLL_CHECK(boot_world(argc, argv, store, rank, size));
    double t1 = seconds();
    gcoll__config_dump();
    const gcoll__tp_entry_t *mpi = gcoll__tp_find("mpi");
    int inter_mpi = gcoll__transport_inter() == mpi, intra_mpi = gcoll__transport_intra() == mpi;
    if (gcoll__context.boot_mode != GCOLL_BOOT_MPI && (inter_mpi || intra_mpi))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "GCOLL_TRANSPORT_%s=mpi: this job was launched without MPI "
                            "(%s), so there is no MPI to carry messages "
                            "(HINT: leave it auto, or launch with mpirun)",
                            inter_mpi ? "INTER" : "INTRA",
                            gcoll__context.boot_mode == GCOLL_BOOT_STORE ? "gcoll_init_store"
                                                                         : "GCOLL_BOOT=env, or GCOLL_RANK/RANK... set");
    gcoll__topo_log(); /* discovers this node once; the network transports read it */
    GCOLL_CHECK(gcoll__kernels_select(gcoll__config.reduce_isa));
    GCOLL_CHECK(gcoll__transport_choose(&gcoll__context.transport, &gcoll__context.transport_why));
    GCOLL_CHECK(gcoll__lanes_start());
    GCOLL_CHECK(gcoll__timeline_open());
    double t2 = seconds();
    gcoll__boot_t *boot = gcoll__context.boot;
    gcoll__context.boot = NULL; /* the world communicator owns it now, and frees it on failure */
    GCOLL_CHECK(gcoll__comm_create(boot, &gcoll__context.world));
    gcoll__context.world->is_world = 1;
    gcoll__context.initialized = 1;
    double t3 = seconds();
    GCOLL_LOG(GCOLL_LOG_INFO,
              "gcoll %s ready: %d ranks over %s in %.3f s (bootstrap %.3f s, this host and the kernels %.3f s, the "
              "world communicator %.3f s)",
              gcoll_version(), gcoll__context.world->size, gcoll__context.world->tpname, t3 - t0, t1 - t0, t2 - t1,
              t3 - t2);
    return GCOLL_SUCCESS;
}

static gcoll_status_t init(int *argc, char ***argv, const gcoll_store_t *store, int rank, int size)
{
    pthread_mutex_lock(&init_lock);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (gcoll__context.init_count == 0) {
        st = start(argc, argv, store, rank, size);
        if (st != GCOLL_SUCCESS) {
            GCOLL_LOG(GCOLL_LOG_ERROR, "gcoll_init failed: %s", gcoll_last_error());
            gcoll__timeline_close();
            gcoll__lanes_stop();
            gcoll__transport_release();
            gcoll__boot_free(gcoll__context.boot);
            gcoll__context.boot = NULL;
            gcoll__config_unload();
            if (gcoll__context.mpi_owned)
                MPI_Finalize();
            gcoll__context.mpi_owned = 0;
        }
    }
    if (st == GCOLL_SUCCESS)
        gcoll__context.init_count++;
    pthread_mutex_unlock(&init_lock);
    return st;
}

GCOLL_API gcoll_status_t gcoll_init(int *argc, char ***argv)
{
    if ((argc == NULL) != (argv == NULL))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "argc and argv must both be NULL or both be set");
    return init(argc, argv, NULL, 0, 0);
}

GCOLL_API gcoll_status_t gcoll_init_store(int rank, int size, const gcoll_store_t *store)
{
    if (!store)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "store is NULL");
    return init(NULL, NULL, store, rank, size);
}

GCOLL_API gcoll_status_t gcoll_finalize(void)
{
    pthread_mutex_lock(&init_lock);
    if (gcoll__context.init_count == 0) {
        pthread_mutex_unlock(&init_lock);
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll_finalize without gcoll_init");
    }
    if (--gcoll__context.init_count == 0) {
        gcoll__engine_abort_all();
        gcoll__lanes_stop(); /* nothing is in flight: the workers sleep */
        gcoll__context.initialized = 0;
        gcoll__comm_free_all();
        gcoll__scratch_drain();
        gcoll__timeline_close();
        gcoll__cuda_ipc_release();
        gcoll__cuda_release();
        gcoll__context.world = NULL;
        gcoll__transport_release();
        gcoll__topo_release();
        if (gcoll__context.mpi_owned)
            MPI_Finalize();
        gcoll__context.mpi_owned = 0;
        gcoll__config_unload();
    }
    pthread_mutex_unlock(&init_lock);
    return GCOLL_SUCCESS;
}

#define GCOLL_STR2(x) #x
#define GCOLL_STR(x) GCOLL_STR2(x)
GCOLL_API const char *gcoll_version(void)
{
    return GCOLL_STR(GCOLL_VERSION_MAJOR) "." GCOLL_STR(GCOLL_VERSION_MINOR) "." GCOLL_STR(GCOLL_VERSION_PATCH);
}
