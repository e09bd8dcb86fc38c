/* libgcoll_mpi.so: loaded with LD_PRELOAD into an MPI program, it runs MPI's collectives on gcoll
 * (as GCOLL_MPI_COLLS allows) and hands everything else to MPI through PMPI. This file holds what
 * every call needs: gcoll's start and end, the communicator mapping (each communicator maps once,
 * cached in an attribute whose delete callback frees it), types and ops, the counts. The calls are
 * in colls.c and vcolls.c, their requests in requests.c; docs/interposer.md gives the rules. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gcoll_mpi.h"
#include "interposer.h"

const char *const gcoll__ip_call_names[NCALLS] = {"allreduce",
                                                  "iallreduce",
                                                  "reduce_scatter_block",
                                                  "allgather",
                                                  "bcast",
                                                  "reduce",
                                                  "barrier",
                                                  "ireduce_scatter_block",
                                                  "iallgather",
                                                  "ibcast",
                                                  "ireduce",
                                                  "ibarrier",
                                                  "allgatherv",
                                                  "iallgatherv",
                                                  "alltoall",
                                                  "ialltoall",
                                                  "alltoallv",
                                                  "ialltoallv",
                                                  "reduce_scatter",
                                                  "ireduce_scatter",
                                                  "gather",
                                                  "igather",
                                                  "gatherv",
                                                  "igatherv",
                                                  "scatter",
                                                  "iscatter",
                                                  "scatterv",
                                                  "iscatterv"};

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
_Thread_local int gcoll__ip_in_gcoll;
_Thread_local gcoll_status_t gcoll__ip_call_st;

void gcoll__ip_say(const char *level, const char *fmt, ...)
{
    char host[64] = "?", msg[2048];
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s:%d] gcoll %s: mpi interposer: %s\n", host, my_rank, level, msg);
}

int gcoll__ip_on(int call)
{
    return !gcoll__ip_in_gcoll && ready && enabled[call];
}

void gcoll__ip_passed(int call)
{
    if (!gcoll__ip_in_gcoll)
        atomic_fetch_add(&passed[call], 1);
}

void gcoll__ip_taken(int call)
{
    atomic_fetch_add(&taken[call], 1);
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
gcoll_comm_t gcoll__ip_map_comm(MPI_Comm comm)
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
        gcoll__ip_say("ERROR", "no memory to map a communicator");
        PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
        return NULL;
    }
    m->comm = comm;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (!inter) {
        int ok = GCOLL(gcoll_comm_from_mpi(comm, &m->g)) == GCOLL_SUCCESS, all = 0;
        if (!ok)
            gcoll__ip_say("WARN", "cannot map a communicator: %s: MPI keeps its calls", gcoll_last_error());
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

/* The gcoll type of a predefined MPI type that gcoll reduces, by width (short, int, long, ...
 * differ between platforms). 0 for the rest. */
int gcoll__ip_reduce_type(MPI_Datatype t, gcoll_dtype_t *out)
{
    if (t == MPI_FLOAT || t == MPI_DOUBLE) {
        *out = t == MPI_FLOAT ? GCOLL_FLOAT32 : GCOLL_FLOAT64;
        return 1;
    }
    const MPI_Datatype sig[] = {MPI_SIGNED_CHAR, MPI_INT8_T, MPI_SHORT,     MPI_INT16_T, MPI_INT,
                                MPI_INT32_T,     MPI_LONG,   MPI_LONG_LONG, MPI_INT64_T};
    const MPI_Datatype uns[] = {MPI_UNSIGNED_CHAR, MPI_UINT8_T,  MPI_UNSIGNED_SHORT, MPI_UINT16_T,
                                MPI_UNSIGNED,      MPI_UINT32_T, MPI_UNSIGNED_LONG,  MPI_UNSIGNED_LONG_LONG,
                                MPI_UINT64_T};
    int is_signed = -1;
    for (size_t i = 0; i < sizeof(sig) / sizeof(sig[0]) && is_signed < 0; i++)
        is_signed = t == sig[i] ? 1 : t == uns[i] ? 0 : -1;
    int size = 0;
    if (is_signed < 0 || PMPI_Type_size(t, &size) != MPI_SUCCESS)
        return 0;
    switch (size) {
    case 1: *out = is_signed ? GCOLL_INT8 : GCOLL_UINT8; return 1;
    case 2: *out = is_signed ? GCOLL_INT16 : GCOLL_UINT16; return 1;
    case 4: *out = is_signed ? GCOLL_INT32 : GCOLL_UINT32; return 1;
    case 8: *out = is_signed ? GCOLL_INT64 : GCOLL_UINT64; return 1;
    default: return 0;
    }
}

int gcoll__ip_reduce_op(MPI_Op op, gcoll_op_t *out)
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

gcoll_comm_t gcoll__ip_reduction_target(int call, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                                        gcoll_dtype_t *dt, gcoll_op_t *gop)
{
    if (count < 0 || !gcoll__ip_on(call) || !gcoll__ip_reduce_type(t, dt) || !gcoll__ip_reduce_op(op, gop))
        return NULL;
    return gcoll__ip_map_comm(comm);
}

/* size, extent and true extent of t; 0 for MPI_DATATYPE_NULL and the like */
static int shape(MPI_Datatype t, int *size, MPI_Aint *extent, MPI_Aint *tlb, MPI_Aint *textent)
{
    MPI_Aint lb;
    return t != MPI_DATATYPE_NULL && PMPI_Type_size(t, size) == MPI_SUCCESS &&
        PMPI_Type_get_extent(t, &lb, extent) == MPI_SUCCESS &&
        PMPI_Type_get_true_extent(t, tlb, textent) == MPI_SUCCESS;
}

/* Predefined types, and derived ones without gaps: gcoll moves them as bytes. */
int gcoll__ip_contiguous_bytes(MPI_Datatype t, int count, size_t *bytes)
{
    int size;
    MPI_Aint extent, tlb, textent;
    if (count < 0 || !shape(t, &size, &extent, &tlb, &textent) || tlb != 0 || textent != size ||
        (count > 1 && extent != size))
        return 0;
    *bytes = (size_t)count * (size_t)size;
    return 1;
}

int gcoll__ip_dense(MPI_Datatype t, size_t *size)
{
    int sz;
    MPI_Aint extent, tlb, textent;
    if (!shape(t, &sz, &extent, &tlb, &textent) || tlb != 0 || textent != sz || extent != sz)
        return 0;
    *size = (size_t)sz;
    return 1;
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
        gcoll__ip_say("WARN", "gcoll did not start: every call goes to MPI");
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    int any = 0;
    for (int i = 0; all && i < NCALLS; i++) {
        (void)GCOLL(gcoll_mpi_coll_enabled(gcoll__ip_call_names[i], &enabled[i]));
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
    char line[2048];
    int n = 0;
    for (int i = 0; i < NCALLS && n >= 0 && (size_t)n < sizeof(line); i++)
        n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s=%lu/%lu", i ? " " : "", gcoll__ip_call_names[i],
                      atomic_load(&taken[i]), atomic_load(&passed[i]));
    gcoll__ip_say("INFO", "calls taken over/handed to MPI: %s", line);
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
