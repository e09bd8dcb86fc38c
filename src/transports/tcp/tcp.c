/* The TCP transport: tagged messages over nonblocking sockets (edge-triggered epoll),
 * GCOLL_TCP_NSOCKS per peer. Messages up to TCP_EAGER_MAX go eagerly on socket 0; a larger one
 * sends RTS, gets CTS once the receive is posted, and streams into the receiver's buffer striped
 * across the sockets. Matching happens only on socket 0's frames, so per-tag order holds. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transports/queue.h"
#include "transports/tcp/tcp.h"

#define STRIPE_MIN (1024 * 1024) /* smaller rendezvous messages stay on socket 0 */
#define DIRECT_MIN 4096          /* payload still due beyond this is read straight into place */
#define ADDR_BYTES 6             /* IPv4 address and port, network order */

/* A message that arrived before its receive: an eager payload, or a rendezvous offer. */
struct tcp_unexp {
    tcp_unexp_t *next;
    int type, complete; /* complete: the eager payload is all here */
    uint32_t tag;
    size_t bytes;
    uint64_t sid;
    gcoll__opdesc_t desc;
    char *data;
    gcoll__tp_req_t *waiter; /* a receive that matched it while its payload was arriving */
};

static void sock_write(gcoll__tp_t *tp, tcp_sock_t *s);
static void sock_gone(gcoll__tp_t *tp, tcp_sock_t *s, const char *doing, int err);
static void detach(gcoll__tp_t *tp, gcoll__tp_req_t *r);

static void req_link(tcp_peer_t *p, gcoll__tp_req_t *r)
{
    r->prev = p->reqs_tail;
    r->next = NULL;
    *(p->reqs_tail ? &p->reqs_tail->next : &p->reqs) = r;
    p->reqs_tail = r;
}

static void req_unlink(tcp_peer_t *p, gcoll__tp_req_t *r)
{
    *(r->prev ? &r->prev->next : &p->reqs) = r->next;
    *(r->next ? &r->next->prev : &p->reqs_tail) = r->prev;
    r->prev = r->next = NULL;
}

/* Ends a request: test() reports it. Nothing on the sockets may point at it any more. */
__attribute__((format(printf, 3, 4))) static void complete(gcoll__tp_req_t *r, gcoll_status_t st, const char *fmt, ...)
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
    req_unlink(r->peer, r);
    r->status = st;
    r->done = 1;
}

static void unexp_unlink(tcp_peer_t *p, tcp_unexp_t *u)
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

static void unexp_free(tcp_unexp_t *u)
{
    free(u->data);
    free(u);
}

/* Drops everything a socket holds; the requests it served are failed by the caller. */
static void sock_reset(gcoll__tp_t *tp, tcp_sock_t *s)
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

/* The peer is gone (status GCOLL_ERR_REMOTE) or broke the protocol: close its sockets and fail
 * what waits on it with status. Complete unexpected messages stay deliverable. */
__attribute__((format(printf, 5, 6))) static void fail_peer(gcoll__tp_t *tp, tcp_peer_t *p, gcoll_status_t status,
                                                            int warn, const char *fmt, ...)
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
        sock_reset(tp, &p->socks[i]);
    for (tcp_unexp_t *u = p->unexp, *next; u; u = next) {
        next = u->next;
        if (u->type == TCP_EAGER && !u->complete) {
            unexp_unlink(p, u);
            if (u->waiter)
                u->waiter->waits_for = NULL;
            unexp_free(u);
        }
    }
    while (p->reqs)
        complete(p->reqs, status, "%s", p->why);
}

static void protocol_error(gcoll__tp_t *tp, tcp_sock_t *s, const char *what)
{
    fail_peer(tp, s->peer, GCOLL_ERR_TRANSPORT, 1,
              "tcp: rank %d broke the protocol on socket %d: %s; connection closed", s->peer->rank, s->index, what);
}

/* ---- sending ---- */

