/* Communicator lifecycle. Handles are checked against a registry of live communicators, so a
 * freed or made-up handle gets GCOLL_ERR_INVALID_ARG instead of a crash. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "gcoll_mpi.h"
#include "config.h"
#include "context.h"
#include "error.h"
#include "log.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gcoll_comm *registry;
static unsigned next_id;

static int registered(gcoll_comm_t comm)
{
    int found = 0;
    pthread_mutex_lock(&registry_lock);
    for (struct gcoll_comm *c = registry; c; c = c->next)
        if (c == comm) {
            found = 1;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

static void unregister(gcoll_comm_t comm)
{
    pthread_mutex_lock(&registry_lock);
    for (struct gcoll_comm **p = &registry; *p; p = &(*p)->next)
        if (*p == comm) {
            *p = comm->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

static void destroy(gcoll_comm_t comm)
{
    if (comm->tp) /* the shm endpoint lives on the channel: close it first */
        comm->tpops->close(comm->tp);
    gcoll__shm_destroy(comm->shm);
    MPI_Comm_free(&comm->boot);
    free(comm);
}

static gcoll_status_t connect_transport(gcoll_comm_t c)
{
    gcoll__bootstrap_t boot = {c->boot, c->rank, c->size};
    GCOLL_CHECK(c->tpops->create(&boot, &c->tp));
    size_t len = c->tpops->addr_len(c->tp);
    char *all = calloc((size_t)c->size, len ? len : 1);
    char *mine = calloc(1, len ? len : 1);
    gcoll_status_t st = (all && mine) ? c->tpops->addr(c->tp, mine)
                                      : gcoll__error(GCOLL_ERR_NOMEM, "no memory for addresses");
    if (st == GCOLL_SUCCESS && len &&
        MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, c->boot) != MPI_SUCCESS)
        st = gcoll__error(GCOLL_ERR_TRANSPORT, "bootstrap: address exchange failed");
    if (st == GCOLL_SUCCESS)
        st = c->tpops->connect(c->tp, all);
    free(all);
    free(mine);
    return st;
}

