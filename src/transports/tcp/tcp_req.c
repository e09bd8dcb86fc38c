/* The TCP transport's requests and failures: a peer's requests in posting order, their
 * completion, abandoning one (its frames finish from a copy, so the stream stays whole), an
 * endpoint that closes, a link whose sockets broke and the peers over it (a lazy endpoint tells
 * the peers it reaches: DOWN frames), and an endpoint that found or was told of a mismatch
 * (mismatch.h): its MISMATCH frames and the failure of every request. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/scratch.h"
#include "transports/tcp/tcp.h"

static void req_link(tcp_peer_t *p, gcoll__tp_req_t *r)
{
    r->prev = p->reqs_tail;
    r->next = NULL;
    *(p->reqs_tail ? &p->reqs_tail->next : &p->reqs) = r;
    p->reqs_tail = r;
}

void gcoll__tcp_req_unlink(tcp_peer_t *p, gcoll__tp_req_t *r)
{
    *(r->prev ? &r->prev->next : &p->reqs) = r->next;
    *(r->next ? &r->next->prev : &p->reqs_tail) = r->prev;
    r->prev = r->next = NULL;
}

void gcoll__tcp_complete(gcoll__tp_req_t *r, gcoll_status_t st, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, sizeof(r->why), fmt, ap);
        va_end(ap);
    }
    if (r->waits_for)
        r->waits_for->waiter = NULL;
    r->waits_for = NULL;
    gcoll__tcp_req_unlink(r->peer, r);
    r->status = st;
    r->done = 1;
}

static gcoll_status_t check_peer(gcoll__tp_t *tp, int peer)
{
    if (peer < 0 || peer >= tp->size || peer == tp->rank)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "tcp: peer %d is not another rank of %d", peer, tp->size);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__tcp_req_new(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int is_recv,
                                  gcoll__tp_req_t **out)
{
    GCOLL_CHECK(check_peer(tp, peer));
    if (tp->lazy && !tp->peers[peer].failed) {
        gcoll__tcp_reach(tp, peer);
        if (tp->peers[peer].failed) /* out of reach: this request would wait for nothing */
            return gcoll__error(tp->peers[peer].failed, "%s", tp->peers[peer].why);
    }
    gcoll__tp_req_t *r = calloc(1, sizeof(*r));
    if (!r)
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for a request to rank %d", peer);
    r->peer = &tp->peers[peer];
    r->is_recv = is_recv;
    r->tag = tag;
    r->buf = (char *)buf;
    r->bytes = r->left = bytes;
    req_link(r->peer, r);
    *out = r;
    return GCOLL_SUCCESS;
}

void gcoll__tcp_unexp_unlink(tcp_peer_t *p, tcp_unexp_t *u)
{
    tcp_unexp_t *prev = NULL;
    for (tcp_unexp_t *x = p->unexp; x; prev = x, x = x->next)
        if (x == u) {
            *(prev ? &prev->next : &p->unexp) = u->next;
            if (p->unexp_tail == u)
                p->unexp_tail = prev;
            return;
        }
}

void gcoll__tcp_unexp_free(tcp_unexp_t *u)
{
    gcoll__scratch_put(u->data);
    free(u);
}

tcp_frame_t *gcoll__tcp_notice_frame(int type, uint64_t aux, const char *text, size_t len, int prio)
{
    tcp_frame_t *f = malloc(sizeof(*f) + len);
    if (!f)
        return NULL;
    *f = (tcp_frame_t){.hdr = {.type = (uint8_t)type, .len = len, .aux = aux}, .owned = 1, .prio = prio};
    if (len) {
        memcpy(f + 1, text, len);
        f->data = (const char *)(f + 1);
    }
    return f;
}

void gcoll__tcp_sock_rewind(tcp_pool_t *pool, tcp_sock_t *s)
{
    gcoll__tcp_sock_close(pool, s);
    free(s->rbuf);
    s->rbuf = NULL;
    s->rlen = s->rpos = s->need = 0;
    s->rseq = s->wseq = 0;
    s->eof = s->hup = s->held = s->in_payload = 0;
    s->rpeer = NULL;
    s->dst = NULL; /* a stale one could equal the next rbuf, which the reader takes for a direct read */
    s->dst_req = NULL;
    s->dst_unexp = NULL;
    free(s->cur_owned);
    s->cur_owned = NULL;
    s->cur_req = NULL;
    s->busy = 0;
}

