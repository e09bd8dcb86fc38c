/* Per-peer routing over two connected endpoints (see route.c): which endpoint and index reach
 * each rank of the communicator. */
#ifndef GCOLL_ROUTE_H
#define GCOLL_ROUTE_H

#include "transports/transport.h"

typedef struct {
    const gcoll__transport_t *ops;
    gcoll__tp_t *tp;
} gcoll__route_ep_t;

typedef struct {
    int ep;    /* 0 or 1: the endpoint that reaches this peer */
    int index; /* the peer's rank in that endpoint's numbering */
} gcoll__route_peer_t;

extern const gcoll__transport_t gcoll__transport_route;

/* Takes ownership of both endpoints and of peers (malloc'd, one entry per rank of size). ep[0]
 * spans the communicator, numbered like it (the inter-node transport); ep[1] some of its ranks. */
gcoll_status_t gcoll__route_open(const gcoll__route_ep_t ep[2], gcoll__route_peer_t *peers, int size,
                                 gcoll__tp_t **out);

#endif
