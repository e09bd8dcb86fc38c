/* The calls taken over, blocking or not, and the requests of the nonblocking ones. The program
 * gets a generalized request (MPI_Grequest_start): a real MPI_Request, so MPI_Wait, MPI_Test and
 * their array forms accept it beside its other requests. MPI completes a generalized request
 * only when told to, so the completion calls below are interposed too: they drive the gcoll
 * requests among their arguments (gcoll_test, or gcoll_wait for a single MPI_Wait) and complete
 * each generalized request once its gcoll operation has ended; then MPI's own call does the rest.
 * Calls that do not complete requests (MPI_Request_get_status excepted) never see one finish. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "interposer.h"

typedef gcoll__ip_op_t ireq_t;
static ireq_t *pending; /* started, not yet completed */
static atomic_int npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static int ireq_query(void *extra, MPI_Status *status)
{
    ireq_t *r = extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = r->error;
    return r->error;
}

static int ireq_free(void *extra)
{
    free(extra);
    return MPI_SUCCESS;
}

static int ireq_cancel(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS; /* a collective cannot be cancelled (MPI: erroneous to try) */
}

/* Takes r out of the pending list if it is there (so one thread drives it at a time). */
static ireq_t *claim(MPI_Request m)
{
    if (m == MPI_REQUEST_NULL)
        return NULL;
    pthread_mutex_lock(&pending_lock);
    ireq_t *r = NULL;
    for (ireq_t **p = &pending; *p; p = &(*p)->next)
        if ((*p)->m == m) {
            r = *p;
            *p = r->next;
            break;
        }
    pthread_mutex_unlock(&pending_lock);
    return r;
}

static void put_back(ireq_t *r)
{
    pthread_mutex_lock(&pending_lock);
    r->next = pending;
    pending = r;
    pthread_mutex_unlock(&pending_lock);
}

/* Advances the gcoll operation behind m, if m is one of ours; completes the generalized
 * request when it has ended. Returns 1 while it is still running. */
static int drive(MPI_Request m, int block)
{
    ireq_t *r = claim(m);
    if (!r)
        return 0;
    int finished = 1;
    gcoll_status_t st = block ? GCOLL(gcoll_wait(&r->g)) : GCOLL(gcoll_test(&r->g, &finished));
    if (!finished && st == GCOLL_SUCCESS) {
        put_back(r);
        return 1;
    }
    if (st != GCOLL_SUCCESS) {
        gcoll__ip_say("ERROR", "MPI_%s failed in gcoll: %s", gcoll__ip_call_names[r->call], gcoll_last_error());
        r->error = MPI_ERR_OTHER;
    }
    atomic_fetch_sub(&npending, 1);
    PMPI_Grequest_complete(r->m);
    return 0;
}

/* Drives every one of ours among reqs; returns how many are still running. */
static int drive_all(int n, MPI_Request *reqs)
{
    int running = 0;
    for (int i = 0; i < n; i++)
        running += drive(reqs[i], 0);
    return running;
}

/* Nothing to drive: no request of ours exists, or gcoll itself is asking (its MPI transport). */
static int bypass(void)
{
    return gcoll__ip_in_gcoll || atomic_load(&npending) == 0;
}

/* A failure inside gcoll goes to the communicator's error handler (MPI_ERRORS_ARE_FATAL by
 * default) as MPI_ERR_OTHER, after a line with gcoll's reason. No fallback to MPI: the other
 * ranks may be inside gcoll's operation already. */
int gcoll__ip_fail(int call, MPI_Comm comm)
{
    gcoll__ip_say("ERROR", "MPI_%s failed in gcoll: %s", gcoll__ip_call_names[call], gcoll_last_error());
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

gcoll__ip_op_t *gcoll__ip_op_new(int call, size_t n)
{
    gcoll__ip_op_t *op = calloc(1, sizeof(*op) + n * sizeof(size_t));
    if (op)
        op->call = call;
    return op;
}

int gcoll__ip_finish(int call, gcoll__ip_op_t *op, MPI_Comm comm, gcoll_status_t st, MPI_Request *request)
{
    gcoll__ip_taken(call);
    if (st != GCOLL_SUCCESS || !request) {
        free(op);
        return st == GCOLL_SUCCESS ? MPI_SUCCESS : gcoll__ip_fail(call, comm);
    }
    op->comm = comm;
    int rc = PMPI_Grequest_start(ireq_query, ireq_free, ireq_cancel, op, &op->m);
    if (rc != MPI_SUCCESS) { /* cannot hand it out: finish it here, as a blocking call */
        st = GCOLL(gcoll_wait(&op->g));
        free(op);
        return st == GCOLL_SUCCESS ? rc : gcoll__ip_fail(call, comm);
    }
    *request = op->m;
    atomic_fetch_add(&npending, 1);
    put_back(op);
    return MPI_SUCCESS;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (!bypass() && request)
        drive(*request, 1);
    return PMPI_Wait(request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (!bypass() && request)
        drive(*request, 0);
    return PMPI_Test(request, flag, status);
}

/* Freeing a nonblocking collective's request is erroneous in MPI, and MPI would release the
 * generalized request's operation while gcoll still writes into it: refused as Open MPI refuses
 * its own, through the communicator's error handler, the request left to wait for. */
int MPI_Request_free(MPI_Request *request)
{
    ireq_t *r = bypass() || !request ? NULL : claim(*request);
    if (!r)
        return PMPI_Request_free(request);
    put_back(r);
    gcoll__ip_say("ERROR",
                  "MPI_Request_free: the request of MPI_%s, a nonblocking collective, cannot be freed "
                  "(MPI-3.1 section 5.12); wait for it or test it instead",
                  gcoll__ip_call_names[r->call]);
    PMPI_Comm_call_errhandler(r->comm, MPI_ERR_REQUEST);
    return MPI_ERR_REQUEST;
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (!bypass())
        drive(request, 0);
    return PMPI_Request_get_status(request, flag, status);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (!bypass() && requests)
        drive_all(count, requests);
    return PMPI_Testall(count, requests, flag, statuses);
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    if (!bypass() && requests)
        drive_all(count, requests);
    return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (!bypass() && requests)
        drive_all(incount, requests);
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

/* The waits over arrays poll: gcoll's operations and MPI's requests in turn, so neither kind
 * waits on the other (a peer may need this rank's MPI progress to reach its part of ours). */
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (bypass() || !requests)
        return PMPI_Waitall(count, requests, statuses);
    while (drive_all(count, requests)) {
        int flag = 0, rc = PMPI_Testall(count, requests, &flag, statuses);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        sched_yield();
    }
    return PMPI_Waitall(count, requests, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (bypass() || !requests)
        return PMPI_Waitany(count, requests, index, status);
    for (;;) {
        int running = drive_all(count, requests), flag = 0;
        if (!running)
            return PMPI_Waitany(count, requests, index, status);
        int rc = PMPI_Testany(count, requests, index, &flag, status);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        sched_yield();
    }
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (bypass() || !requests)
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    for (;;) {
        int running = drive_all(incount, requests);
        if (!running)
            return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
        int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0)
            return rc;
        sched_yield();
    }
}
