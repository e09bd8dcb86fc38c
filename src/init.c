/* Library lifetime: MPI bring-up (THREAD_MULTIPLE unless the caller started MPI), the
 * configuration, the kernel choice, and the world communicator. Init and finalize nest. */
#include <stdio.h>

#include <mpi.h>

#include "comm.h"
#include "config.h"
#include "context.h"
#include "error.h"
#include "log.h"
#include "reduce.h"
#include "lane.h"
#include "request.h"
#include "timeline.h"
#include "topo.h"
#include "choose.h"
#include "cuda/cuda.h"

gcoll__context_t gcoll__context;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static gcoll_status_t start_mpi(int *argc, char ***argv)
{
    int inited = 0, finalized = 0, provided = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "MPI was already finalized: gcoll cannot start");
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
            return gcoll__error(GCOLL_ERR_TRANSPORT, "MPI_Init_thread failed");
        gcoll__context.mpi_owned = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    gcoll__log_set_identity(rank);
    if (provided < MPI_THREAD_MULTIPLE)
        GCOLL_LOG(GCOLL_LOG_WARN, "MPI provides thread level %d, not MPI_THREAD_MULTIPLE: call gcoll "
                  "from one thread at a time (HINT: let gcoll_init start MPI)", provided);
    return GCOLL_SUCCESS;
}

static gcoll_status_t start(int *argc, char ***argv)
{
    GCOLL_CHECK(start_mpi(argc, argv));
    GCOLL_CHECK(gcoll__config_load());
    gcoll__config_dump();
    gcoll__topo_log(); /* discovers this node once; the network transports read it */
    GCOLL_CHECK(gcoll__kernels_select(gcoll__config.reduce_isa));
    GCOLL_CHECK(gcoll__transport_choose());
    GCOLL_CHECK(gcoll__lanes_start());
    GCOLL_CHECK(gcoll__timeline_open());
    GCOLL_CHECK(gcoll__comm_create(MPI_COMM_WORLD, &gcoll__context.world));
    gcoll__context.world->is_world = 1;
    gcoll__context.initialized = 1;
    GCOLL_LOG(GCOLL_LOG_INFO, "gcoll %s ready: %d ranks over %s", gcoll_version(), gcoll__context.world->size,
              gcoll__context.world->tpname);
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_init(int *argc, char ***argv)
{
    if ((argc == NULL) != (argv == NULL))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "argc and argv must both be NULL or both be set");
    pthread_mutex_lock(&init_lock);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (gcoll__context.init_count == 0) {
        st = start(argc, argv);
        if (st != GCOLL_SUCCESS) {
            GCOLL_LOG(GCOLL_LOG_ERROR, "gcoll_init failed: %s", gcoll_last_error());
            gcoll__timeline_close();
            gcoll__lanes_stop();
            gcoll__transport_release();
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
        gcoll__timeline_close();
        gcoll__cuda_release();
        gcoll__context.world = NULL;
        gcoll__transport_release();
        gcoll__topo_release();
        if (gcoll__context.mpi_owned)
            MPI_Finalize();
        gcoll__context.mpi_owned = 0;
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