/* Starts the next frame on s: control frames first, then the next chunk of a data stripe. */
static int take_next(tcp_sock_t *s)
{
    gcoll__tcp_hdr_t h;
    if (s->ctrl) {
        tcp_frame_t *f = s->ctrl;
        s->ctrl = f->next;
        if (!s->ctrl)
            s->ctrl_tail = NULL;
        h = f->hdr;
        s->cur_data = f->data;
        s->cur_req = f->req;
        if (f->owned)
            free(f);
    } else if (s->data) {
        tcp_stripe_t *st = s->data;
        size_t chunk = st->end - st->pos < TCP_CHUNK_MAX ? st->end - st->pos : TCP_CHUNK_MAX;
        h = (gcoll__tcp_hdr_t){.type = TCP_DATA, .len = chunk, .id = st->req->id, .aux = st->pos};
        s->cur_data = st->req->buf + st->pos;
        s->cur_req = st->req;
        st->pos += chunk;
        if (st->pos == st->end)
            s->data = st->next;
    } else {
        return 0;
    }
    h.seq = s->wseq++;
    gcoll__tcp_hdr_pack(s->cur_hdr, &h);
    s->cur_len = h.len;
    s->cur_off = 0;
    s->busy = 1;
    return 1;
}

static void frame_written(tcp_sock_t *s)
{
    gcoll__tp_req_t *r = s->cur_req;
    s->busy = 0;
    s->cur_req = NULL;
    free(s->cur_owned);
    s->cur_owned = NULL;
    if (r) {
        r->left -= s->cur_len;
        if (r->left == 0)
            complete(r, GCOLL_SUCCESS, NULL);
    }
}

/* Writes frames until the socket's buffer is full or nothing is left. */
static void sock_write(gcoll__tp_t *tp, tcp_sock_t *s)
{
    while (s->wr_ready && s->ev.fd >= 0 && (s->busy || take_next(s))) {
        struct iovec iov[2];
        int n = 0;
        if (s->cur_off < TCP_HDR_BYTES)
            iov[n++] = (struct iovec){s->cur_hdr + s->cur_off, TCP_HDR_BYTES - s->cur_off};
        size_t done = s->cur_off > TCP_HDR_BYTES ? s->cur_off - TCP_HDR_BYTES : 0;
        if (s->cur_len > done)
            iov[n++] = (struct iovec){(char *)s->cur_data + done, s->cur_len - done};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(s->ev.fd, &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                s->wr_ready = 0;
                return;
            }
            sock_gone(tp, s, "writing to", errno);
            return;
        }
        s->cur_off += (size_t)w;
        if (s->cur_off < TCP_HDR_BYTES + s->cur_len) {
            s->wr_ready = 0; /* a short write: the buffer is full until EPOLLOUT says otherwise */
            return;
        }
        frame_written(s);
    }
}

static void send_ctrl(gcoll__tp_t *tp, tcp_peer_t *p, tcp_frame_t *f)
{
    tcp_sock_t *s = &p->socks[0];
    Q_PUSH(s->ctrl, s->ctrl_tail, f);
    sock_write(tp, s);
}

/* Frames carry their offset, so a stripe already partly framed may wait behind a new one: an
 * urgent message overtakes bulk at TCP_CHUNK_MAX granularity. */
void gcoll__tcp_queue_stripe(tcp_sock_t *s, tcp_stripe_t *st)
{
    tcp_stripe_t **at = &s->data;
    while (*at && (*at)->req->prio >= st->req->prio)
        at = &(*at)->next;
    st->next = *at;
    *at = st;
}

/* The receiver is ready: cut the message into one stripe per socket (large ones) and start. */
static void start_stream(gcoll__tp_t *tp, gcoll__tp_req_t *r, uint64_t rid)
{
    tcp_peer_t *p = r->peer;
    size_t n = r->bytes >= STRIPE_MIN ? (size_t)tp->nsocks : 1;
    size_t per = ((r->bytes + n - 1) / n + 4095) & ~(size_t)4095;
    r->stripes = calloc(n, sizeof(*r->stripes));
    if (!r->stripes) {
        complete(r, GCOLL_ERR_NOMEM, "tcp: no memory to stripe a message to rank %d", p->rank);
        return;
    }
    r->state = REQ_DATA_OUT;
    r->id = rid;
    for (size_t i = 0; i < n && i * per < r->bytes; i++) {
        tcp_stripe_t *st = &r->stripes[i];
        st->req = r;
        st->pos = i * per;
        st->end = st->pos + per < r->bytes ? st->pos + per : r->bytes;
        gcoll__tcp_queue_stripe(&p->socks[i], st);
    }
    for (size_t i = 0; i < n && !r->done; i++)
        sock_write(tp, &p->socks[i]);
}

