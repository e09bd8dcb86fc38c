/* The layouts that gcoll-info prices and simulates: hosts x ranks per host in blocks (rank r on
 * host r / ranks-per-host), the node map and cost-model links a communicator of that shape has,
 * and the arguments of a collective of a given size on it (the vector ones in even blocks). */
#ifndef GCOLL_TOOLS_LAYOUT_H
#define GCOLL_TOOLS_LAYOUT_H

#include <stddef.h>

#include "base/coll.h"
#include "collectives/cost.h"

typedef struct {
    int *host, *first;
    gcoll__nodemap_t map;
    gcoll__links_t *links;
    size_t *counts, *displs;   /* the vector collectives' blocks, one per rank */
    const char *intra, *inter; /* the transports the links are priced as */
} layout_t;

/* Sets l up for hosts x rph, its links those of the configured transports (auto as tcp); 0 when
 * out of memory. */
int layout_init(layout_t *l, int hosts, int rph);
void layout_free(layout_t *l);
/* A float32 sum of collective coll on l, of no size yet. */
gcoll__coll_args_t layout_args(layout_t *l, int coll);
/* Sets a's count (the vector collectives: even blocks, as gcoll__cost_even prices them) for about
 * bytes of the collective's whole vector (alltoallv: of one rank's send buffer, as alltoall's);
 * *shown: the bytes it covers. */
void layout_size(layout_t *l, gcoll__coll_args_t *a, size_t bytes, size_t *shown);
/* "64K" for 65536: the largest unit that divides v. */
const char *size_str(size_t v, char *buf, size_t len);
/* "HxR": hosts and ranks per host; 0 when malformed or past 65,536 ranks. */
int parse_layout(const char *s, int *hosts, int *rph);

#endif
