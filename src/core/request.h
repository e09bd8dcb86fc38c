/* Requests: one collective in flight on one communicator, running its schedule. The engine
 * advances every active request whenever any thread waits or tests, so operations that other
 * ranks need keep moving whichever request this rank happens to wait on. */
#ifndef GCOLL_REQUEST_H
#define GCOLL_REQUEST_H

#include <stdint.h>

#include "core/attr.h"
#include "base/coll.h"
#include "base/schedule.h"

struct gcoll_request {
    gcoll_comm_t comm;
    gcoll__coll_t coll;
    const char *algo;
    uint64_t seq;
    int priority;
    char name[64];
    gcoll__sched_t *sched;
    double deadline;  /* monotonic seconds; 0 until the engine first reads the clock */
    double t_moved;   /* the clock reading after its last progress: how long it has stalled */
    double next_warn; /* when the next stall warning is due; 0: none (GCOLL_STALL_WARN_S=0) */
    int progressed;   /* moved since the last clock reading */
    int done;
    unsigned polls; /* gcoll_test calls that found it unfinished */
    double t_poll;  /* when the last of them returned: a caller that polls again at once waits */
    gcoll_status_t status;
    char errmsg[384];
    struct gcoll_request *next; /* in the active list */
    struct gcoll__lane *lane;   /* its communicator's */
    unsigned sending;           /* sends posted and not yet complete */
    int borrowed;               /* lives in a blocking call's frame: never freed */
    int kept;                   /* the schedule is the caller's, run again later: never freed */
    int pending;                /* held by an open group until its end (group.c): not started */
    int grouped;                /* posted in a group that is still open: not to be waited for yet */
    int blocking;               /* a blocking call's, in a group: gcoll_group_end waits for it */
    double t_start, t_post;     /* timeline: when it started, when its first message was posted */
    int posted;                 /* it posted a message */
    int member;                 /* a fused allreduce's member: no sequence number of its own */
    uint64_t flight;            /* its flight recorder entry (flight.c); 0: none */
};

/* What a blocking call keeps in its own frame instead of allocating: the request and its
 * schedule (the call waits, so both outlive the operation). */
typedef struct {
    struct gcoll_request req;
    gcoll__sched_t sched;
} gcoll__frame_t;

/* How a request starts, beyond its schedule. */
typedef struct {
    struct gcoll_request *storage; /* the request's memory; NULL: allocate it */
    int kept;                      /* the schedule stays the caller's (rewound before each run, gcoll__sched_rewind) */
    int wake;                      /* hand it to the lane's worker (nonblocking calls; a blocking call drives its own
                     operation and spares the worker a wake-up) */
    int own_tag;                   /* use tag as the messages' tag instead of the communicator's issue count: for
                     callers that issue in an order ranks do not share and name operations alike */
    uint64_t tag;
    int p2p;    /* tag is a point-to-point message's (GCOLL_TAG_P2P set), taken as it is */
    int heap;   /* storage came from malloc: freed when the request is, as if allocated here */
    int member; /* a fused allreduce's member (group.c): its leader holds the sequence number */
} gcoll__start_t;

/* Takes ownership of sched unless kept; the request starts at once. */
gcoll_status_t gcoll__request_start(gcoll_comm_t comm, gcoll__coll_t coll, const char *algo, gcoll__sched_t *sched,
                                    const gcoll__attr_t *attr, gcoll_request_t *out, const gcoll__start_t *how);
/* Fills a's communicator fields after checking comm, dtype and (needs_op) op; the messages
 * name the argument. */
gcoll_status_t gcoll__check_common(gcoll__coll_args_t *a, gcoll_comm_t comm, int needs_op);
/* Checks a compression setting of an operation or a session set; the messages name cname and
 * dname (the density's argument). */
gcoll_status_t gcoll__compress_check(gcoll_compress_t compress, double density, gcoll_dtype_t dtype, gcoll_op_t op,
                                     const char *cname, const char *dname);
/* The schedule of a, built by the algorithm forced (NULL: the selection's), in storage or on
 * the heap. */
gcoll_status_t gcoll__build(const gcoll__coll_args_t *a, const char *forced, gcoll__sched_t *storage,
                            gcoll__sched_t **out, const char **algo_name);
/* For requests that another operation drives (src/cuda/stage.c), outside the lane's list: runs
 * r's schedule as far as it can, and abandons its messages in flight. Lane lock held. */
gcoll_status_t gcoll__request_advance(gcoll_request_t r, unsigned *moved);
void gcoll__request_cancel(gcoll_request_t r);
/* The peers r's current round still waits on, e.g. "2, 5" ("" when none). */
void gcoll__request_peers(const gcoll_request_t r, char *buf, size_t len);
/* At finalize: every request in flight ends with GCOLL_ERR_ABORTED. */
void gcoll__engine_abort_all(void);
/* Fails comm with status and why, and ends its requests in flight now. Lane lock not held. */
void gcoll__engine_fail_comm(gcoll_comm_t comm, gcoll_status_t status, const char *why);

#endif