static gcoll_status_t check_peer(gcoll__tp_t *tp, int peer)
{
    if (peer < 0 || peer >= tp->size || peer == tp->rank)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "tcp: peer %d is not another rank of %d", peer, tp->size);
    return GCOLL_SUCCESS;
}

static gcoll_status_t new_req(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int is_recv,
                              gcoll__tp_req_t **out)
{
    GCOLL_CHECK(check_peer(tp, peer));
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

static gcoll_status_t tcp_isend_prio(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int prio,
                                     gcoll__tp_req_t **out)
{
    if (peer >= 0 && peer < tp->size && tp->peers[peer].failed)
        return gcoll__error(tp->peers[peer].failed, "%s", tp->peers[peer].why);
    if (tp->mm.status)
        return gcoll__mismatch_error(&tp->mm);
    GCOLL_CHECK(new_req(tp, peer, tag, buf, bytes, 0, out));
    gcoll__tp_req_t *r = *out;
    tcp_peer_t *p = r->peer;
    r->prio = prio;
    const gcoll__opdesc_t *op = gcoll__optab_find(tp->optab, tag);
    if (bytes <= TCP_EAGER_MAX) {
        r->state = REQ_EAGER_OUT;
        r->frame = (tcp_frame_t){.hdr = {.type = TCP_EAGER, .tag = tag, .len = bytes}, .data = buf, .req = r};
    } else {
        r->state = REQ_WAIT_CTS;
        r->id = ++p->next_sid;
        r->frame = (tcp_frame_t){.hdr = {.type = TCP_RTS, .tag = tag, .id = r->id, .aux = bytes}};
    }
    if (op)
        r->frame.hdr.desc = *op;
    send_ctrl(tp, p, &r->frame);
    return GCOLL_SUCCESS;
}

static gcoll_status_t tcp_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **out)
{
    return tcp_isend_prio(tp, peer, tag, buf, bytes, 0, out);
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
                complete(r, tp->mm.status, "%s", tp->mm.why);
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
        *f = (tcp_frame_t){.hdr = {.type = TCP_MISMATCH, .len = n}, .data = tp->mm.why, .owned = 1};
        send_ctrl(tp, to, f);
    }
    fail_all(tp);
}

/* This rank's operation under tag differs from the one whose message arrived from p. */
static void found_mismatch(gcoll__tp_t *tp, tcp_peer_t *p, uint32_t tag, const gcoll__opdesc_t *theirs)
{
    if (gcoll__mismatch_found(&tp->mm, tp->optab, tag, tp->rank, theirs, p->rank))
        tell_peers(tp);
}

/* The transport table's mismatch: the other endpoint of a route found or was told of one. */
static void tcp_mismatch(gcoll__tp_t *tp, const char *why)
{
    if (gcoll__mismatch_told(&tp->mm, why))
        tell_peers(tp);
}

/* A peer's MISMATCH frame has arrived in p->notice: this endpoint fails with its text. */
static void notice_arrived(gcoll__tp_t *tp, tcp_peer_t *p, size_t len)
{
    p->notice[len] = '\0';
    if (gcoll__mismatch_notice(&tp->mm, p->rank, p->notice))
        fail_all(tp);
}

/* ---- receiving ---- */

static gcoll__tp_req_t *match_posted(tcp_peer_t *p, uint32_t tag)
{
    for (gcoll__tp_req_t *r = p->reqs; r; r = r->next)
        if (r->is_recv && r->state == REQ_POSTED && r->tag == tag)
            return r;
    return NULL;
}

