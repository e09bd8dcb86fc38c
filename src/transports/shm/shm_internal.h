/* The node channel's layout, private to src/transports/shm/: the segment's header, each rank's
 * control lines, the point-to-point rings' cells, and the channel's own state. Algorithms see
 * the channel through channel.h, the core through shm.h. */
#ifndef GCOLL_SHM_INTERNAL_H
#define GCOLL_SHM_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/opdesc.h"
#include "transports/shm/shm.h"

#define GCOLL_SHM_LINE 64

/* One rank's public state. Each counter holds the sequence number of the last operation
 * (or round) that reached that point, and sits on its own cache line. */
#define GCOLL_SHM_NOTICE 384 /* text of a mismatch notice */

typedef struct {
    _Alignas(GCOLL_SHM_LINE) _Atomic uint64_t arrive; /* inputs (slot data, addresses) published */
    /* A tiny input travels in the arrive counter's own line, by round parity like the slots:
     * the peers fetch one line per operation instead of two. */
    char inl[2][GCOLL_SHM_INLINE];
    _Alignas(GCOLL_SHM_LINE) uint64_t src, dst; /* buffer addresses, for single copy */
    /* The operation of the first round with this parity: the peers compare it with theirs */
    struct {
        uint64_t seq;
        gcoll__opdesc_t d;
    } op[2];
    _Alignas(GCOLL_SHM_LINE) _Atomic uint64_t ready; /* done with the peers' data for this op */
    _Alignas(GCOLL_SHM_LINE) _Atomic uint64_t rings; /* bumped on every ring event of this rank */
    /* This rank's threads sleep on wake; asleep counts them, so that a peer wakes only the
     * ranks that sleep and that its move concerns. */
    _Alignas(GCOLL_SHM_LINE) _Atomic uint32_t wake;
    _Atomic uint32_t asleep;
    /* Set once, after why, when this rank's point-to-point endpoint found that the ranks' calls
     * differ: every peer reads it in its ring progress, so none waits on a ring that will not
     * move, and no ring needs room for the notice. */
    _Alignas(GCOLL_SHM_LINE) _Atomic uint32_t mismatch;
    char why[GCOLL_SHM_NOTICE];
    /* Set once, after down_why, when this rank learnt over another transport that a rank of the
     * communicator died: the ranks of this host, which may wait only on this one, fail too. */
    _Alignas(GCOLL_SHM_LINE) _Atomic uint32_t down;
    char down_why[GCOLL_SHM_NOTICE];
} gcoll__shm_ctrl_t;

typedef struct {
    _Alignas(GCOLL_SHM_LINE) _Atomic uint32_t sleepers; /* waiters of every rank blocked in futex_wait */
} gcoll__shm_hdr_t;

/* One cell of a point-to-point ring (sender -> receiver): a header line, then the payload. */
typedef struct {
    _Alignas(GCOLL_SHM_LINE) _Atomic uint32_t full; /* written last by the sender, cleared by the receiver */
    uint32_t kind;                                  /* GCOLL_SHM_MSG_* */
    uint32_t tag;
    uint32_t len;         /* payload bytes in this cell */
    uint64_t total;       /* bytes of the whole message */
    uint64_t addr;        /* the sender's buffer, for a single-copy message */
    uint64_t msgid;       /* the sender's count of single-copy messages to this receiver */
    gcoll__opdesc_t desc; /* the sender's operation of tag (first cell of a message; zero: unknown) */
} gcoll__shm_cell_t;
_Static_assert(sizeof(gcoll__shm_cell_t) == GCOLL_SHM_LINE, "a ring cell's header is one line");

enum { GCOLL_SHM_MSG_FIRST = 1, GCOLL_SHM_MSG_MORE = 2, GCOLL_SHM_MSG_CMA = 3 };

typedef struct gcoll__shm_p2p gcoll__shm_p2p_t; /* private ring state, shm_p2p.c */

struct gcoll__shm {
    void *base;
    size_t map_bytes;
    gcoll__shm_hdr_t *hdr;
    gcoll__shm_ctrl_t *ctrl; /* [nlocal] */
    char *slots;             /* [nlocal][2][slot_bytes] */
    gcoll__shm_info_t info;  /* who and how big, for the algorithms */
    pid_t *pids;             /* [n] */
    char *tmp;               /* two chunks of private scratch for single-copy reads, */
    size_t tmp_stride;       /* tmp_stride bytes apart */
    char *rings;             /* [sender][receiver]: acknowledgement slots, then depth cells */
    size_t cell_bytes;       /* payload bytes of one cell */
    size_t pair_bytes;       /* one ring */
    int depth;               /* cells per ring */
    gcoll__shm_p2p_t *p2p;   /* created with the point-to-point endpoint */
    uint64_t issued;         /* sequence numbers handed to operations built so far */
    uint64_t completed;      /* operations finished here, in order */
};

/* Collective over node, which must hold every rank of the communicator. NULL in *out (and
 * success) when shared memory is unavailable; the reason is logged. */
gcoll_status_t gcoll__shm_create(gcoll__boot_t *node, gcoll__shm_t **out);
void gcoll__shm_destroy(gcoll__shm_t *shm);

/* Single-copy messages that one sender may have awaiting acknowledgement by one receiver. The
 * receiver acknowledges message m (ids count from 1) by storing m in slot m % GCOLL_SHM_ACKS, in
 * whatever order its receives read them, so the sender keeps the ids in flight within a window
 * of GCOLL_SHM_ACKS (shm_p2p.c). */
#define GCOLL_SHM_ACKS 64
#define GCOLL_SHM_ACK_BYTES (GCOLL_SHM_ACKS * sizeof(uint64_t)) /* whole cache lines */

/* The ring from local rank `from` to local rank `to`: its acknowledgement slots, then its cells. */
static inline _Atomic uint64_t *gcoll__shm_ack(gcoll__shm_t *s, int from, int to, uint64_t msgid)
{
    return (_Atomic uint64_t *)(s->rings + ((size_t)from * (size_t)s->info.n + (size_t)to) * s->pair_bytes) +
        msgid % GCOLL_SHM_ACKS;
}
static inline gcoll__shm_cell_t *gcoll__shm_cell(gcoll__shm_t *s, int from, int to, uint64_t i)
{
    size_t stride = sizeof(gcoll__shm_cell_t) + s->cell_bytes;
    return (gcoll__shm_cell_t *)((char *)gcoll__shm_ack(s, from, to, 0) + GCOLL_SHM_ACK_BYTES +
                                 (size_t)(i % (uint64_t)s->depth) * stride);
}

/* Publishes this rank's arrive or ready counter; the rank whose move completes a value on
 * every rank wakes the sleepers, since waits on these counters wait for all ranks. */
void gcoll__shm_set(gcoll__shm_t *s, _Atomic uint64_t *counter, uint64_t v);
/* Bumps this rank's ring counter and wakes local rank peer (-1: every rank) if it sleeps. */
void gcoll__shm_ring_event(gcoll__shm_t *s, uint64_t events, int peer);
/* A local rank whose process has exited (gone, or a zombie not yet reaped), with its pid in why;
 * -1 when all live. Cheap (a kill(pid, 0) per rank), but still for stalled waits only. */
int gcoll__shm_dead_peer(gcoll__shm_t *s, char *why, size_t len);

#endif
