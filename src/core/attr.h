/* Per-operation attributes inside the library. The caller's gcoll_attr_t is read once, at the
 * entry point, through gcoll__attr_load: only the fields its recorded size covers, the rest
 * defaulted. Everything past the entry points takes the full internal struct, never the caller's. */
#ifndef GCOLL_ATTR_H
#define GCOLL_ATTR_H

#include "gcoll.h"

/* Every field of gcoll_attr_t after its header, in the header's order; a field appended to the
 * public struct is appended here and to GCOLL__ATTR_FIELDS. */
typedef struct {
    int priority;
    gcoll_compress_t compress;
    const char *name;
    const char *algorithm;
    double topk_density;
    void *stream;
    double premul;
} gcoll__attr_t;

/* user into *out: NULL means all defaults; a struct without a valid header is refused
 * (GCOLL_ERR_INVALID_ARG naming attr), and so is one whose fields past those this library knows
 * are set (GCOLL_ERR_UNSUPPORTED). */
gcoll_status_t gcoll__attr_load(const gcoll_attr_t *user, gcoll__attr_t *out);

#endif
