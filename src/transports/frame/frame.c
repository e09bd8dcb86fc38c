/* The framing of transports that carry raw tagged bytes (MPI, libfabric, plugins): a wrapper
 * whose messages name their operation, so ranks that call different collectives, counts, dtypes
 * or roots get GCOLL_ERR_INVALID_USAGE naming both sides instead of garbage or a hang. Per pair,
 * fixed-size control messages under inner tag 1 carry headers and small payloads; a larger
 * payload follows under its operation's tag shifted left by one (docs/design.md). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/log.h"
#include "transports/frame/frame.h"
#include "transports/mismatch.h"

#define CTL_BYTES GCOLL_FRAME_CTL_BYTES
#define HDR_BYTES 40
#define INLINE_MAX (CTL_BYTES - HDR_BYTES) /* also the longest notice, on every transport */
#define CTL_DEPTH 4                        /* control receives posted per peer */
#define POLL_OTHERS 8                      /* every this many tests read control streams no receive waits on */
#define FLUSH_S 0.1                        /* how long close lets notices and abandoned control messages go out */
#define NOTICE_FLUSH_S 1.0                 /* how long a rank that found a mismatch drives its notices out */
#define MAGIC 0x52464347u                  /* "GCFR" */
#define CTL_TAG 1u
#define DATA_TAG(tag) ((uint32_t)(tag) << 1)

enum { T_DATA = 1, T_NOTICE = 2 };
enum { R_WAIT_HDR, R_WAIT_DATA, R_DONE, R_FAILED };

typedef struct blk {
    struct blk *next;
    size_t len;        /* how much of b a received control message filled */
    unsigned char b[]; /* the endpoint's ctl_bytes */
} blk_t;

/* A control send whose framed request is gone (a notice, or a request failed or cancelled): its
 * buffer lives until the inner send completes. */
typedef struct orphan {
    struct orphan *next;
    gcoll__tp_req_t *in;
    blk_t *blk;
} orphan_t;

struct gcoll__tp_req {
    struct gcoll__tp_req *prev, *next; /* every live request of the endpoint, for failing them all */
    struct gcoll__tp_req *wnext;       /* a receive's place in its peer's list of receives awaiting a header */
    gcoll__tp_req_t *hdr;              /* inner: a send's control message */
    gcoll__tp_req_t *data;             /* inner: the payload, sent or received apart */
    blk_t *blk;                        /* a send's control message */
    int peer, is_recv, state;
    uint32_t tag;
    void *buf;
    size_t bytes;
    gcoll_status_t status;
    char why[320];
};

typedef struct {
    gcoll__tp_req_t *ctl[CTL_DEPTH]; /* inner receives of the control stream; they complete in order */
    blk_t *ctl_buf[CTL_DEPTH];
    unsigned head;
    gcoll__tp_req_t *waiting, **waiting_tail; /* receives awaiting their header, in posting order */
    blk_t *unexp, **unexp_tail;               /* control messages no receive asked for yet, in order */
    gcoll_status_t failed;                    /* the inner transport failed the control stream */
} peer_t;

struct gcoll__tp {
    const gcoll__transport_t *inner;
    gcoll__tp_t *in;
    const gcoll__optab_t *optab;
    int rank, size;
    unsigned polls, rr;
    peer_t *peers;
    gcoll__tp_req_t *live;
    blk_t *pool;
    orphan_t *orphans;
    /* Control messages: CTL_BYTES each over a transport of exact sizes; where receives take
     * shorter messages (irecv_upto), as long as their header and inline payload, up to CTL_MAX,
     * so that messages up to inline_max bytes travel as one */
    size_t ctl_bytes, inline_max;
    gcoll__mismatch_t mm; /* once it found or was told of a mismatch, every request fails */
};

/* ---- buffers and the wire ---- */

static blk_t *get_blk(gcoll__tp_t *tp)
{
    blk_t *b = tp->pool;
    if (b) {
        tp->pool = b->next;
        return b;
    }
    return calloc(1, sizeof(*b) + tp->ctl_bytes);
}

