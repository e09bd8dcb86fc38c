/* Requests: one collective in flight on one communicator, running its schedule. The engine
 * advances every active request whenever any thread waits or tests, so operations that other
 * ranks need keep moving whichever request this rank happens to wait on. */
#ifndef GCOLL_REQUEST_H
#define GCOLL_REQUEST_H

#include <stdint.h>

#include "coll.h"
#include "schedule.h"

struct gcoll_request {
    gcoll_comm_t comm;
    gcoll__coll_t coll;
    const char *algo;
    uint64_t seq;
    int priority;
    char name[64];
    gcoll__sched_t *sched;
    double deadline; /* monotonic seconds; 0 until the engine first reads the clock */
    int done;
    unsigned polls; /* gcoll_test calls that found it unfinished */
    gcoll_status_t status;
    char errmsg[384];
    struct gcoll_request *next; /* in the active list */
    int borrowed;               /* lives in a blocking call's frame: never freed */
};

/* What a blocking call keeps in its own frame instead of allocating: the request and its
 * schedule (the call waits, so both outlive the operation). */
typedef struct {
    struct gcoll_request req;
    gcoll__sched_t sched;
} gcoll__frame_t;

/* Takes ownership of sched; the request starts at once. storage: the request's memory, or
 * NULL to allocate it. */
gcoll_status_t gcoll__request_start(gcoll_comm_t comm, gcoll__coll_t coll, const char *algo,
                                    gcoll__sched_t *sched, const gcoll_attr_t *attr,
                                    gcoll_request_t *out, struct gcoll_request *storage);
/* At finalize: every request in flight ends with GCOLL_ERR_ABORTED. */
void gcoll__engine_abort_all(void);

#endif
