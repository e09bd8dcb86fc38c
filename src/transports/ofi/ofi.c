/* The libfabric (OFI) transport: one reliable-datagram endpoint (FI_EP_RDM) per process, shared by
 * its communicators (ofi_proc.c: each has a channel in the tag), tagged messages (FI_TAGGED)
 * addressed through an address vector, progress by reading the completion queue from test(). Rank
 * 0 picks the provider (ofi_setup.c) and every rank opens that one. Buffers are registered
 * through ofi_mr.c when the provider asks for FI_MR_LOCAL. */
#include "base/error.h"
#include "transports/frame/frame.h"
#include "transports/ofi/ofi.h"

#if GCOLL_HAVE_OFI

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "transports/liveness.h"
#include "transports/ofi/ofi_internal.h"

enum { QUEUED, POSTED, DONE };

struct gcoll__tp_req {
    struct fi_context2 ctx; /* the provider's scratch space while the operation is posted */
    gcoll__tp_req_t *next;  /* a retry queue, or the orphans */
    gcoll__tp_t *tp;        /* the communicator's endpoint that posted it */
    int peer, is_recv, phase, orphan;
    int holds_chan; /* an orphaned send of a closed communicator: its channel stays taken */
    uint64_t tag;
    void *buf;
    size_t bytes;
    size_t *got; /* irecv_upto: where the length goes */
    gcoll__ofi_mr_entry_t *mr;
    gcoll_status_t status;
    char errmsg[320];
};

/* Cancelled operations wait this long for their completion before they are left to close(). */
#define CANCEL_WAIT_S 0.1
/* Posting attempts, each after a pass over the completion queue, before a post is queued. */
#define POST_TRIES 4
#define CQ_BATCH 16