/* A control message of a transport of exact sizes goes out whole: the bytes past what it
 * carries are zeroed, so that no earlier message's bytes leave with it. */
static size_t ctl_len(const gcoll__tp_t *tp, blk_t *b, size_t used)
{
    if (tp->inner->irecv_upto)
        return used;
    memset(b->b + used, 0, CTL_BYTES - used);
    return CTL_BYTES;
}

static void put_blk(gcoll__tp_t *tp, blk_t *b)
{
    b->next = tp->pool;
    tp->pool = b;
}

typedef struct {
    uint32_t magic, type, tag, pad;
    gcoll__opdesc_t desc;
    uint64_t bytes;
} hdr_t;

_Static_assert(sizeof(hdr_t) == HDR_BYTES, "the header's layout is the wire's");

static void put_hdr(blk_t *b, uint32_t type, uint32_t tag, const gcoll__opdesc_t *d, uint64_t bytes)
{
    hdr_t h = {.magic = MAGIC, .type = type, .tag = tag, .bytes = bytes};
    if (d)
        h.desc = *d;
    memcpy(b->b, &h, sizeof(h));
}

static hdr_t get_hdr(const blk_t *b)
{
    hdr_t h;
    memcpy(&h, b->b, sizeof(h));
    return h;
}

/* ---- requests ---- */

static void link_live(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    r->prev = NULL;
    r->next = tp->live;
    if (tp->live)
        tp->live->prev = r;
    tp->live = r;
}

static void unlink_live(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        tp->live = r->next;
    if (r->next)
        r->next->prev = r->prev;
}

static void unlink_waiting(peer_t *p, gcoll__tp_req_t *r)
{
    for (gcoll__tp_req_t **q = &p->waiting; *q; q = &(*q)->wnext)
        if (*q == r) {
            *q = r->wnext;
            if (p->waiting_tail == &r->wnext)
                p->waiting_tail = q;
            return;
        }
}

/* Keeps an inner control send going without its request: its buffer is freed when it completes. */
static void orphan(gcoll__tp_t *tp, gcoll__tp_req_t *in, blk_t *b)
{
    orphan_t *o = malloc(sizeof(*o));
    if (!o) { /* the send is abandoned: the buffer stays with it, a leak instead of a fault */
        tp->inner->cancel(tp->in, in);
        return;
    }
    *o = (orphan_t){tp->orphans, in, b};
    tp->orphans = o;
}

