/* The TCP transport's receive path: irecv matches a posted receive against the messages that
 * arrived before it, and each socket reads frames as they come: a checked header first, whose
 * channel names the endpoint it is for, then its payload, straight into the receive's buffer
 * where one waits, else into an unexpected message. Matching happens only on socket 0's frames,
 * so per-tag order holds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/error.h"
#include "base/log.h"
#include "base/scratch.h"
#include "transports/queue.h"
#include "transports/tcp/tcp.h"

#define DIRECT_MIN 4096 /* payload still due beyond this is read straight into place */

static void protocol_error(tcp_pool_t *pool, tcp_sock_t *s, const char *what)
{
    gcoll__tcp_fail_link(pool, s->link, GCOLL_ERR_TRANSPORT, 1,
                         "broke the protocol on socket %d: %s; connection closed", s->index, what);
}

static gcoll__tp_req_t *match_posted(tcp_peer_t *p, uint32_t tag)
{
    for (gcoll__tp_req_t *r = p->reqs; r; r = r->next)
        if (r->is_recv && r->state == REQ_POSTED && r->tag == tag)
            return r;
    return NULL;
}

static void size_mismatch(gcoll__tp_req_t *r, size_t got)
{
    gcoll__tcp_complete(r, GCOLL_ERR_TRANSPORT, "tcp: rank %d sent %zu bytes with tag %u; the receive expects %zu",
                        r->peer->rank, got, (unsigned)r->tag, r->bytes);
}

/* A receive meets a rendezvous offer: clear it to send, or decline when the sizes differ. */
static void accept_rts(gcoll__tp_req_t *r, size_t bytes, uint64_t sid)
{
    tcp_peer_t *p = r->peer;
    if (bytes != r->bytes) {
        size_mismatch(r, bytes);
        tcp_frame_t *f = calloc(1, sizeof(*f));
        if (!f) {
            gcoll__tcp_fail_peer(p, GCOLL_ERR_TRANSPORT, 1, "tcp: no memory to decline a message from rank %d",
                                 p->rank);
            return;
        }
        *f = (tcp_frame_t){.hdr = {.type = TCP_CTS, .id = sid, .aux = 0}, .owned = 1, .prio = TCP_CTS_PRIO};
        gcoll__tcp_send_ctrl(p, f);
        return;
    }
    r->state = REQ_RNDV_IN;
    r->id = ++p->next_rid;
    r->frame = (tcp_frame_t){.hdr = {.type = TCP_CTS, .id = sid, .aux = r->id}, .prio = TCP_CTS_PRIO};
    gcoll__tcp_send_ctrl(p, &r->frame);
}

/* Hands a complete unexpected eager message to r, and forgets it. */
static void deliver(tcp_peer_t *p, gcoll__tp_req_t *r, tcp_unexp_t *u)
{
    gcoll__tcp_unexp_unlink(p, u);
    u->waiter = NULL;
    r->waits_for = NULL;
    if (u->bytes != r->bytes) {
        size_mismatch(r, u->bytes);
    } else {
        if (r->bytes)
            memcpy(r->buf, u->data, r->bytes);
        gcoll__tcp_complete(r, GCOLL_SUCCESS, NULL);
    }
    gcoll__tcp_unexp_free(u);
}

gcoll_status_t gcoll__tcp_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **out)
{
    if (tp->mm.status)
        return gcoll__mismatch_error(&tp->mm);
    GCOLL_CHECK(gcoll__tcp_req_new(tp, peer, tag, buf, bytes, 1, out));
    gcoll__tp_req_t *r = *out;
    tcp_peer_t *p = r->peer;
    r->state = REQ_POSTED;
    for (tcp_unexp_t *u = p->unexp; u; u = u->next) {
        if (u->tag != tag || u->waiter)
            continue;
        if (!gcoll__mismatch_agree(tp->optab, tag, &u->desc)) { /* it arrived before this operation started */
            gcoll__tcp_found_mismatch(tp, p, tag, &u->desc);
            return GCOLL_SUCCESS;
        }
        if (u->type == TCP_RTS) {
            gcoll__tcp_unexp_unlink(p, u);
            if (p->failed) /* the offer's data can no longer come */
                gcoll__tcp_complete(r, p->failed, "%s", p->why);
            else
                accept_rts(r, u->bytes, u->sid);
            gcoll__tcp_unexp_free(u);
        } else if (u->complete) {
            deliver(p, r, u);
        } else {
            r->state = REQ_WAIT_UNEXP;
            r->waits_for = u;
            u->waiter = r;
        }
        return GCOLL_SUCCESS;
    }
    if (p->failed)
        gcoll__tcp_complete(r, p->failed, "%s", p->why);
    return GCOLL_SUCCESS;
}