static void size_mismatch(gcoll__tp_req_t *r, size_t got)
{
    complete(r, GCOLL_ERR_TRANSPORT, "tcp: rank %d sent %zu bytes with tag %u; the receive expects %zu", r->peer->rank,
             got, (unsigned)r->tag, r->bytes);
}

/* A receive meets a rendezvous offer: clear it to send, or decline when the sizes differ. */
static void accept_rts(gcoll__tp_t *tp, gcoll__tp_req_t *r, size_t bytes, uint64_t sid)
{
    tcp_peer_t *p = r->peer;
    if (bytes != r->bytes) {
        size_mismatch(r, bytes);
        tcp_frame_t *f = calloc(1, sizeof(*f));
        if (!f) {
            fail_peer(tp, p, GCOLL_ERR_TRANSPORT, 1, "tcp: no memory to decline a message from rank %d", p->rank);
            return;
        }
        *f = (tcp_frame_t){.hdr = {.type = TCP_CTS, .id = sid, .aux = 0}, .owned = 1};
        send_ctrl(tp, p, f);
        return;
    }
    r->state = REQ_RNDV_IN;
    r->id = ++p->next_rid;
    r->frame = (tcp_frame_t){.hdr = {.type = TCP_CTS, .id = sid, .aux = r->id}};
    send_ctrl(tp, p, &r->frame);
}

/* Hands a complete unexpected eager message to r, and forgets it. */
static void deliver(tcp_peer_t *p, gcoll__tp_req_t *r, tcp_unexp_t *u)
{
    unexp_unlink(p, u);
    u->waiter = NULL;
    r->waits_for = NULL;
    if (u->bytes != r->bytes) {
        size_mismatch(r, u->bytes);
    } else {
        if (r->bytes)
            memcpy(r->buf, u->data, r->bytes);
        complete(r, GCOLL_SUCCESS, NULL);
    }
    unexp_free(u);
}

