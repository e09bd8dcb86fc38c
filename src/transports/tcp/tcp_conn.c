/* The TCP transport's connections: the listening socket, socket options, and the handshake.
 * GCOLL_TCP_NSOCKS sockets per pair: eager endpoints open them all at creation, lower ranks
 * connecting to higher ones; lazy ones when a request first names the peer, either rank dialling
 * (when both do at once the lower rank's connection stands and the other is declined). Each
 * connection opens with a hello (the job's 128-bit secret, the connecting rank, the socket index)
 * that the acceptor checks before the socket joins the job. Anything else that connects (a wrong
 * secret, garbage, a duplicate, a close or a stall before the hello ends) is closed, counted and
 * logged. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transports/tcp/tcp.h"

#define HELLO_WAIT_MAX 10.0 /* seconds an incoming connection has to send its hello */
#define SOCK_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

struct tcp_pend {
    tcp_ev_t ev;
    tcp_pend_t *next;
    int outgoing;   /* we connected and wait for the ack; else we accepted and wait for a hello */
    int connecting; /* outgoing: connect() has not completed */
    int rank, index;
    unsigned char in[TCP_HELLO_BYTES];
    size_t inlen, inoff;
    double deadline;
    char remote[INET_ADDRSTRLEN + 8];
};

double gcoll__tcp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void format_addr(const struct sockaddr_in *a, char *buf, size_t len)
{
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
    snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
}

/* GCOLL_TCP_SNDBUF / GCOLL_TCP_RCVBUF (0: the kernel's autotuning); said once when the kernel
 * grants less. */
static void set_buffers(int fd, int rank, int say)
{
    int opts[2] = {SO_SNDBUF, SO_RCVBUF};
    size_t sizes[2] = {gcoll__config.tcp_sndbuf, gcoll__config.tcp_rcvbuf};
    const char *names[2] = {"SO_SNDBUF (net.core.wmem_max)", "SO_RCVBUF (net.core.rmem_max)"};
    for (int i = 0; i < 2; i++) {
        int want = (int)sizes[i], got = 0; /* at most 1G, so it fits */
        socklen_t len = sizeof(got);
        if (!want)
            continue;
        setsockopt(fd, SOL_SOCKET, opts[i], &want, sizeof(want));
        /* Linux reports twice what it grants, for its bookkeeping */
        if (say && getsockopt(fd, SOL_SOCKET, opts[i], &got, &len) == 0 && got / 2 < want)
            GCOLL_LOG(GCOLL_LOG_INFO, "tcp: rank %d: the kernel caps %s at %d bytes; asked for %d", rank, names[i],
                      got / 2, want);
    }
}

static gcoll_status_t sys_error(const char *what, int err)
{
    return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: %s failed: %s", what, strerror(err));
}

gcoll_status_t gcoll__tcp_listen(gcoll__tp_t *tp)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return sys_error("socket", errno);
    tp->listen = (tcp_ev_t){EV_LISTEN, fd};
    set_buffers(fd, tp->rank, 1); /* accepted sockets inherit them, window scaling included */
    socklen_t len = sizeof(tp->me);
    if (bind(fd, (struct sockaddr *)&tp->me, sizeof(tp->me)) != 0)
        return sys_error("bind", errno);
    if (listen(fd, SOMAXCONN) != 0)
        return sys_error("listen", errno);
    if (getsockname(fd, (struct sockaddr *)&tp->me, &len) != 0)
        return sys_error("getsockname", errno);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tp->listen};
    if (epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        return sys_error("epoll_ctl", errno);
    return GCOLL_SUCCESS;
}

static void pend_unlink(gcoll__tp_t *tp, tcp_pend_t *p)
{
    for (tcp_pend_t **q = &tp->pend; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            tp->npend--;
            return;
        }
}

/* Ends handshake p: off the list, its socket closed. */
static void pend_close(gcoll__tp_t *tp, tcp_pend_t *p)
{
    pend_unlink(tp, p);
    close(p->ev.fd);
    free(p);
}

static void reject(gcoll__tp_t *tp, tcp_pend_t *p, const char *why)
{
    GCOLL_LOG(GCOLL_LOG_WARN, "tcp: rank %d rejected a connection from %s: %s", tp->rank, p->remote, why);
    tp->rejected++;
    snprintf(tp->last_rejection, sizeof(tp->last_rejection), "%s", why);
    pend_close(tp, p);
}