static gcoll_status_t req_fail(gcoll__tp_req_t *r, gcoll_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records a request's failure: the completion may be read while testing another request. */
static gcoll_status_t req_fail(gcoll__tp_req_t *r, gcoll_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
    va_end(ap);
    r->status = st;
    r->phase = DONE;
    return st;
}

static const char *op_name(const gcoll__tp_req_t *r)
{
    return r->is_recv ? "receive from" : "send to";
}

static void release_mr(gcoll__ofi_proc_t *p, gcoll__tp_req_t *r)
{
    if (r->mr && p->mrc) /* no cache: it went with an endpoint closed under this request */
        gcoll__ofi_mrcache_put(p->mrc, r->mr);
    r->mr = NULL;
}

static void unlink_orphan(gcoll__ofi_proc_t *p, gcoll__tp_req_t *r)
{
    for (gcoll__tp_req_t **q = &p->orphans; *q; q = &(*q)->next)
        if (*q == r) {
            *q = r->next;
            return;
        }
}

/* The operation is over on the provider's side: its buffer and context are ours again. */
static void finished(gcoll__ofi_proc_t *p, gcoll__tp_req_t *r)
{
    release_mr(p, r);
    r->phase = DONE;
    if (r->orphan) {
        unlink_orphan(p, r);
        uint64_t chan = r->tag >> p->chan_shift;
        int others = 0; /* held sends of the same closed communicator */
        for (const gcoll__tp_req_t *o = p->orphans; o && r->holds_chan && !others; o = o->next)
            others = o->holds_chan && o->tag >> p->chan_shift == chan;
        if (r->holds_chan && !others)
            gcoll__ofi_proc_drop_channel(p, chan);
        free(r);
    }
}

static void on_completion(gcoll__ofi_proc_t *p, const struct fi_cq_tagged_entry *e)
{
    gcoll__tp_req_t *r = e->op_context;
    if (r->got)
        *r->got = e->len; /* a longer message failed it with FI_ETRUNC instead */
    else if (r->is_recv && e->len != r->bytes && !r->orphan)
        req_fail(r, GCOLL_ERR_TRANSPORT, "ofi transport: received %zu bytes from rank %d (tag %u), expected %zu",
                 e->len, r->peer, (unsigned)r->tag, r->bytes);
    finished(p, r);
}

/* Errors a provider reports when the peer's end went away (tcp;ofi_rxm: the socket's). A
 * cancellation that ofi_cancel did not ask for is one of them: tcp;ofi_rxm cancels what is posted
 * to a peer whose connection it tears down (seen when a peer is killed mid-allreduce). */
static int connection_lost(int err)
{
    return err == FI_ECONNRESET || err == FI_ECONNREFUSED || err == FI_ECONNABORTED || err == FI_ENOTCONN ||
        err == FI_EHOSTUNREACH || err == FI_ENETUNREACH || err == FI_EIO || err == FI_ESHUTDOWN ||
        err == FI_ETIMEDOUT || err == EPIPE || err == FI_ECANCELED;
}

static gcoll_status_t on_error(gcoll__ofi_proc_t *p, const struct fi_cq_err_entry *e)
{
    char detail[256];
    const char *text = fi_cq_strerror(p->cq, e->prov_errno, e->err_data, detail, sizeof(detail));
    gcoll__tp_req_t *r = e->op_context;
    if (!r) { /* an injected send's: no request carries it, and the queue may be another communicator's
               * test; its receiver's wait fails on its own (the connection's error, or GCOLL_TIMEOUT) */
        GCOLL_LOG(GCOLL_LOG_WARN, "ofi: an injected send failed: %s (%s)", fi_strerror(e->err), text ? text : "");
        return GCOLL_SUCCESS;
    }
    if (r->orphan) /* ofi_cancel's own cancellation */
        r->phase = DONE;
    else if (e->err == FI_ETRUNC)
        req_fail(r, GCOLL_ERR_TRANSPORT,
                 "ofi transport: a message from rank %d (tag %u) is %zu bytes longer than the %zu "
                 "expected: %s",
                 r->peer, (unsigned)r->tag, e->olen, r->bytes, text ? text : "");
    else if (connection_lost(e->err)) {
        req_fail(r, GCOLL_ERR_REMOTE,
                 "ofi transport: %s rank %d failed: %s (%s): its connection is lost (did it "
                 "exit or crash?)",
                 op_name(r), r->peer, fi_strerror(e->err), text ? text : "");
        if (r->tp->lost < 0) {
            r->tp->lost = r->peer;
            snprintf(r->tp->lost_why, sizeof(r->tp->lost_why), "%s", r->errmsg);
        }
    } else
        req_fail(r, GCOLL_ERR_TRANSPORT, "ofi transport: %s rank %d (tag %u, %zu bytes) failed: %s (%s)", op_name(r),
                 r->peer, (unsigned)r->tag, r->bytes, fi_strerror(e->err), text ? text : "");
    finished(p, r);
    return GCOLL_SUCCESS;
}

/* Reads every completion there is, whichever communicator's; this is also what drives a
 * manual-progress provider. Under the endpoint's lock. */
static gcoll_status_t drain_cq(gcoll__ofi_proc_t *p)
{
    if (p->broken[0])
        return gcoll__error(GCOLL_ERR_TRANSPORT, "%s", p->broken);
    struct fi_cq_tagged_entry ent[CQ_BATCH];
    for (;;) {
        ssize_t n = fi_cq_read(p->cq, ent, CQ_BATCH);
        if (n == -FI_EAGAIN)
            return GCOLL_SUCCESS;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof(err));
            ssize_t rc = fi_cq_readerr(p->cq, &err, 0);
            if (rc == -FI_EAGAIN)
                continue;
            if (rc < 0)
                return gcoll__ofi_fail("fi_cq_readerr", (int)rc, p->prov);
            GCOLL_CHECK(on_error(p, &err));
            continue;
        }
        if (n < 0)
            return gcoll__ofi_fail("fi_cq_read", (int)n, p->prov);
        for (ssize_t i = 0; i < n; i++)
            on_completion(p, &ent[i]);
        if (n < CQ_BATCH)
            return GCOLL_SUCCESS;
    }
}

