/* The TCP transport's requests and failures: a peer's requests in posting order, their
 * completion, abandoning one (its frames finish from a copy, so the stream stays whole), a peer
 * whose sockets broke (a lazy endpoint tells the peers it reaches: DOWN frames), and an endpoint
 * that found or was told of a mismatch (mismatch.h): its MISMATCH frames and the failure of
 * every request. */
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

void gcoll__tcp_sock_reset(gcoll__tp_t *tp, tcp_sock_t *s)
{
    gcoll__tcp_sock_close(tp, s);
    for (tcp_frame_t *f = s->ctrl, *next; f; f = next) {
        next = f->next;
        if (f->owned)
            free(f);
    }
    s->ctrl = s->ctrl_tail = NULL;
    s->data = NULL;
    free(s->cur_owned);
    s->cur_owned = NULL;
    s->busy = 0;
    s->cur_req = s->dst_req = NULL;
    s->dst_unexp = NULL;
    s->in_payload = 0;
    free(s->rbuf);
    s->rbuf = NULL;
}

/* A lazy endpoint lost dead's process: the peers it reaches hear of it (a DOWN frame), since
 * those that never connected to dead would only wait for it, or for a rank waiting on it,
 * until GCOLL_TIMEOUT; each passes it on the first time it hears. */
static void tell_down(gcoll__tp_t *tp, const tcp_peer_t *dead)
{
    for (int q = 0; q < tp->size; q++) {
        tcp_peer_t *to = &tp->peers[q];
        if (q == tp->rank || to == dead || to->failed || !to->socks || to->socks[0].ev.fd < 0 || to->socks[0].dialing)
            continue;
        tcp_frame_t *f = calloc(1, sizeof(*f));
        if (!f)
            continue; /* best effort: that peer learns of it from a stalled exchange or GCOLL_TIMEOUT */
        *f = (tcp_frame_t){
            .hdr = {.type = TCP_DOWN, .len = strnlen(dead->why, TCP_NOTICE_MAX), .aux = (uint64_t)dead->rank},
            .data = dead->why,
            .owned = 1,
            .prio = TCP_NOTICE_PRIO};
        gcoll__tcp_send_ctrl(tp, to, f);
    }
}

/* The peer is gone (status GCOLL_ERR_REMOTE) or broke the protocol: close its sockets and fail
 * what waits on it with status. Complete unexpected messages stay deliverable. */
void gcoll__tcp_fail_peer(gcoll__tp_t *tp, tcp_peer_t *p, gcoll_status_t status, int warn, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof(p->why), fmt, ap);
    va_end(ap);
    GCOLL_LOG(warn ? GCOLL_LOG_WARN : GCOLL_LOG_DEBUG, "%s", p->why);
    for (int i = 0; i < tp->nsocks; i++)
        gcoll__tcp_sock_reset(tp, &p->socks[i]);
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

void gcoll__tcp_down_arrived(gcoll__tp_t *tp, tcp_peer_t *p, uint64_t dead, size_t len)
{
    p->notice[len] = '\0';
    for (size_t i = 0; i < len; i++) /* another process's text: printable only */
        if (p->notice[i] < 0x20 || p->notice[i] > 0x7e)
            p->notice[i] = '?';
    if (dead >= (uint64_t)tp->size || dead == (uint64_t)tp->rank || dead == (uint64_t)p->rank) {
        gcoll__tcp_fail_peer(tp, p, GCOLL_ERR_TRANSPORT, 1,
                             "tcp: rank %d broke the protocol: it reported rank %llu failed, which is %s", p->rank,
                             (unsigned long long)dead, dead >= (uint64_t)tp->size ? "out of range" : "not possible");
        return;
    }
    tcp_peer_t *d = &tp->peers[dead];
    if (!d->failed && !d->left)
        gcoll__tcp_fail_peer(tp, d, GCOLL_ERR_REMOTE, 1, "rank %d reports: %s", p->rank, p->notice);
}

/* A socket reached end of file or failed (err). A peer that said BYE closed its endpoint on
 * purpose: like a rank that never joins, what waits on it is left to the core's timeout. Any
 * other loss fails the peer at once (on the first error, or when every socket has closed). */
void gcoll__tcp_sock_gone(gcoll__tp_t *tp, tcp_sock_t *s, const char *doing, int err)
{
    tcp_peer_t *p = s->peer;
    if (!p->left && err) {
        gcoll__tcp_fail_peer(tp, p, GCOLL_ERR_REMOTE, 1, "tcp: %s rank %d on socket %d failed: %s", doing, p->rank,
                             s->index, strerror(err));
        return;
    }
    if (!p->left && (s->in_payload || s->rlen > s->rpos)) { /* a process killed while it sent */
        gcoll__tcp_fail_peer(tp, p, GCOLL_ERR_REMOTE, 1,
                             "tcp: rank %d closed socket %d in the middle of a frame (did it exit "
                             "or crash?)",
                             p->rank, s->index);
        return;
    }
    gcoll__tcp_sock_close(tp, s);
    s->eof = 1;
    if (++p->neof == tp->nsocks && !p->left)
        gcoll__tcp_fail_peer(tp, p, GCOLL_ERR_REMOTE, p->reqs != NULL,
                             "tcp: rank %d closed its connections without saying goodbye (did it exit or crash?)",
                             p->rank);
}

/* Takes every reference the sockets hold to r; a frame r has half written is finished from a
 * copy, so the stream stays whole for the messages behind it. */
static void detach(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    tcp_peer_t *p = r->peer;
    for (int i = 0; i < tp->nsocks; i++) {
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
                gcoll__tcp_fail_peer(tp, p, GCOLL_ERR_TRANSPORT, 1, "tcp: no memory to finish a frame to rank %d",
                                     p->rank);
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
        tcp_frame_t *f = calloc(1, sizeof(*f));
        if (!f)
            continue; /* best effort: that peer learns of it from a stalled exchange or GCOLL_TIMEOUT */
        size_t n = strnlen(tp->mm.why, TCP_NOTICE_MAX);
        *f = (tcp_frame_t){
            .hdr = {.type = TCP_MISMATCH, .len = n}, .data = tp->mm.why, .owned = 1, .prio = TCP_NOTICE_PRIO};
        gcoll__tcp_send_ctrl(tp, to, f);
    }
    fail_all(tp);
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
