/* The MPI transport: point-to-point messages over a private duplicate of the communicator's
 * bootstrap MPI communicator, so gcoll's traffic never matches the application's. Raw bytes:
 * the core uses its framed table (frame.h), which checks what its messages carry. */
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "transports/frame/frame.h"
#include "transports/mpi/mpi.h"

#define CTL_MPI 4096 /* framed: Open MPI's shared-memory eager limit, above which a message costs a handshake */

struct gcoll__tp {
    MPI_Comm comm;
    uint32_t tag_mask; /* the low bits of a tag that MPI carries: the frame's inner tags keep their parity */
};

struct gcoll__tp_req {
    MPI_Request mreq;
    size_t bytes;
    size_t *got; /* irecv_upto: where the length goes */
    int peer;
    int is_recv;
};

static gcoll_status_t mpi_error(const char *what, int rc, int peer)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return gcoll__error(GCOLL_ERR_TRANSPORT, "mpi transport: %s with peer %d failed: %s", what, peer, msg);
}

static gcoll_status_t mpi_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **out)
{
    gcoll__tp_t *tp = calloc(1, sizeof(*tp));
    if (!tp)
        return gcoll__error(GCOLL_ERR_NOMEM, "mpi transport: no memory for an endpoint");
    if (boot->group->comm == MPI_COMM_NULL) { /* gcoll_init refuses it in a job launched without MPI */
        free(tp);
        return gcoll__error(GCOLL_ERR_UNSUPPORTED, "mpi transport: this job was launched without MPI");
    }
    int rc = MPI_Comm_dup(boot->group->comm, &tp->comm);
    if (rc != MPI_SUCCESS) {
        free(tp);
        return mpi_error("MPI_Comm_dup", rc, -1);
    }
    /* Errors come back as return codes instead of ending the job. */
    MPI_Comm_set_errhandler(tp->comm, MPI_ERRORS_RETURN);
    int *ub, flag = 0;
    MPI_Comm_get_attr(tp->comm, MPI_TAG_UB, &ub, &flag);
    /* the largest 2^k - 1 within MPI_TAG_UB (at least 32767 by the standard) */
    uint32_t limit = flag && *ub > 0 ? (uint32_t)*ub : 32767;
    tp->tag_mask = 1;
    while (tp->tag_mask <= limit / 2)
        tp->tag_mask = tp->tag_mask * 2 + 1;
    *out = tp;
    return GCOLL_SUCCESS;
}

static size_t mpi_addr_len(gcoll__tp_t *tp)
{
    (void)tp;
    return 0; /* MPI already knows every peer */
}

static gcoll_status_t mpi_addr(gcoll__tp_t *tp, void *buf)
{
    (void)tp;
    (void)buf;
    return GCOLL_SUCCESS;
}

static gcoll_status_t mpi_connect(gcoll__tp_t *tp, const void *all_addrs)
{
    (void)tp;
    (void)all_addrs;
    return GCOLL_SUCCESS;
}

static gcoll_status_t post(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, int is_recv,
                           gcoll__tp_req_t **out)
{
    if (bytes > (size_t)INT32_MAX)
        return gcoll__error(GCOLL_ERR_UNSUPPORTED, "mpi transport: a message of %zu bytes exceeds MPI's int count",
                            bytes);
    gcoll__tp_req_t *r = malloc(sizeof(*r));
    if (!r)
        return gcoll__error(GCOLL_ERR_NOMEM, "mpi transport: no memory for a request");
    r->bytes = bytes;
    r->got = NULL;
    r->peer = peer;
    r->is_recv = is_recv;
    int mtag = (int)(tag & tp->tag_mask);
    int rc = is_recv ? MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, mtag, tp->comm, &r->mreq)
                     : MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, mtag, tp->comm, &r->mreq);
    if (rc != MPI_SUCCESS) {
        free(r);
        return mpi_error(is_recv ? "MPI_Irecv" : "MPI_Isend", rc, peer);
    }
    *out = r;
    return GCOLL_SUCCESS;
}

static gcoll_status_t mpi_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **req)
{
    return post(tp, peer, tag, (void *)buf, bytes, 0, req);
}

static gcoll_status_t mpi_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **req)
{
    return post(tp, peer, tag, buf, bytes, 1, req);
}

static gcoll_status_t mpi_irecv_upto(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, size_t *got,
                                     gcoll__tp_req_t **req)
{
    GCOLL_CHECK(post(tp, peer, tag, buf, bytes, 1, req));
    (*req)->got = got;
    return GCOLL_SUCCESS;
}

static gcoll_status_t mpi_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    (void)tp;
    MPI_Status st;
    int rc = MPI_Test(&r->mreq, done, &st);
    if (rc != MPI_SUCCESS) {
        int peer = r->peer;
        free(r);
        return mpi_error("MPI_Test", rc, peer);
    }
    if (!*done)
        return GCOLL_SUCCESS;
    gcoll_status_t ret = GCOLL_SUCCESS;
    if (r->is_recv) {
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        if (r->got)
            *r->got = (size_t)got; /* MPI itself fails a longer message */
        else if ((size_t)got != r->bytes)
            ret = gcoll__error(GCOLL_ERR_TRANSPORT, "mpi transport: received %d bytes from rank %d, expected %zu", got,
                               r->peer, r->bytes);
    }
    free(r);
    return ret;
}

static void mpi_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    (void)tp;
    if (r->is_recv) {
        MPI_Cancel(&r->mreq);
        MPI_Wait(&r->mreq, MPI_STATUS_IGNORE);
    } else {
        /* Open MPI cannot cancel a send reliably; let it finish or be dropped by MPI. */
        MPI_Request_free(&r->mreq);
    }
    free(r);
}

static void mpi_close(gcoll__tp_t *tp)
{
    MPI_Comm_free(&tp->comm);
    free(tp);
}

static const gcoll__transport_t raw = {
    .name = "mpi",
    .create = mpi_create,
    .addr_len = mpi_addr_len,
    .addr = mpi_addr,
    .connect = mpi_connect,
    .isend = mpi_isend,
    .irecv = mpi_irecv,
    .irecv_upto = mpi_irecv_upto,
    .test = mpi_test,
    .cancel = mpi_cancel,
    .reg_mem = NULL,
    .dereg_mem = NULL,
    .close = mpi_close,
};

static gcoll_status_t framed_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp)
{
    return gcoll__frame_create(&raw, boot, CTL_MPI, tp);
}

/* MPI registers no memory, waits on nothing and tells of no dead peers. */
const gcoll__transport_t gcoll__transport_mpi = GCOLL_FRAMED("mpi", framed_create);

int gcoll__mpi_serves(char *why, size_t len)
{
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    snprintf(why, len, "%s", !up ? "MPI is not initialised" : down ? "MPI is finalised" : "MPI is initialised");
    return up && !down;
}
