/* An example transport plugin built against gcoll's public headers only: tagged messages over MPI
 * point-to-point, the shape a fabric vendor's plugin takes with its own calls in place of MPI's.
 *   mpicc -shared -fPIC -Iinclude examples/plugin/example_plugin.c -o libgcoll_example_plugin.so
 *   GCOLL_TRANSPORT_PLUGIN=./libgcoll_example_plugin.so (+ GCOLL_TRANSPORT_INTRA=inter: one host too) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gcoll_transport_plugin.h"

typedef struct {
    MPI_Comm comm; /* the communicator's ranks, in its order: messages never meet the application's */
} endpoint_t;

typedef struct {
    MPI_Request mpi;
    size_t bytes;
    int is_recv, peer;
} request_t;

static _Thread_local char last[256];

static gcoll_status_t fail(gcoll_status_t st, const char *what, int rc, int peer)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, msg, &len);
    snprintf(last, sizeof(last), "%s (peer %d)%s%s", what, peer, len ? ": " : "", msg);
    return st;
}

/* Every rank contributes its rank in MPI_COMM_WORLD; the members build a communicator of their
 * own, collectively among themselves only (gcoll calls create on exactly these ranks). */
static gcoll_status_t ex_create(const gcoll_plugin_boot_t *boot, void **out)
{
    int world_rank, *members = malloc(sizeof(int) * (size_t)boot->size);
    endpoint_t *ep = calloc(1, sizeof(*ep));
    if (!members || !ep) {
        free(members);
        free(ep);
        return fail(GCOLL_ERR_NOMEM, "no memory for an endpoint", MPI_SUCCESS, -1);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    gcoll_status_t st = boot->allgather(boot->ctx, &world_rank, members, sizeof(int));
    MPI_Group world, group;
    if (st == GCOLL_SUCCESS) {
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, boot->size, members, &group);
        int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, 0x6c6c, &ep->comm);
        MPI_Group_free(&group);
        MPI_Group_free(&world);
        if (rc != MPI_SUCCESS)
            st = fail(GCOLL_ERR_TRANSPORT, "MPI_Comm_create_group failed", rc, -1);
        else
            MPI_Comm_set_errhandler(ep->comm, MPI_ERRORS_RETURN);
    } else {
        snprintf(last, sizeof(last), "the bootstrap allgather failed");
    }
    free(members);
    if (st != GCOLL_SUCCESS) {
        free(ep);
        return st;
    }
    *out = ep;
    return GCOLL_SUCCESS;
}

static size_t ex_addr_len(void *ep)
{
    (void)ep;
    return 0; /* MPI knows its peers already */
}

static gcoll_status_t ex_addr(void *ep, void *buf)
{
    (void)ep;
    (void)buf;
    return GCOLL_SUCCESS;
}

static gcoll_status_t ex_connect(void *ep, const void *all)
{
    (void)ep;
    (void)all;
    return GCOLL_SUCCESS;
}

static gcoll_status_t post(endpoint_t *ep, int peer, uint32_t tag, void *buf, size_t bytes, int is_recv, void **out)
{
    if (bytes > INT32_MAX)
        return fail(GCOLL_ERR_UNSUPPORTED, "a message over 2 GiB", MPI_SUCCESS, peer);
    request_t *r = malloc(sizeof(*r));
    if (!r)
        return fail(GCOLL_ERR_NOMEM, "no memory for a request", MPI_SUCCESS, peer);
    *r = (request_t){.bytes = bytes, .is_recv = is_recv, .peer = peer};
    int mtag = (int)(tag & 0x7fff); /* MPI guarantees tags up to 32767; order per tag still holds */
    int rc = is_recv ? MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, mtag, ep->comm, &r->mpi)
                     : MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, mtag, ep->comm, &r->mpi);
    if (rc != MPI_SUCCESS) {
        free(r);
        return fail(GCOLL_ERR_TRANSPORT, is_recv ? "MPI_Irecv failed" : "MPI_Isend failed", rc, peer);
    }
    *out = r;
    return GCOLL_SUCCESS;
}

static gcoll_status_t ex_isend(void *ep, int peer, uint32_t tag, const void *buf, size_t bytes, void **req)
{
    return post(ep, peer, tag, (void *)buf, bytes, 0, req);
}

static gcoll_status_t ex_irecv(void *ep, int peer, uint32_t tag, void *buf, size_t bytes, void **req)
{
    return post(ep, peer, tag, buf, bytes, 1, req);
}

static gcoll_status_t ex_test(void *ep, void *req, int *done)
{
    (void)ep;
    request_t *r = req;
    MPI_Status status;
    int rc = MPI_Test(&r->mpi, done, &status);
    if (rc != MPI_SUCCESS) {
        *done = 1;
        int peer = r->peer;
        free(r);
        return fail(GCOLL_ERR_TRANSPORT, "MPI_Test failed", rc, peer);
    }
    if (!*done)
        return GCOLL_SUCCESS;
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (r->is_recv && (size_t)got != r->bytes) {
        snprintf(last, sizeof(last), "received %d bytes from peer %d, expected %zu", got, r->peer, r->bytes);
        st = GCOLL_ERR_TRANSPORT;
    }
    free(r);
    return st;
}

static void ex_cancel(void *ep, void *req)
{
    (void)ep;
    request_t *r = req;
    MPI_Cancel(&r->mpi);
    MPI_Request_free(&r->mpi);
    free(r);
}

static void ex_close(void *arg)
{
    endpoint_t *ep = arg;
    MPI_Comm_free(&ep->comm);
    free(ep);
}

static const char *ex_last_error(void *ep)
{
    (void)ep;
    return last;
}

static const gcoll_transport_plugin_v1_t table = {
    .version = GCOLL_TRANSPORT_PLUGIN_VERSION,
    .name = "example-mpi",
    .create = ex_create,
    .addr_len = ex_addr_len,
    .addr = ex_addr,
    .connect = ex_connect,
    .isend = ex_isend,
    .irecv = ex_irecv,
    .test = ex_test,
    .cancel = ex_cancel,
    .close = ex_close,
    .last_error = ex_last_error,
};

const gcoll_transport_plugin_v1_t *gcoll_transport_plugin_v1(void);
__attribute__((visibility("default"))) const gcoll_transport_plugin_v1_t *gcoll_transport_plugin_v1(void)
{
    return &table;
}
