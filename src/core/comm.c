/* Communicator lifecycle. Handles are checked against a registry of live communicators, so a
 * freed or made-up handle gets GCOLL_ERR_INVALID_ARG instead of a crash. */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/flight.h"
#include "core/lane.h"
#include "gcoll_mpi.h"
#include "base/config.h"
#include "core/context.h"
#include "base/error.h"
#include "base/log.h"
#include "base/topo.h"
#include "core/probe.h"
#include "core/request.h"
#include "transports/choose.h"
#include "transports/plugin/plugin.h"
#include "transports/route/route.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gcoll_comm *registry;
static unsigned next_id;

static int registered(const struct gcoll_comm *comm)
{
    int found = 0;
    pthread_mutex_lock(&registry_lock);
    for (struct gcoll_comm *c = registry; c; c = c->next)
        if (c == comm) {
            found = 1;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

static void unregister(gcoll_comm_t comm)
{
    pthread_mutex_lock(&registry_lock);
    for (struct gcoll_comm **p = &registry; *p; p = &(*p)->next)
        if (*p == comm) {
            *p = comm->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

static void destroy(gcoll_comm_t comm)
{
    if (comm->tp) /* the shm endpoint lives on the channel: close it first */
        comm->tpops->close(comm->tp);
    gcoll__shm_destroy(comm->shm);
    gcoll__shm_destroy(comm->node_shm);
    free(comm->map.host);
    free(comm->map.first);
    free(comm->p2p_sent);
    free(comm->p2p_rcvd);
    gcoll__boot_free(comm->boot);
    gcoll__flight_free(comm->flight);
    free(comm);
}

/* Creates and connects an endpoint of ops over the whole communicator. */
static gcoll_status_t connect_transport(gcoll_comm_t c, const gcoll__transport_t *ops, gcoll__tp_t **tp)
{
    gcoll__bootstrap_t boot = {c->boot, c->rank, c->size, &c->optab};
    GCOLL_CHECK(ops->create(&boot, tp));
    size_t len = ops->addr_len(*tp);
    char *all = calloc((size_t)c->size, len ? len : 1);
    char *mine = calloc(1, len ? len : 1);
    gcoll_status_t st = (all && mine) ? ops->addr(*tp, mine) : gcoll__error(GCOLL_ERR_NOMEM, "no memory for addresses");
    if (st == GCOLL_SUCCESS && len)
        st = gcoll__boot_allgather(c->boot, mine, all, len);
    if (st == GCOLL_SUCCESS)
        st = ops->connect(*tp, all);
    free(all);
    free(mine);
    if (st != GCOLL_SUCCESS) {
        ops->close(*tp);
        *tp = NULL;
    }
    return st;
}

/* Where every peer lives: host[p] is the communicator rank of the first rank on p's host,
 * local[p] p's index among the ranks of its host, cores[p] the cores of p's host as its first rank
 * counts them. */
typedef struct {
    gcoll__boot_t *node;
    int *host, *local, *cores;
    int nlocal, nhosts;
} layout_t;

static gcoll_status_t read_layout(gcoll_comm_t c, layout_t *l)
{
    GCOLL_CHECK(gcoll__boot_split_node(c->boot, &l->node));
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int lead[2] = {c->rank, online > 0 && online < INT_MAX ? (int)online : 0};
    int me[3], *all = malloc(3 * sizeof(int) * (size_t)c->size);
    l->host = malloc(sizeof(int) * (size_t)c->size);
    l->local = malloc(sizeof(int) * (size_t)c->size);
    l->cores = malloc(sizeof(int) * (size_t)c->size);
    if (!all || !l->host || !l->local || !l->cores) {
        free(all);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for the node map");
    }
    l->nlocal = l->node->size;
    /* the first rank of this host names it and counts its cores */
    gcoll_status_t st = gcoll__boot_bcast(l->node, lead, sizeof(lead), 0);
    me[0] = lead[0], me[1] = l->node->rank, me[2] = lead[1];
    if (st == GCOLL_SUCCESS)
        st = gcoll__boot_allgather(c->boot, me, all, sizeof(me));
    if (st != GCOLL_SUCCESS) {
        free(all);
        return st;
    }
    l->nhosts = 0;
    for (int p = 0; p < c->size; p++) {
        l->host[p] = all[3 * p];
        l->local[p] = all[3 * p + 1];
        l->cores[p] = all[3 * p + 2];
        l->nhosts += l->host[p] == p;
    }
    free(all);
    return GCOLL_SUCCESS;
}

/* The node map algorithms read, from the layout: one allocation holds host, local and by_host
 * (3 x size ints), first another. */
static gcoll_status_t build_map(gcoll_comm_t c, const layout_t *l)
{
    gcoll__nodemap_t *m = &c->map;
    int n = c->size;
    m->host = malloc(3 * sizeof(int) * (size_t)n);
    m->first = calloc((size_t)l->nhosts + 1, sizeof(int));
    if (!m->host || !m->first)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for the node map");
    m->local = m->host + n;
    m->by_host = m->host + 2 * n;
    m->nhosts = l->nhosts;
    for (int p = 0, h = 0; p < n; p++) { /* a host's first rank comes before its others */
        m->host[p] = l->host[p] == p ? h++ : m->host[l->host[p]];
        m->local[p] = l->local[p];
        m->first[m->host[p] + 1]++;
    }
    for (int h = 0; h < m->nhosts; h++)
        m->first[h + 1] += m->first[h];
    for (int p = 0; p < n; p++)
        m->by_host[m->first[m->host[p]] + m->local[p]] = p;
    m->uniform = 1;
    for (int h = 1; h < m->nhosts; h++)
        m->uniform &= m->first[h + 1] - m->first[h] == m->first[1];
    m->cores = 0;
    for (int h = 0; h < m->nhosts; h++) {
        int lead = m->by_host[m->first[h]], cores = l->cores[lead];
        if (cores > 0 && m->first[h + 1] - m->first[h] > cores && (m->cores == 0 || cores < m->cores))
            m->cores = cores;
    }
    return GCOLL_SUCCESS;
}

static void free_layout(layout_t *l)
{
    gcoll__boot_free(l->node);
    free(l->host);
    free(l->local);
    free(l->cores);
}

/* The node channel's point-to-point endpoint, whose messages carry and check the descriptors
 * of the communicator's operations and name ranks by their place in it. */
static gcoll_status_t open_shm_p2p(gcoll_comm_t c, const layout_t *l, gcoll__shm_t *shm, gcoll__tp_t **tp)
{
    int *ranks = malloc(sizeof(int) * (size_t)l->nlocal);
    if (!ranks)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for the node's ranks");
    for (int p = 0; p < c->size; p++)
        if (l->host[p] == l->host[c->rank])
            ranks[l->local[p]] = p;
    gcoll_status_t st = gcoll__shm_p2p_open(shm, &c->optab, ranks, tp);
    free(ranks);
    return st;
}

/* "1, 2, 5" of the peers whose route is ep (at most len bytes). */
static void list_peers(gcoll_comm_t c, const gcoll__route_peer_t *peers, int ep, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int p = 0; p < c->size; p++)
        if (p != c->rank && peers[p].ep == ep)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? ", " : "", p);
}

/* A communicator that spans hosts: the inter-node transport to other hosts, and to the ranks
 * of this host the node's shared-memory rings (or MPI, or the same inter-node transport, as
 * GCOLL_TRANSPORT_INTRA says). */
/* The endpoint to the ranks of this host, if they get one of their own: the node channel's
 * rings, or the transport GCOLL_TRANSPORT_INTRA names where the inter-node one is another. */
static gcoll_status_t open_local(gcoll_comm_t c, const layout_t *l, gcoll__route_ep_t *ep)
{
    const gcoll__tp_entry_t *intra = gcoll__transport_intra(); /* NULL: the inter-node transport */
    if (l->nlocal < 2 || !intra || intra->ops == gcoll__context.transport)
        return GCOLL_SUCCESS;
    if (!(intra->roles & GCOLL_TP_CHANNEL)) {
        ep->ops = intra->ops;
        return connect_transport(c, ep->ops, &ep->tp);
    }
    GCOLL_CHECK(gcoll__shm_create(l->node, &c->node_shm));
    if (!c->node_shm) /* no shared memory (logged): the inter-node endpoint reaches them */
        return GCOLL_SUCCESS;
    ep->ops = intra->ops;
    return open_shm_p2p(c, l, c->node_shm, &ep->tp);
}

static gcoll_status_t connect_routes(gcoll_comm_t c, const layout_t *l)
{
    const gcoll__transport_t *inter = gcoll__context.transport;
    gcoll__route_ep_t ep[2] = {{inter, NULL}, {NULL, NULL}};
    GCOLL_CHECK(connect_transport(c, inter, &ep[0].tp));
    gcoll__route_peer_t *peers = NULL;
    gcoll_status_t st = open_local(c, l, &ep[1]);
    if (st == GCOLL_SUCCESS && !(peers = calloc((size_t)c->size, sizeof(*peers))))
        st = gcoll__error(GCOLL_ERR_NOMEM, "no memory for the routes");
    if (st == GCOLL_SUCCESS && ep[1].tp) {
        for (int p = 0; p < c->size; p++) {
            peers[p].ep = l->host[p] == l->host[c->rank];
            peers[p].index = peers[p].ep && c->node_shm ? l->local[p] : p;
        }
        st = gcoll__route_open(ep, peers, c->size, &c->tp);
    }
    if (st != GCOLL_SUCCESS) { /* the node channel itself goes with the communicator */
        free(peers);
        if (ep[1].tp)
            ep[1].ops->close(ep[1].tp);
        ep[0].ops->close(ep[0].tp);
        return st;
    }
    char far[256], near[256];
    list_peers(c, peers, 0, far, sizeof(far));
    list_peers(c, peers, 1, near, sizeof(near));
    GCOLL_LOG(GCOLL_LOG_INFO, "comm %u: %d hosts; peers [%s] over %s%s%s%s%s%s", c->id, l->nhosts, far, inter->name,
              gcoll__context.transport_why, near[0] ? "; peers [" : "", near, near[0] ? "] on this host over " : "",
              near[0] ? ep[1].ops->name : "");
    if (ep[1].tp) {
        snprintf(c->tpname, sizeof(c->tpname), "%s+%s", ep[1].ops->name, inter->name);
        c->tpops = &gcoll__transport_route; /* it owns peers now */
    } else {
        free(peers);
        c->tpops = inter;
        c->tp = ep[0].tp;
    }
    return GCOLL_SUCCESS;
}

/* More ranks of this host than cores it lets us run on: a waiter must give its core away at once. */
static int host_crowded(int nlocal)
{
    cpu_set_t cpus;
    return sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < nlocal &&
        sysconf(_SC_NPROCESSORS_ONLN) < nlocal;
}

/* The host's first rank's settings for choices that change the messages (gcoll__nodemap_t). */
static gcoll_status_t agree_host(gcoll_comm_t c, const layout_t *l)
{
    uint64_t agreed[2] = {(uint64_t)gcoll__config.adasum_push, gcoll__topo()->l3};
    GCOLL_CHECK(gcoll__boot_bcast(l->node, agreed, sizeof(agreed), 0));
    c->map.adasum_push = (int)agreed[0];
    c->map.l3 = (size_t)agreed[1];
    return GCOLL_SUCCESS;
}

/* Picks and connects the transports: one host with shared memory on takes the node channel for
 * everything (the intra-node algorithms need it); otherwise routes per peer. */
static gcoll_status_t connect_comm(gcoll_comm_t c)
{
    layout_t l = {.node = NULL};
    gcoll_status_t st = read_layout(c, &l);
    if (st == GCOLL_SUCCESS)
        st = build_map(c, &l);
    c->crowded = st == GCOLL_SUCCESS && host_crowded(l.nlocal);
    const gcoll__tp_entry_t *intra = gcoll__transport_intra(); /* NULL: the inter-node transport */
    int channel = intra && (intra->roles & GCOLL_TP_CHANNEL);
    if (st == GCOLL_SUCCESS && l.nhosts == 1 && c->size > 1 && channel) {
        st = agree_host(c, &l);
        if (st == GCOLL_SUCCESS)
            st = gcoll__shm_create(l.node, &c->shm);
    }
    if (st == GCOLL_SUCCESS && c->shm) {
        c->tpops = intra->ops;
        st = open_shm_p2p(c, &l, c->shm, &c->tp);
    } else if (st == GCOLL_SUCCESS && l.nhosts == 1 && c->size > 1 && intra && !channel) {
        c->tpops = intra->ops; /* GCOLL_TRANSPORT_INTRA=mpi */
        st = connect_transport(c, c->tpops, &c->tp);
    } else if (st == GCOLL_SUCCESS && c->size == 1 && c->boot->comm != MPI_COMM_NULL) {
        /* a lone rank sends nothing: MPI's endpoint costs no sockets (without MPI, the inter-node one) */
        c->tpops = gcoll__tp_find("mpi")->ops;
        st = connect_transport(c, c->tpops, &c->tp);
    } else if (st == GCOLL_SUCCESS) {
        st = connect_routes(c, &l);
    }
    free_layout(&l);
    return st;
}

int gcoll__comm_crowded(gcoll_comm_t comm)
{
    return comm->crowded || comm->preempted;
}

uint32_t gcoll__comm_ticket(gcoll_comm_t comm)
{
    return comm->shm ? gcoll__shm_ticket(comm->shm) : 0;
}

void gcoll__comm_idle(gcoll_comm_t comm, uint32_t ticket, long usec)
{
    if (comm->shm)
        gcoll__shm_sleep(comm->shm, ticket, usec);
    else if (comm->tpops->wait)
        (void)comm->tpops->wait(comm->tp, usec); /* a failure shows in the next progress pass */
    else
        sched_yield();
}

gcoll_status_t gcoll__comm_create(gcoll__boot_t *boot, gcoll_comm_t *out)
{
    struct gcoll_comm *c = calloc(1, sizeof(*c));
    if (!c) {
        gcoll__boot_free(boot);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a communicator");
    }
    c->boot = boot;
    c->rank = boot->rank;
    c->size = boot->size;
    c->refs = 1;
    pthread_mutex_lock(&registry_lock);
    c->id = next_id++;
    pthread_mutex_unlock(&registry_lock);
    gcoll_status_t st = gcoll__flight_new(&c->flight);
    if (st == GCOLL_SUCCESS)
        st = connect_comm(c);
    if (st != GCOLL_SUCCESS) {
        destroy(c);
        return st;
    }
    if (!c->tpname[0] && c->tpops == &gcoll__transport_plugin)
        snprintf(c->tpname, sizeof(c->tpname), "plugin:%s", gcoll__plugin_name());
    else if (!c->tpname[0])
        snprintf(c->tpname, sizeof(c->tpname), "%s", c->tpops->name);
    c->lane = gcoll__lane_for(c->id, strstr(c->tpname, "mpi") != NULL);
    /* from settings every rank shares, never from what one rank sees: all must pick alike */
    const char *inter = gcoll__context.transport->name;
    const gcoll__tp_entry_t *intra = gcoll__transport_intra();
    c->links.inter = gcoll__cost_link(inter, 1);
    c->links.intra = gcoll__cost_link(intra ? intra->name : inter, 0);
    if (c->map.nhosts > 1 && (gcoll__config.cost_probe[0] || gcoll__config.cost_probe[1]))
        (void)gcoll__probe_links(c, gcoll__config.cost_probe[1],
                                 gcoll__config.cost_probe[0]); /* failures keep the figures */
    pthread_mutex_lock(&registry_lock);
    c->next = registry;
    registry = c;
    pthread_mutex_unlock(&registry_lock);
    GCOLL_LOG(GCOLL_LOG_DEBUG, "comm %u: rank %d of %d over %s", c->id, c->rank, c->size, c->tpname);
    *out = c;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__comm_check(gcoll_comm_t comm, const char *argname)
{
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", argname);
    if (!registered(comm))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is not a live communicator (freed, or never created)", argname);
    /* under its lane's lock: a progress thread may be failing it right now */
    gcoll__lane_t *l = comm->lane;
    gcoll_status_t st = GCOLL_SUCCESS;
    pthread_mutex_lock(&l->lock);
    if (comm->failed != GCOLL_SUCCESS)
        st = gcoll__error(gcoll__comm_fail_status(comm), "%s (comm %u) failed earlier: %s", argname, comm->id,
                          comm->failmsg);
    pthread_mutex_unlock(&l->lock);
    return st;
}

void gcoll__comm_fail(gcoll_comm_t comm, gcoll_status_t status, const char *reason)
{
    if (comm->failed != GCOLL_SUCCESS)
        return;
    comm->failed = status;
    snprintf(comm->failmsg, sizeof(comm->failmsg), "%s", reason);
    GCOLL_LOG(GCOLL_LOG_ERROR, "comm %u failed: %s", comm->id, reason);
    gcoll__flight_failed(comm);
}

gcoll_status_t gcoll__comm_fail_status(gcoll_comm_t comm)
{
    return comm->failed == GCOLL_ERR_REMOTE || comm->failed == GCOLL_ERR_INVALID_USAGE ? comm->failed
                                                                                       : GCOLL_ERR_ABORTED;
}

void gcoll__comm_release(gcoll_comm_t comm)
{
    if (--comm->refs == 0)
        destroy(comm);
}

GCOLL_API gcoll_status_t gcoll_comm_world(gcoll_comm_t *comm)
{
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "comm is NULL");
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    *comm = gcoll__context.world;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_comm_from_mpi(MPI_Comm mpi_comm, gcoll_comm_t *comm)
{
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "comm is NULL");
    *comm = NULL;
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    if (gcoll__context.boot_mode != GCOLL_BOOT_MPI)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "gcoll_comm_from_mpi: this job was launched without MPI "
                            "(GCOLL_BOOT=env, or GCOLL_RANK/RANK... set): use gcoll_comm_split or gcoll_comm_dup");
    if (mpi_comm == MPI_COMM_NULL)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "mpi_comm is MPI_COMM_NULL");
    gcoll__boot_t *boot;
    GCOLL_CHECK(gcoll__boot_from_mpi(mpi_comm, &boot));
    return gcoll__comm_create(boot, comm);
}

