/* libgcoll_mpi.so: loaded with LD_PRELOAD into an MPI program, it runs MPI_Allreduce,
 * MPI_Iallreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast, MPI_Reduce and MPI_Barrier
 * on gcoll (as GCOLL_MPI_COLLS allows) and hands everything else to MPI through PMPI. Each
 * communicator maps once to a gcoll communicator, cached in an attribute whose delete callback
 * frees it. docs/interposer.md gives the rules; the comments here say why. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "gcoll.h"
#include "gcoll_mpi.h"

enum { ALLREDUCE, IALLREDUCE, REDUCE_SCATTER_BLOCK, ALLGATHER, BCAST, REDUCE, BARRIER, NCALLS };
static const char *const call_names[NCALLS] = {"allreduce", "iallreduce", "reduce_scatter_block", "allgather", "bcast",
                                               "reduce",    "barrier"};

static int ready;           /* gcoll is up and takes over at least one call */
static int enabled[NCALLS]; /* GCOLL_MPI_COLLS, read once after gcoll_init */
static atomic_ulong taken[NCALLS], passed[NCALLS];
static int keyval = MPI_KEYVAL_INVALID;
static int my_rank;

/* gcoll bootstraps its communicators with MPI collectives (MPI_Allgather, MPI_Bcast, ...) that
 * resolve to this library's definitions: inside a call into gcoll they go straight to PMPI,
 * uncounted. gcoll makes those calls only on the thread that called it (its progress threads
 * call MPI_Test, MPI_Wait and point-to-point alone, which find none of this library's requests),
 * so a thread-local flag suffices. */
static _Thread_local int in_gcoll;
static _Thread_local gcoll_status_t call_st;
#define GCOLL(call) (in_gcoll++, call_st = (call), in_gcoll--, call_st)

/* One line in gcoll's log format. */
__attribute__((format(printf, 2, 3))) static void say(const char *level, const char *fmt, ...)
{
    char host[64] = "?", msg[1024];
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s:%d] gcoll %s: mpi interposer: %s\n", host, my_rank, level, msg);
}

/* ---- communicators ---------------------------------------------------------------------- */

/* The attribute's value: the gcoll communicator, or none where MPI keeps the calls (an
 * inter-communicator, or one gcoll could not map on every rank). Live mappings are listed so
 * that MPI_Finalize can release those the program never freed. */
typedef struct mapping {
    gcoll_comm_t g;
    MPI_Comm comm;
    struct mapping *prev, *next;
} mapping_t;
static mapping_t *mappings;
static pthread_mutex_t mappings_lock = PTHREAD_MUTEX_INITIALIZER;

static int delete_mapping(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)extra;
    mapping_t *m = value;
    pthread_mutex_lock(&mappings_lock);
    if (m->prev)
        m->prev->next = m->next;
    else
        mappings = m->next;
    if (m->next)
        m->next->prev = m->prev;
    pthread_mutex_unlock(&mappings_lock);
    if (m->g)
        (void)GCOLL(gcoll_comm_free(&m->g));
    free(m);
    return MPI_SUCCESS;
}

/* The gcoll communicator of comm, NULL where MPI keeps its calls. Collective on first use (every
 * rank reaches it in the same collective call), so all ranks agree on the outcome. */
static gcoll_comm_t map_comm(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL)
        return NULL;
    if (comm == MPI_COMM_WORLD) {
        gcoll_comm_t w = NULL;
        (void)GCOLL(gcoll_comm_world(&w));
        return w;
    }
    void *value;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, keyval, &value, &found) != MPI_SUCCESS)
        return NULL;
    if (found)
        return ((mapping_t *)value)->g;
    mapping_t *m = calloc(1, sizeof(*m));
    if (!m) { /* the other ranks go on to map it: MPI's error handler has to end this */
        say("ERROR", "no memory to map a communicator");
        PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
        return NULL;
    }
    m->comm = comm;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (!inter) {
        int ok = GCOLL(gcoll_comm_from_mpi(comm, &m->g)) == GCOLL_SUCCESS, all = 0;
        if (!ok)
            say("WARN", "cannot map a communicator: %s: MPI keeps its calls", gcoll_last_error());
        PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
        if (ok && !all)
            (void)GCOLL(gcoll_comm_free(&m->g));
    }
    pthread_mutex_lock(&mappings_lock);
    m->next = mappings;
    if (mappings)
        mappings->prev = m;
    mappings = m;
    pthread_mutex_unlock(&mappings_lock);
    PMPI_Comm_set_attr(comm, keyval, m);
    return m->g;
}

