/* Communicators: a bootstrap group (boot.h), a transport endpoint, the collective sequence
 * number, and the failed state that every later call reports. */
#ifndef GCOLL_COMM_H
#define GCOLL_COMM_H

#include <stdint.h>

#include "base/boot.h"
#include "base/coll.h"
#include "base/config.h"
#include "collectives/cost.h"
#include "collectives/select.h"
#include "gcoll.h"
#include "transports/transport.h"
#include "transports/shm/shm.h"

struct gcoll_comm {
    gcoll__boot_t *boot; /* its own bootstrap group: collective setup calls and address exchange */
    int rank, size;
    unsigned id; /* for messages: the n-th communicator this process made */
    const gcoll__transport_t *tpops;
    gcoll__tp_t *tp;
    uint64_t seq;          /* collectives issued so far: the tag of the next one */
    gcoll_status_t failed; /* GCOLL_SUCCESS while healthy */
    char failmsg[256];
    double t_alive;   /* when a stalled wait last looked for dead peers */
    double timeout_s; /* gcoll_comm_set_timeout's; 0: GCOLL_TIMEOUT's */
    int refs;         /* the user's handle plus requests in flight */
    int is_world;
    int crowded;                  /* more ranks on this host than cores (see gcoll__comm_crowded) */
    unsigned preempted;           /* waits left to run as if crowded: a spinning wait lost its core */
    char tpname[32];              /* what gcoll_comm_transport reports: "shm", "tcp", "shm+tcp" */
    gcoll__shm_t *shm;            /* every rank on this host: the node's shared-memory channel */
    gcoll__shm_t *node_shm;       /* spanning hosts: this host's channel, for point-to-point only */
    gcoll__nodemap_t map;         /* which host every rank is on */
    gcoll__links_t links;         /* the cost model's view of its transports */
    struct gcoll__lane *lane;     /* which progress lane drives its operations */
    uint64_t bytes_sent;          /* payload handed to the transport (gcoll_comm_bytes_sent); lane lock */
    struct gcoll_comm *next;      /* the registry of live handles */
    gcoll__optab_t optab;         /* its recent operations' descriptors, for mismatch detection */
    struct gcoll__flight *flight; /* its last operations, for gcoll_comm_dump (flight.h) */
    /* point-to-point (p2p.c), under the lane's lock: messages posted to and from each rank so
     * far (allocated at the first), and the queue of messages to itself not yet received */
    uint32_t *p2p_sent, *p2p_rcvd;
    struct gcoll__self_msg *self_head, **self_tail;
    /* gcoll_comm_set_algorithm's tables, where own_table is set; else GCOLL_<COLL>'s */
    gcoll__algo_table_t table[GCOLL_COLL_COUNT];
    unsigned char own_table[GCOLL_COLL_COUNT];
};

/* Builds a communicator over the bootstrap group boot (collective over it), which it takes: it
 * is freed with the communicator, or at once on failure. From an MPI_Comm: gcoll__boot_from_mpi. */
gcoll_status_t gcoll__comm_create(gcoll__boot_t *boot, gcoll_comm_t *out);
/* Checks that comm is a live handle and not failed; the message names the argument. */
gcoll_status_t gcoll__comm_check(gcoll_comm_t comm, const char *argname);
/* Marks comm failed: every later call on it returns gcoll__comm_fail_status with this reason. */
void gcoll__comm_fail(gcoll_comm_t comm, gcoll_status_t status, const char *reason);
/* What operations on a failed comm return: GCOLL_ERR_REMOTE after a peer died, so that every
 * pending and later call says so; GCOLL_ERR_ABORTED after any other failure or an abort. */
gcoll_status_t gcoll__comm_fail_status(gcoll_comm_t comm);
void gcoll__comm_release(gcoll_comm_t comm); /* drops one reference */
/* Blocks up to usec unless a peer has made progress since the ticket was read (a futex on the
 * node channel); without one, yields. */
uint32_t gcoll__comm_ticket(gcoll_comm_t comm);
/* Whether waiters should give their core away at once: more ranks on this host than cores, or
 * a recent wait found its spinning preempted (ranks of other "hosts" may share the cores). */
int gcoll__comm_crowded(gcoll_comm_t comm);
void gcoll__comm_idle(gcoll_comm_t comm, uint32_t ticket, long usec);
void gcoll__comm_free_all(void); /* at finalize */

#endif
