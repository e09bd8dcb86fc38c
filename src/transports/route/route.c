/* Per-peer routing for a communicator that mixes transports: the ranks of this host over one
 * endpoint (shared-memory rings, or MPI), the other hosts over the inter-node transport. Each peer
 * maps to an endpoint and its index there; a request keeps its endpoint in the low bit of its
 * pointer (transports' requests are 8-byte aligned), so routing adds no allocation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "transports/route/route.h"

/* Tests of unfinished requests between two checks of the other endpoint: often enough that a
 * notice arriving there ends a wait within microseconds, rarely enough to cost nothing. */
#define CHECK_EVERY 64

struct gcoll__tp {
    gcoll__route_ep_t ep[2];
    gcoll__route_peer_t *peers; /* [size] */
    int size;
    unsigned pending_tests; /* tests that found their request unfinished */
    int told_down;          /* a dead peer that one endpoint found was passed to the other */
};

gcoll_status_t gcoll__route_open(const gcoll__route_ep_t ep[2], gcoll__route_peer_t *peers, int size, gcoll__tp_t **out)
{
    gcoll__tp_t *tp = calloc(1, sizeof(*tp));
    if (!tp)
        return gcoll__error(GCOLL_ERR_NOMEM, "route: no memory for an endpoint");
    tp->ep[0] = ep[0];
    tp->ep[1] = ep[1];
    tp->peers = peers;
    tp->size = size;
    *out = tp;
    return GCOLL_SUCCESS;
}

static gcoll__tp_req_t *mark(gcoll__tp_req_t *r, int ep)
{
    return (gcoll__tp_req_t *)((uintptr_t)r | (uintptr_t)ep);
}

static int owner(gcoll__tp_req_t *r)
{
    return (int)((uintptr_t)r & 1);
}

static gcoll__tp_req_t *unmark(gcoll__tp_req_t *r)
{
    return (gcoll__tp_req_t *)((uintptr_t)r & ~(uintptr_t)1);
}

/* A mismatch that endpoint e found or was told of reaches the ranks behind the other one too
 * (otherwise the ranks of one host would learn of what another host found only at GCOLL_TIMEOUT).
 * Returns st. */
static gcoll_status_t spread(gcoll__tp_t *tp, int e, gcoll_status_t st)
{
    gcoll__route_ep_t *other = &tp->ep[!e];
    if (st != GCOLL_ERR_INVALID_USAGE || !other->tp || !other->ops->mismatch)
        return st;
    char why[400];
    snprintf(why, sizeof(why), "%s", gcoll_last_error());
    other->ops->mismatch(other->tp, why);
    return gcoll__error(st, "%s", why); /* the other endpoint's failing may have set another */
}

static gcoll_status_t route_isend_prio(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                       int priority, gcoll__tp_req_t **req)
{
    gcoll__route_peer_t p = tp->peers[peer];
    gcoll__route_ep_t *e = &tp->ep[p.ep];
    GCOLL_CHECK(spread(tp, p.ep, gcoll__tp_isend_prio(e->ops, e->tp, p.index, tag, buf, bytes, priority, req)));
    *req = mark(*req, p.ep);
    return GCOLL_SUCCESS;
}

static gcoll_status_t route_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                  gcoll__tp_req_t **req)
{
    return route_isend_prio(tp, peer, tag, buf, bytes, 0, req);
}

static gcoll_status_t route_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                  gcoll__tp_req_t **req)
{
    gcoll__route_peer_t p = tp->peers[peer];
    gcoll__route_ep_t *e = &tp->ep[p.ep];
    GCOLL_CHECK(spread(tp, p.ep, e->ops->irecv(e->tp, p.index, tag, buf, bytes, req)));
    *req = mark(*req, p.ep);
    return GCOLL_SUCCESS;
}

static gcoll_status_t route_irecv_landed(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                         gcoll__tp_landed_fn landed, void *arg, int *parts, gcoll__tp_req_t **req)
{
    gcoll__route_peer_t p = tp->peers[peer];
    gcoll__route_ep_t *e = &tp->ep[p.ep];
    if (!e->ops->irecv_landed) {
        *parts = 0;
        return route_irecv(tp, peer, tag, buf, bytes, req);
    }
    GCOLL_CHECK(spread(tp, p.ep, e->ops->irecv_landed(e->tp, p.index, tag, buf, bytes, landed, arg, parts, req)));
    *req = mark(*req, p.ep);
    return GCOLL_SUCCESS;
}

/* A rank that waits only on one endpoint still reads the other now and then: a mismatch that
 * only the other shows (its peers' notices) ends this wait too, instead of GCOLL_TIMEOUT. */
static gcoll_status_t route_test(gcoll__tp_t *tp, gcoll__tp_req_t *req, int *done)
{
    int e = owner(req);
    gcoll__route_ep_t *mine = &tp->ep[e], *other = &tp->ep[!e];
    gcoll_status_t st = mine->ops->test(mine->tp, unmark(req), done);
    if (st != GCOLL_SUCCESS)
        return spread(tp, e, st);
    if (*done || !other->tp || !other->ops->check || ++tp->pending_tests % CHECK_EVERY)
        return GCOLL_SUCCESS;
    st = other->ops->check(other->tp);
    if (st == GCOLL_SUCCESS)
        return st;
    mine->ops->cancel(mine->tp, unmark(req));
    *done = 1;
    return spread(tp, !e, st);
}

static void route_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *req)
{
    gcoll__route_ep_t *e = &tp->ep[owner(req)];
    e->ops->cancel(e->tp, unmark(req));
}

/* Rank p's process, which endpoint e reached, is gone: the other endpoint hears of it once (its
 * peers may wait only on this rank, never on p). */
static void tell_down(gcoll__tp_t *tp, int e, int p, const char *why)
{
    gcoll__route_ep_t *other = &tp->ep[!e];
    if (tp->told_down || !other->tp || !other->ops->peer_down)
        return;
    tp->told_down = 1;
    char text[400];
    snprintf(text, sizeof(text), "rank %d failed: %s", p, why);
    other->ops->peer_down(other->tp, p, text);
}

/* Asks both endpoints; a dead peer is named by its communicator rank, and the other endpoint is
 * told of it. */
static int route_dead_peer(gcoll__tp_t *tp, char *why, size_t len)
{
    for (int e = 0; e < 2; e++) {
        int q = tp->ep[e].tp && tp->ep[e].ops->dead_peer ? tp->ep[e].ops->dead_peer(tp->ep[e].tp, why, len) : -1;
        for (int p = 0; q >= 0 && p < tp->size; p++)
            if (tp->peers[p].ep == e && tp->peers[p].index == q) {
                tell_down(tp, e, p, why);
                return p;
            }
    }
    return -1;
}

static void route_close(gcoll__tp_t *tp)
{
    for (int i = 0; i < 2; i++)
        if (tp->ep[i].tp)
            tp->ep[i].ops->close(tp->ep[i].tp);
    free(tp->peers);
    free(tp);
}

/* Built by gcoll__route_open from endpoints that are already connected, never by create. */
const gcoll__transport_t gcoll__transport_route = {
    .name = "route",
    .isend = route_isend,
    .isend_prio = route_isend_prio,
    .irecv = route_irecv,
    .irecv_landed = route_irecv_landed,
    .test = route_test,
    .cancel = route_cancel,
    .dead_peer = route_dead_peer,
    .close = route_close,
};