static tcp_pend_t *pend_new(gcoll__tp_t *tp, int fd, int outgoing, const struct sockaddr_in *remote)
{
    tcp_pend_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->ev = (tcp_ev_t){EV_PEND, fd};
    p->outgoing = outgoing;
    p->inlen = outgoing ? TCP_ACK_BYTES : TCP_HELLO_BYTES;
    double wait = gcoll__config.timeout_s < HELLO_WAIT_MAX ? gcoll__config.timeout_s : HELLO_WAIT_MAX;
    p->deadline = gcoll__tcp_now() + wait;
    format_addr(remote, p->remote, sizeof(p->remote));
    p->next = tp->pend;
    tp->pend = p;
    tp->npend++;
    return p;
}

/* The handshake is over: the socket carries frames from now on. */
static gcoll_status_t install(gcoll__tp_t *tp, tcp_pend_t *p)
{
    tcp_peer_t *peer = &tp->peers[p->rank];
    tcp_sock_t *s = &peer->socks[p->index];
    if (p->outgoing)
        s->dialing = 0;
    s->rbuf = malloc(TCP_RBUF_BYTES);
    if (!s->rbuf)
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for a receive buffer for rank %d", p->rank);
    int one = 1;
    setsockopt(p->ev.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->ev = (tcp_ev_t){EV_SOCK, p->ev.fd};
    s->rd_ready = s->wr_ready = 1; /* bytes may already wait: no edge would announce them */
    struct epoll_event ev = {.events = SOCK_EVENTS, .data.ptr = &s->ev};
    if (epoll_ctl(tp->epfd, EPOLL_CTL_MOD, s->ev.fd, &ev) != 0)
        return sys_error("epoll_ctl", errno);
    peer->nready++;
    GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: socket %d to rank %d ready (%s)", p->index, p->rank, p->remote);
    pend_unlink(tp, p);
    free(p);
    return GCOLL_SUCCESS;
}

/* Reads what the handshake still needs; 1 when it is all here, 0 to wait, -1 on failure. */
static int read_in(tcp_pend_t *p, char *why, size_t len)
{
    while (p->inoff < p->inlen) {
        ssize_t n = recv(p->ev.fd, p->in + p->inoff, p->inlen - p->inoff, 0);
        if (n > 0) {
            p->inoff += (size_t)n;
        } else if (n == 0) {
            snprintf(why, len, "closed after %zu of the handshake's %zu bytes", p->inoff, p->inlen);
            return -1;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        } else if (errno != EINTR) {
            snprintf(why, len, "%s", strerror(errno));
            return -1;
        }
    }
    return 1;
}

/* A lazy endpoint could not open a socket to peer: its endpoint listens no more. A crash and a
 * communicator freed on purpose look alike here (no connection carried a goodbye), and a crash
 * must fail what waits on the peer at once, so both fail it (GCOLL_ERR_REMOTE). */
static void unreachable(gcoll__tp_t *tp, tcp_peer_t *peer)
{
    if (!peer->failed)
        gcoll__tcp_fail_peer(tp, peer, GCOLL_ERR_REMOTE, 1,
                             "%s: rank %d is not listening (did it exit or crash, or free the communicator?)",
                             gcoll_last_error(), peer->rank);
}

/* Ends our handshake p quietly: declined, or no longer needed. */
static void drop_dial(gcoll__tp_t *tp, tcp_pend_t *p)
{
    tp->peers[p->rank].socks[p->index].dialing = 0;
    pend_close(tp, p);
}

static gcoll_status_t outgoing_event(gcoll__tp_t *tp, tcp_pend_t *p, unsigned events)
{
    char why[160];
    if (p->connecting) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return GCOLL_SUCCESS;
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(p->ev.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err)
            return gcoll__error(GCOLL_ERR_TRANSPORT, "tcp: connecting to rank %d at %s failed: %s", p->rank, p->remote,
                                strerror(err));
        p->connecting = 0;
        unsigned char hello[TCP_HELLO_BYTES];
        gcoll__tcp_hello_pack(hello, tp->secret, tp->rank, p->index);
        /* a fresh connection's empty send buffer takes the whole hello */
        if (send(p->ev.fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello))
            return gcoll__error(GCOLL_ERR_TRANSPORT, "tcp: sending the hello to rank %d at %s failed", p->rank,
                                p->remote);
    }
    int got = read_in(p, why, sizeof(why));
    if (got < 0)
        return gcoll__error(GCOLL_ERR_TRANSPORT, "tcp: rank %d at %s refused socket %d: %s", p->rank, p->remote,
                            p->index, why);
    if (got == 0)
        return GCOLL_SUCCESS;
    if (tp->lazy && gcoll__tcp_declined(p->in, p->rank)) { /* its own dial to us stands */
        drop_dial(tp, p);
        return GCOLL_SUCCESS;
    }
    if (!gcoll__tcp_ack_ok(p->in, p->rank))
        return gcoll__error(GCOLL_ERR_TRANSPORT,
                            "tcp: %s answered socket %d's hello with something other "
                            "than rank %d's acknowledgement",
                            p->remote, p->index, p->rank);
    return install(tp, p);
}

