/* The TCP transport's connections: the listening socket, socket options, and the handshake.
 * GCOLL_TCP_NSOCKS sockets per pair of processes (a link, shared by their endpoints): eager
 * endpoints open those their links lack at creation, the lower key dialling; lazy ones when a
 * request first names the peer, either process dialling (when both do at once the lower key's
 * connection stands and the other is declined). Each connection opens with a hello (the dialler's
 * key, the socket index, the channel it dials for and that channel's 128-bit secret) that the
 * acceptor checks before the socket joins the link. Anything else that connects (a wrong secret,
 * garbage, a duplicate, a close or a stall before the hello ends) is closed, counted and logged. */
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
    int outgoing;     /* we connected and wait for the ack; else we accepted and wait for a hello */
    int connecting;   /* outgoing: connect() has not completed */
    tcp_link_t *link; /* outgoing: the link dialled; incoming: known once the hello is read */
    int index;
    uint64_t chan;                          /* outgoing: the channel it dials for, */
    unsigned char secret[TCP_SECRET_BYTES]; /* and that channel's secret */
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
static void set_buffers(int fd, int say)
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
            GCOLL_LOG(GCOLL_LOG_INFO, "tcp: the kernel caps %s at %d bytes; asked for %d", names[i], got / 2, want);
    }
}

static gcoll_status_t sys_error(const char *what, int err)
{
    return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: %s failed: %s", what, strerror(err));
}

gcoll_status_t gcoll__tcp_listen(tcp_pool_t *pool)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return sys_error("socket", errno);
    pool->listen = (tcp_ev_t){EV_LISTEN, fd};
    set_buffers(fd, 1); /* accepted sockets inherit them, window scaling included */
    socklen_t len = sizeof(pool->me);
    if (bind(fd, (struct sockaddr *)&pool->me, sizeof(pool->me)) != 0)
        return sys_error("bind", errno);
    if (listen(fd, SOMAXCONN) != 0)
        return sys_error("listen", errno);
    if (getsockname(fd, (struct sockaddr *)&pool->me, &len) != 0)
        return sys_error("getsockname", errno);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &pool->listen};
    if (epoll_ctl(pool->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        return sys_error("epoll_ctl", errno);
    return GCOLL_SUCCESS;
}

static void pend_unlink(tcp_pool_t *pool, tcp_pend_t *p)
{
    for (tcp_pend_t **q = &pool->pend; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            pool->npend--;
            return;
        }
}

/* Ends handshake p: off the list, its socket closed. */
static void pend_close(tcp_pool_t *pool, tcp_pend_t *p)
{
    pend_unlink(pool, p);
    close(p->ev.fd);
    free(p);
}

static void reject(tcp_pool_t *pool, tcp_pend_t *p, const char *why)
{
    GCOLL_LOG(GCOLL_LOG_WARN, "tcp: rejected a connection from %s: %s", p->remote, why);
    pool->rejected++;
    snprintf(pool->last_rejection, sizeof(pool->last_rejection), "%s", why);
    pend_close(pool, p);
}

static tcp_pend_t *pend_new(tcp_pool_t *pool, int fd, int outgoing, const struct sockaddr_in *remote)
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
    p->next = pool->pend;
    pool->pend = p;
    pool->npend++;
    return p;
}