void gcoll__tcp_sock_reset(tcp_pool_t *pool, tcp_sock_t *s)
{
    gcoll__tcp_sock_rewind(pool, s);
    for (tcp_frame_t *f = s->ctrl, *next; f; f = next) {
        next = f->next;
        if (f->owned)
            free(f);
    }
    s->ctrl = s->ctrl_tail = NULL;
    s->data = NULL;
}

/* A lazy endpoint lost dead's process: the peers it reaches hear of it (a DOWN frame), since
 * those that never connected to dead would only wait for it, or for a rank waiting on it,
 * until GCOLL_TIMEOUT; each passes it on the first time it hears. */
static void tell_down(gcoll__tp_t *tp, const tcp_peer_t *dead)
{
    for (int q = 0; q < tp->size; q++) {
        tcp_peer_t *to = &tp->peers[q];
        if (q == tp->rank || to == dead || to->failed || !to->socks || to->socks[0].ev.fd < 0)
            continue;
        tcp_frame_t *f = gcoll__tcp_notice_frame(TCP_DOWN, (uint64_t)dead->rank, dead->why,
                                                 strnlen(dead->why, TCP_NOTICE_MAX), TCP_NOTICE_PRIO);
        if (f) /* else best effort: that peer learns of it from a stalled exchange or GCOLL_TIMEOUT */
            gcoll__tcp_send_ctrl(to, f);
    }
}

static void fail_route(tcp_peer_t *p, gcoll_status_t status, int warn)
{
    gcoll__tp_t *tp = p->tp;
    p->failed = status;
    GCOLL_LOG(warn ? GCOLL_LOG_WARN : GCOLL_LOG_DEBUG, "%s", p->why);
    for (tcp_unexp_t *u = p->unexp, *next; u; u = next) {
        next = u->next;
        if (u->type == TCP_EAGER && !u->complete) {
            gcoll__tcp_unexp_unlink(p, u);
            if (u->waiter)
                u->waiter->waits_for = NULL;
            gcoll__tcp_unexp_free(u);
        }
    }
    while (p->reqs)
        gcoll__tcp_complete(p->reqs, status, "%s", p->why);
    if (tp->lazy && status == GCOLL_ERR_REMOTE && p->why[0])
        tell_down(tp, p);
}

/* The peer is gone (status GCOLL_ERR_REMOTE) or broke the protocol: fail what waits on it with
 * status. Complete unexpected messages stay deliverable. */
void gcoll__tcp_fail_peer(tcp_peer_t *p, gcoll_status_t status, int warn, const char *fmt, ...)
{
    if (p->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof(p->why), fmt, ap);
    va_end(ap);
    fail_route(p, status, warn);
}

/* The stream is lost: an unexpected message it was filling is dropped with the sockets. */
void gcoll__tcp_fail_link(tcp_pool_t *pool, tcp_link_t *l, gcoll_status_t status, int warn, const char *fmt, ...)
{
    if (l->down)
        return;
    l->down = 1;
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    for (int i = 0; i < pool->nsocks; i++)
        gcoll__tcp_sock_reset(pool, &l->socks[i]);
    /* failing a route may fail other links (a DOWN frame that cannot be written), never this
     * one again (it is down) nor its routes */
    for (int i = 0; i < l->nroutes; i++) {
        tcp_peer_t *p = l->routes[i];
        if (p->failed || (p->left && status == GCOLL_ERR_REMOTE))
            continue; /* one that left on purpose: what waits on it is left to the core's timeout */
        snprintf(p->why, sizeof(p->why), "tcp: rank %d %s", p->rank, what);
        fail_route(p, status, warn);
    }
}

void gcoll__tcp_down_arrived(gcoll__tp_t *tp, tcp_peer_t *p, uint64_t dead, size_t len)
{
    p->notice[len] = '\0';
    for (size_t i = 0; i < len; i++) /* another process's text: printable only */
        if (p->notice[i] < 0x20 || p->notice[i] > 0x7e)
            p->notice[i] = '?';
    if (dead >= (uint64_t)tp->size || dead == (uint64_t)tp->rank || dead == (uint64_t)p->rank) {
        gcoll__tcp_fail_peer(p, GCOLL_ERR_TRANSPORT, 1,
                             "tcp: rank %d broke the protocol: it reported rank %llu failed, which is %s", p->rank,
                             (unsigned long long)dead, dead >= (uint64_t)tp->size ? "out of range" : "not possible");
        return;
    }
    tcp_peer_t *d = &tp->peers[dead];
    if (!d->failed && !d->left)
        gcoll__tcp_fail_peer(d, GCOLL_ERR_REMOTE, 1, "rank %d reports: %s", p->rank, p->notice);
}

