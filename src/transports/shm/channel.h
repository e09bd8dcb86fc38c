/* The node channel as the algorithms that run over it see it: an opaque handle with accessors.
 * An operation reserves its rounds when it is issued, waits for its turn, publishes each
 * round's input (into its slot, its inline bytes, or its buffers' addresses for single copy),
 * waits for every rank to arrive, works on the peers' inputs, and completes. */
#ifndef GCOLL_SHM_CHANNEL_H
#define GCOLL_SHM_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/opdesc.h"
#include "gcoll.h"

typedef struct gcoll__shm gcoll__shm_t;

#define GCOLL_SHM_INLINE 24 /* input bytes that ride on the arrive line */

/* Who and how big. */
typedef struct {
    int me, n;          /* this rank's local index; local ranks: the whole communicator */
    int cma;            /* single copy works between every pair */
    size_t slot_bytes;  /* one parity of one rank's staging slot */
    size_t chunk_bytes; /* single-copy pipelining chunk */
    size_t read_bytes;  /* single-copy read of a message consumed as it lands */
} gcoll__shm_info_t;
const gcoll__shm_info_t *gcoll__shm_info(const gcoll__shm_t *s);
/* The communicator rank of local rank `local`, for messages that name ranks. */
int gcoll__shm_rank_of(const gcoll__shm_t *s, int local);
/* Private scratch for single-copy reads: two buffers (i 0 or 1) of chunk_bytes each. */
char *gcoll__shm_tmp(gcoll__shm_t *s, int i);

/* Sequence numbers: nrounds fresh rounds for an operation being issued (in the order the ranks
 * issue their operations, which is the same on every rank); the first is returned. */
uint64_t gcoll__shm_reserve(gcoll__shm_t *s, int nrounds);
/* Whether every round before seq has completed here: operations run in issue order. */
int gcoll__shm_turn(const gcoll__shm_t *s, uint64_t seq);
void gcoll__shm_complete(gcoll__shm_t *s, uint64_t seq);

/* An operation's first round seq carries its descriptor, which the peers compare with theirs
 * once all have arrived (gcoll__shm_agree: the mismatch with the first peer that differs). */
void gcoll__shm_announce(gcoll__shm_t *s, uint64_t seq, const gcoll__opdesc_t *d);
gcoll_status_t gcoll__shm_agree(gcoll__shm_t *s, uint64_t seq, uint32_t tag, const gcoll__opdesc_t *mine, int rank);

/* A round's input: local rank q's slot or inline bytes of round seq (by its parity), and the
 * buffer addresses this rank publishes for single copy (NULL leaves one as it is). */
char *gcoll__shm_slot(gcoll__shm_t *s, int q, uint64_t seq);
char *gcoll__shm_inline(gcoll__shm_t *s, int q, uint64_t seq);
void gcoll__shm_publish(gcoll__shm_t *s, const void *src, const void *dst);
uint64_t gcoll__shm_peer_src(const gcoll__shm_t *s, int q);
uint64_t gcoll__shm_peer_dst(const gcoll__shm_t *s, int q);

/* This rank has published round seq (arrive) or is done with the peers' data of it (ready);
 * whether every rank has. */
void gcoll__shm_arrive(gcoll__shm_t *s, uint64_t seq);
void gcoll__shm_ready(gcoll__shm_t *s, uint64_t seq);
int gcoll__shm_all_arrived(gcoll__shm_t *s, uint64_t seq);
int gcoll__shm_all_ready(gcoll__shm_t *s, uint64_t seq);
/* Lists local ranks whose arrive (or ready, if ready) is below seq, as "1, 3". */
void gcoll__shm_laggards(gcoll__shm_t *s, uint64_t seq, int ready, char *buf, size_t len);

/* Single copy between this process and local rank `peer`. */
gcoll_status_t gcoll__shm_read(gcoll__shm_t *s, int peer, void *dst, uint64_t remote_src, size_t bytes);
gcoll_status_t gcoll__shm_write(gcoll__shm_t *s, int peer, uint64_t remote_dst, const void *src, size_t bytes);

#endif