/* The handshake is over: the socket carries frames from now on. */
static void install(tcp_pool_t *pool, tcp_pend_t *p)
{
    tcp_link_t *l = p->link;
    tcp_sock_t *s = &l->socks[p->index];
    if (p->outgoing)
        s->dialing = 0;
    s->rbuf = malloc(TCP_RBUF_BYTES);
    struct epoll_event ev = {.events = SOCK_EVENTS, .data.ptr = &s->ev};
    if (!s->rbuf || epoll_ctl(pool->epfd, EPOLL_CTL_MOD, p->ev.fd, &ev) != 0) {
        free(s->rbuf);
        s->rbuf = NULL;
        pend_close(pool, p);
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_SYSTEM, 1, "could not be connected: no memory or epoll_ctl failed");
        return;
    }
    int one = 1;
    setsockopt(p->ev.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->ev = (tcp_ev_t){EV_SOCK, p->ev.fd};
    s->rd_ready = s->wr_ready = 1; /* bytes may already wait: no edge would announce them */
    l->nready++;
    GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: socket %d to %s ready", p->index, p->remote);
    int index = p->index;
    pend_unlink(pool, p);
    free(p);
    for (int i = 0; index == 0 && i < l->nroutes && !l->down; i++)
        gcoll__tcp_catch_up(l->routes[i]);
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

/* Ends our handshake p quietly: declined, or no longer needed. */
static void drop_dial(tcp_pool_t *pool, tcp_pend_t *p)
{
    p->link->socks[p->index].dialing = 0;
    pend_close(pool, p);
}

/* Our dial: 1 when the socket is installed or declined, 0 to wait, -1 (why) when it failed. */
static int outgoing_event(tcp_pool_t *pool, tcp_pend_t *p, unsigned events, char *why, size_t len)
{
    tcp_link_t *l = p->link;
    if (p->connecting) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return 0;
        int err = 0;
        socklen_t elen = sizeof(err);
        getsockopt(p->ev.fd, SOL_SOCKET, SO_ERROR, &err, &elen);
        if (err) {
            snprintf(why, len, "connecting to it at %s failed: %s", p->remote, strerror(err));
            return -1;
        }
        p->connecting = 0;
        unsigned char hello[TCP_HELLO_BYTES];
        gcoll__tcp_hello_pack(hello, p->secret, p->chan, pool->key, p->index);
        /* a fresh connection's empty send buffer takes the whole hello */
        if (send(p->ev.fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello)) {
            snprintf(why, len, "sending the hello to %s failed", p->remote);
            return -1;
        }
    }
    int got = read_in(p, why, len);
    if (got <= 0)
        return got;
    if (pool->lazy && gcoll__tcp_declined(p->in, l->key)) { /* its own dial to us stands */
        drop_dial(pool, p);
        return 1;
    }
    if (!gcoll__tcp_ack_ok(p->in, l->key)) {
        snprintf(why, len, "%s answered socket %d's hello with something other than its acknowledgement", p->remote,
                 p->index);
        return -1;
    }
    install(pool, p);
    return 1;
}

static void incoming_event(tcp_pool_t *pool, tcp_pend_t *p)
{
    char why[160];
    int got = read_in(p, why, sizeof(why));
    if (got == 0)
        return;
    if (got < 0) {
        reject(pool, p, why);
        return;
    }
    uint64_t chan, from;
    int hello = gcoll__tcp_hello_peek(p->in, &chan, &from);
    const unsigned char *secret = hello ? gcoll__tcp_chan_secret(pool, chan) : NULL;
    if (hello && !secret) {
        snprintf(why, sizeof(why), "no communicator here has channel %016llx", (unsigned long long)chan);
        reject(pool, p, why);
        return;
    }
    static const unsigned char none[TCP_SECRET_BYTES]; /* not a hello: the check names what is wrong */
    if (gcoll__tcp_hello_check(p->in, secret ? secret : none, pool->key, !pool->lazy, pool->nsocks, &p->index, why,
                               sizeof(why)) != GCOLL_SUCCESS) {
        reject(pool, p, why);
        return;
    }
    struct sockaddr_in addr = {
        .sin_family = AF_INET, .sin_addr.s_addr = htonl((uint32_t)(from >> 16)), .sin_port = htons((uint16_t)from)};
    tcp_link_t *l = gcoll__tcp_link_get(pool, &addr);
    if (!l) {
        reject(pool, p, "no memory for a link");
        return;
    }
    p->link = l;
    gcoll__tcp_idle_retire(pool, l); /* it closed its side of an idle close and dials again */
    tcp_sock_t *s = &l->socks[p->index];
    unsigned char ack[TCP_ACK_BYTES];
    if (pool->lazy && pool->key < from && !s->eof && (s->ev.fd >= 0 || s->dialing)) {
        /* we dialled it too: our connection stands, theirs ends with a decline */
        GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: declined %s's socket %d: our own dial stands", p->remote, p->index);
        gcoll__tcp_decline_pack(ack, pool->key);
        if (send(p->ev.fd, ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack))
            GCOLL_LOG(GCOLL_LOG_DEBUG, "tcp: the decline to %s was not sent", p->remote);
        pend_close(pool, p);
        return;
    }
    if (s->ev.fd >= 0 || s->eof) {
        snprintf(why, sizeof(why), "its socket %d was connected already", p->index);
        reject(pool, p, why);
        return;
    }
    gcoll__tcp_ack_pack(ack, pool->key);
    if (send(p->ev.fd, ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack)) {
        reject(pool, p, "the acknowledgement could not be sent");
        return;
    }
    install(pool, p);
}