/* Tests every orphan once; those done are freed. */
static void reap_orphans(gcoll__tp_t *tp)
{
    for (orphan_t **q = &tp->orphans; *q;) {
        orphan_t *o = *q;
        int done = 0;
        if (tp->inner->test(tp->in, o->in, &done) != GCOLL_SUCCESS || done) {
            *q = o->next;
            put_blk(tp, o->blk);
            free(o);
        } else {
            q = &o->next;
        }
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A provider that progresses only when called (tcp;ofi_rxm) would hold the notices while this
 * rank fails its requests and goes on to other work, and its peers wait: they are driven out
 * here, for a bounded time. */
static void flush_orphans(gcoll__tp_t *tp, double seconds)
{
    double until = now_s() + seconds;
    while (tp->orphans && now_s() < until)
        reap_orphans(tp);
}

/* Lets go of r's inner operations: its payload's is cancelled (the buffer is the caller's, who
 * gave up on it), a send's control message is left to finish (its buffer is ours). */
static void drop_inner(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    if (r->data)
        tp->inner->cancel(tp->in, r->data);
    r->data = NULL;
    if (r->hdr)
        orphan(tp, r->hdr, r->blk);
    else if (r->blk)
        put_blk(tp, r->blk);
    r->hdr = NULL;
    r->blk = NULL;
}

static void fail_req(gcoll__tp_t *tp, gcoll__tp_req_t *r, gcoll_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail_req(gcoll__tp_t *tp, gcoll__tp_req_t *r, gcoll_status_t st, const char *fmt, ...)
{
    if (r->state == R_DONE || r->state == R_FAILED)
        return;
    if (r->is_recv && r->state == R_WAIT_HDR)
        unlink_waiting(&tp->peers[r->peer], r);
    drop_inner(tp, r);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    r->status = st;
    r->state = R_FAILED;
}

/* Reports r as test reports a finished request, and frees it. */
static gcoll_status_t finish(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    gcoll_status_t st = r->status;
    if (st != GCOLL_SUCCESS)
        gcoll__error(st, "%s", r->why);
    if (r->blk)
        put_blk(tp, r->blk);
    unlink_live(tp, r);
    free(r);
    *done = 1;
    return st;
}

/* ---- mismatch detection ---- */

static void fail_all(gcoll__tp_t *tp)
{
    for (gcoll__tp_req_t *r = tp->live; r; r = r->next)
        fail_req(tp, r, tp->mm.status, "%s", tp->mm.why);
}

/* The endpoint has just failed: a notice tells every peer (best effort, as tcp's: a peer whose
 * notice cannot be posted learns of the mismatch from a stalled exchange or GCOLL_TIMEOUT), and
 * every request fails. */
static void tell_peers(gcoll__tp_t *tp)
{
    for (int q = 0; q < tp->size; q++) {
        blk_t *b;
        if (q == tp->rank || tp->peers[q].failed || !(b = get_blk(tp)))
            continue;
        put_hdr(b, T_NOTICE, 0, NULL, 0);
        size_t n = strnlen(tp->mm.why, INLINE_MAX - 1); /* the names of both sides come first */
        memcpy(b->b + HDR_BYTES, tp->mm.why, n);
        b->b[HDR_BYTES + n] = '\0';
        gcoll__tp_req_t *in;
        if (tp->inner->isend(tp->in, q, CTL_TAG, b->b, ctl_len(tp, b, HDR_BYTES + n + 1), &in) == GCOLL_SUCCESS)
            orphan(tp, in, b);
        else
            put_blk(tp, b);
    }
    fail_all(tp);
    flush_orphans(tp, NOTICE_FLUSH_S);
}

/* The transport table's mismatch: the other endpoint of a route found or was told of one. */
void gcoll__frame_mismatch(gcoll__tp_t *tp, const char *why)
{
    if (gcoll__mismatch_told(&tp->mm, why))
        tell_peers(tp);
}

/* A peer's notice: this endpoint fails with its text. */
static void notice_arrived(gcoll__tp_t *tp, int peer, blk_t *b)
{
    char *text = (char *)b->b + HDR_BYTES;
    size_t n = b->len > HDR_BYTES ? b->len - HDR_BYTES : 0;
    text[n < INLINE_MAX - 1 ? n : INLINE_MAX - 1] = '\0';
    if (gcoll__mismatch_notice(&tp->mm, peer, text))
        fail_all(tp);
}

/* Whether the header's operation agrees with this rank's of its tag; fails the endpoint if not. */
static int agrees(gcoll__tp_t *tp, int peer, const hdr_t *h)
{
    if (gcoll__mismatch_agree(tp->optab, h->tag, &h->desc))
        return 1;
    if (gcoll__mismatch_found(&tp->mm, tp->optab, h->tag, tp->rank, &h->desc, peer))
        tell_peers(tp);
    return 0;
}

/* ---- receiving ---- */

/* Hands a data header (and its inline payload) to the receive r of its operation. */
static void deliver(gcoll__tp_t *tp, gcoll__tp_req_t *r, const blk_t *b)
{
    hdr_t h = get_hdr(b);
    if (h.bytes != r->bytes) {
        fail_req(tp, r, GCOLL_ERR_TRANSPORT,
                 "%s transport: rank %d sent %llu bytes with tag %u; the receive expects %zu", tp->inner->name, r->peer,
                 (unsigned long long)h.bytes, (unsigned)r->tag, r->bytes);
    } else if (r->bytes <= tp->inline_max && b->len < HDR_BYTES + r->bytes) {
        fail_req(tp, r, GCOLL_ERR_TRANSPORT,
                 "%s transport: rank %d's control message of %zu bytes is too short for "
                 "the %zu bytes it announces",
                 tp->inner->name, r->peer, b->len, r->bytes);
    } else if (r->bytes <= tp->inline_max) {
        if (r->bytes)
            memcpy(r->buf, b->b + HDR_BYTES, r->bytes);
        r->state = R_DONE;
    } else {
        r->state = R_WAIT_DATA; /* its payload's receive is posted */
    }
}

static void fail_peer(gcoll__tp_t *tp, int q, gcoll_status_t st, const char *why)
{
    peer_t *p = &tp->peers[q];
    if (p->failed)
        return;
    p->failed = st;
    GCOLL_LOG(GCOLL_LOG_WARN, "%s: the control stream from rank %d failed: %s", tp->inner->name, q, why);
    for (gcoll__tp_req_t *r = tp->live; r; r = r->next)
        if (r->peer == q)
            fail_req(tp, r, st, "%s", why);
}

/* A control message from peer q, in the order q sent them. Returns whether b was kept. */
static int on_control(gcoll__tp_t *tp, int q, blk_t *b)
{
    peer_t *p = &tp->peers[q];
    hdr_t h = get_hdr(b);
    if (b->len < HDR_BYTES || h.magic != MAGIC || (h.type != T_DATA && h.type != T_NOTICE)) {
        char why[160];
        snprintf(why, sizeof(why), "%s transport: rank %d sent a control message that is not one of gcoll's",
                 tp->inner->name, q);
        fail_peer(tp, q, GCOLL_ERR_TRANSPORT, why);
        return 0;
    }
    if (h.type == T_NOTICE) {
        notice_arrived(tp, q, b);
        return 0;
    }
    if (tp->mm.status || !agrees(tp, q, &h))
        return 0;
    for (gcoll__tp_req_t *r = p->waiting; r; r = r->wnext)
        if (r->tag == h.tag) {
            unlink_waiting(p, r);
            deliver(tp, r, b);
            return 0;
        }
    b->next = NULL;
    *p->unexp_tail = b;
    p->unexp_tail = &b->next;
    return 1;
}

static gcoll_status_t post_ctl(gcoll__tp_t *tp, int q, unsigned slot)
{
    peer_t *p = &tp->peers[q];
    blk_t *b = get_blk(tp);
    if (!b)
        return gcoll__error(GCOLL_ERR_NOMEM, "%s transport: no memory for a control buffer", tp->inner->name);
    b->len = tp->inner->irecv_upto ? 0 : CTL_BYTES; /* 0 until a completion reports a length */
    gcoll_status_t st = tp->inner->irecv_upto
        ? tp->inner->irecv_upto(tp->in, q, CTL_TAG, b->b, tp->ctl_bytes, &b->len, &p->ctl[slot])
        : tp->inner->irecv(tp->in, q, CTL_TAG, b->b, CTL_BYTES, &p->ctl[slot]);
    if (st != GCOLL_SUCCESS) {
        put_blk(tp, b);
        p->ctl[slot] = NULL;
        return st;
    }
    p->ctl_buf[slot] = b;
    return GCOLL_SUCCESS;
}

/* Reads what has arrived on q's control stream: until the receive want has its header, or one
 * message where want is NULL. It stops there because a test that finds nothing costs more than a
 * call (Open MPI yields the core in it when ranks outnumber cores). */
static void poll_peer(gcoll__tp_t *tp, int q, const gcoll__tp_req_t *want)
{
    peer_t *p = &tp->peers[q];
    while (!p->failed && !tp->mm.status) {
        unsigned i = p->head;
        int done = 0;
        gcoll_status_t st = tp->inner->test(tp->in, p->ctl[i], &done);
        if (st != GCOLL_SUCCESS || done)
            p->ctl[i] = NULL; /* the inner transport freed it */
        if (st != GCOLL_SUCCESS) {
            char why[320];
            snprintf(why, sizeof(why), "%s", gcoll_last_error());
            put_blk(tp, p->ctl_buf[i]);
            p->ctl_buf[i] = NULL;
            fail_peer(tp, q, st, why);
            return;
        }
        if (!done)
            return;
        if (!on_control(tp, q, p->ctl_buf[i]))
            put_blk(tp, p->ctl_buf[i]);
        p->ctl_buf[i] = NULL;
        p->head = (i + 1) % CTL_DEPTH;
        if ((st = post_ctl(tp, q, i)) != GCOLL_SUCCESS) {
            char why[320];
            snprintf(why, sizeof(why), "%s", gcoll_last_error());
            fail_peer(tp, q, st, why);
            return;
        }
        if (!want || want->state != R_WAIT_HDR)
            return;
    }
}

static gcoll_status_t refused(gcoll__tp_t *tp, int peer)
{
    if (tp->mm.status)
        return gcoll__mismatch_error(&tp->mm);
    if (peer < 0 || peer >= tp->size || peer == tp->rank) /* the control streams join distinct ranks */
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s transport: peer %d is not another rank of this endpoint (0..%d)",
                            tp->inner->name, peer, tp->size - 1);
    if (tp->peers[peer].failed)
        return gcoll__error(tp->peers[peer].failed, "%s transport: the control stream from rank %d failed earlier",
                            tp->inner->name, peer);
    return GCOLL_SUCCESS;
}

static gcoll__tp_req_t *new_req(int peer, uint32_t tag, void *buf, size_t bytes, int is_recv)
{
    gcoll__tp_req_t *r = malloc(sizeof(*r));
    if (!r)
        return NULL;
    r->wnext = NULL;
    r->hdr = r->data = NULL;
    r->blk = NULL;
    r->peer = peer;
    r->is_recv = is_recv;
    r->state = R_WAIT_HDR;
    r->tag = tag;
    r->buf = buf;
    r->bytes = bytes;
    r->status = GCOLL_SUCCESS;
    r->why[0] = '\0';
    return r;
}

gcoll_status_t gcoll__frame_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                  gcoll__tp_req_t **out)
{
    GCOLL_CHECK(refused(tp, peer));
    gcoll__tp_req_t *r = new_req(peer, tag, buf, bytes, 1);
    if (!r)
        return gcoll__error(GCOLL_ERR_NOMEM, "%s transport: no memory for a request", tp->inner->name);
    peer_t *p = &tp->peers[peer];
    blk_t **u = &p->unexp;
    while (*u && get_hdr(*u).tag != tag)
        u = &(*u)->next;
    int early = *u != NULL;
    if (early) { /* its header came first: the payload is posted only for a message that matches */
        blk_t *b = *u;
        *u = b->next;
        if (p->unexp_tail == &b->next)
            p->unexp_tail = u;
        hdr_t h = get_hdr(b);
        link_live(tp, r);
        if (agrees(tp, peer, &h)) /* else the mismatch failed r with the others */
            deliver(tp, r, b);
        put_blk(tp, b);
        if (r->state != R_WAIT_DATA) {
            *out = r;
            return GCOLL_SUCCESS;
        }
    }
    if (bytes > tp->inline_max) {
        gcoll_status_t st = tp->inner->irecv(tp->in, peer, DATA_TAG(tag), buf, bytes, &r->data);
        if (st != GCOLL_SUCCESS) {
            r->data = NULL;
            if (early)
                unlink_live(tp, r);
            free(r);
            return st;
        }
    }
    if (!early) {
        link_live(tp, r);
        *p->waiting_tail = r;
        p->waiting_tail = &r->wnext;
    }
    *out = r;
    return GCOLL_SUCCESS;
}

/* ---- sending ---- */

gcoll_status_t gcoll__frame_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                  gcoll__tp_req_t **out)
{
    GCOLL_CHECK(refused(tp, peer));
    gcoll__tp_req_t *r = new_req(peer, tag, (void *)buf, bytes, 0);
    blk_t *b = r ? get_blk(tp) : NULL;
    if (!b) {
        free(r);
        return gcoll__error(GCOLL_ERR_NOMEM, "%s transport: no memory for a message", tp->inner->name);
    }
    put_hdr(b, T_DATA, tag, gcoll__optab_find(tp->optab, tag, &(gcoll__opdesc_t){0}), bytes);
    int inl = bytes <= tp->inline_max;
    if (inl && bytes)
        memcpy(b->b + HDR_BYTES, buf, bytes);
    gcoll_status_t st =
        tp->inner->isend(tp->in, peer, CTL_TAG, b->b, ctl_len(tp, b, HDR_BYTES + (inl ? bytes : 0)), &r->hdr);
    if (st != GCOLL_SUCCESS) {
        put_blk(tp, b);
        free(r);
        return st;
    }
    r->blk = b;
    if (!inl && (st = tp->inner->isend(tp->in, peer, DATA_TAG(tag), buf, bytes, &r->data)) != GCOLL_SUCCESS) {
        /* the header is out: the receiver fails when the payload does not come, as on a lost link */
        r->data = NULL;
        orphan(tp, r->hdr, b);
        free(r);
        return st;
    }
    r->state = R_WAIT_DATA;
    link_live(tp, r);
    *out = r;
    return GCOLL_SUCCESS;
}