static gcoll_status_t tcp_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **out)
{
    if (tp->mm.status)
        return gcoll__mismatch_error(&tp->mm);
    GCOLL_CHECK(new_req(tp, peer, tag, buf, bytes, 1, out));
    gcoll__tp_req_t *r = *out;
    tcp_peer_t *p = r->peer;
    r->state = REQ_POSTED;
    for (tcp_unexp_t *u = p->unexp; u; u = u->next) {
        if (u->tag != tag || u->waiter)
            continue;
        if (!gcoll__mismatch_agree(tp->optab, tag, &u->desc)) { /* it arrived before this operation started */
            found_mismatch(tp, p, tag, &u->desc);
            return GCOLL_SUCCESS;
        }
        if (u->type == TCP_RTS) {
            unexp_unlink(p, u);
            if (p->failed) /* the offer's data can no longer come */
                complete(r, p->failed, "%s", p->why);
            else
                accept_rts(tp, r, u->bytes, u->sid);
            unexp_free(u);
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
        complete(r, p->failed, "%s", p->why);
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
        u->data = malloc(h->len ? h->len : 1);
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

/* Acts on a checked header: decides where its payload goes (s->dst; NULL discards it). */
static void dispatch(gcoll__tp_t *tp, tcp_sock_t *s)
{
    tcp_peer_t *p = s->peer;
    const gcoll__tcp_hdr_t *h = &s->hdr;
    char what[160];
    gcoll__tp_req_t *r;
    s->dst = NULL;
    if ((h->type == TCP_EAGER || h->type == TCP_RTS || h->type == TCP_BYE) && s->index != 0) {
        snprintf(what, sizeof(what), "a message header on a data-only socket");
        protocol_error(tp, s, what);
        return;
    }
    if ((h->type == TCP_EAGER || h->type == TCP_RTS) && !tp->mm.status &&
        !gcoll__mismatch_agree(tp->optab, h->tag, &h->desc)) {
        found_mismatch(tp, p, h->tag, &h->desc);
        if (h->type == TCP_EAGER) { /* its payload is read and dropped */
            s->need = h->len;
            s->in_payload = 1;
        }
        return;
    }
    switch (h->type) {
    case TCP_MISMATCH: s->dst = p->notice; break;
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
            fail_peer(tp, p, GCOLL_ERR_TRANSPORT, 1, "tcp: no memory for an unexpected message from rank %d", p->rank);
            return;
        }
        break;
    case TCP_RTS:
        if ((r = match_posted(p, h->tag)))
            accept_rts(tp, r, h->aux, h->id);
        else if (!stash(p, h))
            fail_peer(tp, p, GCOLL_ERR_TRANSPORT, 1, "tcp: no memory for an unexpected message from rank %d", p->rank);
        return;
    case TCP_CTS:
        if ((r = find_by_id(p, 0, REQ_WAIT_CTS, h->id))) {
            if (h->aux == 0)
                complete(r, GCOLL_ERR_TRANSPORT,
                         "tcp: rank %d declined a message of %zu bytes with tag %u: "
                         "its receive expects another size",
                         p->rank, r->bytes, (unsigned)r->tag);
            else
                start_stream(tp, r, h->aux);
        } else if (h->id == 0 || h->id > p->next_sid) {
            snprintf(what, sizeof(what), "clear-to-send for message id %llu, never offered", (unsigned long long)h->id);
            protocol_error(tp, s, what);
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
                protocol_error(tp, s, what);
                return;
            }
            s->dst = r->buf + h->aux;
            s->dst_req = r;
        } else if (h->id == 0 || h->id > p->next_rid) {
            snprintf(what, sizeof(what), "data for receive id %llu, never cleared", (unsigned long long)h->id);
            protocol_error(tp, s, what);
            return;
        } /* else: for a receive abandoned after its CTS: discarded */
        break;
    }
    s->need = h->len;
    s->in_payload = 1;
}

static void payload_done(gcoll__tp_t *tp, tcp_sock_t *s)
{
    s->in_payload = 0;
    if (s->hdr.type == TCP_MISMATCH) {
        notice_arrived(tp, s->peer, s->hdr.len);
    } else if (s->dst_req) {
        gcoll__tp_req_t *r = s->dst_req;
        s->dst_req = NULL;
        r->left -= s->hdr.len;
        if (r->left == 0)
            complete(r, GCOLL_SUCCESS, NULL);
    } else if (s->dst_unexp) {
        tcp_unexp_t *u = s->dst_unexp;
        s->dst_unexp = NULL;
        u->complete = 1;
        if (u->waiter)
            deliver(s->peer, u->waiter, u);
    }
}

/* A socket reached end of file or failed (err). A peer that said BYE closed its endpoint on
 * purpose: like a rank that never joins, what waits on it is left to the core's timeout. Any
 * other loss fails the peer at once (on the first error, or when every socket has closed). */
static void sock_gone(gcoll__tp_t *tp, tcp_sock_t *s, const char *doing, int err)
{
    tcp_peer_t *p = s->peer;
    if (!p->left && err) {
        fail_peer(tp, p, GCOLL_ERR_REMOTE, 1, "tcp: %s rank %d on socket %d failed: %s", doing, p->rank, s->index,
                  strerror(err));
        return;
    }
    if (!p->left && (s->in_payload || s->rlen > s->rpos)) { /* a process killed while it sent */
        fail_peer(tp, p, GCOLL_ERR_REMOTE, 1,
                  "tcp: rank %d closed socket %d in the middle of a frame (did it exit "
                  "or crash?)",
                  p->rank, s->index);
        return;
    }
    gcoll__tcp_sock_close(tp, s);
    s->eof = 1;
    if (++p->neof == tp->nsocks && !p->left)
        fail_peer(tp, p, GCOLL_ERR_REMOTE, p->reqs != NULL,
                  "tcp: rank %d closed its connections without saying goodbye (did it exit or crash?)", p->rank);
}

/* Reads until the socket runs dry: headers and small payloads through rbuf, the rest in place. */
static void sock_read(gcoll__tp_t *tp, tcp_sock_t *s)
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
                payload_done(tp, s);
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
                s->rpos += TCP_HDR_BYTES;
                if (gcoll__tcp_hdr_check(&s->hdr, s->rseq, why, sizeof(why)) != GCOLL_SUCCESS) {
                    protocol_error(tp, s, why);
                    return;
                }
                s->rseq++;
                dispatch(tp, s);
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
            sock_gone(tp, s, "reading from", 0);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            s->rd_ready = 0;
        } else if (errno != EINTR) {
            sock_gone(tp, s, "reading from", errno);
        }
    }
}