void gcoll__tcp_pend_event(tcp_pool_t *pool, tcp_pend_t *p, unsigned events)
{
    if (!p->outgoing) {
        incoming_event(pool, p);
        return;
    }
    char why[200];
    if (outgoing_event(pool, p, events, why, sizeof(why)) >= 0)
        return;
    /* out of reach, unless its own dial to us has meanwhile taken the socket */
    tcp_link_t *l = p->link;
    int taken = l->socks[p->index].ev.fd >= 0;
    drop_dial(pool, p);
    if (!taken)
        gcoll__tcp_fail_link(pool, l, GCOLL_ERR_REMOTE, 1, "is not listening (did it exit or crash?): %s", why);
}

void gcoll__tcp_accept(tcp_pool_t *pool)
{
    for (;;) {
        struct sockaddr_in remote;
        socklen_t len = sizeof(remote);
        int fd = accept4(pool->listen.fd, (struct sockaddr *)&remote, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                GCOLL_LOG(GCOLL_LOG_WARN, "tcp: accept failed: %s", strerror(errno));
            if (errno != EINTR)
                return;
            continue;
        }
        tcp_pend_t *p = pend_new(pool, fd, 0, &remote);
        struct epoll_event ev = {.events = SOCK_EVENTS, .data.ptr = p};
        if (!p || epoll_ctl(pool->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            GCOLL_LOG(GCOLL_LOG_WARN, "tcp: dropped a connection: no memory or epoll_ctl failed");
            if (p) {
                pend_unlink(pool, p);
                free(p);
            }
            close(fd);
        }
    }
}

void gcoll__tcp_pend_expire(tcp_pool_t *pool)
{
    double now = gcoll__tcp_now();
    for (tcp_pend_t *p = pool->pend, *next; p; p = next) {
        next = p->next;
        if (!p->outgoing && now > p->deadline)
            reject(pool, p, "no complete hello in time");
    }
}

void gcoll__tcp_pend_free_all(tcp_pool_t *pool)
{
    while (pool->pend)
        pend_close(pool, pool->pend);
}

/* Opens socket index of link l for endpoint tp (its channel's credentials). */
static gcoll_status_t dial(gcoll__tp_t *tp, tcp_link_t *l, int index)
{
    tcp_pool_t *pool = tp->pool;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return sys_error("socket", errno);
    set_buffers(fd, 0);
    tcp_pend_t *p = pend_new(pool, fd, 1, &l->addr);
    if (!p) {
        close(fd);
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for a connection");
    }
    p->link = l;
    p->index = index;
    p->chan = tp->chan;
    memcpy(p->secret, tp->secret, TCP_SECRET_BYTES);
    p->connecting = 1;
    l->socks[index].dialing = 1;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (connect(fd, (struct sockaddr *)&l->addr, sizeof(l->addr)) != 0 && errno != EINPROGRESS)
        st = gcoll__error(GCOLL_ERR_TRANSPORT, "connecting to it at %s failed: %s", p->remote, strerror(errno));
    /* added after connect: the edge that ADD reports covers a connect that completed at once */
    struct epoll_event ev = {.events = SOCK_EVENTS, .data.ptr = p};
    if (st == GCOLL_SUCCESS && epoll_ctl(pool->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        st = sys_error("epoll_ctl", errno);
    if (st != GCOLL_SUCCESS)
        drop_dial(pool, p);
    return st;
}

/* A process out of reach fails its link. */
void gcoll__tcp_link_dial(gcoll__tp_t *tp, tcp_link_t *l)
{
    tcp_pool_t *pool = tp->pool;
    for (int i = 0; i < pool->nsocks && !l->down; i++) {
        tcp_sock_t *s = &l->socks[i];
        if (s->ev.fd < 0 && !s->dialing && !s->eof && dial(tp, l, i) != GCOLL_SUCCESS)
            gcoll__tcp_fail_link(pool, l, GCOLL_ERR_REMOTE, 1, "is not listening (did it exit or crash?): %s",
                                 gcoll_last_error());
    }
}

void gcoll__tcp_reach(gcoll__tp_t *tp, int peer)
{
    tcp_peer_t *p = &tp->peers[peer];
    if (tp->lazy && p->link && !p->failed && !p->left)
        gcoll__tcp_link_dial(tp, p->link);
}

/* Names the ranks whose links are not all connected, e.g. "1, 3". */
static void missing_ranks(gcoll__tp_t *tp, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int q = 0; q < tp->size; q++)
        if (q != tp->rank && tp->peers[q].link->nready < tp->nsocks)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? ", " : "", q);
}

/* Every rank's link, found or made; its route to this endpoint. */
static gcoll_status_t route_all(gcoll__tp_t *tp, const unsigned char *a)
{
    for (int q = 0; q < tp->size; q++) {
        if (q == tp->rank)
            continue;
        struct sockaddr_in addr = {.sin_family = AF_INET};
        memcpy(&addr.sin_addr.s_addr, a + 6 * q, 4); /* both already in network order */
        memcpy(&addr.sin_port, a + 6 * q + 4, 2);
        if (gcoll__tcp_key(&addr) == tp->pool->key)
            return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                                "tcp: rank %d has this process's address: one process "
                                "may be only one rank of a communicator",
                                q);
        tcp_link_t *l = gcoll__tcp_link_get(tp->pool, &addr);
        if (!l)
            return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for a link to rank %d", q);
        GCOLL_CHECK(gcoll__tcp_route_add(l, &tp->peers[q]));
    }
    tp->routed = 1;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__tcp_connect_all(gcoll__tp_t *tp, const void *all_addrs)
{
    tcp_pool_t *pool = tp->pool;
    pthread_mutex_lock(&pool->lock);
    gcoll_status_t st = route_all(tp, all_addrs);
    for (int q = 0; st == GCOLL_SUCCESS && !tp->lazy && q < tp->size; q++) {
        tcp_link_t *l = tp->peers[q].link;
        if (l && l->key > pool->key)
            gcoll__tcp_link_dial(tp, l);
        if (tp->peers[q].failed)
            st = gcoll__error(tp->peers[q].failed, "%s", tp->peers[q].why);
    }
    pthread_mutex_unlock(&pool->lock);
    if (st != GCOLL_SUCCESS || tp->lazy)
        return st; /* lazy: each link when a request first names it (gcoll__tcp_reach) */
    double deadline = gcoll__tcp_now() + gcoll__config.timeout_s;
    for (;;) {
        char missing[256];
        pthread_mutex_lock(&pool->lock);
        missing_ranks(tp, missing, sizeof(missing));
        for (int q = 0; missing[0] && st == GCOLL_SUCCESS && q < tp->size; q++)
            if (tp->peers[q].failed)
                st = gcoll__error(tp->peers[q].failed, "%s", tp->peers[q].why);
        if (missing[0] && st == GCOLL_SUCCESS && gcoll__tcp_now() > deadline)
            st = gcoll__error(GCOLL_ERR_TIMEOUT,
                              "tcp: rank %d: no connection with rank(s) %s within %g s "
                              "(GCOLL_TIMEOUT)",
                              tp->rank, missing, gcoll__config.timeout_s);
        if (missing[0] && st == GCOLL_SUCCESS)
            st = gcoll__tcp_poll(pool, 10);
        if (st == GCOLL_SUCCESS)
            gcoll__tcp_pend_expire(pool);
        pthread_mutex_unlock(&pool->lock);
        if (!missing[0] || st != GCOLL_SUCCESS)
            return st;
    }
}

void gcoll__tcp_sock_close(tcp_pool_t *pool, tcp_sock_t *s)
{
    if (s->ev.fd < 0)
        return;
    epoll_ctl(pool->epfd, EPOLL_CTL_DEL, s->ev.fd, NULL);
    close(s->ev.fd);
    s->ev.fd = -1;
    s->rd_ready = s->wr_ready = 0;
}
