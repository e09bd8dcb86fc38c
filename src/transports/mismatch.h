/* Mismatch detection, shared by the transports that carry operation descriptors (tcp, the node
 * channel's rings, and frame/ for mpi, ofi and plugins): comparing a message's descriptor with
 * this rank's operation of its tag, and the endpoint's failure once the ranks' operations were
 * found to differ, here, by a peer's notice, or by the other endpoint of a route. Each transport
 * carries its notices and fails its requests its own way. */
#ifndef GCOLL_MISMATCH_H
#define GCOLL_MISMATCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/opdesc.h"

#define GCOLL_MISMATCH_WHY 416 /* the failure's text, NUL included; a notice carries a prefix of it */

typedef struct {
    const char *name; /* the transport, for the log */
    /* GCOLL_SUCCESS, or GCOLL_ERR_INVALID_USAGE once the endpoint found or was told of a
     * mismatch: every request and call fails with why, which is also its notices' text */
    gcoll_status_t status;
    char why[GCOLL_MISMATCH_WHY];
} gcoll__mismatch_t;

/* Whether the descriptor of a message under tag (theirs) agrees with this rank's operation of
 * that tag in optab; an unknown operation on either side always does. */
static inline int gcoll__mismatch_agree(const gcoll__optab_t *optab, uint32_t tag, const gcoll__opdesc_t *theirs)
{
    return gcoll__opdesc_agree(gcoll__optab_find(optab, tag, &(gcoll__opdesc_t){0}), theirs);
}

/* Once gcoll__mismatch_agree said no: the endpoint of rank me fails with a message naming both
 * operations, this rank's and peer's. Returns 1 when this is its first failure: the caller then
 * tells its peers and fails its requests. */
int gcoll__mismatch_found(gcoll__mismatch_t *m, const gcoll__optab_t *optab, uint32_t tag, int me,
                          const gcoll__opdesc_t *theirs, int peer);
/* The transport table's mismatch hook: another endpoint of the communicator found or was told
 * of one (why). Returns 1 when this is the first failure: the caller tells its peers. */
int gcoll__mismatch_told(gcoll__mismatch_t *m, const char *why);
/* Peer's notice has arrived: text (NUL-terminated, from another process, made printable in place)
 * becomes "rank <peer> reports: <text>". Returns 1 when this is the first failure: the caller
 * fails its requests. */
int gcoll__mismatch_notice(gcoll__mismatch_t *m, int peer, char *text);

/* The failure, recorded for gcoll_last_error. */
static inline gcoll_status_t gcoll__mismatch_error(const gcoll__mismatch_t *m)
{
    return gcoll__error(m->status, "%s", m->why);
}

#endif