/* ---- progress ---- */

gcoll_status_t gcoll__tcp_poll(gcoll__tp_t *tp, int timeout_ms)
{
    struct epoll_event evs[64];
    int n = epoll_wait(tp->epfd, evs, 64, timeout_ms);
    if (n < 0 && errno != EINTR)
        return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: epoll_wait failed: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
        tcp_ev_t *e = evs[i].data.ptr;
        unsigned ev = evs[i].events;
        if (e->kind == EV_LISTEN) {
            gcoll__tcp_accept(tp);
        } else if (e->kind == EV_PEND) {
            GCOLL_CHECK(gcoll__tcp_pend_event(tp, (tcp_pend_t *)e, ev));
        } else {
            tcp_sock_t *s = (tcp_sock_t *)e;
            s->rd_ready |= (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
            s->hup |= (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
            s->wr_ready |= (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
        }
    }
    return GCOLL_SUCCESS;
}

/* Reads and writes what the sockets allow; notes whether any was left (sockets are
 * edge-triggered: what is left raises no new event, so tcp_wait must not sleep on it). */
static gcoll_status_t progress(gcoll__tp_t *tp)
{
    GCOLL_CHECK(gcoll__tcp_poll(tp, 0));
    if (tp->npend)
        gcoll__tcp_pend_expire(tp);
    int left = 0;
    for (int q = 0; q < tp->size; q++) {
        tcp_peer_t *p = &tp->peers[q];
        for (int i = 0; i < tp->nsocks && !p->failed; i++) {
            tcp_sock_t *s = &p->socks[i];
            if (s->rd_ready)
                sock_read(tp, s);
            if (s->wr_ready && (s->busy || s->ctrl || s->data))
                sock_write(tp, s);
            left |= s->rd_ready || (s->wr_ready && (s->busy || s->ctrl || s->data));
        }
    }
    atomic_store_explicit(&tp->leftover, left, memory_order_relaxed);
    return GCOLL_SUCCESS;
}

/* Called without the context lock: touches nothing that a progress pass changes. epoll counts
 * in milliseconds: round up, so a short wait still sleeps rather than spins. */
static gcoll_status_t tcp_wait(gcoll__tp_t *tp, long usec)
{
    struct epoll_event ev;
    if (atomic_load_explicit(&tp->leftover, memory_order_relaxed))
        return GCOLL_SUCCESS;
    if (epoll_wait(tp->sleepfd, &ev, 1, (int)((usec + 999) / 1000)) < 0 && errno != EINTR)
        return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: epoll_wait failed: %s", strerror(errno));
    return GCOLL_SUCCESS;
}

static void tcp_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r);

/* A peer lost without goodbye, found by a progress pass over every socket (the engine asks when an
 * operation stalls, which may be waiting on other peers or another transport). */
static int tcp_dead_peer(gcoll__tp_t *tp, char *why, size_t len)
{
    if (progress(tp) != GCOLL_SUCCESS)
        return -1; /* epoll failing is no news of a peer; the operation's own test reports it */
    for (int q = 0; q < tp->size; q++)
        if (tp->peers[q].failed == GCOLL_ERR_REMOTE) {
            snprintf(why, len, "%s", tp->peers[q].why);
            return q;
        }
    return -1;
}

static gcoll_status_t tcp_check(gcoll__tp_t *tp)
{
    GCOLL_CHECK(progress(tp));
    return tp->mm.status ? gcoll__mismatch_error(&tp->mm) : GCOLL_SUCCESS;
}

static gcoll_status_t tcp_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    gcoll_status_t st = r->done ? GCOLL_SUCCESS : progress(tp);
    *done = r->done || st != GCOLL_SUCCESS;
    if (st != GCOLL_SUCCESS) { /* the endpoint failed under it: an error frees it too */
        tcp_cancel(tp, r);
        return st;
    }
    if (!r->done)
        return GCOLL_SUCCESS;
    st = r->status;
    if (st != GCOLL_SUCCESS)
        gcoll__error(st, "%s", r->why);
    free(r->stripes);
    free(r);
    return st;
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
                fail_peer(tp, p, GCOLL_ERR_TRANSPORT, 1, "tcp: no memory to finish a frame to rank %d", p->rank);
                return;
            }
            size_t sent = s->cur_off > TCP_HDR_BYTES ? s->cur_off - TCP_HDR_BYTES : 0;
            memcpy(s->cur_owned + sent, s->cur_data + sent, s->cur_len - sent);
            s->cur_data = s->cur_owned;
        }
    }
}