/* A socket reached end of file or failed (err). A peer that said BYE closed its endpoint on
 * purpose: like a rank that never joins, what waits on it is left to the core's timeout. Any
 * other loss fails the link at once (on the first error, or when every socket has closed). */
void gcoll__tcp_sock_gone(tcp_pool_t *pool, tcp_sock_t *s, const char *doing, int err)
{
    tcp_link_t *l = s->link;
    if (gcoll__tcp_idle_gone(pool, s)) /* a close both processes agreed to */
        return;
    int waited = 0; /* said quietly where nothing waited on it (a goodbye to a process gone first) */
    for (int i = 0; i < l->nroutes; i++)
        waited |= l->routes[i]->reqs != NULL && !l->routes[i]->left;
    if (err) {
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_REMOTE, waited, "failed on socket %d, %s it: %s", s->index, doing,
                             strerror(err));
        return;
    }
    if (s->in_payload || s->rlen > s->rpos) { /* a process killed while it sent */
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_REMOTE, 1,
                             "closed socket %d in the middle of a frame (did it exit or crash?)", s->index);
        return;
    }
    gcoll__tcp_sock_close(pool, s);
    s->eof = 1;
    if (++l->neof == pool->nsocks)
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_REMOTE, waited,
                             "closed its connections without saying goodbye (did it exit or crash?)");
}

/* Takes every reference the sockets hold to r; a frame r has half written is finished from a
 * copy, so the stream stays whole for the messages behind it. */
static void detach(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    tcp_peer_t *p = r->peer;
    for (int i = 0; p->socks && i < tp->nsocks; i++) {
        tcp_sock_t *s = &p->socks[i];
        for (tcp_frame_t **f = &s->ctrl, *prev = NULL; *f; prev = *f, f = &(*f)->next)
            if (*f == &r->frame) {
                *f = r->frame.next;
                if (s->ctrl_tail == &r->frame)
                    s->ctrl_tail = prev;
                break;
            }
        for (tcp_stripe_t **st = &s->data; *st;)
            if ((*st)->req == r)
                *st = (*st)->next;
            else
                st = &(*st)->next;
        if (s->dst_req == r) {
            s->dst_req = NULL;
            s->dst = NULL;
        }
        if (s->busy && s->cur_req == r) {
            s->cur_req = NULL;
            s->cur_owned = malloc(s->cur_len ? s->cur_len : 1);
            if (!s->cur_owned) {
                gcoll__tcp_fail_link(tp->pool, p->link, GCOLL_ERR_TRANSPORT, 1,
                                     "could not be sent the rest of a frame: "
                                     "no memory");
                return;
            }
            size_t sent = s->cur_off > TCP_HDR_BYTES ? s->cur_off - TCP_HDR_BYTES : 0;
            memcpy(s->cur_owned + sent, s->cur_data + sent, s->cur_len - sent);
            s->cur_data = s->cur_owned;
        }
    }
}

void gcoll__tcp_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    if (!r->done) {
        detach(tp, r);
        if (!r->done) /* detach may have failed the peer, which completes r */
            gcoll__tcp_complete(r, GCOLL_ERR_ABORTED, NULL);
    }
    free(r->stripes);
    free(r);
}

void gcoll__tcp_ep_drop(gcoll__tp_t *tp)
{
    for (int q = 0; tp->peers && q < tp->size; q++) {
        tcp_peer_t *p = &tp->peers[q];
        if (!p->link)
            continue;
        if (!p->failed && !p->link->down && p->socks[0].ev.fd >= 0) {
            tcp_frame_t *f = gcoll__tcp_notice_frame(TCP_BYE, 0, NULL, 0, TCP_NOTICE_PRIO);
            if (f) /* else best effort: what waits on this rank there fails at its timeout */
                gcoll__tcp_send_ctrl(p, f);
        }
        while (p->reqs) {
            gcoll__tp_req_t *r = p->reqs;
            detach(tp, r);
            if (!r->done) /* detach may have failed the link, which completes (and unlinks) r */
                gcoll__tcp_req_unlink(p, r);
            free(r->stripes);
            free(r);
        }
        for (int i = 0; i < tp->nsocks; i++) {
            tcp_sock_t *s = &p->socks[i];
            if (s->rpeer == p) { /* the rest of the frame being read is dropped */
                s->rpeer = NULL;
                s->dst = NULL;
                s->dst_req = NULL;
                s->dst_unexp = NULL;
            }
        }
    }
}