/* One attempt to hand r to the provider: 0, -FI_EAGAIN, or another negative error. */
static ssize_t issue(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    gcoll__ofi_proc_t *p = tp->proc;
    fi_addr_t addr = tp->peers[r->peer];
    if (!r->is_recv && r->bytes <= p->inject_size) {
        /* Small sends are copied out at once and produce no completion. */
        ssize_t rc = fi_tinject(p->ep, r->buf, r->bytes, addr, r->tag);
        if (rc == 0)
            r->phase = DONE;
        return rc;
    }
    if (p->mr_local && r->bytes && !r->mr) {
        gcoll_status_t st = gcoll__ofi_mrcache_get(p->mrc, r->buf, r->bytes, &r->mr);
        if (st != GCOLL_SUCCESS) {
            req_fail(r, st, "ofi transport: registering %zu bytes for a %s rank %d failed: %s", r->bytes, op_name(r),
                     r->peer, gcoll_last_error());
            return -FI_EOTHER;
        }
    }
    void *desc = r->mr ? gcoll__ofi_mr_desc(r->mr) : NULL;
    ssize_t rc = r->is_recv
        ? fi_trecv(p->ep, r->buf, r->bytes, desc, p->directed ? addr : FI_ADDR_UNSPEC, r->tag, 0, &r->ctx)
        : fi_tsend(p->ep, r->buf, r->bytes, desc, addr, r->tag, &r->ctx);
    if (rc == 0)
        r->phase = POSTED;
    return rc;
}

/* Posts r, draining the completion queue between attempts; *later says it must be queued. */
static gcoll_status_t try_post(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *later)
{
    *later = 0;
    for (int tries = 1;; tries++) {
        ssize_t rc = issue(tp, r);
        if (rc == 0)
            return GCOLL_SUCCESS;
        if (r->phase == DONE) /* issue already recorded why */
            return r->status;
        if (rc != -FI_EAGAIN) {
            release_mr(tp->proc, r);
            return req_fail(r, GCOLL_ERR_TRANSPORT, "ofi transport: posting a %s rank %d (%zu bytes) failed: %s",
                            op_name(r), r->peer, r->bytes, fi_strerror((int)-rc));
        }
        if (tries == POST_TRIES) {
            *later = 1;
            return GCOLL_SUCCESS;
        }
        GCOLL_CHECK(drain_cq(tp->proc));
    }
}

/* Posts what -FI_EAGAIN held back in one queue, in order, so one pair and tag keep their
 * posting order. */
static gcoll_status_t flush_queue(gcoll__tp_t *tp, int q)
{
    while (tp->queue[q]) {
        gcoll__tp_req_t *r = tp->queue[q];
        int later;
        gcoll_status_t st = try_post(tp, r, &later);
        if (later)
            return GCOLL_SUCCESS;
        if (st != GCOLL_SUCCESS && r->phase != DONE)
            return st; /* the completion queue failed, not r: it stays queued */
        tp->queue[q] = r->next;
        if (!tp->queue[q])
            tp->queue_tail[q] = NULL;
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t post_locked(gcoll__tp_t *tp, gcoll__tp_req_t *r, gcoll__tp_req_t **out)
{
    int later = 1, is_recv = r->is_recv;
    gcoll_status_t st = tp->proc->broken[0] ? gcoll__error(GCOLL_ERR_TRANSPORT, "%s", tp->proc->broken)
        : tp->queue[is_recv]                ? GCOLL_SUCCESS
                                            : try_post(tp, r, &later);
    if (st != GCOLL_SUCCESS) {
        if (r->phase != DONE) { /* the completion queue failed while r waited to be posted */
            release_mr(tp->proc, r);
            free(r);
            return st;
        }
        st = gcoll__error(st, "%s", r->errmsg);
        free(r);
        return st;
    }
    if (later) {
        if (tp->queue_tail[is_recv])
            tp->queue_tail[is_recv]->next = r;
        else
            tp->queue[is_recv] = r;
        tp->queue_tail[is_recv] = r;
    }
    *out = r;
    return GCOLL_SUCCESS;
}

static gcoll_status_t post(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, int is_recv, size_t *got,
                           gcoll__tp_req_t **out)
{
    gcoll__ofi_proc_t *p = tp->proc;
    if (peer < 0 || peer >= tp->size)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "ofi transport: peer %d is not a rank of this endpoint (0..%d)",
                            peer, tp->size - 1);
    if (bytes > p->max_msg_size)
        return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                            "ofi transport: a message of %zu bytes %s rank %d exceeds provider %s's "
                            "max_msg_size of %zu bytes",
                            bytes, is_recv ? "from" : "to", peer, p->prov, p->max_msg_size);
    gcoll__tp_req_t *r = calloc(1, sizeof(*r));
    if (!r)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for a request to rank %d", peer);
    r->tp = tp;
    r->peer = peer;
    r->is_recv = is_recv;
    r->buf = buf;
    r->bytes = bytes;
    r->got = got;
    r->tag = ofi_wire_tag(tp, is_recv ? peer : tp->rank, tag);
    r->phase = QUEUED;
    pthread_mutex_lock(&p->lock);
    gcoll_status_t st = post_locked(tp, r, out);
    pthread_mutex_unlock(&p->lock);
    return st;
}