/* ---- types and ops ------------------------------------------------------------------------ */

/* The gcoll type of a predefined MPI type that gcoll reduces, by width (int, long, ... differ
 * between platforms). 0 for the rest. */
static int reduce_type(MPI_Datatype t, gcoll_dtype_t *out)
{
    if (t == MPI_FLOAT || t == MPI_DOUBLE) {
        *out = t == MPI_FLOAT ? GCOLL_FLOAT32 : GCOLL_FLOAT64;
        return 1;
    }
    const MPI_Datatype sig[] = {MPI_SIGNED_CHAR, MPI_INT8_T,    MPI_INT,    MPI_INT32_T,
                                MPI_LONG,        MPI_LONG_LONG, MPI_INT64_T};
    const MPI_Datatype uns[] = {MPI_UNSIGNED_CHAR,      MPI_UINT8_T, MPI_UNSIGNED, MPI_UINT32_T, MPI_UNSIGNED_LONG,
                                MPI_UNSIGNED_LONG_LONG, MPI_UINT64_T};
    int is_signed = -1;
    for (size_t i = 0; i < sizeof(sig) / sizeof(sig[0]) && is_signed < 0; i++)
        is_signed = t == sig[i] ? 1 : t == uns[i] ? 0 : -1;
    int size = 0;
    if (is_signed < 0 || PMPI_Type_size(t, &size) != MPI_SUCCESS)
        return 0;
    switch (size) {
    case 1: *out = is_signed ? GCOLL_INT8 : GCOLL_UINT8; return 1;
    case 4: *out = is_signed ? GCOLL_INT32 : GCOLL_UINT32; return 1;
    case 8: *out = is_signed ? GCOLL_INT64 : GCOLL_UINT64; return 1;
    default: return 0;
    }
}

static int reduce_op(MPI_Op op, gcoll_op_t *out)
{
    if (op == MPI_SUM)
        *out = GCOLL_SUM;
    else if (op == MPI_PROD)
        *out = GCOLL_PROD;
    else if (op == MPI_MIN)
        *out = GCOLL_MIN;
    else if (op == MPI_MAX)
        *out = GCOLL_MAX;
    else
        return 0;
    return 1;
}

/* Bytes of count elements of t if they lie back to back from the buffer's start (predefined
 * types, and derived ones without gaps), else 0: gcoll moves them as bytes. */