static void tcp_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    if (!r->done) {
        detach(tp, r);
        if (!r->done) /* detach may have failed the peer, which completes r */
            complete(r, GCOLL_ERR_ABORTED, NULL);
    }
    free(r->stripes);
    free(r);
}

/* ---- endpoint ---- */

/* Best effort: a peer that reads BYE knows this rank left on purpose and did not crash. */
static void say_bye(tcp_sock_t *s)
{
    if (s->ev.fd < 0 || s->busy)
        return;
    unsigned char buf[TCP_HDR_BYTES];
    gcoll__tcp_hdr_t h = {.type = TCP_BYE, .seq = s->wseq++};
    gcoll__tcp_hdr_pack(buf, &h);
    if (send(s->ev.fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(buf))
        GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: no goodbye to rank %d: its socket is full or gone", s->peer->rank);
}

static void tcp_close(gcoll__tp_t *tp)
{
    for (int q = 0; tp->peers && q < tp->size; q++) {
        tcp_peer_t *p = &tp->peers[q];
        if (p->socks && !p->failed)
            say_bye(&p->socks[0]);
        for (int i = 0; p->socks && i < tp->nsocks; i++)
            sock_reset(tp, &p->socks[i]);
        while (p->unexp) {
            tcp_unexp_t *u = p->unexp;
            p->unexp = u->next;
            unexp_free(u);
        }
        while (p->reqs) {
            gcoll__tp_req_t *r = p->reqs;
            req_unlink(p, r);
            free(r->stripes);
            free(r);
        }
        free(p->socks);
    }
    gcoll__tcp_pend_free_all(tp);
    if (tp->listen.fd >= 0)
        close(tp->listen.fd);
    if (tp->epfd >= 0)
        close(tp->epfd);
    if (tp->sleepfd >= 0)
        close(tp->sleepfd);
    free(tp->peers);
    free(tp);
}

/* Every rank must use the same socket count, and rank 0's secret. */
static gcoll_status_t agree(const gcoll__bootstrap_t *boot, gcoll__tp_t *tp)
{
    int64_t ext[2] = {tp->nsocks, -tp->nsocks};
    GCOLL_CHECK(gcoll__boot_reduce_i64(boot->group, ext, 2, 1));
    if (ext[0] != -ext[1])
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "tcp: GCOLL_TCP_NSOCKS differs between ranks (from %d to %d); "
                            "HINT: set it alike everywhere",
                            (int)-ext[1], (int)ext[0]);
    unsigned char msg[TCP_SECRET_BYTES + 1] = {0};
    if (boot->rank == 0) {
        size_t got = 0;
        while (got < TCP_SECRET_BYTES) {
            ssize_t n = getrandom(msg + 1 + got, TCP_SECRET_BYTES - got, 0);
            if (n < 0 && errno != EINTR)
                break;
            got += n > 0 ? (size_t)n : 0;
        }
        msg[0] = got == TCP_SECRET_BYTES;
    }
    GCOLL_CHECK(gcoll__boot_bcast(boot->group, msg, sizeof(msg), 0));
    if (!msg[0])
        return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: rank 0 could not draw the job secret from getrandom()");
    memcpy(tp->secret, msg + 1, TCP_SECRET_BYTES);
    return GCOLL_SUCCESS;
}