static gcoll_status_t incoming_event(gcoll__tp_t *tp, tcp_pend_t *p)
{
    char why[160];
    int got = read_in(p, why, sizeof(why));
    if (got == 0)
        return GCOLL_SUCCESS;
    if (got < 0 ||
        gcoll__tcp_hello_check(p->in, tp->secret, tp->rank, tp->lazy ? tp->size : tp->rank, tp->nsocks, &p->rank,
                               &p->index, why, sizeof(why)) != GCOLL_SUCCESS) {
        reject(tp, p, why);
        return GCOLL_SUCCESS;
    }
    tcp_peer_t *peer = &tp->peers[p->rank];
    tcp_sock_t *s = &peer->socks[p->index];
    unsigned char ack[TCP_ACK_BYTES];
    if (tp->lazy && tp->rank < p->rank && !s->eof && !peer->failed && (s->ev.fd >= 0 || s->dialing)) {
        /* we dialled it too: our connection stands, theirs ends with a decline */
        GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: rank %d declines rank %d's socket %d: its own dial stands", tp->rank, p->rank,
                  p->index);
        gcoll__tcp_decline_pack(ack, tp->rank);
        if (send(p->ev.fd, ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack))
            GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: rank %d: the decline to rank %d was not sent", tp->rank, p->rank);
        pend_close(tp, p);
        return GCOLL_SUCCESS;
    }
    if (s->ev.fd >= 0 || s->eof || peer->failed) {
        snprintf(why, sizeof(why), "rank %d's socket %d was connected already", p->rank, p->index);
        reject(tp, p, why);
        return GCOLL_SUCCESS;
    }
    gcoll__tcp_ack_pack(ack, tp->rank);
    if (send(p->ev.fd, ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack)) {
        reject(tp, p, "the acknowledgement could not be sent");
        return GCOLL_SUCCESS;
    }
    return install(tp, p);
}

gcoll_status_t gcoll__tcp_pend_event(gcoll__tp_t *tp, tcp_pend_t *p, unsigned events)
{
    if (!p->outgoing)
        return incoming_event(tp, p);
    gcoll_status_t st = outgoing_event(tp, p, events);
    if (st == GCOLL_SUCCESS || !tp->lazy)
        return st; /* eager: creation fails with it */
    /* lazy: the peer is out of reach, unless its own dial to us has meanwhile taken the socket */
    tcp_peer_t *peer = &tp->peers[p->rank];
    int taken = peer->socks[p->index].ev.fd >= 0;
    drop_dial(tp, p);
    if (!taken)
        unreachable(tp, peer);
    return GCOLL_SUCCESS;
}

void gcoll__tcp_accept(gcoll__tp_t *tp)
{
    for (;;) {
        struct sockaddr_in remote;
        socklen_t len = sizeof(remote);
        int fd = accept4(tp->listen.fd, (struct sockaddr *)&remote, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                GCOLL_LOG(GCOLL_LOG_WARN, "tcp: rank %d: accept failed: %s", tp->rank, strerror(errno));
            if (errno != EINTR)
                return;
            continue;
        }
        tcp_pend_t *p = pend_new(tp, fd, 0, &remote);
        struct epoll_event ev = {.events = SOCK_EVENTS, .data.ptr = p};
        if (!p || epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            GCOLL_LOG(GCOLL_LOG_WARN, "tcp: rank %d dropped a connection: no memory or epoll_ctl failed", tp->rank);
            if (p) {
                pend_unlink(tp, p);
                free(p);
            }
            close(fd);
        }
    }
}