static int contiguous_bytes(MPI_Datatype t, int count, size_t *bytes)
{
    int size;
    MPI_Aint lb, extent, tlb, textent;
    if (t == MPI_DATATYPE_NULL || count < 0 || PMPI_Type_size(t, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(t, &tlb, &textent) != MPI_SUCCESS)
        return 0;
    if (tlb != 0 || textent != size || (count > 1 && extent != size))
        return 0;
    *bytes = (size_t)count * (size_t)size;
    return 1;
}

/* The reduction calls' common test: the call is on, the type and op are gcoll's, the
 * communicator maps. The ranks agree, since MPI has them pass the same type, op and count. */
static gcoll_comm_t reduction_target(int call, MPI_Datatype t, MPI_Op op, MPI_Comm comm, gcoll_dtype_t *dt,
                                     gcoll_op_t *gop)
{
    if (!ready || !enabled[call] || !reduce_type(t, dt) || !reduce_op(op, gop))
        return NULL;
    return map_comm(comm);
}

/* A failure inside gcoll goes to the communicator's error handler (MPI_ERRORS_ARE_FATAL by
 * default) as MPI_ERR_OTHER, after a line with gcoll's reason. No fallback to MPI: the other
 * ranks may be inside gcoll's operation already. */
static int fail(int call, MPI_Comm comm)
{
    say("ERROR", "MPI_%s failed in gcoll: %s", call_names[call], gcoll_last_error());
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

static int done(int call, MPI_Comm comm, gcoll_status_t st)
{
    atomic_fetch_add(&taken[call], 1);
    return st == GCOLL_SUCCESS ? MPI_SUCCESS : fail(call, comm);
}

/* ---- the blocking collectives ------------------------------------------------------------- */

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    if (in_gcoll)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll_comm_t g = count >= 0 ? reduction_target(ALLREDUCE, datatype, op, comm, &dt, &gop) : NULL;
    if (!g) {
        atomic_fetch_add(&passed[ALLREDUCE], 1);
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return done(ALLREDUCE, comm, GCOLL(gcoll_allreduce(in, recvbuf, (size_t)count, dt, gop, g)));
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm)
{
    if (in_gcoll)
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll_comm_t g = recvcount >= 0 ? reduction_target(REDUCE_SCATTER_BLOCK, datatype, op, comm, &dt, &gop) : NULL;
    if (!g) {
        atomic_fetch_add(&passed[REDUCE_SCATTER_BLOCK], 1);
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return done(REDUCE_SCATTER_BLOCK, comm, GCOLL(gcoll_reduce_scatter(in, recvbuf, (size_t)recvcount, dt, gop, g)));
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    if (in_gcoll)
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll_comm_t g = count >= 0 ? reduction_target(REDUCE, datatype, op, comm, &dt, &gop) : NULL;
    if (!g) {
        atomic_fetch_add(&passed[REDUCE], 1);
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return done(REDUCE, comm, GCOLL(gcoll_reduce(in, recvbuf, (size_t)count, dt, gop, root, g)));
}

/* Allgather and Bcast move bytes. The decision rests on this rank's types: MPI lets ranks pass
 * different types of one signature, so a program that mixes a gapped type on one rank with a
 * contiguous one on another must leave these calls to MPI (GCOLL_MPI_COLLS). */
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    if (in_gcoll)
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    size_t sbytes = 0, rbytes = 0;
    int fits = ready && enabled[ALLGATHER] && contiguous_bytes(recvtype, recvcount, &rbytes) &&
        (sendbuf == MPI_IN_PLACE || (contiguous_bytes(sendtype, sendcount, &sbytes) && sbytes == rbytes));
    gcoll_comm_t g = fits ? map_comm(comm) : NULL;
    if (!g) {
        atomic_fetch_add(&passed[ALLGATHER], 1);
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return done(ALLGATHER, comm, GCOLL(gcoll_allgather(in, recvbuf, rbytes, GCOLL_UINT8, g)));
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    if (in_gcoll)
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    size_t bytes = 0;
    int fits = ready && enabled[BCAST] && contiguous_bytes(datatype, count, &bytes);
    gcoll_comm_t g = fits ? map_comm(comm) : NULL;
    if (!g) {
        atomic_fetch_add(&passed[BCAST], 1);
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    }
    return done(BCAST, comm, GCOLL(gcoll_bcast(buffer, bytes, GCOLL_UINT8, root, g)));
}

int MPI_Barrier(MPI_Comm comm)
{
    if (in_gcoll)
        return PMPI_Barrier(comm);
    gcoll_comm_t g = ready && enabled[BARRIER] ? map_comm(comm) : NULL;
    if (!g) {
        atomic_fetch_add(&passed[BARRIER], 1);
        return PMPI_Barrier(comm);
    }
    return done(BARRIER, comm, GCOLL(gcoll_barrier(g)));
}

/* ---- MPI_Iallreduce ------------------------------------------------------------------------
 * The program gets a generalized request (MPI_Grequest_start): a real MPI_Request, so MPI_Wait,
 * MPI_Test and their array forms accept it beside its other requests. MPI completes a
 * generalized request only when told to, so the completion calls below are interposed too: they
 * drive the gcoll requests among their arguments (gcoll_test, or gcoll_wait for a single
 * MPI_Wait) and complete each generalized request once its gcoll operation has ended; then MPI's
 * own call does the rest. Calls that do not complete requests (MPI_Request_get_status
 * excepted) never see one finish. */

typedef struct ireq {
    gcoll_request_t g;
    MPI_Request m;
    int error; /* MPI_SUCCESS, or MPI_ERR_OTHER when the gcoll operation failed */
    struct ireq *next;
} ireq_t;
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
        say("ERROR", "MPI_Iallreduce failed in gcoll: %s", gcoll_last_error());
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
    return in_gcoll || atomic_load(&npending) == 0;
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request)
{
    if (in_gcoll)
        return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll_comm_t g = count >= 0 && request ? reduction_target(IALLREDUCE, datatype, op, comm, &dt, &gop) : NULL;
    ireq_t *r = g ? calloc(1, sizeof(*r)) : NULL;
    if (!r) {
        atomic_fetch_add(&passed[IALLREDUCE], 1);
        return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    }
    atomic_fetch_add(&taken[IALLREDUCE], 1);
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (GCOLL(gcoll_iallreduce(in, recvbuf, (size_t)count, dt, gop, g, NULL, &r->g)) != GCOLL_SUCCESS) {
        free(r);
        return fail(IALLREDUCE, comm);
    }
    int rc = PMPI_Grequest_start(ireq_query, ireq_free, ireq_cancel, r, &r->m);
    if (rc != MPI_SUCCESS) { /* cannot hand it out: finish it here, as a blocking call */
        gcoll_status_t st = GCOLL(gcoll_wait(&r->g));
        free(r);
        return st == GCOLL_SUCCESS ? rc : fail(IALLREDUCE, comm);
    }
    *request = r->m;
    atomic_fetch_add(&npending, 1);
    put_back(r);
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

/* ---- lifetime ------------------------------------------------------------------------------ */

/* gcoll starts after MPI, on every rank or on none: where gcoll_init fails on some rank, every
 * call goes to MPI. A malformed GCOLL_* variable is the program's error, though, reported to
 * MPI_COMM_WORLD's error handler (fatal by default) like any other failure of MPI_Init. */
static int start_gcoll(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    gcoll_status_t st = GCOLL(gcoll_init(NULL, NULL));
    int ok = st == GCOLL_SUCCESS, all = 0;
    if (!ok && st != GCOLL_ERR_INVALID_ARG) /* gcoll_init has logged why */
        say("WARN", "gcoll did not start: every call goes to MPI");
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    int any = 0;
    for (int i = 0; all && i < NCALLS; i++) {
        (void)GCOLL(gcoll_mpi_coll_enabled(call_names[i], &enabled[i]));
        any |= enabled[i];
    }
    if (all && any && PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_mapping, &keyval, NULL) == MPI_SUCCESS)
        ready = 1;
    else if (ok)
        (void)GCOLL(gcoll_finalize()); /* nothing for it to do */
    if (st != GCOLL_ERR_INVALID_ARG)
        return MPI_SUCCESS;
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

/* gcoll's progress threads call MPI when its MPI transport carries traffic, so MPI is asked for
 * MPI_THREAD_MULTIPLE whatever the program asks for; provided reports what MPI gave, which the
 * standard lets exceed required. */
int MPI_Init(int *argc, char ***argv)
{
    int provided;
    int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    return rc == MPI_SUCCESS ? start_gcoll() : rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)required;
    int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, provided);
    return rc == MPI_SUCCESS ? start_gcoll() : rc;
}

static int log_info(void)
{
    char l[16]; /* gcoll_init has checked the value: one of error|warn|info|debug|trace */
    return gcoll_config_get("GCOLL_LOG_LEVEL", l, sizeof(l), NULL) == GCOLL_SUCCESS &&
        (strcmp(l, "info") == 0 || strcmp(l, "debug") == 0 || strcmp(l, "trace") == 0);
}

/* The counts of calls taken over and handed to MPI, at GCOLL_LOG_LEVEL=info (tests read it). */
static void report(void)
{
    char line[1024];
    int n = 0;
    for (int i = 0; i < NCALLS && n >= 0 && (size_t)n < sizeof(line); i++)
        n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s=%lu/%lu", i ? " " : "", call_names[i],
                      atomic_load(&taken[i]), atomic_load(&passed[i]));
    say("INFO", "calls taken over/handed to MPI: %s", line);
}

/* gcoll goes first: its communicators are MPI communicators too. The mappings the program did
 * not free are released through their attributes, then gcoll ends, then MPI. */
int MPI_Finalize(void)
{
    if (log_info())
        report();
    if (ready) {
        for (;;) {
            pthread_mutex_lock(&mappings_lock);
            mapping_t *m = mappings;
            pthread_mutex_unlock(&mappings_lock);
            if (!m)
                break;
            if (PMPI_Comm_delete_attr(m->comm, keyval) != MPI_SUCCESS)
                delete_mapping(m->comm, keyval, m, NULL); /* release it anyway */
        }
        PMPI_Comm_free_keyval(&keyval);
        ready = 0;
        (void)GCOLL(gcoll_finalize());
    }
    return PMPI_Finalize();
}
