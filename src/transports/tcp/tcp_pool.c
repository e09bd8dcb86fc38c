/* The TCP transport's pool: the process's connections, shared by all its endpoints. One listening
 * socket and one epoll set per process, one link (GCOLL_TCP_NSOCKS sockets) per peer process,
 * whichever communicators the two share: frames name their channel, and each link knows, per
 * endpoint, which rank its process is there. The first endpoint makes the pool, the last frees it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "transports/tcp/tcp.h"

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER; /* the_pool itself; taken before pool->lock */
static tcp_pool_t *the_pool;

static void pool_free(tcp_pool_t *pool)
{
    for (int i = 0; i < pool->nlinks; i++) {
        tcp_link_t *l = pool->links[i];
        for (int k = 0; l->socks && k < pool->nsocks; k++)
            gcoll__tcp_sock_reset(pool, &l->socks[k]);
        free(l->socks);
        free(l->routes);
        free(l);
    }
    free(pool->links);
    free(pool->gone);
    gcoll__tcp_pend_free_all(pool);
    if (pool->listen.fd >= 0)
        close(pool->listen.fd);
    if (pool->epfd >= 0)
        close(pool->epfd);
    if (pool->sleepfd >= 0)
        close(pool->sleepfd);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

static gcoll_status_t pool_new(const struct in_addr *addr, tcp_pool_t **out)
{
    tcp_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory for the connection pool");
    pthread_mutex_init(&pool->lock, NULL);
    pool->nsocks = gcoll__config.tcp_nsocks;
    pool->lazy = gcoll__config.tcp_connect_lazy;
    pool->max_links = pool->lazy ? gcoll__config.tcp_max_conns : 0; /* eager links stay open */
    pool->epfd = pool->sleepfd = pool->listen.fd = -1;
    pool->me.sin_family = AF_INET;
    pool->me.sin_addr = *addr;
    pool->epfd = epoll_create1(EPOLL_CLOEXEC);
    pool->sleepfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    gcoll_status_t st = GCOLL_SUCCESS;
    if (pool->epfd < 0 || pool->sleepfd < 0 || epoll_ctl(pool->sleepfd, EPOLL_CTL_ADD, pool->epfd, &ev) != 0)
        st = gcoll__error(GCOLL_ERR_SYSTEM, "tcp: epoll_create1 failed: %s", strerror(errno));
    if (st == GCOLL_SUCCESS)
        st = gcoll__tcp_listen(pool);
    if (st != GCOLL_SUCCESS) {
        pool_free(pool);
        return st;
    }
    pool->key = gcoll__tcp_key(&pool->me);
    *out = pool;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__tcp_pool_join(gcoll__tp_t *tp, const struct in_addr *addr)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    pthread_mutex_lock(&pools_lock);
    if (!the_pool)
        st = pool_new(addr, &the_pool);
    if (st == GCOLL_SUCCESS) {
        tcp_pool_t *pool = the_pool;
        pthread_mutex_lock(&pool->lock);
        if (pool->nsocks != tp->nsocks || pool->lazy != tp->lazy)
            st = gcoll__error(GCOLL_ERR_INVALID_USAGE,
                              "tcp: GCOLL_TCP_NSOCKS or GCOLL_TCP_CONNECT changed while this process has "
                              "communicators over tcp (their connections are shared: %d sockets, %s)",
                              pool->nsocks, pool->lazy ? "lazy" : "eager");
        else if (gcoll__tcp_endpoint(pool, tp->chan))
            st = gcoll__error(GCOLL_ERR_INTERNAL, "tcp: two communicators drew channel %016llx",
                              (unsigned long long)tp->chan);
        if (st == GCOLL_SUCCESS) {
            tp->pool = pool;
            tp->next = pool->eps;
            pool->eps = tp;
            pool->refs++;
        }
        pthread_mutex_unlock(&pool->lock);
    }
    pthread_mutex_unlock(&pools_lock);
    return st;
}

static void route_del(tcp_link_t *l, const tcp_peer_t *p)
{
    for (int i = 0; i < l->nroutes; i++)
        if (l->routes[i] == p) {
            l->routes[i] = l->routes[--l->nroutes];
            return;
        }
}

void gcoll__tcp_pool_leave(gcoll__tp_t *tp)
{
    tcp_pool_t *pool = tp->pool;
    if (!pool)
        return;
    pthread_mutex_lock(&pools_lock);
    pthread_mutex_lock(&pool->lock);
    gcoll__tcp_ep_drop(tp);
    for (int q = 0; q < tp->size; q++)
        if (tp->peers[q].link)
            route_del(tp->peers[q].link, &tp->peers[q]);
    for (gcoll__tp_t **e = &pool->eps; *e; e = &(*e)->next)
        if (*e == tp) {
            *e = tp->next;
            break;
        }
    if (!pool->gone)
        pool->gone = calloc(TCP_GONE_MAX, sizeof(*pool->gone));
    if (pool->gone) { /* else a late dial for it is refused: the dialler's link fails */
        struct tcp_gone *g = &pool->gone[pool->ngone++ % TCP_GONE_MAX];
        g->chan = tp->chan;
        memcpy(g->secret, tp->secret, TCP_SECRET_BYTES);
    }
    int last = --pool->refs == 0;
    pthread_mutex_unlock(&pool->lock);
    if (last) {
        pool_free(pool);
        the_pool = NULL;
    }
    pthread_mutex_unlock(&pools_lock);
    tp->pool = NULL;
}

void gcoll__tcp_service(void)
{
    pthread_mutex_lock(&pools_lock);
    tcp_pool_t *pool = the_pool;
    if (pool && pthread_mutex_trylock(&pool->lock) == 0) { /* else a thread in a pass does it all */
        gcoll__tcp_service_pass(pool);
        pthread_mutex_unlock(&pool->lock);
    }
    pthread_mutex_unlock(&pools_lock);
}

tcp_link_t *gcoll__tcp_link_get(tcp_pool_t *pool, const struct sockaddr_in *addr)
{
    uint64_t key = gcoll__tcp_key(addr);
    for (int i = 0; i < pool->nlinks; i++)
        if (pool->links[i]->key == key && !pool->links[i]->down)
            return pool->links[i];
    if (pool->nlinks == pool->caplinks) {
        int cap = pool->caplinks ? 2 * pool->caplinks : 16;
        tcp_link_t **grown = realloc(pool->links, (size_t)cap * sizeof(*grown));
        if (!grown)
            return NULL;
        pool->links = grown;
        pool->caplinks = cap;
    }
    tcp_link_t *l = calloc(1, sizeof(*l));
    if (l)
        l->socks = calloc((size_t)pool->nsocks, sizeof(*l->socks));
    if (!l || !l->socks) {
        free(l);
        return NULL;
    }
    l->key = key;
    l->addr = *addr;
    for (int i = 0; i < pool->nsocks; i++)
        l->socks[i] = (tcp_sock_t){.ev = {EV_SOCK, -1}, .link = l, .index = i};
    pool->links[pool->nlinks++] = l;
    return l;
}

gcoll_status_t gcoll__tcp_route_add(tcp_link_t *link, tcp_peer_t *p)
{
    if (link->nroutes == link->caproutes) {
        int cap = link->caproutes ? 2 * link->caproutes : 4;
        tcp_peer_t **grown = realloc(link->routes, (size_t)cap * sizeof(*grown));
        if (!grown)
            return gcoll__error(GCOLL_ERR_NOMEM, "tcp: no memory to route rank %d", p->rank);
        link->routes = grown;
        link->caproutes = cap;
    }
    link->routes[link->nroutes++] = p;
    p->link = link;
    p->socks = link->socks;
    return GCOLL_SUCCESS;
}

gcoll__tp_t *gcoll__tcp_endpoint(tcp_pool_t *pool, uint64_t chan)
{
    for (gcoll__tp_t *e = pool->eps; e; e = e->next)
        if (e->chan == chan)
            return e;
    return NULL;
}

const unsigned char *gcoll__tcp_chan_secret(tcp_pool_t *pool, uint64_t chan)
{
    gcoll__tp_t *e = gcoll__tcp_endpoint(pool, chan);
    if (e)
        return e->secret;
    int n = pool->ngone < TCP_GONE_MAX ? pool->ngone : TCP_GONE_MAX;
    for (int i = 0; i < n; i++)
        if (pool->gone[i].chan == chan)
            return pool->gone[i].secret;
    return NULL;
}

tcp_peer_t *gcoll__tcp_route(tcp_link_t *link, const gcoll__tp_t *tp)
{
    for (int i = 0; i < link->nroutes; i++)
        if (link->routes[i]->tp == tp)
            return link->routes[i];
    return NULL;
}