static gcoll_status_t ofi_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **req)
{
    return post(tp, peer, tag, (void *)buf, bytes, 0, NULL, req);
}

static gcoll_status_t ofi_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **req)
{
    return post(tp, peer, tag, buf, bytes, 1, NULL, req);
}

static gcoll_status_t ofi_irecv_upto(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, size_t *got,
                                     gcoll__tp_req_t **req)
{
    return post(tp, peer, tag, buf, bytes, 1, got, req);
}

/* Leaves a posted request to the completion queue: freed when its completion comes, or at close. */
static void orphan(gcoll__ofi_proc_t *p, gcoll__tp_req_t *r)
{
    r->orphan = 1;
    r->got = NULL; /* its owner is gone */
    r->next = p->orphans;
    p->orphans = r;
}

/* Drops a request never handed to the provider. */
static void cancel_queued(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    int q = r->is_recv;
    gcoll__tp_req_t *prev = NULL;
    for (gcoll__tp_req_t *x = tp->queue[q]; x; prev = x, x = x->next)
        if (x == r) {
            *(prev ? &prev->next : &tp->queue[q]) = r->next;
            if (tp->queue_tail[q] == r)
                tp->queue_tail[q] = prev;
            break;
        }
    release_mr(tp->proc, r);
    free(r);
}

static gcoll_status_t progress(gcoll__tp_t *tp)
{
    if (tp->proc->broken[0])
        return gcoll__error(GCOLL_ERR_TRANSPORT, "%s", tp->proc->broken);
    GCOLL_CHECK(flush_queue(tp, 0));
    GCOLL_CHECK(flush_queue(tp, 1));
    return drain_cq(tp->proc);
}

static gcoll_status_t test_locked(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    *done = 0;
    if (r->phase != DONE) {
        gcoll_status_t st = progress(tp);
        if (st != GCOLL_SUCCESS) { /* the queue itself failed: r may still be in the provider's hands */
            if (r->phase == POSTED && !tp->proc->broken[0])
                orphan(tp->proc, r);
            else if (r->phase == QUEUED)
                cancel_queued(tp, r);
            else /* done, or posted on an endpoint closed since */
                free(r);
            *done = 1;
            return st;
        }
        // cppcheck-suppress knownConditionTrueFalse ; a false positive: progress() and drain_cq() complete r through the queue's context pointer
        if (r->phase != DONE)
            return GCOLL_SUCCESS;
    }
    *done = 1;
    gcoll_status_t st = r->status == GCOLL_SUCCESS ? GCOLL_SUCCESS : gcoll__error(r->status, "%s", r->errmsg);
    free(r);
    return st;
}

