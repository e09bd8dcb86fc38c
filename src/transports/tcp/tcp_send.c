/* The TCP transport's send path: isend posts a message (eager on socket 0 up to GCOLL_TCP_EAGER,
 * else an RTS), and each socket writes its frames as the kernel takes them, highest priority
 * first: control frames and eager messages from one queue, chunks of data stripes from another.
 * A CTS starts the stream of a rendezvous message, striped across the sockets when large. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/config.h"
#include "base/error.h"
#include "transports/tcp/tcp.h"

#define STRIPE_MIN (1024 * 1024) /* smaller rendezvous messages stay on socket 0 */

/* Starts the next frame on s: a queued frame (control or eager), or the next chunk of a data
 * stripe when that is of a higher priority (data frames match by id, so either order is safe). */
static int take_next(tcp_pool_t *pool, tcp_sock_t *s)
{
    gcoll__tcp_hdr_t h;
    tcp_link_t *l = s->link;
    if ((l->closing || l->retiring) && !(s->ctrl && TCP_IS_IDLE_FRAME(s->ctrl->hdr.type)))
        return 0; /* the rest waits for the close to be settled */
    if (s->ctrl && (!s->data || s->ctrl->prio >= s->data->req->prio)) {
        tcp_frame_t *f = s->ctrl;
        s->ctrl = f->next;
        if (!s->ctrl)
            s->ctrl_tail = NULL;
        h = f->hdr;
        s->cur_data = f->data;
        s->cur_req = f->req;
        if (f->owned && h.len)
            s->cur_owned = (char *)f; /* its text follows it: freed once written */
        else if (f->owned)
            free(f);
    } else if (s->data) {
        tcp_stripe_t *st = s->data;
        size_t chunk = st->end - st->pos < TCP_CHUNK_MAX ? st->end - st->pos : TCP_CHUNK_MAX;
        const tcp_peer_t *p = st->req->peer;
        h = (gcoll__tcp_hdr_t){
            .type = TCP_DATA, .len = chunk, .id = st->req->id, .aux = st->pos, .chan = p && p->tp ? p->tp->chan : 0};
        s->cur_data = st->req->buf + st->pos;
        s->cur_req = st->req;
        st->pos += chunk;
        if (st->pos == st->end)
            s->data = st->next;
    } else {
        return 0;
    }
    h.seq = s->wseq++;
    if (!TCP_IS_IDLE_FRAME(h.type)) {
        l->sent++;
        l->used = pool ? ++pool->clock : l->used;
    }
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
            gcoll__tcp_complete(r, GCOLL_SUCCESS, NULL);
    }
}

/* Writes frames until the socket's buffer is full or nothing is left. */
void gcoll__tcp_sock_write(tcp_pool_t *pool, tcp_sock_t *s)
{
    while (s->wr_ready && s->ev.fd >= 0 && (s->busy || take_next(pool, s))) {
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
            gcoll__tcp_sock_gone(pool, s, "writing to", errno);
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

/* A frame waits behind those of its priority or higher: an eager message of an urgent operation
 * overtakes bulk ones already queued, and one operation's messages (one tag, one priority) keep
 * their order, which matching needs. */
void gcoll__tcp_send_ctrl(tcp_peer_t *p, tcp_frame_t *f)
{
    tcp_sock_t *s = &p->socks[0];
    f->hdr.chan = p->tp ? p->tp->chan : 0;
    tcp_frame_t **at = &s->ctrl;
    while (*at && (*at)->prio >= f->prio)
        at = &(*at)->next;
    f->next = *at;
    *at = f;
    if (!f->next)
        s->ctrl_tail = f;
    gcoll__tcp_sock_write(p->tp ? p->tp->pool : NULL, s);
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
void gcoll__tcp_start_stream(gcoll__tp_t *tp, gcoll__tp_req_t *r, uint64_t rid)
{
    tcp_peer_t *p = r->peer;
    size_t n = r->bytes >= STRIPE_MIN ? (size_t)tp->nsocks : 1;
    size_t per = ((r->bytes + n - 1) / n + 4095) & ~(size_t)4095;
    r->stripes = calloc(n, sizeof(*r->stripes));
    if (!r->stripes) {
        gcoll__tcp_complete(r, GCOLL_ERR_NOMEM, "tcp: no memory to stripe a message to rank %d", p->rank);
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
        gcoll__tcp_sock_write(tp->pool, &p->socks[i]);
}

gcoll_status_t gcoll__tcp_isend_prio(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int prio,
                                     gcoll__tp_req_t **out)
{
    if (peer >= 0 && peer < tp->size && tp->peers[peer].failed)
        return gcoll__error(tp->peers[peer].failed, "%s", tp->peers[peer].why);
    if (tp->mm.status)
        return gcoll__mismatch_error(&tp->mm);
    GCOLL_CHECK(gcoll__tcp_req_new(tp, peer, tag, buf, bytes, 0, out));
    gcoll__tp_req_t *r = *out;
    tcp_peer_t *p = r->peer;
    r->prio = prio;
    gcoll__opdesc_t mine;
    const gcoll__opdesc_t *op = gcoll__optab_find(tp->optab, tag, &mine);
    /* Eager up to GCOLL_TCP_EAGER: a rendezvous's CTS travels against the peer's own data, and on
     * a link both directions fill (a ring's) it waits behind a socket buffer's worth of it, the
     * link idle meanwhile. Striped messages keep the rendezvous: their stripes need the CTS. */
    if (bytes <= gcoll__config.tcp_eager && (bytes < STRIPE_MIN || tp->nsocks == 1)) {
        r->state = REQ_EAGER_OUT;
        r->frame =
            (tcp_frame_t){.hdr = {.type = TCP_EAGER, .tag = tag, .len = bytes}, .data = buf, .req = r, .prio = prio};
    } else {
        r->state = REQ_WAIT_CTS;
        r->id = ++p->next_sid;
        r->frame = (tcp_frame_t){.hdr = {.type = TCP_RTS, .tag = tag, .id = r->id, .aux = bytes}, .prio = prio};
    }
    if (op)
        r->frame.hdr.desc = *op;
    gcoll__tcp_send_ctrl(p, &r->frame);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__tcp_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **out)
{
    return gcoll__tcp_isend_prio(tp, peer, tag, buf, bytes, 0, out);
}
