/* The TCP transport's limit on open connections (GCOLL_TCP_MAX_CONNS, lazy pools): past it, the
 * least recently used idle link closes by agreement of both processes, so that no frame is lost
 * and neither takes the close for a crash, and it opens again when a request next names its
 * process. Asking costs one frame each way; a busy peer declines and the link stays. */
#include <arpa/inet.h>
#include <stdlib.h>

#include "base/log.h"
#include "transports/tcp/tcp.h"

/* Nothing queued, half written, half read or held on any socket of l, every socket connected. */
static int quiet(const tcp_pool_t *pool, const tcp_link_t *l)
{
    if (l->down || l->nready < pool->nsocks)
        return 0;
    for (int i = 0; i < pool->nsocks; i++) {
        const tcp_sock_t *s = &l->socks[i];
        if (s->ev.fd < 0 || s->dialing || s->eof || s->busy || s->ctrl || s->data || s->in_payload || s->held ||
            s->rlen != s->rpos)
            return 0;
    }
    return 1;
}

int gcoll__tcp_sock_pending(const tcp_sock_t *s)
{
    if (s->link->closing || s->link->retiring)
        return s->busy || (s->ctrl && TCP_IS_IDLE_FRAME(s->ctrl->hdr.type));
    return s->busy || s->ctrl || s->data;
}

/* An idle frame goes first on socket 0: the other frames wait for what it settles. */
static void send_idle(tcp_pool_t *pool, tcp_link_t *l, int type)
{
    tcp_sock_t *s = &l->socks[0];
    tcp_frame_t *f = calloc(1, sizeof(*f));
    if (!f) {
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_NOMEM, 1, "could not be answered: no memory for a frame");
        return;
    }
    *f = (tcp_frame_t){.hdr = {.type = (uint8_t)type, .id = l->sent, .aux = l->recvd}, .owned = 1};
    f->next = s->ctrl;
    s->ctrl = f;
    if (!f->next)
        s->ctrl_tail = f;
    gcoll__tcp_sock_write(pool, s);
}

/* Frames of the channels' own news (goodbyes, failures, mismatches) need no connection of their
 * own: a new one catches its endpoints up (gcoll__tcp_catch_up). The rest waits for it. */
static int drop_news(tcp_sock_t *s)
{
    int left = 0;
    tcp_frame_t *prev = NULL;
    for (tcp_frame_t *f = s->ctrl, *next; f; f = next) {
        next = f->next;
        int news = f->owned &&
            (f->hdr.type == TCP_BYE || f->hdr.type == TCP_DOWN || f->hdr.type == TCP_MISMATCH ||
             TCP_IS_IDLE_FRAME(f->hdr.type));
        if (news) {
            *(prev ? &prev->next : &s->ctrl) = next;
            free(f);
        } else {
            prev = f;
            left = 1;
        }
    }
    s->ctrl_tail = prev;
    return left || s->data;
}

/* Both processes agreed: the sockets close and the link is as if never connected. */
static void link_close(tcp_pool_t *pool, tcp_link_t *l)
{
    int queued = 0;
    for (int i = 0; i < pool->nsocks; i++) {
        tcp_sock_t *s = &l->socks[i];
        /* only an idle frame can be unwritten here (the rest waited): an answer the close made moot */
        gcoll__tcp_sock_rewind(pool, s);
        queued |= drop_news(s);
    }
    l->nready = l->neof = 0;
    l->closing = l->retiring = 0;
    l->sent = l->recvd = 0;
    pool->idle_closed++;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &l->addr.sin_addr, ip, sizeof(ip));
    GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: closed the idle connection to %s:%u", ip, (unsigned)ntohs(l->addr.sin_port));
    if (queued && l->nroutes) /* frames came while it closed: they go out on a new connection */
        gcoll__tcp_link_dial(l->routes[0]->tp, l);
}

void gcoll__tcp_idle_trim(tcp_pool_t *pool)
{
    int open = 0;
    tcp_link_t *pick = NULL;
    for (int k = 0; k < pool->nlinks; k++) {
        tcp_link_t *l = pool->links[k];
        if (l->down)
            continue;
        if (l->closing || l->retiring)
            return; /* one at a time: its answer may free a place */
        int connected = 0;
        for (int i = 0; i < pool->nsocks; i++)
            connected |= l->socks[i].ev.fd >= 0 || l->socks[i].dialing;
        open += connected;
        if (quiet(pool, l) && (!pick || l->used < pick->used))
            pick = l;
    }
    if (open <= pool->max_links || !pick)
        return;
    pick->closing = 1;
    send_idle(pool, pick, TCP_IDLE);
}

void gcoll__tcp_idle_frame(tcp_pool_t *pool, tcp_sock_t *s)
{
    tcp_link_t *l = s->link;
    const gcoll__tcp_hdr_t *h = &s->hdr;
    if (s->index != 0 || h->chan != 0) {
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_TRANSPORT, 1,
                             "broke the protocol on socket %d: an idle-connection frame off socket 0 or "
                             "with a channel; connection closed",
                             s->index);
        return;
    }
    if (h->type == TCP_IDLE) {
        /* we have read all the asker wrote, it all we wrote, and nothing else is going on (where
         * both asked at once, each answers the other's and the first agreement closes it) */
        int agree = h->id == l->recvd && h->aux == l->sent && !l->retiring && quiet(pool, l);
        l->retiring = agree;
        send_idle(pool, l, agree ? TCP_IDLE_OK : TCP_IDLE_NO);
    } else if (h->type == TCP_IDLE_OK && (l->closing || l->retiring)) {
        link_close(pool, l);
    } else if (h->type == TCP_IDLE_NO && (l->closing || l->retiring)) {
        l->closing = 0; /* still retiring where we agreed to its own asking: its close ends it */
    } else {
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_TRANSPORT, 1,
                             "broke the protocol on socket 0: an answer to a close it was not asked; "
                             "connection closed");
    }
}

int gcoll__tcp_idle_gone(tcp_pool_t *pool, tcp_sock_t *s)
{
    tcp_link_t *l = s->link;
    if (!l->retiring)
        return 0;
    gcoll__tcp_sock_close(pool, s);
    s->eof = 1;
    int open = 0;
    for (int i = 0; i < pool->nsocks; i++)
        open |= l->socks[i].ev.fd >= 0;
    if (!open)
        link_close(pool, l);
    return 1;
}

void gcoll__tcp_idle_retire(tcp_pool_t *pool, tcp_link_t *l)
{
    if (l->retiring)
        link_close(pool, l);
}