static gcoll_status_t ofi_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    pthread_mutex_lock(&tp->proc->lock);
    gcoll_status_t st = test_locked(tp, r, done);
    pthread_mutex_unlock(&tp->proc->lock);
    return st;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Drains the queue until r is done or the deadline passes, letting the lock go between passes. */
static void wait_done(gcoll__ofi_proc_t *p, const gcoll__tp_req_t *r, double until)
{
    while (r->phase != DONE && now_s() < until) {
        if (drain_cq(p) != GCOLL_SUCCESS)
            break;
        // cppcheck-suppress knownConditionTrueFalse ; a false positive: drain_cq() completes r through the queue's context pointer
        if (r->phase != DONE) {
            pthread_mutex_unlock(&p->lock);
            sched_yield();
            pthread_mutex_lock(&p->lock);
        }
    }
}

static void ofi_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    gcoll__ofi_proc_t *p = tp->proc;
    pthread_mutex_lock(&p->lock);
    if (r->phase == QUEUED) {
        cancel_queued(tp, r);
        pthread_mutex_unlock(&p->lock);
        return;
    }
    if (r->phase == POSTED && !p->broken[0]) {
        /* The provider may still write the buffer until the operation completes (cancelled or
         * not): wait for that briefly, else leave it to close(), which waits for it again. */
        ssize_t rc = fi_cancel(&p->ep->fid, &r->ctx);
        if (rc)
            GCOLL_LOG(GCOLL_LOG_DEBUG, "ofi: provider %s did not cancel a %s rank %d: %s", p->prov, op_name(r), r->peer,
                      fi_strerror((int)-rc));
        wait_done(p, r, now_s() + CANCEL_WAIT_S);
        if (r->phase != DONE) {
            GCOLL_LOG(GCOLL_LOG_DEBUG, "ofi: a cancelled %s rank %d is still in flight; awaited at close", op_name(r),
                      r->peer);
            orphan(p, r);
            pthread_mutex_unlock(&p->lock);
            return;
        }
    }
    pthread_mutex_unlock(&p->lock);
    free(r);
}

/* One of tp's orphans still in the provider's hands, receives (is_recv 1) or sends (0). */
static gcoll__tp_req_t *held_by(const gcoll__ofi_proc_t *p, const gcoll__tp_t *tp, int is_recv)
{
    for (gcoll__tp_req_t *r = p->orphans; r; r = r->next)
        if (r->tp == tp && !r->holds_chan && r->is_recv == is_recv)
            return r;
    return NULL;
}

/* Drains the queue until tp has no orphan of that kind or the time passes; 1 when none is left. */
static int await(gcoll__ofi_proc_t *p, const gcoll__tp_t *tp, int is_recv, double by)
{
    while (held_by(p, tp, is_recv) && now_s() < by && drain_cq(p) == GCOLL_SUCCESS) {
        pthread_mutex_unlock(&p->lock);
        sched_yield();
        pthread_mutex_lock(&p->lock);
    }
    return !held_by(p, tp, is_recv) || p->broken[0];
}

int gcoll__ofi_settle(gcoll__tp_t *tp, double recv_s, double send_s, int *sends_left)
{
    gcoll__ofi_proc_t *p = tp->proc;
    double now = now_s(), until = now + recv_s, sends_by = now + send_s;
    *sends_left = 0;
    /* receives first: no send is marked (and lets its channel go at completion) while one waits */
    if (!await(p, tp, 1, until))
        return 0;
    if (await(p, tp, 0, sends_by))
        return 1;
    for (gcoll__tp_req_t *r = p->orphans; r; r = r->next) /* all at once, under the lock */
        if (r->tp == tp && !r->is_recv) {
            r->holds_chan = 1;
            r->tp = NULL;
            *sends_left = 1;
        }
    return 1;
}

void gcoll__ofi_free_orphans(gcoll__ofi_proc_t *p)
{
    while (p->orphans) {
        gcoll__tp_req_t *r = p->orphans;
        p->orphans = r->next;
        free(r); /* its registration goes with the cache */
    }
}

