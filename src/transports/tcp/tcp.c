/* The TCP transport: tagged messages over nonblocking sockets (edge-triggered epoll),
 * GCOLL_TCP_NSOCKS per pair of processes, shared by their communicators (docs/transports.md).
 * This file holds its table, each entry under the pool's lock, and the endpoint's lifecycle: the
 * ranks agree on the socket count, the secret and the channel, join the process's pool and
 * exchange its address; close says goodbye on each link and leaves the pool. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transports/tcp/tcp.h"

#define ADDR_BYTES 6 /* IPv4 address and port, network order */

static void tcp_close(gcoll__tp_t *tp)
{
    gcoll__tcp_pool_leave(tp);
    for (int q = 0; tp->peers && q < tp->size; q++)
        while (tp->peers[q].unexp) {
            tcp_unexp_t *u = tp->peers[q].unexp;
            tp->peers[q].unexp = u->next;
            gcoll__tcp_unexp_free(u);
        }
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
    /* the channel comes from the secret's first bytes: random, the same on every rank */
    for (int i = 0; i < 8; i++)
        tp->chan |= (uint64_t)tp->secret[i] << (8 * i);
    return GCOLL_SUCCESS;
}

/* The endpoint's local parts: the peer table, its place in the process's pool. */
static gcoll_status_t open_local(gcoll__tp_t *tp, const struct in_addr *addr)
{
    tp->peers = calloc((size_t)tp->size, sizeof(*tp->peers));
    if (!tp->peers)
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for %d peers", tp->size);
    for (int q = 0; q < tp->size; q++)
        tp->peers[q] = (tcp_peer_t){.rank = q, .tp = tp};
    return gcoll__tcp_pool_join(tp, addr);
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
    struct in_addr addr;
    gcoll_status_t st = agree(boot, tp);
    if (st == GCOLL_SUCCESS)
        st = gcoll__tcp_choose_if(boot, &addr);
    if (st == GCOLL_SUCCESS) {
        /* a rank that fails alone must not leave the others waiting in the address exchange */
        char keep[256];
        gcoll_status_t local = open_local(tp, &addr);
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

/* The process's listening address: every endpoint of the process publishes the same one. */
static gcoll_status_t tcp_addr(gcoll__tp_t *tp, void *buf)
{
    memcpy(buf, &tp->pool->me.sin_addr.s_addr, 4);
    memcpy((char *)buf + 4, &tp->pool->me.sin_port, 2);
    return GCOLL_SUCCESS;
}

/* The table's entries that touch the pool, each under its lock: the endpoints of several
 * communicators, driven by different threads, share its sockets. */
#define LOCKED(call)                           \
    do {                                       \
        pthread_mutex_lock(&tp->pool->lock);   \
        gcoll_status_t st_ = (call);           \
        pthread_mutex_unlock(&tp->pool->lock); \
        return st_;                            \
    } while (0)

static gcoll_status_t tcp_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **out)
{
    LOCKED(gcoll__tcp_isend(tp, peer, tag, buf, bytes, out));
}

static gcoll_status_t tcp_isend_prio(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes, int prio,
                                     gcoll__tp_req_t **out)
{
    LOCKED(gcoll__tcp_isend_prio(tp, peer, tag, buf, bytes, prio, out));
}

static gcoll_status_t tcp_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **out)
{
    LOCKED(gcoll__tcp_irecv(tp, peer, tag, buf, bytes, out));
}

static gcoll_status_t tcp_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    LOCKED(gcoll__tcp_test(tp, r, done));
}

static gcoll_status_t tcp_check(gcoll__tp_t *tp)
{
    LOCKED(gcoll__tcp_check(tp));
}

static void tcp_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    pthread_mutex_lock(&tp->pool->lock);
    gcoll__tcp_cancel(tp, r);
    pthread_mutex_unlock(&tp->pool->lock);
}

static int tcp_dead_peer(gcoll__tp_t *tp, char *why, size_t len)
{
    pthread_mutex_lock(&tp->pool->lock);
    int dead = gcoll__tcp_dead_peer(tp, why, len);
    pthread_mutex_unlock(&tp->pool->lock);
    return dead;
}

static void tcp_mismatch(gcoll__tp_t *tp, const char *why)
{
    pthread_mutex_lock(&tp->pool->lock);
    gcoll__tcp_mismatch(tp, why);
    pthread_mutex_unlock(&tp->pool->lock);
}

/* Another endpoint of the communicator lost rank's process: its requests here fail, and (lazy)
 * the peers this rank reaches hear of it, as when this endpoint finds a death itself. */
static void tcp_peer_down(gcoll__tp_t *tp, int rank, const char *why)
{
    pthread_mutex_lock(&tp->pool->lock);
    if (rank >= 0 && rank < tp->size && rank != tp->rank && !tp->peers[rank].failed && !tp->peers[rank].left)
        gcoll__tcp_fail_peer(&tp->peers[rank], GCOLL_ERR_REMOTE, 1, "%s", why);
    pthread_mutex_unlock(&tp->pool->lock);
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
    .wait = gcoll__tcp_wait,
    .dead_peer = tcp_dead_peer,
    .mismatch = tcp_mismatch,
    .peer_down = tcp_peer_down,
    .check = tcp_check,
    .close = tcp_close,
};
