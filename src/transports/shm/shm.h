/* The shared-memory channel of one communicator's node group, as the core sees it: created and
 * destroyed with the communicator, its point-to-point endpoint (the transport table's), and the
 * futex sleep of idle waiters. A segment in /dev/shm that every local rank maps (named with an
 * unguessable id, mode 0600, unlinked as soon as all have mapped it); plus single copy (cross-
 * memory attach) where the kernel permits. Algorithms use it through channel.h. */
#ifndef GCOLL_SHM_H
#define GCOLL_SHM_H

#include "base/boot.h"
#include "base/opdesc.h"
#include "gcoll.h"
#include "transports/shm/channel.h"

/* Collective over node, which must hold every rank of the communicator. NULL in *out (and
 * success) when shared memory is unavailable; the reason is logged. */
gcoll_status_t gcoll__shm_create(gcoll__boot_t *node, gcoll__shm_t **out);
void gcoll__shm_destroy(gcoll__shm_t *shm);

struct gcoll__tp;
struct gcoll__transport;
extern const struct gcoll__transport gcoll__transport_shm;
/* The point-to-point endpoint over the channel's rings (the transport table's tp). optab: the
 * communicator's operations by tag, whose descriptors the messages carry and are checked
 * against (NULL: nothing is checked). ranks[i]: local rank i's communicator rank, for the
 * messages that name ranks (copied; NULL: the local ranks). */
gcoll_status_t gcoll__shm_p2p_open(gcoll__shm_t *s, const gcoll__optab_t *optab, const int *ranks,
                                   struct gcoll__tp **tp);

/* A digest of the node's counters; gcoll__shm_sleep blocks (futex) until a counter moves
 * after the ticket was taken, or timeout_us passes, and returns at once if one already has. */
uint32_t gcoll__shm_ticket(gcoll__shm_t *s);
void gcoll__shm_sleep(gcoll__shm_t *s, uint32_t ticket, long timeout_us);

#endif