/* An explicit registration holds its cache entry, so operations on that buffer never wait for
 * one and it is never evicted, until dereg_mem. */
static gcoll_status_t ofi_reg_mem(gcoll__tp_t *tp, void *buf, size_t bytes, void **handle)
{
    gcoll__ofi_mr_entry_t *e;
    pthread_mutex_lock(&tp->proc->lock);
    gcoll_status_t st = tp->proc->broken[0] ? gcoll__error(GCOLL_ERR_TRANSPORT, "%s", tp->proc->broken)
                                            : gcoll__ofi_mrcache_get(tp->proc->mrc, buf, bytes, &e);
    pthread_mutex_unlock(&tp->proc->lock);
    if (st == GCOLL_SUCCESS)
        *handle = e;
    return st;
}

static void ofi_dereg_mem(gcoll__tp_t *tp, void *handle)
{
    pthread_mutex_lock(&tp->proc->lock);
    if (!tp->proc->broken[0]) /* else the cache went with the endpoint */
        gcoll__ofi_mrcache_put(tp->proc->mrc, handle);
    pthread_mutex_unlock(&tp->proc->lock);
}

/* A peer whose messages failed with a lost connection; else, among the peers of this machine's
 * pid space, one whose process is gone (its connection may not have failed anything yet: a
 * receive waits on it quietly). Drives the queue first, so that pending errors come in. */
static int ofi_dead_peer(gcoll__tp_t *tp, char *why, size_t len)
{
    pthread_mutex_lock(&tp->proc->lock);
    gcoll_status_t st = drain_cq(tp->proc);
    int lost = tp->lost;
    if (lost >= 0)
        snprintf(why, len, "%s", tp->lost_why);
    pthread_mutex_unlock(&tp->proc->lock);
    if (st != GCOLL_SUCCESS)
        return -1; /* the queue failing is no news of a peer; the operation's own test reports it */
    if (lost >= 0)
        return lost;
    for (int q = 0; q < tp->size && tp->space; q++)
        if (q != tp->rank && tp->spaces[q] == tp->space && gcoll__process_gone((pid_t)tp->pids[q])) {
            snprintf(why, len, "its process (pid %d on this host) has exited", (int)tp->pids[q]);
            return q;
        }
    return -1;
}

const gcoll__transport_t gcoll__transport_ofi_raw = {
    .name = "ofi",
    .create = gcoll__ofi_create,
    .addr_len = gcoll__ofi_addr_len,
    .addr = gcoll__ofi_addr,
    .connect = gcoll__ofi_connect,
    .isend = ofi_isend,
    .irecv = ofi_irecv,
    .irecv_upto = ofi_irecv_upto,
    .test = ofi_test,
    .cancel = ofi_cancel,
    .dead_peer = ofi_dead_peer,
    .reg_mem = ofi_reg_mem,
    .dereg_mem = ofi_dereg_mem,
    .close = gcoll__ofi_close,
};

#else /* !GCOLL_HAVE_OFI */

static gcoll_status_t ofi_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp)
{
    (void)boot;
    (void)tp;
    return gcoll__error(GCOLL_ERR_UNSUPPORTED, "ofi transport: built without libfabric (OFI=0)");
}

const gcoll__transport_t gcoll__transport_ofi_raw = {.name = "ofi", .create = ofi_create};

#endif

/* Framed, so that its messages say which operation sent them. ofi registers memory (the payloads
 * go zero-copy, so registering the caller's buffer still pays) and tells of dead peers: those
 * pass through to it. */
static gcoll_status_t framed_create(const gcoll__bootstrap_t *boot, gcoll__tp_t **tp)
{
    return gcoll__frame_create(&gcoll__transport_ofi_raw, boot, GCOLL_FRAME_CTL_MAX, tp);
}

const gcoll__transport_t gcoll__transport_ofi =
    GCOLL_FRAMED("ofi", framed_create, .reg_mem = gcoll__frame_reg_mem, .dereg_mem = gcoll__frame_dereg_mem,
                 .dead_peer = gcoll__frame_dead_peer);