/* When every rank shares this host, the node channel carries the intra-node algorithms. */
static gcoll_status_t attach_shm(gcoll_comm_t c)
{
    if (c->size < 2 || gcoll__config.transport_intra != 0)
        return GCOLL_SUCCESS;
    MPI_Comm node;
    if (MPI_Comm_split_type(c->boot, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return gcoll__error(GCOLL_ERR_TRANSPORT, "bootstrap: MPI_Comm_split_type failed");
    int local = 0, all_local = 0;
    MPI_Comm_size(node, &local);
    local = local == c->size;
    MPI_Allreduce(&local, &all_local, 1, MPI_INT, MPI_LAND, c->boot);
    gcoll_status_t st = all_local ? gcoll__shm_create(node, &c->shm) : GCOLL_SUCCESS;
    MPI_Comm_free(&node);
    return st;
}

int gcoll__comm_crowded(gcoll_comm_t comm)
{
    return comm->shm && comm->shm->oversubscribed;
}

uint32_t gcoll__comm_ticket(gcoll_comm_t comm)
{
    return comm->shm ? gcoll__shm_ticket(comm->shm) : 0;
}

void gcoll__comm_idle(gcoll_comm_t comm, uint32_t ticket, long usec)
{
    if (comm->shm)
        gcoll__shm_sleep(comm->shm, ticket, usec);
    else
        sched_yield();
}

gcoll_status_t gcoll__comm_create(MPI_Comm mpi_comm, gcoll_comm_t *out)
{
    struct gcoll_comm *c = calloc(1, sizeof(*c));
    if (!c)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a communicator");
    if (MPI_Comm_dup(mpi_comm, &c->boot) != MPI_SUCCESS) {
        free(c);
        return gcoll__error(GCOLL_ERR_TRANSPORT, "bootstrap: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(c->boot, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->boot, &c->rank);
    MPI_Comm_size(c->boot, &c->size);
    c->refs = 1;
    /* On one host the node channel carries everything; elsewhere the inter-node transport. */
    gcoll_status_t st = attach_shm(c);
    if (st == GCOLL_SUCCESS && c->shm) {
        c->tpops = &gcoll__transport_shm;
        st = gcoll__shm_p2p_open(c->shm, &c->tp);
    } else if (st == GCOLL_SUCCESS) {
        c->tpops = gcoll__context.transport;
        st = connect_transport(c);
    }
    if (st != GCOLL_SUCCESS) {
        destroy(c);
        return st;
    }
    pthread_mutex_lock(&registry_lock);
    c->id = next_id++;
    c->next = registry;
    registry = c;
    pthread_mutex_unlock(&registry_lock);
    GCOLL_LOG(GCOLL_LOG_DEBUG, "comm %u: rank %d of %d over %s", c->id, c->rank, c->size,
              c->tpops->name);
    *out = c;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__comm_check(gcoll_comm_t comm, const char *argname)
{
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", argname);
    if (!registered(comm))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "%s is not a live communicator (freed, or never created)", argname);
    if (comm->failed != GCOLL_SUCCESS)
        return gcoll__error(GCOLL_ERR_ABORTED, "%s (comm %u) failed earlier: %s", argname, comm->id,
                            comm->failmsg);
    return GCOLL_SUCCESS;
}

void gcoll__comm_fail(gcoll_comm_t comm, gcoll_status_t status, const char *reason)
{
    if (comm->failed != GCOLL_SUCCESS)
        return;
    comm->failed = status;
    snprintf(comm->failmsg, sizeof(comm->failmsg), "%s", reason);
    GCOLL_LOG(GCOLL_LOG_ERROR, "comm %u failed: %s", comm->id, reason);
}

void gcoll__comm_release(gcoll_comm_t comm)
{
    if (--comm->refs == 0)
        destroy(comm);
}

GCOLL_API gcoll_status_t gcoll_comm_world(gcoll_comm_t *comm)
{
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "comm is NULL");
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    *comm = gcoll__context.world;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_comm_from_mpi(MPI_Comm mpi_comm, gcoll_comm_t *comm)
{
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "comm is NULL");
    *comm = NULL;
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    if (mpi_comm == MPI_COMM_NULL)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "mpi_comm is MPI_COMM_NULL");
    return gcoll__comm_create(mpi_comm, comm);
}

GCOLL_API gcoll_status_t gcoll_comm_split(gcoll_comm_t comm, int color, int key, gcoll_comm_t *newcomm)
{
    if (!newcomm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "newcomm is NULL");
    *newcomm = NULL;
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    MPI_Comm sub;
    if (MPI_Comm_split(comm->boot, color < 0 ? MPI_UNDEFINED : color, key, &sub) != MPI_SUCCESS)
        return gcoll__error(GCOLL_ERR_TRANSPORT, "gcoll_comm_split: MPI_Comm_split failed");
    if (sub == MPI_COMM_NULL)
        return GCOLL_SUCCESS; /* a negative color: this rank joins no new communicator */
    gcoll_status_t st = gcoll__comm_create(sub, newcomm);
    MPI_Comm_free(&sub);
    return st;
}

GCOLL_API gcoll_status_t gcoll_comm_dup(gcoll_comm_t comm, gcoll_comm_t *newcomm)
{
    if (!newcomm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "newcomm is NULL");
    *newcomm = NULL;
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    return gcoll__comm_create(comm->boot, newcomm);
}

GCOLL_API gcoll_status_t gcoll_comm_free(gcoll_comm_t *comm)
{
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "comm is NULL");
    gcoll_status_t st = gcoll__comm_check(*comm, "*comm");
    if (st != GCOLL_SUCCESS && st != GCOLL_ERR_ABORTED) /* a failed communicator may be freed */
        return st;
    if ((*comm)->is_world)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "*comm is the world communicator: gcoll_finalize frees it");
    unregister(*comm);
    gcoll__context_lock();
    gcoll__comm_release(*comm);
    gcoll__context_unlock();
    *comm = NULL;
    return GCOLL_SUCCESS;
}

GCOLL_API int gcoll_comm_rank(gcoll_comm_t comm)
{
    return comm && registered(comm) ? comm->rank : -1;
}

GCOLL_API int gcoll_comm_size(gcoll_comm_t comm)
{
    return comm && registered(comm) ? comm->size : -1;
}

void gcoll__comm_free_all(void)
{
    pthread_mutex_lock(&registry_lock);
    struct gcoll_comm *list = registry;
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
    while (list) {
        struct gcoll_comm *next = list->next;
        gcoll__comm_release(list);
        list = next;
    }
}

GCOLL_API gcoll_status_t gcoll_comm_transport(gcoll_comm_t comm, const char **name)
{
    if (!name)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "name is NULL");
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    *name = comm->tpops->name;
    return GCOLL_SUCCESS;
}