/* ---- mismatch detection ---- */

/* Fails every request of the endpoint with the mismatch: the ranks' operations under one tag
 * differ, so no later exchange on this communicator can be trusted. */
static void fail_all(gcoll__tp_t *tp)
{
    for (int q = 0; q < tp->size; q++) {
        tcp_peer_t *p = &tp->peers[q];
        while (p->reqs) {
            gcoll__tp_req_t *r = p->reqs;
            detach(tp, r);
            if (!r->done) /* detach may have failed the peer, which completes r */
                gcoll__tcp_complete(r, tp->mm.status, "%s", tp->mm.why);
        }
    }
}

/* The endpoint has just failed: tells every peer (a MISMATCH frame, so that ranks which would
 * only wait for this one fail at once instead of at GCOLL_TIMEOUT) and fails every request. */
static void tell_peers(gcoll__tp_t *tp)
{
    for (int q = 0; q < tp->size; q++) {
        tcp_peer_t *to = &tp->peers[q];
        if (q == tp->rank || to->failed || !to->socks || to->socks[0].ev.fd < 0)
            continue;
        tcp_frame_t *f =
            gcoll__tcp_notice_frame(TCP_MISMATCH, 0, tp->mm.why, strnlen(tp->mm.why, TCP_NOTICE_MAX), TCP_NOTICE_PRIO);
        if (f) /* else best effort: that peer learns of it from a stalled exchange or GCOLL_TIMEOUT */
            gcoll__tcp_send_ctrl(to, f);
    }
    fail_all(tp);
}

void gcoll__tcp_catch_up(tcp_peer_t *p)
{
    gcoll__tp_t *tp = p->tp;
    if (p->failed || p->left || p->rank == tp->rank)
        return;
    if (tp->mm.status) {
        tcp_frame_t *f =
            gcoll__tcp_notice_frame(TCP_MISMATCH, 0, tp->mm.why, strnlen(tp->mm.why, TCP_NOTICE_MAX), TCP_NOTICE_PRIO);
        if (f) /* else best effort: it learns of it from a stalled exchange or GCOLL_TIMEOUT */
            gcoll__tcp_send_ctrl(p, f);
    }
    for (int q = 0; tp->lazy && q < tp->size; q++) {
        const tcp_peer_t *dead = &tp->peers[q];
        if (dead->failed != GCOLL_ERR_REMOTE || !dead->why[0] || dead == p)
            continue;
        tcp_frame_t *f = gcoll__tcp_notice_frame(TCP_DOWN, (uint64_t)dead->rank, dead->why,
                                                 strnlen(dead->why, TCP_NOTICE_MAX), TCP_NOTICE_PRIO);
        if (f)
            gcoll__tcp_send_ctrl(p, f);
    }
}

/* This rank's operation under tag differs from the one whose message arrived from p. */
void gcoll__tcp_found_mismatch(gcoll__tp_t *tp, tcp_peer_t *p, uint32_t tag, const gcoll__opdesc_t *theirs)
{
    if (gcoll__mismatch_found(&tp->mm, tp->optab, tag, tp->rank, theirs, p->rank))
        tell_peers(tp);
}

/* The transport table's mismatch: the other endpoint of a route found or was told of one. */
void gcoll__tcp_mismatch(gcoll__tp_t *tp, const char *why)
{
    if (gcoll__mismatch_told(&tp->mm, why))
        tell_peers(tp);
}

/* A peer's MISMATCH frame has arrived in p->notice: this endpoint fails with its text. */
void gcoll__tcp_notice_arrived(gcoll__tp_t *tp, tcp_peer_t *p, size_t len)
{
    p->notice[len] = '\0';
    if (gcoll__mismatch_notice(&tp->mm, p->rank, p->notice))
        fail_all(tp);
}