/* ---- progress ---- */

/* Tests *in, one of r's inner operations; clears it when it is over. */
static gcoll_status_t test_inner(gcoll__tp_t *tp, gcoll__tp_req_t **in)
{
    int done = 0;
    gcoll_status_t st = tp->inner->test(tp->in, *in, &done);
    if (st != GCOLL_SUCCESS || done)
        *in = NULL;
    return st;
}

gcoll_status_t gcoll__frame_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    *done = 0;
    if (tp->orphans)
        reap_orphans(tp);
    /* As few inner tests as the inner transport's own use would make (see poll_peer): a receive
     * awaiting its header reads its peer's stream at every call; the other streams (notices,
     * messages no receive asks for) are read every POLL_OTHERS calls; a send's payload is tested
     * once its header is out. */
    int sweep = ++tp->polls % POLL_OTHERS == 0;
    if (r->state == R_WAIT_HDR)
        poll_peer(tp, r->peer, r);
    else if (sweep && r->state == R_WAIT_DATA)
        poll_peer(tp, r->peer, NULL);
    if (sweep && r->state < R_DONE && tp->size > 2) {
        tp->rr = (tp->rr + 1) % (unsigned)tp->size;
        if ((int)tp->rr != tp->rank && (int)tp->rr != r->peer)
            poll_peer(tp, (int)tp->rr, NULL);
    }
    if (r->state == R_WAIT_DATA) {
        gcoll_status_t st = GCOLL_SUCCESS;
        if (r->hdr)
            st = test_inner(tp, &r->hdr);
        if (st == GCOLL_SUCCESS && !r->hdr && r->data)
            st = test_inner(tp, &r->data);
        if (st != GCOLL_SUCCESS) {
            char why[320];
            snprintf(why, sizeof(why), "%s", gcoll_last_error());
            fail_req(tp, r, st, "%s", why);
        } else if (!r->hdr && !r->data) {
            r->state = R_DONE;
        }
    }
    return r->state >= R_DONE ? finish(tp, r, done) : GCOLL_SUCCESS;
}

