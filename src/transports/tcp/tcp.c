/* The TCP transport: tagged messages over nonblocking sockets (edge-triggered epoll),
 * GCOLL_TCP_NSOCKS per peer (docs/transports.md). This file holds its table and the endpoint's
 * lifecycle: the ranks agree on the socket count and the job's secret, open their local parts
 * and exchange addresses; close says goodbye and frees it all. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transports/tcp/tcp.h"

#define ADDR_BYTES 6 /* IPv4 address and port, network order */

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
            gcoll__tcp_sock_reset(tp, &p->socks[i]);
        while (p->unexp) {
            tcp_unexp_t *u = p->unexp;
            p->unexp = u->next;
            gcoll__tcp_unexp_free(u);
        }
        while (p->reqs) {
            gcoll__tp_req_t *r = p->reqs;
            gcoll__tcp_req_unlink(p, r);
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

/* Every rank must use the same socket count and way of connecting, and rank 0's secret. */
static gcoll_status_t agree(const gcoll__bootstrap_t *boot, gcoll__tp_t *tp)
{
    int64_t ext[4] = {tp->nsocks, -tp->nsocks, tp->lazy, -tp->lazy};
    GCOLL_CHECK(gcoll__boot_reduce_i64(boot->group, ext, 4, 1));
    if (ext[0] != -ext[1])
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "tcp: GCOLL_TCP_NSOCKS differs between ranks (from %d to %d); "
                            "HINT: set it alike everywhere",
                            (int)-ext[1], (int)ext[0]);
    if (ext[2] != -ext[3])
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "tcp: GCOLL_TCP_CONNECT differs between ranks (lazy on some, eager on others); "
                            "HINT: set it alike everywhere");
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
    tp->lazy = gcoll__config.tcp_connect_lazy;
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
    .isend = gcoll__tcp_isend,
    .isend_prio = gcoll__tcp_isend_prio,
    .irecv = gcoll__tcp_irecv,
    .test = gcoll__tcp_test,
    .cancel = gcoll__tcp_cancel,
    .reg_mem = NULL,
    .dereg_mem = NULL,
    .wait = gcoll__tcp_wait,
    .dead_peer = gcoll__tcp_dead_peer,
    .mismatch = gcoll__tcp_mismatch,
    .check = gcoll__tcp_check,
    .close = tcp_close,
};