GCOLL_API gcoll_status_t gcoll_comm_create_store(int rank, int size, const gcoll_store_t *store, gcoll_comm_t *comm)
{
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "comm is NULL");
    *comm = NULL;
    if (!gcoll__context.initialized)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "gcoll is not initialized: call gcoll_init first");
    gcoll__boot_t *boot;
    GCOLL_CHECK(gcoll__boot_store(store, rank, size, &boot));
    return gcoll__comm_create(boot, comm);
}

GCOLL_API gcoll_status_t gcoll_comm_set_timeout(gcoll_comm_t comm, double seconds)
{
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    if (!(seconds > 0) || seconds > 1e9)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "seconds %g is not a timeout: accepts more than 0, up to 1e9",
                            seconds);
    pthread_mutex_lock(&comm->lane->lock);
    comm->timeout_s = seconds;
    pthread_mutex_unlock(&comm->lane->lock);
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_comm_split(gcoll_comm_t comm, int color, int key, gcoll_comm_t *newcomm)
{
    if (!newcomm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "newcomm is NULL");
    *newcomm = NULL;
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    gcoll__boot_t *sub;
    GCOLL_CHECK(gcoll__boot_split(comm->boot, color, key, &sub));
    if (!sub)
        return GCOLL_SUCCESS; /* a negative color: this rank joins no new communicator */
    return gcoll__comm_create(sub, newcomm);
}

