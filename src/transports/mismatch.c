/* The failure that mismatch detection leaves on an endpoint (mismatch.h): its text, whether
 * this endpoint found the mismatch, was told of it by a peer's notice, or by the other endpoint
 * of its route, and the warning each logs once. */
#include <stdio.h>

#include "base/log.h"
#include "transports/mismatch.h"

int gcoll__mismatch_found(gcoll__mismatch_t *m, const gcoll__optab_t *optab, uint32_t tag, int me,
                          const gcoll__opdesc_t *theirs, int peer)
{
    if (m->status)
        return 0;
    m->status = gcoll__opdesc_mismatch(tag, gcoll__optab_find(optab, tag, &(gcoll__opdesc_t){0}), me, theirs, peer);
    snprintf(m->why, sizeof(m->why), "%s", gcoll_last_error());
    GCOLL_LOG(GCOLL_LOG_WARN, "%s: %s", m->name, m->why);
    return 1;
}

int gcoll__mismatch_told(gcoll__mismatch_t *m, const char *why)
{
    if (m->status)
        return 0;
    m->status = GCOLL_ERR_INVALID_USAGE;
    snprintf(m->why, sizeof(m->why), "%s", why);
    GCOLL_LOG(GCOLL_LOG_WARN, "%s: %s", m->name, m->why);
    return 1;
}

int gcoll__mismatch_notice(gcoll__mismatch_t *m, int peer, char *text)
{
    if (m->status)
        return 0;
    gcoll__opdesc_printable(text);
    m->status = GCOLL_ERR_INVALID_USAGE;
    snprintf(m->why, sizeof(m->why), "rank %d reports: %s", peer, text);
    GCOLL_LOG(GCOLL_LOG_WARN, "%s: %s", m->name, m->why);
    return 1;
}