/* The transport table's check: a route's rank that waits only on its other endpoint reads one
 * stream of this one per call, in turn (a notice, or a message no receive asks for). */
gcoll_status_t gcoll__frame_check(gcoll__tp_t *tp)
{
    if (tp->orphans)
        reap_orphans(tp);
    if (!tp->mm.status && tp->size > 1) {
        tp->rr = (tp->rr + 1) % (unsigned)tp->size;
        if ((int)tp->rr == tp->rank)
            tp->rr = (tp->rr + 1) % (unsigned)tp->size;
        poll_peer(tp, (int)tp->rr, NULL);
    }
    return tp->mm.status ? gcoll__mismatch_error(&tp->mm) : GCOLL_SUCCESS;
}

void gcoll__frame_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    if (r->is_recv && r->state == R_WAIT_HDR)
        unlink_waiting(&tp->peers[r->peer], r);
    drop_inner(tp, r);
    unlink_live(tp, r);
    free(r);
}

/* ---- set-up and close ---- */

/* ctl_max: the longest control message for an inner transport whose receives take shorter ones. */
gcoll_status_t gcoll__frame_create(const gcoll__transport_t *inner, const gcoll__bootstrap_t *boot, size_t ctl_max,
                                   gcoll__tp_t **out)
{
    gcoll__tp_t *tp = calloc(1, sizeof(*tp));
    if (tp)
        tp->peers = calloc((size_t)boot->size, sizeof(*tp->peers));
    if (!tp || !tp->peers) {
        free(tp);
        return gcoll__error(GCOLL_ERR_NOMEM, "%s transport: no memory for an endpoint", inner->name);
    }
    tp->inner = inner;
    tp->optab = boot->optab;
    tp->mm.name = inner->name;
    tp->ctl_bytes = inner->irecv_upto ? ctl_max : CTL_BYTES;
    tp->inline_max = tp->ctl_bytes - HDR_BYTES;
    tp->rank = boot->rank;
    tp->size = boot->size;
    tp->rr = (unsigned)boot->rank;
    for (int q = 0; q < tp->size; q++) {
        tp->peers[q].waiting_tail = &tp->peers[q].waiting;
        tp->peers[q].unexp_tail = &tp->peers[q].unexp;
    }
    gcoll_status_t st = inner->create(boot, &tp->in);
    if (st != GCOLL_SUCCESS) {
        free(tp->peers);
        free(tp);
        return st;
    }
    *out = tp;
    return GCOLL_SUCCESS;
}