GCOLL_API gcoll_status_t gcoll_comm_dup(gcoll_comm_t comm, gcoll_comm_t *newcomm)
{
    if (!newcomm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "newcomm is NULL");
    *newcomm = NULL;
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    gcoll__boot_t *dup;
    GCOLL_CHECK(gcoll__boot_dup(comm->boot, &dup));
    return gcoll__comm_create(dup, newcomm);
}

GCOLL_API gcoll_status_t gcoll_comm_free(gcoll_comm_t *comm)
{
    if (!comm)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "comm is NULL");
    gcoll_status_t st = gcoll__comm_check(*comm, "*comm");
    /* a failed one may be freed (INVALID_USAGE: a mismatch, once gcoll is initialized) */
    if (st != GCOLL_SUCCESS && st != GCOLL_ERR_ABORTED && st != GCOLL_ERR_REMOTE &&
        !(st == GCOLL_ERR_INVALID_USAGE && gcoll__context.initialized))
        return st;
    if ((*comm)->is_world)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE, "*comm is the world communicator: gcoll_finalize frees it");
    unregister(*comm);
    gcoll__lane_t *l = (*comm)->lane;
    pthread_mutex_lock(&l->lock);
    gcoll__comm_release(*comm);
    pthread_mutex_unlock(&l->lock);
    *comm = NULL;
    return GCOLL_SUCCESS;
}