void gcoll__tcp_pend_expire(gcoll__tp_t *tp)
{
    double now = gcoll__tcp_now();
    for (tcp_pend_t *p = tp->pend, *next; p; p = next) {
        next = p->next;
        if (!p->outgoing && now > p->deadline)
            reject(tp, p, "no complete hello in time");
    }
}

void gcoll__tcp_pend_free_all(gcoll__tp_t *tp)
{
    while (tp->pend)
        pend_close(tp, tp->pend);
}

static gcoll_status_t dial(gcoll__tp_t *tp, int rank, int index)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return sys_error("socket", errno);
    set_buffers(fd, tp->rank, 0);
    tcp_pend_t *p = pend_new(tp, fd, 1, &tp->peers[rank].addr);
    if (!p) {
        close(fd);
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for a connection to rank %d", rank);
    }
    p->rank = rank;
    p->index = index;
    p->connecting = 1;
    tp->peers[rank].socks[index].dialing = 1;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (connect(fd, (struct sockaddr *)&tp->peers[rank].addr, sizeof(tp->peers[rank].addr)) != 0 &&
        errno != EINPROGRESS)
        st = gcoll__error(GCOLL_ERR_TRANSPORT, "tcp: connecting to rank %d at %s failed: %s", rank, p->remote,
                          strerror(errno));
    /* added after connect: the edge that ADD reports covers a connect that completed at once */
    struct epoll_event ev = {.events = SOCK_EVENTS, .data.ptr = p};
    if (st == GCOLL_SUCCESS && epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        st = sys_error("epoll_ctl", errno);
    if (st != GCOLL_SUCCESS)
        drop_dial(tp, p);
    return st;
}

void gcoll__tcp_reach(gcoll__tp_t *tp, int peer)
{
    tcp_peer_t *p = &tp->peers[peer];
    for (int i = 0; tp->lazy && peer != tp->rank && i < tp->nsocks && !p->failed && !p->left; i++) {
        tcp_sock_t *s = &p->socks[i];
        if (s->ev.fd < 0 && !s->dialing && !s->eof && dial(tp, peer, i) != GCOLL_SUCCESS)
            unreachable(tp, p);
    }
}

/* Names the ranks whose sockets are not all connected, e.g. "1, 3". */
static void missing_ranks(gcoll__tp_t *tp, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int q = 0; q < tp->size; q++)
        if (q != tp->rank && tp->peers[q].nready < tp->nsocks)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? ", " : "", q);
}

gcoll_status_t gcoll__tcp_connect_all(gcoll__tp_t *tp, const void *all_addrs)
{
    const unsigned char *a = all_addrs;
    for (int q = 0; q < tp->size; q++) {
        tcp_peer_t *peer = &tp->peers[q];
        peer->addr.sin_family = AF_INET;
        memcpy(&peer->addr.sin_addr.s_addr, a + 6 * q, 4); /* both already in network order */
        memcpy(&peer->addr.sin_port, a + 6 * q + 4, 2);
    }
    if (tp->lazy)
        return GCOLL_SUCCESS; /* each peer when a request first names it (gcoll__tcp_reach) */
    for (int q = tp->rank + 1; q < tp->size; q++)
        for (int i = 0; i < tp->nsocks; i++)
            GCOLL_CHECK(dial(tp, q, i));
    double deadline = gcoll__tcp_now() + gcoll__config.timeout_s;
    for (;;) {
        char missing[256];
        missing_ranks(tp, missing, sizeof(missing));
        if (!missing[0])
            return GCOLL_SUCCESS;
        if (gcoll__tcp_now() > deadline)
            return gcoll__error(GCOLL_ERR_TIMEOUT,
                                "tcp: rank %d: no connection with rank(s) %s within %g s "
                                "(GCOLL_TIMEOUT)",
                                tp->rank, missing, gcoll__config.timeout_s);
        GCOLL_CHECK(gcoll__tcp_poll(tp, 100));
        gcoll__tcp_pend_expire(tp);
    }
}

void gcoll__tcp_sock_close(gcoll__tp_t *tp, tcp_sock_t *s)
{
    if (s->ev.fd < 0)
        return;
    epoll_ctl(tp->epfd, EPOLL_CTL_DEL, s->ev.fd, NULL);
    close(s->ev.fd);
    s->ev.fd = -1;
    s->rd_ready = s->wr_ready = 0;
}