size_t gcoll__frame_addr_len(gcoll__tp_t *tp)
{
    return tp->inner->addr_len(tp->in);
}

gcoll_status_t gcoll__frame_addr(gcoll__tp_t *tp, void *buf)
{
    return tp->inner->addr(tp->in, buf);
}

/* Connects the inner endpoint and posts the control receives. */
gcoll_status_t gcoll__frame_connect(gcoll__tp_t *tp, const void *all)
{
    GCOLL_CHECK(tp->inner->connect(tp->in, all));
    for (int q = 0; q < tp->size; q++)
        for (unsigned i = 0; q != tp->rank && i < CTL_DEPTH; i++)
            GCOLL_CHECK(post_ctl(tp, q, i));
    return GCOLL_SUCCESS;
}

void gcoll__frame_close(gcoll__tp_t *tp)
{
    while (tp->live)
        gcoll__frame_cancel(tp, tp->live);
    flush_orphans(tp, FLUSH_S); /* a notice should reach its peer before the endpoint goes */
    for (orphan_t *o = tp->orphans; o; o = o->next)
        tp->inner->cancel(tp->in, o->in);
    for (int q = 0; q < tp->size; q++)
        for (unsigned i = 0; i < CTL_DEPTH; i++)
            if (tp->peers[q].ctl[i])
                tp->inner->cancel(tp->in, tp->peers[q].ctl[i]);
    /* a cancelled operation may still hold its buffer until the inner endpoint is closed */
    tp->inner->close(tp->in);
    for (orphan_t *o = tp->orphans, *next; o; o = next) {
        next = o->next;
        free(o->blk);
        free(o);
    }
    for (int q = 0; q < tp->size; q++) {
        peer_t *p = &tp->peers[q];
        for (unsigned i = 0; i < CTL_DEPTH; i++)
            free(p->ctl_buf[i]);
        for (blk_t *b = p->unexp, *next; b; b = next) {
            next = b->next;
            free(b);
        }
    }
    for (blk_t *b = tp->pool, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(tp->peers);
    free(tp);
}

/* ---- what passes through to the inner transport ---- */

gcoll_status_t gcoll__frame_reg_mem(gcoll__tp_t *tp, void *buf, size_t bytes, void **handle)
{
    return tp->inner->reg_mem(tp->in, buf, bytes, handle);
}

void gcoll__frame_dereg_mem(gcoll__tp_t *tp, void *handle)
{
    tp->inner->dereg_mem(tp->in, handle);
}

int gcoll__frame_dead_peer(gcoll__tp_t *tp, char *why, size_t len)
{
    return tp->inner->dead_peer(tp->in, why, len);
}