GCOLL_API int gcoll_comm_rank(gcoll_comm_t comm)
{
    return comm && registered(comm) ? comm->rank : -1;
}

GCOLL_API int gcoll_comm_size(gcoll_comm_t comm)
{
    return comm && registered(comm) ? comm->size : -1;
}

void gcoll__comm_free_all(void)
{
    pthread_mutex_lock(&registry_lock);
    struct gcoll_comm *list = registry;
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
    while (list) {
        struct gcoll_comm *next = list->next;
        gcoll__comm_release(list);
        list = next;
    }
}

GCOLL_API gcoll_status_t gcoll_comm_transport(gcoll_comm_t comm, const char **name)
{
    if (!name)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "name is NULL");
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    *name = comm->tpname;
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_comm_abort(gcoll_comm_t comm)
{
    gcoll_status_t st = gcoll__comm_check(comm, "comm");
    if (st != GCOLL_SUCCESS && st != GCOLL_ERR_ABORTED && st != GCOLL_ERR_REMOTE)
        return st;
    if (st == GCOLL_SUCCESS) /* a communicator failed already keeps its first reason */
        gcoll__engine_fail_comm(comm, GCOLL_ERR_ABORTED, "aborted by the application (gcoll_comm_abort)");
    gcoll__error_clear();
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_comm_bytes_sent(gcoll_comm_t comm, unsigned long long *bytes)
{
    if (!bytes)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "bytes is NULL");
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    pthread_mutex_lock(&comm->lane->lock); /* the engine counts under it */
    *bytes = comm->bytes_sent;
    pthread_mutex_unlock(&comm->lane->lock);
    return GCOLL_SUCCESS;
}