static tcp_unexp_t *stash(tcp_peer_t *p, const gcoll__tcp_hdr_t *h)
{
    tcp_unexp_t *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    u->type = h->type;
    u->tag = h->tag;
    u->desc = h->desc;
    if (h->type == TCP_RTS) {
        u->bytes = h->aux;
        u->sid = h->id;
    } else {
        u->bytes = h->len;
        u->data = gcoll__scratch_get(h->len);
        if (!u->data) {
            free(u);
            return NULL;
        }
    }
    Q_PUSH(p->unexp, p->unexp_tail, u);
    return u;
}

static gcoll__tp_req_t *find_by_id(tcp_peer_t *p, int is_recv, int state, uint64_t id)
{
    for (gcoll__tp_req_t *r = p->reqs; r; r = r->next)
        if (r->is_recv == is_recv && r->state == state && r->id == id)
            return r;
    return NULL;
}

/* The endpoint's peer a frame on s for channel chan is for: NULL when no endpoint has the channel
 * (one closed here: the frame is dropped). *wait: the endpoint is not routed yet (it is between
 * joining the pool and learning its peers' addresses), so the frame waits. */
static tcp_peer_t *route_of(tcp_pool_t *pool, tcp_sock_t *s, uint64_t chan, int *wait, char *what, size_t len)
{
    *wait = 0;
    if (s->rpeer && s->rpeer->tp->chan == chan)
        return s->rpeer;
    gcoll__tp_t *tp = gcoll__tcp_endpoint(pool, chan);
    if (!tp)
        return NULL;
    tcp_peer_t *p = gcoll__tcp_route(s->link, tp);
    if (!p && tp->routed)
        snprintf(what, len, "a frame for channel %016llx, a communicator it is not a member of",
                 (unsigned long long)chan);
    *wait = !p && !tp->routed;
    return p;
}

/* Acts on a checked header: decides where its payload goes (s->dst; NULL discards it). */
static void dispatch(tcp_pool_t *pool, tcp_sock_t *s)
{
    tcp_peer_t *p = s->rpeer;
    const gcoll__tcp_hdr_t *h = &s->hdr;
    char what[160];
    gcoll__tp_req_t *r;
    s->dst = NULL;
    if ((h->type == TCP_EAGER || h->type == TCP_RTS || h->type == TCP_BYE || h->type == TCP_DOWN) && s->index != 0) {
        snprintf(what, sizeof(what), "a message header on a data-only socket");
        protocol_error(pool, s, what);
        return;
    }
    if (!p) { /* for an endpoint closed here: dropped */
        s->need = h->len;
        s->in_payload = 1;
        return;
    }
    gcoll__tp_t *tp = p->tp;
    if ((h->type == TCP_EAGER || h->type == TCP_RTS) && !tp->mm.status &&
        !gcoll__mismatch_agree(tp->optab, h->tag, &h->desc)) {
        gcoll__tcp_found_mismatch(tp, p, h->tag, &h->desc);
        if (h->type == TCP_EAGER) { /* its payload is read and dropped */
            s->need = h->len;
            s->in_payload = 1;
        }
        return;
    }
    switch (h->type) {
    case TCP_MISMATCH:
    case TCP_DOWN: s->dst = p->notice; break;
    case TCP_EAGER:
        if ((r = match_posted(p, h->tag))) {
            if (r->bytes != h->len) {
                size_mismatch(r, h->len);
            } else {
                r->state = REQ_EAGER_IN;
                s->dst = r->buf;
                s->dst_req = r;
            }
        } else if ((s->dst_unexp = stash(p, h))) {
            s->dst = s->dst_unexp->data;
        } else {
            gcoll__tcp_fail_link(pool, s->link, GCOLL_ERR_TRANSPORT, 1,
                                 "could not be received from: no memory for "
                                 "an unexpected message");
            return;
        }
        break;
    case TCP_RTS:
        if ((r = match_posted(p, h->tag)))
            accept_rts(r, h->aux, h->id);
        else if (!stash(p, h))
            gcoll__tcp_fail_peer(p, GCOLL_ERR_TRANSPORT, 1, "tcp: no memory for an unexpected message from rank %d",
                                 p->rank); /* an offer: nothing of it is left on the stream */
        return;
    case TCP_CTS:
        if ((r = find_by_id(p, 0, REQ_WAIT_CTS, h->id))) {
            if (h->aux == 0)
                gcoll__tcp_complete(r, GCOLL_ERR_TRANSPORT,
                                    "tcp: rank %d declined a message of %zu bytes with tag %u: "
                                    "its receive expects another size",
                                    p->rank, r->bytes, (unsigned)r->tag);
            else
                gcoll__tcp_start_stream(tp, r, h->aux);
        } else if (h->id == 0 || h->id > p->next_sid) {
            snprintf(what, sizeof(what), "clear-to-send for message id %llu, never offered", (unsigned long long)h->id);
            protocol_error(pool, s, what);
        }
        return; /* a known id whose send was abandoned: nothing to do */
    case TCP_BYE:
        GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: rank %d closed its endpoint", p->rank);
        p->left = 1;
        return;
    case TCP_DATA:
        if ((r = find_by_id(p, 1, REQ_RNDV_IN, h->id))) {
            if (h->aux > r->bytes || h->len > r->bytes - h->aux || h->len > r->left) {
                snprintf(what, sizeof(what), "data for bytes %llu..%llu of a %zu-byte message with %zu bytes due",
                         (unsigned long long)h->aux, (unsigned long long)(h->aux + h->len), r->bytes, r->left);
                protocol_error(pool, s, what);
                return;
            }
            s->dst = r->buf + h->aux;
            s->dst_req = r;
        } else if (h->id == 0 || h->id > p->next_rid) {
            snprintf(what, sizeof(what), "data for receive id %llu, never cleared", (unsigned long long)h->id);
            protocol_error(pool, s, what);
            return;
        } /* else: for a receive abandoned after its CTS: discarded */
        break;
    }
    s->need = h->len;
    s->in_payload = 1;
}