/* The endpoint's local parts: epoll, the peer table, the listening socket. */
static gcoll_status_t open_local(gcoll__tp_t *tp)
{
    tp->epfd = epoll_create1(EPOLL_CLOEXEC);
    tp->sleepfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (tp->epfd < 0 || tp->sleepfd < 0 || epoll_ctl(tp->sleepfd, EPOLL_CTL_ADD, tp->epfd, &ev) != 0)
        return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: epoll_create1 failed: %s", strerror(errno));
    tp->peers = calloc((size_t)tp->size, sizeof(*tp->peers));
    if (!tp->peers)
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for %d peers", tp->size);
    for (int q = 0; q < tp->size; q++) {
        tcp_peer_t *p = &tp->peers[q];
        p->rank = q;
        p->socks = calloc((size_t)tp->nsocks, sizeof(*p->socks));
        if (!p->socks)
            return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for the sockets to rank %d", q);
        for (int i = 0; i < tp->nsocks; i++)
            p->socks[i] = (tcp_sock_t){.ev = {EV_SOCK, -1}, .peer = p, .index = i};
    }
    return gcoll__tcp_listen(tp);
}

static gcoll_status_t tcp_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **out)
{
    gcoll__tp_t *tp = calloc(1, sizeof(*tp));
    if (!tp)
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for an endpoint");
    tp->rank = boot->rank;
    tp->size = boot->size;
    tp->optab = boot->optab;
    tp->mm.name = "tcp";
    tp->nsocks = gcoll__config.tcp_nsocks;
    tp->epfd = tp->sleepfd = tp->listen.fd = -1;
    tp->me.sin_family = AF_INET;
    gcoll_status_t st = agree(boot, tp);
    if (st == GCOLL_SUCCESS)
        st = gcoll__tcp_choose_if(boot, &tp->me.sin_addr);
    if (st == GCOLL_SUCCESS) {
        /* a rank that fails alone must not leave the others waiting in the address exchange */
        char keep[256];
        gcoll_status_t local = open_local(tp);
        snprintf(keep, sizeof(keep), "%s", local ? gcoll_last_error() : "");
        int first = local ? tp->rank : tp->size;
        st = gcoll__boot_min_int(boot->group, &first);
        if (st == GCOLL_SUCCESS && local)
            st = gcoll__error(local, "%s", keep);
        else if (st == GCOLL_SUCCESS && first < tp->size)
            st = gcoll__error(GCOLL_ERR_TRANSPORT, "tcp: rank %d could not open its endpoint", first);
    }
    if (st != GCOLL_SUCCESS) {
        tcp_close(tp);
        return st;
    }
    *out = tp;
    return GCOLL_SUCCESS;
}

static size_t tcp_addr_len(gcoll__tp_t *tp)
{
    (void)tp;
    return ADDR_BYTES;
}

static gcoll_status_t tcp_addr(gcoll__tp_t *tp, void *buf)
{
    memcpy(buf, &tp->me.sin_addr.s_addr, 4);
    memcpy((char *)buf + 4, &tp->me.sin_port, 2);
    return GCOLL_SUCCESS;
}

static gcoll_status_t tcp_connect(gcoll__tp_t *tp, const void *all_addrs)
{
    return gcoll__tcp_connect_all(tp, all_addrs);
}

const gcoll__transport_t gcoll__transport_tcp = {
    .name = "tcp",
    .create = tcp_create,
    .addr_len = tcp_addr_len,
    .addr = tcp_addr,
    .connect = tcp_connect,
    .isend = tcp_isend,
    .isend_prio = tcp_isend_prio,
    .irecv = tcp_irecv,
    .test = tcp_test,
    .cancel = tcp_cancel,
    .reg_mem = NULL,
    .dereg_mem = NULL,
    .wait = tcp_wait,
    .dead_peer = tcp_dead_peer,
    .mismatch = tcp_mismatch,
    .check = tcp_check,
    .close = tcp_close,
};
