/* What the files of lib/libgcoll_mpi.so share: interposer.c (communicators, types, counts,
 * lifetime), requests.c (calls taken over and their generalized requests, the completion calls),
 * colls.c and vcolls.c (the collectives). Hidden: the library exports MPI's names only. */
#ifndef GCOLL_INTERPOSER_H
#define GCOLL_INTERPOSER_H

#include <stddef.h>

#include <mpi.h>

#include "gcoll.h"

#pragma GCC visibility push(hidden)

/* The calls it may take over, by their GCOLL_MPI_COLLS names (gcoll__ip_call_names). */
enum {
    ALLREDUCE,
    IALLREDUCE,
    REDUCE_SCATTER_BLOCK,
    ALLGATHER,
    BCAST,
    REDUCE,
    BARRIER,
    IREDUCE_SCATTER_BLOCK,
    IALLGATHER,
    IBCAST,
    IREDUCE,
    IBARRIER,
    ALLGATHERV,
    IALLGATHERV,
    ALLTOALL,
    IALLTOALL,
    ALLTOALLV,
    IALLTOALLV,
    REDUCE_SCATTER,
    IREDUCE_SCATTER,
    GATHER,
    IGATHER,
    GATHERV,
    IGATHERV,
    SCATTER,
    ISCATTER,
    SCATTERV,
    ISCATTERV,
    NCALLS
};
extern const char *const gcoll__ip_call_names[NCALLS];

/* Set on this thread while it is inside gcoll: gcoll's own MPI calls go straight to PMPI. */
extern _Thread_local int gcoll__ip_in_gcoll;
extern _Thread_local gcoll_status_t gcoll__ip_call_st;
#define GCOLL(call) (gcoll__ip_in_gcoll++, gcoll__ip_call_st = (call), gcoll__ip_in_gcoll--, gcoll__ip_call_st)

/* One line in gcoll's log format. */
void gcoll__ip_say(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether the call may be taken over now: gcoll is up, GCOLL_MPI_COLLS allows it, and the
 * caller is not gcoll itself. */
int gcoll__ip_on(int call);
/* Counts a call handed to MPI (gcoll's own calls are not counted). */
void gcoll__ip_passed(int call);
void gcoll__ip_taken(int call);

/* The gcoll communicator of comm, NULL where MPI keeps its calls. Collective on first use. */
gcoll_comm_t gcoll__ip_map_comm(MPI_Comm comm);

/* The gcoll type and op of a reduction, 0 where gcoll has none. */
int gcoll__ip_reduce_type(MPI_Datatype t, gcoll_dtype_t *out);
int gcoll__ip_reduce_op(MPI_Op op, gcoll_op_t *out);
/* The reductions' common test: the call is on, count is not negative, the type and op are
 * gcoll's, the communicator maps (else NULL). The ranks agree, since MPI has them pass the same
 * type, op and count. */
gcoll_comm_t gcoll__ip_reduction_target(int call, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                                        gcoll_dtype_t *dt, gcoll_op_t *gop);
/* Bytes of count elements of t if they lie back to back from the buffer's start, else 0. */
int gcoll__ip_contiguous_bytes(MPI_Datatype t, int count, size_t *bytes);
/* The size of t if its elements, and blocks of them at displacements in its extent, lie back to
 * back (extent == size, no gaps), else 0. */
int gcoll__ip_dense(MPI_Datatype t, size_t *size);

/* A call taken over: its gcoll request (nonblocking) and the counts and displacements handed
 * to gcoll, which live until the operation has ended. */
typedef struct gcoll__ip_op {
    int call;
    gcoll_request_t g;
    MPI_Request m; /* the program's generalized request */
    int error;     /* MPI_SUCCESS, or MPI_ERR_OTHER when the gcoll operation failed */
    MPI_Comm comm; /* the call's, whose error handler hears of misuse of its request */
    struct gcoll__ip_op *next;
    size_t v[]; /* scratch */
} gcoll__ip_op_t;

/* A new op with n size_t of scratch; NULL without memory. */
gcoll__ip_op_t *gcoll__ip_op_new(int call, size_t n);
/* After gcoll_<call> (request NULL) or gcoll_i<call> (on op->g) returned st: counts the call,
 * hands the program its generalized request, or frees op; a failure goes to comm's error
 * handler. op may be NULL for a blocking call without scratch. Returns the MPI status. */
int gcoll__ip_finish(int call, gcoll__ip_op_t *op, MPI_Comm comm, gcoll_status_t st, MPI_Request *request);
/* A failure inside gcoll, to comm's error handler. */
int gcoll__ip_fail(int call, MPI_Comm comm);

#pragma GCC visibility pop

#endif