static void payload_done(tcp_sock_t *s)
{
    tcp_peer_t *p = s->rpeer;
    s->in_payload = 0;
    if (!p) {
        return;
    } else if (s->hdr.type == TCP_MISMATCH) {
        gcoll__tcp_notice_arrived(p->tp, p, s->hdr.len);
    } else if (s->hdr.type == TCP_DOWN) {
        gcoll__tcp_down_arrived(p->tp, p, s->hdr.aux, s->hdr.len);
    } else if (s->dst_req) {
        gcoll__tp_req_t *r = s->dst_req;
        s->dst_req = NULL;
        r->left -= s->hdr.len;
        if (r->left == 0)
            gcoll__tcp_complete(r, GCOLL_SUCCESS, NULL);
    } else if (s->dst_unexp) {
        tcp_unexp_t *u = s->dst_unexp;
        s->dst_unexp = NULL;
        u->complete = 1;
        if (u->waiter)
            deliver(p, u->waiter, u);
    }
}

/* Reads until the socket runs dry: headers and small payloads through rbuf, the rest in place. */
void gcoll__tcp_sock_read(tcp_pool_t *pool, tcp_sock_t *s)
{
    char why[160];
    while (s->ev.fd >= 0) {
        void *into;
        size_t want;
        if (s->in_payload) {
            size_t have = s->rlen - s->rpos, n = have < s->need ? have : s->need;
            if (n && s->dst) {
                memcpy(s->dst, s->rbuf + s->rpos, n);
                s->dst += n;
            }
            s->rpos += n;
            s->need -= n;
            if (s->need == 0) {
                payload_done(s);
                continue;
            }
            if (!s->rd_ready)
                return;
            s->rlen = s->rpos = 0;
            int direct = s->dst && s->need >= DIRECT_MIN;
            into = direct ? (void *)s->dst : (void *)s->rbuf;
            want = direct ? s->need : TCP_RBUF_BYTES;
        } else {
            if (s->rlen - s->rpos >= TCP_HDR_BYTES) {
                gcoll__tcp_hdr_unpack(s->rbuf + s->rpos, &s->hdr);
                int wait = 0;
                why[0] = '\0';
                if (gcoll__tcp_hdr_check(&s->hdr, s->rseq, why, sizeof(why)) == GCOLL_SUCCESS &&
                    !TCP_IS_IDLE_FRAME(s->hdr.type))
                    s->rpeer = route_of(pool, s, s->hdr.chan, &wait, why, sizeof(why));
                if (why[0]) {
                    protocol_error(pool, s, why);
                    return;
                }
                s->held = wait;
                if (wait)
                    return; /* read again by the next pass, once routed */
                s->rpos += TCP_HDR_BYTES;
                s->rseq++;
                if (TCP_IS_IDLE_FRAME(s->hdr.type)) {
                    gcoll__tcp_idle_frame(pool, s); /* may close the socket */
                    continue;
                }
                s->link->recvd++;
                s->link->used = ++pool->clock;
                dispatch(pool, s);
                continue;
            }
            if (!s->rd_ready)
                return;
            memmove(s->rbuf, s->rbuf + s->rpos, s->rlen - s->rpos);
            s->rlen -= s->rpos;
            s->rpos = 0;
            into = s->rbuf + s->rlen;
            /* after a data frame another is likely: take just its header, so that its payload
             * lands in place instead of being copied out of rbuf */
            want = (s->hdr.type == TCP_DATA ? TCP_HDR_BYTES : TCP_RBUF_BYTES) - s->rlen;
        }
        ssize_t got = recv(s->ev.fd, into, want, 0);
        if (got > 0) {
            if ((size_t)got < want && !s->hup)
                s->rd_ready = 0; /* drained: the next arrival raises a new edge (a close that came
                                    with the data raises none, so it is read now) */
            if (into == (void *)s->dst) {
                s->dst += got;
                s->need -= (size_t)got;
            } else {
                s->rlen += (size_t)got;
            }
        } else if (got == 0) {
            gcoll__tcp_sock_gone(pool, s, "reading from", 0);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            s->rd_ready = 0;
        } else if (errno != EINTR) {
            gcoll__tcp_sock_gone(pool, s, "reading from", errno);
        }
    }
}
