/* The progress engine: runs schedules round by round over the communicator's transport,
 * highest priority first within a lane's budget of bytes in flight, enforces GCOLL_TIMEOUT,
 * and turns a failure into a failed communicator; blocking calls are a start plus gcoll_wait.
 * Messages match by operation sequence number, so ranks that reorder cannot deadlock. */
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm.h"
#include "core/flight.h"
#include "base/config.h"
#include "core/context.h"
#include "base/error.h"
#include "core/lane.h"
#include "base/log.h"
#include "base/reduce.h"
#include "core/request.h"
#include "core/timeline.h"

#define SPIN_PASSES 200
#define YIELD_PASSES 50
#define CROWDED_YIELD_PASSES 4
#define TIGHT_POLL_S 20e-6 /* a gcoll_test this soon after the last one is a polling loop's */
#define NAP_US 1000        /* the longest such a poll sleeps when no peer moves */
#define PREEMPT_FIRST 8    /* spin passes before the first look at the preemption count */
#define PREEMPT_CHECK 32   /* and between looks */
#define PREEMPT_MEMORY 256 /* waits on a communicator that skip the spin after one was preempted */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Involuntary context switches of this thread. A spin that loses its core is taking it from
 * ranks that share the machine (other "hosts" of a test cluster, other jobs), often the very
 * ranks it waits for. */
