/* The transport interface: a table of function pointers that carries tagged point-to-point
 * messages between the ranks of one communicator. The core creates one endpoint per
 * communicator, exchanges addresses through the bootstrap group (MPI, or the TCP tree of a job
 * launched without MPI: src/base/boot.h), and drives requests through
 * test/progress. A transport never knows which collective a message serves. */
#ifndef GCOLL_TRANSPORT_H
#define GCOLL_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/boot.h"
#include "gcoll.h"
#include "base/opdesc.h"

typedef struct gcoll__tp gcoll__tp_t;         /* one endpoint: a communicator's view of a transport */
typedef struct gcoll__tp_req gcoll__tp_req_t; /* one send or receive in flight */
/* Told that bytes [off, off + len) of a receive's buffer have landed. */
typedef void (*gcoll__tp_landed_fn)(void *arg, size_t off, size_t len);

typedef struct {
    gcoll__boot_t *group; /* the communicator's bootstrap group: collective setup calls */
    int rank, size;
    /* The communicator's recent operations by tag: a transport that frames its messages puts
     * the descriptor of a message's operation in its frame, and compares what arrives with it
     * (opdesc.h). NULL: nothing is checked. Read and written under the lane's lock. */
    const gcoll__optab_t *optab;
} gcoll__bootstrap_t;

typedef struct gcoll__transport {
    const char *name;
    /* Creates the endpoint. The address it publishes (addr_len bytes) is gathered from every
     * rank by the core and handed to connect. */
    gcoll_status_t (*create)(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp);
    size_t (*addr_len)(gcoll__tp_t *tp);
    gcoll_status_t (*addr)(gcoll__tp_t *tp, void *buf);
    gcoll_status_t (*connect)(gcoll__tp_t *tp, const void *all_addrs);
    /* Nonblocking tagged messages. Messages between one pair with one tag arrive in the order
     * they were posted. A receive must match the sent size exactly; anything else fails it. */
    gcoll_status_t (*isend)(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                            gcoll__tp_req_t **req);
    gcoll_status_t (*irecv)(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **req);
    /* isend for an operation of this priority: where messages to the peer queue for the link,
     * higher priorities' data goes out first (equal ones in posting order), so an urgent message
     * posted late does not wait behind bulk posted before it. NULL: posting order only. */
    gcoll_status_t (*isend_prio)(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int priority,
                                 gcoll__tp_req_t **req);
    /* A receive of at most bytes: a shorter message completes it too, and its length is in *got
     * once test reports it done (a longer one fails it). NULL: receives take exact sizes only. */
    gcoll_status_t (*irecv_upto)(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, size_t *got,
                                 gcoll__tp_req_t **req);
    /* A receive that calls landed(arg, off, len) as each part of the message lands in buf, in
     * order, so that the receiver can work on a part while it is still in cache; every byte has
     * been handed over when test reports it done. Parts may be handed over inside this call (a
     * message that arrived first) or any later progress call, so the consumer must be ready
     * before posting; a receive that then fails may have handed over some. An endpoint that
     * cannot do so for this peer posts a plain receive and sets *parts to 0: the caller hands
     * the whole message over itself. NULL: never in parts. */
    gcoll_status_t (*irecv_landed)(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                   gcoll__tp_landed_fn landed, void *arg, int *parts, gcoll__tp_req_t **req);
    /* Sets *done; a finished request is freed. An error also frees it. */
    gcoll_status_t (*test)(gcoll__tp_t *tp, gcoll__tp_req_t *req, int *done);
    /* Abandons a request that will not complete (timeout, abort) and frees it. */
    void (*cancel)(gcoll__tp_t *tp, gcoll__tp_req_t *req);
    /* Memory registration hook for transports that need pinned or registered buffers; NULL
     * when the transport needs none. */
    gcoll_status_t (*reg_mem)(gcoll__tp_t *tp, void *buf, size_t bytes, void **handle);
    void (*dereg_mem)(gcoll__tp_t *tp, void *handle);
    /* Sleeps until the endpoint sees activity (a message, a writable socket) or usec pass, so
     * an idle waiter gives its core to the ranks it waits for; NULL: the engine yields instead. */
    gcoll_status_t (*wait)(gcoll__tp_t *tp, long usec);
    /* Looks for a peer that died (its process gone, its connection lost without goodbye); the
     * engine asks when an operation has stalled. Returns the peer (this endpoint's numbering)
     * with the evidence in why, or -1. NULL: the transport cannot tell, GCOLL_TIMEOUT ends the wait. */
    int (*dead_peer)(gcoll__tp_t *tp, char *why, size_t len);
    /* Fails the endpoint with a mismatch that another endpoint of the communicator found or was
     * told of (why: its message), and tells the peers this one reaches, as its own mismatch
     * notice would: a route's ranks of one host and of the others all learn of it. NULL: those
     * peers learn of it from a stalled exchange or GCOLL_TIMEOUT. */
    void (*mismatch)(gcoll__tp_t *tp, const char *why);
    /* Another endpoint of the communicator found a peer's process gone: rank is the dead one's
     * rank in the communicator, which an endpoint over the whole communicator (numbered like it)
     * acts on; why says how it was found. The endpoint fails what waits on that rank and tells the
     * peers it reaches, so that a rank that waits only on them (a host's ranks behind their
     * leader, or a rank that never connected to the dead one) fails at once instead of at
     * GCOLL_TIMEOUT. NULL: they learn of it from their own exchanges or GCOLL_TIMEOUT. */
    void (*peer_down)(gcoll__tp_t *tp, int rank, const char *why);
    /* Advances the endpoint without a request of this rank's own, so that a mismatch a peer
     * reports reaches a rank that waits only on another endpoint of its route; returns the
     * mismatch the endpoint found or was told of, else success. NULL: it has nothing to read. */
    gcoll_status_t (*check)(gcoll__tp_t *tp);
    void (*close)(gcoll__tp_t *tp);
} gcoll__transport_t;

/* A send of that priority on an endpoint of ops: isend_prio where the transport has it. */
static inline gcoll_status_t gcoll__tp_isend_prio(const gcoll__transport_t *ops, gcoll__tp_t *tp, int peer,
                                                  uint32_t tag, const void *buf, size_t bytes, int priority,
                                                  gcoll__tp_req_t **req)
{
    return ops->isend_prio ? ops->isend_prio(tp, peer, tag, buf, bytes, priority, req)
                           : ops->isend(tp, peer, tag, buf, bytes, req);
}

#endif
