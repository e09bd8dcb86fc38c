/* The TCP transport's progress: a pass over the process's pool notes epoll's events (or finishes
 * handshakes), then reads and writes what every link's sockets allow, for whichever endpoint;
 * test runs one and reports its request, wait sleeps until a socket moves, and dead_peer and
 * check run one for news of a dead peer or a mismatch; the service pass keeps connections answered
 * while the process is away. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "base/error.h"
#include "transports/tcp/tcp.h"

gcoll_status_t gcoll__tcp_poll(tcp_pool_t *pool, int timeout_ms)
{
    struct epoll_event evs[64];
    int n = epoll_wait(pool->epfd, evs, 64, timeout_ms);
    if (n < 0 && errno != EINTR)
        return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: epoll_wait failed: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
        tcp_ev_t *e = evs[i].data.ptr;
        unsigned ev = evs[i].events;
        if (e->kind == EV_LISTEN) {
            gcoll__tcp_accept(pool);
        } else if (e->kind == EV_PEND) {
            gcoll__tcp_pend_event(pool, (tcp_pend_t *)e, ev);
        } else {
            tcp_sock_t *s = (tcp_sock_t *)e;
            s->rd_ready |= (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
            s->hup |= (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
            s->wr_ready |= (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
        }
    }
    return GCOLL_SUCCESS;
}

/* One pass over the pool: epoll's events, handshakes past their time, then every socket's
 * pending writes and (reads set) its reads; notes whether any was left (sockets are
 * edge-triggered: what is left raises no new event, so wait must not sleep on it). */
static gcoll_status_t pass(tcp_pool_t *pool, int reads)
{
    GCOLL_CHECK(gcoll__tcp_poll(pool, 0));
    if (pool->npend)
        gcoll__tcp_pend_expire(pool);
    int left = 0;
    for (int k = 0; k < pool->nlinks; k++) {
        tcp_link_t *l = pool->links[k];
        for (int i = 0; i < pool->nsocks && !l->down; i++) {
            tcp_sock_t *s = &l->socks[i];
            if (reads && (s->rd_ready || s->held))
                gcoll__tcp_sock_read(pool, s);
            if (s->wr_ready && gcoll__tcp_sock_pending(s))
                gcoll__tcp_sock_write(pool, s);
            left |= s->rd_ready || s->held || (s->wr_ready && gcoll__tcp_sock_pending(s));
        }
    }
    if (reads && pool->max_links)
        gcoll__tcp_idle_trim(pool);
    atomic_store_explicit(&pool->leftover, left, memory_order_relaxed);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__tcp_progress(tcp_pool_t *pool)
{
    return pass(pool, 1);
}

/* For a process outside gcoll's calls: handshakes finish, dials are answered (a notice of a failure
 * goes out with the answer) and what is queued is written, so a peer never waits on this process
 * entering gcoll again. It reads nothing: no receive completes and no operation's table is read
 * beside the thread that drives the operation. An epoll failure is left to the next operation's
 * pass to report. */
void gcoll__tcp_service_pass(tcp_pool_t *pool)
{
    (void)pass(pool, 0);
}

/* Called without the pool's lock: touches nothing that a progress pass changes. epoll counts
 * in milliseconds: round up, so a short wait still sleeps rather than spins. */
gcoll_status_t gcoll__tcp_wait(gcoll__tp_t *tp, long usec)
{
    struct epoll_event ev;
    if (atomic_load_explicit(&tp->pool->leftover, memory_order_relaxed))
        return GCOLL_SUCCESS;
    if (epoll_wait(tp->pool->sleepfd, &ev, 1, (int)((usec + 999) / 1000)) < 0 && errno != EINTR)
        return gcoll__error(GCOLL_ERR_SYSTEM, "tcp: epoll_wait failed: %s", strerror(errno));
    return GCOLL_SUCCESS;
}

/* A peer lost without goodbye, found by a progress pass over every socket (the engine asks when an
 * operation stalls, which may be waiting on other peers or another transport). */
int gcoll__tcp_dead_peer(gcoll__tp_t *tp, char *why, size_t len)
{
    if (gcoll__tcp_progress(tp->pool) != GCOLL_SUCCESS)
        return -1; /* epoll failing is no news of a peer; the operation's own test reports it */
    for (int q = 0; q < tp->size; q++)
        if (tp->peers[q].failed == GCOLL_ERR_REMOTE) {
            snprintf(why, len, "%s", tp->peers[q].why);
            return q;
        }
    return -1;
}

gcoll_status_t gcoll__tcp_check(gcoll__tp_t *tp)
{
    GCOLL_CHECK(gcoll__tcp_progress(tp->pool));
    return tp->mm.status ? gcoll__mismatch_error(&tp->mm) : GCOLL_SUCCESS;
}

gcoll_status_t gcoll__tcp_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    gcoll_status_t st = r->done ? GCOLL_SUCCESS : gcoll__tcp_progress(tp->pool);
    *done = r->done || st != GCOLL_SUCCESS;
    if (st != GCOLL_SUCCESS) { /* the endpoint failed under it: an error frees it too */
        gcoll__tcp_cancel(tp, r);
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