static long preemptions(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

static void run_local(gcoll_request_t r, const gcoll__step_t *st)
{
    const gcoll__sched_t *s = r->sched;
    double t0 = gcoll__timeline_on ? gcoll__timeline_now() : 0;
    switch (st->kind) {
    case GCOLL_STEP_REDUCE: gcoll__reduce(st->dst, st->a, st->b, st->n, s->dtype, s->op); break;
    case GCOLL_STEP_COPY: memcpy(st->dst, st->a, st->n); break;
    case GCOLL_STEP_DIV: gcoll__kernels->div[s->dtype](st->dst, st->n, s->divisor); break;
    case GCOLL_STEP_ROUND:
        for (size_t i = 0; i < st->n; i += 1024) { /* through a small stack buffer */
            uint16_t w[1024];
            size_t m = st->n - i < 1024 ? st->n - i : 1024;
            gcoll__kernels->to_wire[s->wire - 1](w, (float *)st->dst + i, m);
            gcoll__kernels->from_wire[s->wire - 1]((float *)st->dst + i, w, m);
        }
        break;
    default: break;
    }
    if (gcoll__timeline_on)
        gcoll__timeline_step(r, st, t0);
}

/* Steps that are polled until they finish, rather than run once. */
static int is_comm_step(const gcoll__step_t *st)
{
    return st->kind == GCOLL_STEP_SEND || st->kind == GCOLL_STEP_RECV || st->kind == GCOLL_STEP_CUSTOM;
}

/* A send of r's left the transport (done or cancelled). */
static void send_over(gcoll_request_t r, const gcoll__step_t *st)
{
    r->sending--;
    if (st->counted)
        r->lane->inflight -= st->n;
}

static gcoll_status_t post(gcoll_request_t r, gcoll__step_t *st)
{
    gcoll_comm_t c = r->comm;
    uint32_t tag = r->sched->tag;
    if (gcoll__timeline_on) {
        st->t0 = gcoll__timeline_now();
        if (r->t_post == 0)
            r->t_post = st->t0;
    }
    if (!r->posted) {
        r->posted = 1;
        gcoll__flight_posted(r);
    }
    st->parts = 0;
    if (st->kind == GCOLL_STEP_RECV && st->landed && !st->wire && c->tpops->irecv_landed)
        return c->tpops->irecv_landed(c->tp, st->peer, tag, st->dst, st->n, st->landed, st->landed_arg, &st->parts,
                                      &st->req);
    if (st->kind == GCOLL_STEP_RECV)
        return c->tpops->irecv(c->tp, st->peer, tag, st->wire ? st->wire : st->dst, st->n, &st->req);
    if (st->wire) /* compressed: the fp32 slice goes out 16-bit */
        gcoll__kernels->to_wire[r->sched->wire - 1](st->wire, st->a, st->n / 2);
    GCOLL_CHECK(gcoll__tp_isend_prio(c->tpops, c->tp, st->peer, tag, st->wire ? st->wire : st->a, st->n, r->priority,
                                     &st->req));
    st->counted = r->sending > 0;
    r->sending++;
    if (st->counted)
        r->lane->inflight += st->n;
    c->bytes_sent += st->n;
    return GCOLL_SUCCESS;
}

/* Tests r's messages and custom steps of the current round that are in flight. */
static gcoll_status_t reap(gcoll_request_t r, unsigned *moved, size_t *pending)
{
    gcoll__sched_t *s = r->sched;
    gcoll_comm_t c = r->comm;
    if (s->cur >= s->nrounds || !s->posted)
        return GCOLL_SUCCESS;
    gcoll__step_t *st = s->steps + s->rounds[s->cur].first;
    size_t n = s->rounds[s->cur].count;
    for (size_t i = 0; i < n; i++) {
        if (!is_comm_step(&st[i]) || st[i].done)
            continue;
        if (st[i].kind == GCOLL_STEP_CUSTOM) {
            GCOLL_CHECK(st[i].fn(st[i].state, &st[i].done));
            if (!st[i].done && st[i].local)
                r->lane->local_wait = 1;
        } else if (st[i].req) {
            gcoll_status_t ts = c->tpops->test(c->tp, st[i].req, &st[i].done);
            if (ts != GCOLL_SUCCESS || st[i].done) {
                st[i].req = NULL; /* the transport freed it */
                if (st[i].kind == GCOLL_STEP_SEND)
                    send_over(r, &st[i]);
            }
            GCOLL_CHECK(ts);
            if (st[i].done && st[i].wire && st[i].kind == GCOLL_STEP_RECV) /* back to fp32 */
                gcoll__kernels->from_wire[s->wire - 1](st[i].dst, st[i].wire, st[i].n / 2);
            if (st[i].done && st[i].landed && !st[i].parts)
                st[i].landed(st[i].landed_arg, 0, st[i].wire ? st[i].n * 2 : st[i].n);
        }
        if (st[i].done) {
            ++*moved;
            if (gcoll__timeline_on)
                gcoll__timeline_step(r, &st[i], st[i].t0);
        }
        *pending += !st[i].done; /* a send the budget holds back counts too */
    }
    return GCOLL_SUCCESS;
}

/* Runs r's schedule as far as the transport and the lane's budget allow; *moved counts the
 * steps that made progress. */
static gcoll_status_t advance(gcoll_request_t r, unsigned *moved)
{
    gcoll__sched_t *s = r->sched;
    gcoll__lane_t *l = r->lane;
    while (s->cur < s->nrounds) {
        gcoll__step_t *st = s->steps + s->rounds[s->cur].first;
        size_t n = s->rounds[s->cur].count, pending = 0;
        if (!s->posted) { /* receives are never held back: a peer's send may wait on them */
            for (size_t i = 0; i < n; i++) {
                if (st[i].kind == GCOLL_STEP_RECV)
                    GCOLL_CHECK(post(r, &st[i]));
                else if (st[i].kind == GCOLL_STEP_CUSTOM && gcoll__timeline_on)
                    st[i].t0 = gcoll__timeline_now();
            }
            s->posted = 1;
        }
        /* Sends in order, while the budget has room; an operation with none in flight may
         * always post one, so every operation moves whatever the others hold. That one stays
         * outside the budget: a crowd of low-priority operations moving a slice each must not
         * hold a higher priority's pipeline to one slice at a time. */
        for (size_t i = 0; i < n; i++) {
            if (st[i].kind != GCOLL_STEP_SEND || st[i].req || st[i].done)
                continue;
            if (r->sending && l->inflight + st[i].n > gcoll__config.inflight_bytes)
                break;
            GCOLL_CHECK(post(r, &st[i]));
            ++*moved;
        }
        GCOLL_CHECK(reap(r, moved, &pending));
        /* a local step runs once every step listed before it is done: a builder that lists
         * "recv slice k, reduce slice k, recv slice k+1, ..." overlaps each reduction with the
         * arrival of the next slice */
        size_t i = s->lnext;
        for (; i < n && (!is_comm_step(&st[i]) || st[i].done); i++)
            if (!is_comm_step(&st[i])) {
                run_local(r, &st[i]);
                ++*moved;
            }
        s->lnext = i;
        if (pending || i < n)
            return GCOLL_SUCCESS;
        s->cur++;
        s->posted = 0;
        s->lnext = 0;
    }
    r->done = 1;
    return GCOLL_SUCCESS;
}

/* Whether a message step before st[i] waits on the same peer: one with several slices pending
 * is named once. */
static int listed_before(const gcoll__step_t *st, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if ((st[j].kind == GCOLL_STEP_SEND || st[j].kind == GCOLL_STEP_RECV) && !st[j].done && st[j].peer == st[i].peer)
            return 1;
    return 0;
}

/* Lists the peers that the current round still waits on, e.g. "2, 5". */
void gcoll__request_peers(const gcoll_request_t r, char *buf, size_t len)
{
    const gcoll__sched_t *s = r->sched;
    buf[0] = '\0';
    if (s->cur >= s->nrounds)
        return;
    const gcoll__step_t *st = s->steps + s->rounds[s->cur].first;
    for (size_t i = 0; i < s->rounds[s->cur].count; i++) {
        if (!is_comm_step(&st[i]) || st[i].done)
            continue;
        if (st[i].kind != GCOLL_STEP_CUSTOM && listed_before(st, i))
            continue;
        size_t used = strlen(buf);
        if (st[i].kind == GCOLL_STEP_CUSTOM)
            st[i].who(st[i].state, buf + used, len - used);
        else
            snprintf(buf + used, len - used, "%s%d", used ? ", " : "", st[i].peer);
    }
}

static void describe(const gcoll_request_t r, char *buf, size_t len)
{
    snprintf(buf, len, "%s #%llu%s%s%s on comm %u (%s, round %zu of %zu)", gcoll__coll_name(r->coll),
             (unsigned long long)r->seq, r->name[0] ? " '" : "", r->name, r->name[0] ? "'" : "", r->comm->id, r->algo,
             r->sched->cur + 1, r->sched->nrounds);
}

gcoll_status_t gcoll__request_advance(gcoll_request_t r, unsigned *moved)
{
    return advance(r, moved);
}

void gcoll__request_cancel(gcoll_request_t r)
{
    gcoll__sched_t *s = r->sched;
    if (s->cur >= s->nrounds)
        return;
    gcoll__step_t *st = s->steps + s->rounds[s->cur].first;
    for (size_t i = 0; i < s->rounds[s->cur].count; i++)
        if (st[i].req) {
            r->comm->tpops->cancel(r->comm->tp, st[i].req);
            st[i].req = NULL;
            if (st[i].kind == GCOLL_STEP_SEND)
                send_over(r, &st[i]);
        }
}

/* Ends r with status: abandons its messages in flight and fails its communicator. */
static void fail_request(gcoll_request_t r, gcoll_status_t status, const char *why)
{
    char what[192];
    describe(r, what, sizeof(what));
    snprintf(r->errmsg, sizeof(r->errmsg), "%s: %.189s", what, why); /* fits: 191 + 2 + 189 < 384 */
    gcoll__request_cancel(r);
    r->status = status; /* before the flight recorder sees the failure */
    gcoll__comm_fail(r->comm, status, r->errmsg);
    r->done = 1;
}

static void retire(gcoll_request_t r)
{
    for (gcoll_request_t *p = &r->lane->active; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    gcoll__flight_end(r);
    if (gcoll__timeline_on)
        gcoll__timeline_op(r);
    if (!r->kept)
        gcoll__sched_free(r->sched);
    r->sched = NULL;
    gcoll__comm_release(r->comm);
    r->comm = NULL;
}

/* "2, 5" or "?", and whether that is more than one rank. */
static int waited_for(const gcoll_request_t r, char *buf, size_t len)
{
    gcoll__request_peers(r, buf, len);
    if (!buf[0])
        snprintf(buf, len, "?");
    return strchr(buf, ',') != NULL;
}

/* Ends r with status from its transport. A transport names a dead peer in its own numbering (a
 * node channel counts the ranks of its host): the message then names the communicator's rank too. */
static void fail_from_transport(gcoll_request_t r, gcoll_status_t status)
{
    gcoll_comm_t c = r->comm;
    char evidence[300], ignored[200], why[384];
    snprintf(evidence, sizeof(evidence), "%s", gcoll_last_error());
    int dead =
        status == GCOLL_ERR_REMOTE && c->tpops->dead_peer ? c->tpops->dead_peer(c->tp, ignored, sizeof(ignored)) : -1;
    if (dead >= 0)
        snprintf(why, sizeof(why), "rank %d failed: %s", dead, evidence);
    else
        snprintf(why, sizeof(why), "%s", evidence);
    fail_request(r, status, why);
    /* a point-to-point receive that its message does not fit: the sender, which may wait for the
     * receive to take its data, is told as of a collective's mismatch */
    if (r->coll == GCOLL_COLL_P2P && status == GCOLL_ERR_TRANSPORT && c->tpops->mismatch)
        c->tpops->mismatch(c->tp, r->errmsg);
}

/* Ends r if its communicator has a dead peer. Asked once r has stalled LIVENESS_S, and then at
 * most every LIVENESS_S per communicator: a dead peer is found within about twice that. */
#define LIVENESS_S 0.5
static void look_for_dead_peer(gcoll_request_t r, double t)
{
    gcoll_comm_t c = r->comm;
    if (!c->tpops->dead_peer || t - r->t_moved < LIVENESS_S || t - c->t_alive < LIVENESS_S)
        return;
    c->t_alive = t;
    char evidence[200], why[288];
    int dead = c->tpops->dead_peer(c->tp, evidence, sizeof(evidence));
    if (dead < 0)
        return;
    snprintf(why, sizeof(why), "rank %d failed: %s", dead, evidence);
    fail_request(r, GCOLL_ERR_REMOTE, why);
}

/* At a clock reading, for r still in flight: starts its clocks, looks for dead peers once it
 * has stalled, warns every GCOLL_STALL_WARN_S that it still waits, and ends it at its deadline. */
static void watch(gcoll_request_t r, double t)
{
    char peers[160];
    double limit = r->comm->timeout_s > 0 ? r->comm->timeout_s : gcoll__config.timeout_s;
    if (r->deadline == 0) { /* the clocks start at the first reading */
        r->deadline = t + limit;
        r->next_warn = gcoll__config.stall_warn_s > 0 ? t + gcoll__config.stall_warn_s : 0;
        r->t_moved = t;
        r->progressed = 0;
        return;
    }
    if (r->progressed)
        r->t_moved = t;
    r->progressed = 0;
    look_for_dead_peer(r, t);
    if (r->done)
        return;
    if (t > r->deadline) {
        int many = waited_for(r, peers, sizeof(peers));
        char why[256];
        snprintf(why, sizeof(why), "timed out after %g s (%s); no answer from rank%s %s", limit,
                 r->comm->timeout_s > 0 ? "gcoll_comm_set_timeout" : "GCOLL_TIMEOUT", many ? "s" : "", peers);
        fail_request(r, GCOLL_ERR_TIMEOUT, why);
    } else if (r->next_warn > 0 && t >= r->next_warn) {
        char what[192];
        describe(r, what, sizeof(what));
        int many = waited_for(r, peers, sizeof(peers));
        GCOLL_LOG(GCOLL_LOG_WARN,
                  "%s still pending after %.0f s; not yet delivered by rank%s %s (GCOLL_TIMEOUT "
                  "ends it after %g s)",
                  what, t - (r->deadline - limit), many ? "s" : "", peers, limit);
        r->next_warn += gcoll__config.stall_warn_s;
    }
}

/* One pass over the lane's requests, in priority order. Lock held. The clock is read on one
 * pass in TIME_EVERY: deadlines need no finer grain, and reading it is not free. */
#define TIME_EVERY 32
unsigned gcoll__lane_progress(gcoll__lane_t *l)
{
    unsigned moved = 0;
    double t = 0;
    if (++l->passes % TIME_EVERY == 0)
        t = now_s();
    l->local_wait = 0;
    /* Completions first, everywhere: the room they free in the budget then goes to the highest
     * priority in the posting pass below, not to whichever request was reaped first. */
    for (gcoll_request_t r = l->active; r; r = r->next) {
        size_t pending = 0;
        unsigned before = moved;
        gcoll_status_t st = r->done || r->comm->failed != GCOLL_SUCCESS ? GCOLL_SUCCESS : reap(r, &moved, &pending);
        r->progressed |= moved != before;
        if (st != GCOLL_SUCCESS)
            fail_from_transport(r, st);
    }
    gcoll_request_t r = l->active;
    while (r) {
        gcoll_request_t next = r->next;
        gcoll_status_t st;
        unsigned before = moved;
        if (r->done) {
            /* failed in the reaping pass */
        } else if (r->comm->failed != GCOLL_SUCCESS) {
            fail_request(r, gcoll__comm_fail_status(r->comm), r->comm->failmsg);
        } else if ((st = advance(r, &moved)) != GCOLL_SUCCESS) {
            fail_from_transport(r, st);
        } else {
            r->progressed |= moved != before;
            if (!r->done && t > 0)
                watch(r, t);
        }
        if (r->done) {
            retire(r);
            moved++;
        }
        r = next;
    }
    return moved;
}

gcoll_status_t gcoll__request_start(gcoll_comm_t comm, gcoll__coll_t coll, const char *algo, gcoll__sched_t *sched,
                                    const gcoll__attr_t *attr, gcoll_request_t *out, const gcoll__start_t *how)
{
    gcoll_request_t r = how->storage ? memset(how->storage, 0, sizeof(*r)) : calloc(1, sizeof(*r));
    if (!r) {
        if (!how->kept)
            gcoll__sched_free(sched);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a request");
    }
    r->borrowed = how->storage != NULL && !how->heap;
    r->kept = how->kept;
    r->member = how->member;
    r->coll = coll;
    r->algo = algo;
    r->sched = sched;
    r->priority = attr->priority;
    if (attr->name)
        snprintf(r->name, sizeof(r->name), "%s", attr->name);
    gcoll__lane_t *l = r->lane = comm->lane;
    if (gcoll__timeline_on)
        r->t_start = gcoll__timeline_now();
    pthread_mutex_lock(&l->lock);
    r->comm = comm;
    comm->refs++;
    if (how->p2p) { /* its own tag space, outside the collectives' issue order */
        sched->tag = (uint32_t)how->tag;
        r->seq = how->tag & ~(uint64_t)GCOLL_TAG_P2P;
    } else {
        r->seq = how->own_tag ? how->tag : comm->seq++;
        sched->tag = gcoll__tag_of(r->seq);
    }
    gcoll__sched_issue(sched);
    gcoll__flight_start(r);
    /* a pair's messages have tags of their own, which a direct-mapped table cannot hold; an
     * operation that sends nothing has nothing to check */
    if (!how->p2p && sched->desc.coll)
        gcoll__optab_put(&comm->optab, sched->tag, &sched->desc);
    gcoll_request_t *p = &l->active;
    while (*p && (*p)->priority >= r->priority)
        p = &(*p)->next;
    r->next = *p;
    *p = r;
    GCOLL_LOG(GCOLL_LOG_TRACE, "start %s #%llu on comm %u with %s, priority %d", gcoll__coll_name(coll),
              (unsigned long long)r->seq, comm->id, algo, r->priority);
    gcoll__lane_progress(l);
    if (how->wake && !r->done)
        gcoll__lane_kick(l);
    pthread_mutex_unlock(&l->lock);
    *out = r;
    return GCOLL_SUCCESS;
}

static gcoll_status_t finish(gcoll_request_t *req)
{
    gcoll_request_t r = *req;
    gcoll_status_t st = r->status;
    if (st != GCOLL_SUCCESS)
        gcoll__error(st, "%s", r->errmsg);
    if (!r->borrowed)
        free(r);
    *req = NULL;
    return st;
}

/* The lane's worker stands down while an application thread waits on the lane and drives it
 * (l->waiters): two threads of one rank polling the same requests take turns on a core for
 * nothing, and with more ranks than cores they take it from the peers they wait for. Lock held. */
static void waiter_leave(gcoll__lane_t *l)
{
    if (--l->waiters == 0 && l->active)
        gcoll__lane_kick(l);
}

static gcoll_status_t not_pending(const gcoll_request_t r)
{
    if (r->pending || r->grouped)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "*req was posted in a group that is still open: it starts at "
                            "gcoll_group_end, so wait for it after that");
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_test(gcoll_request_t *req, int *done)
{
    if (!req || !*req || !done)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", !done ? "done" : !req ? "req" : "*req");
    GCOLL_CHECK(not_pending(*req));
    gcoll_request_t r = *req;
    gcoll__lane_t *l = r->lane;
    double t = r->polls ? now_s() : 0;
    pthread_mutex_lock(&l->lock);
    gcoll_comm_t comm = r->done ? NULL : r->comm;
    uint32_t ticket = comm ? gcoll__comm_ticket(comm) : 0; /* before the pass: see gcoll_wait */
    if (!r->done)
        gcoll__lane_progress(l);
    *done = r->done;
    /* A polling loop must not starve the peer it waits for of its core: with more ranks than
     * cores at once, and after a spin's worth of fruitless polls anywhere (ranks on other hosts
     * may share this machine's cores too). A caller that polls again as soon as the last poll
     * returned does nothing else meanwhile: it sleeps until a peer moves, like gcoll_wait,
     * rather than yield the core and take it back at once, many times a millisecond. */
    int give_way = !*done && (++r->polls > SPIN_PASSES || gcoll__comm_crowded(comm));
    int nap = give_way && !l->local_wait && t - r->t_poll < TIGHT_POLL_S;
    if (nap)
        comm->refs++; /* the request may retire while this thread sleeps */
    pthread_mutex_unlock(&l->lock);
    if (nap) {
        /* the worker keeps driving meanwhile: the sleep ends on this host's events only */
        gcoll__comm_idle(comm, ticket, NAP_US);
        pthread_mutex_lock(&l->lock);
        gcoll__comm_release(comm);
        pthread_mutex_unlock(&l->lock);
    } else if (give_way) {
        sched_yield();
    }
    r->t_poll = now_s();
    return *done ? finish(req) : GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_wait(gcoll_request_t *req)
{
    if (!req || !*req)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", !req ? "req" : "*req");
    GCOLL_CHECK(not_pending(*req));
    /* Spin first for latency, then yield so oversubscribed ranks let their peers run, then
     * sleep until a peer on this host moves (or a millisecond passes, for other transports). */
    gcoll_comm_t comm = NULL; /* held while sleeping: the request may retire meanwhile */
    uint32_t ticket = 0;
    gcoll__lane_t *l = (*req)->lane;
    pthread_mutex_lock(&l->lock);
    gcoll_comm_t rc = (*req)->done ? NULL : (*req)->comm; /* a finished request has let go of it */
    if (rc && rc->preempted) /* after a while, spin again to see whether the cores are still contended */
        rc->preempted--;
    int crowded = rc && gcoll__comm_crowded(rc);
    unsigned spin = crowded ? 0 : SPIN_PASSES;
    /* With more ranks than cores, a yield mostly hands the core to another waiter that yields
     * it back; a few let a peer that is about to move run, then the wait sleeps. */
    unsigned yields = crowded ? CROWDED_YIELD_PASSES : YIELD_PASSES;
    /* Network communicators watch for preemption while they spin (a node channel knows its
     * crowding from the local rank count); short waits skip the look, it costs a system call. */
    int looking = rc && !rc->shm && spin, held = looking;
    if (held)
        rc->refs++; /* the request lets go of it when it finishes */
    l->waiters++;
    pthread_mutex_unlock(&l->lock);
    long nivcsw = 0;
    for (unsigned idle = 0;; idle++) {
        pthread_mutex_lock(&l->lock);
        if (comm) /* read before the pass, so a peer's progress after it cannot be missed */
            ticket = gcoll__comm_ticket(comm);
        if (!(*req)->done)
            gcoll__lane_progress(l);
        int done = (*req)->done, poll = l->local_wait;
        if (looking && idle == PREEMPT_FIRST)
            nivcsw = preemptions();
        if (looking && idle > PREEMPT_FIRST && (done || idle % PREEMPT_CHECK == 0)) {
            if (preemptions() != nivcsw) {
                rc->preempted = PREEMPT_MEMORY;
                spin = idle + 1;
            }
            looking = !done && idle < spin;
        }
        if (!done && !comm && idle >= spin + yields) {
            comm = (*req)->comm;
            comm->refs++;
        }
        if (done && comm)
            gcoll__comm_release(comm);
        if (done && held)
            gcoll__comm_release(rc);
        if (done)
            waiter_leave(l);
        pthread_mutex_unlock(&l->lock);
        if (done)
            return finish(req);
        if (comm && idle > spin + yields && !poll)
            gcoll__comm_idle(comm, ticket, 1000);
        else if (idle >= spin)
            sched_yield();
    }
}

void gcoll__engine_abort_all(void)
{
    for (size_t i = 0; i < gcoll__lane_count(); i++) {
        gcoll__lane_t *l = gcoll__lane_at(i);
        pthread_mutex_lock(&l->lock);
        while (l->active) {
            gcoll_request_t r = l->active;
            fail_request(r, GCOLL_ERR_ABORTED, "gcoll_finalize was called with the operation in flight");
            retire(r);
        }
        pthread_mutex_unlock(&l->lock);
    }
}

void gcoll__engine_fail_comm(gcoll_comm_t comm, gcoll_status_t status, const char *why)
{
    gcoll__lane_t *l = comm->lane;
    pthread_mutex_lock(&l->lock);
    gcoll__comm_fail(comm, status, why);
    for (gcoll_request_t r = l->active, next; r; r = next) {
        next = r->next;
        if (r->comm != comm || r->done)
            continue;
        fail_request(r, status, why);
        retire(r);
    }
    pthread_mutex_unlock(&l->lock);
}
