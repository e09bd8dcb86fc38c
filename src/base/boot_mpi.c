/* The bootstrap group over an MPI communicator (a private duplicate, errors returned rather
 * than fatal), and MPI's bring-up when the world is MPI_COMM_WORLD. */
#include <stdlib.h>
#include <time.h>

#include "base/boot.h"
#include "base/error.h"
#include "base/log.h"

#define NAP_NS 50000 /* a sleeping barrier's poll interval */

static gcoll_status_t failed(const char *what)
{
    return gcoll__error(GCOLL_ERR_TRANSPORT, "bootstrap: %s failed", what);
}

static gcoll_status_t m_allgather(gcoll__boot_t *b, const void *mine, void *all, size_t len)
{
    if (len > INT32_MAX)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "bootstrap: allgather of %zu bytes is too large", len);
    if (MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, b->comm) != MPI_SUCCESS)
        return failed("MPI_Allgather");
    return GCOLL_SUCCESS;
}

static gcoll_status_t m_bcast(gcoll__boot_t *b, void *buf, size_t len, int root)
{
    if (len > INT32_MAX)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "bootstrap: bcast of %zu bytes is too large", len);
    return MPI_Bcast(buf, (int)len, MPI_BYTE, root, b->comm) == MPI_SUCCESS ? GCOLL_SUCCESS : failed("MPI_Bcast");
}

/* Busy-polling bystanders would take the cores of the link probe's measuring pair and inflate
 * the latency it reads: the barrier naps. */
static gcoll_status_t m_barrier(gcoll__boot_t *b)
{
    MPI_Request req;
    int done = 0;
    if (MPI_Ibarrier(b->comm, &req) != MPI_SUCCESS)
        return failed("MPI_Ibarrier");
    while (!done) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return failed("MPI_Test of a barrier");
        if (!done)
            nanosleep(&(struct timespec){0, NAP_NS}, NULL);
    }
    return GCOLL_SUCCESS;
}

static const gcoll__boot_ops_t mpi_ops;

/* Takes comm (freed on failure). */
static gcoll_status_t wrap(MPI_Comm comm, gcoll__boot_t **out)
{
    gcoll__boot_t *b = calloc(1, sizeof(*b));
    if (!b) {
        MPI_Comm_free(&comm);
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a group");
    }
    b->ops = &mpi_ops;
    b->comm = comm;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &b->rank);
    MPI_Comm_size(comm, &b->size);
    *out = b;
    return GCOLL_SUCCESS;
}

static gcoll_status_t m_split(gcoll__boot_t *b, int color, int key, gcoll__boot_t **out)
{
    MPI_Comm sub;
    if (MPI_Comm_split(b->comm, color < 0 ? MPI_UNDEFINED : color, key, &sub) != MPI_SUCCESS)
        return failed("MPI_Comm_split");
    return sub == MPI_COMM_NULL ? GCOLL_SUCCESS : wrap(sub, out);
}

static gcoll_status_t m_split_node(gcoll__boot_t *b, gcoll__boot_t **out)
{
    MPI_Comm node;
    if (MPI_Comm_split_type(b->comm, MPI_COMM_TYPE_SHARED, b->rank, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return failed("MPI_Comm_split_type");
    return wrap(node, out);
}

static void m_free(gcoll__boot_t *b)
{
    MPI_Comm_free(&b->comm);
    free(b);
}

static const gcoll__boot_ops_t mpi_ops = {m_allgather, m_bcast, m_barrier, m_split, m_split_node, m_free};

gcoll_status_t gcoll__boot_from_mpi(MPI_Comm comm, gcoll__boot_t **out)
{
    MPI_Comm dup;
    if (MPI_Comm_dup(comm, &dup) != MPI_SUCCESS)
        return failed("MPI_Comm_dup");
    return wrap(dup, out);
}

gcoll_status_t gcoll__boot_mpi_world(int *argc, char ***argv, int *mpi_owned, gcoll__boot_t **out)
{
    int inited = 0, finalized = 0, provided = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "MPI was already finalized: gcoll cannot start");
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
            return gcoll__error(GCOLL_ERR_TRANSPORT, "MPI_Init_thread failed");
        *mpi_owned = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    gcoll__log_set_identity(rank);
    if (provided < MPI_THREAD_MULTIPLE)
        GCOLL_LOG(GCOLL_LOG_WARN,
                  "MPI provides thread level %d, not MPI_THREAD_MULTIPLE: call gcoll "
                  "from one thread at a time (HINT: let gcoll_init start MPI)",
                  provided);
    return gcoll__boot_from_mpi(MPI_COMM_WORLD, out);
}
