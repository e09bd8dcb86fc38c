/* The shared-memory point-to-point transport: one single-producer ring per ordered pair of local
 * ranks. Small messages travel inline in cells; larger ones single copy (the receiver reads the
 * sender's buffer with process_vm_readv) where the kernel permits, else as fragments. Messages
 * with one tag match in posting order; a message's first cell carries its operation's descriptor
 * for mismatch detection. docs/design.md describes the protocol. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "transports/mismatch.h"
#include "transports/queue.h"
#include "transports/transport.h"
#include "transports/shm/shm_internal.h"

struct gcoll__tp_req {
    struct gcoll__tp_req *next;
    int peer, is_recv, done;
    uint32_t tag;
    char *buf;
    size_t bytes, moved;        /* moved: bytes written (send) or received (recv) so far */
    uint64_t msgid;             /* single-copy send: complete once the receiver acknowledges this id */
    int started;                /* send: its first cell is in the ring */
    gcoll__opdesc_t desc;       /* send: the operation of its tag, for the receiver to check */
    gcoll__tp_landed_fn landed; /* recv: told of each part as it lands (NULL: nobody) */
    void *landed_arg;
    gcoll_status_t status;
};

typedef struct unexpected {
    struct unexpected *next;
    uint32_t tag, kind;
    size_t total, have;
    uint64_t addr, msgid;
    gcoll__opdesc_t desc; /* the sender's operation of tag */
    char *data;           /* copied payload (inline and fragments) */
} unexpected_t;

typedef struct {
    gcoll__tp_req_t *sends, *sends_tail; /* not yet completely in the ring, in posting order */
    gcoll__tp_req_t *acks, *acks_tail;   /* single-copy sends in the ring, unacknowledged, by id */
    gcoll__tp_req_t *recvs, *recvs_tail; /* posted, in order */
    unexpected_t *unexp, *unexp_tail;
    uint64_t tail, head;        /* cells written to / read from the peer's rings */
    uint64_t cma_sent;          /* single-copy messages sent to this peer */
    gcoll__tp_req_t *receiving; /* the receive a fragmented message is landing in */
    unexpected_t *stashing;     /* or the unexpected copy it is landing in */
} peer_t;

struct gcoll__shm_p2p {
    peer_t *peers;
    uint64_t events;             /* this rank's ring events, published for sleepers */
    const gcoll__optab_t *optab; /* the communicator's operations by tag (NULL: unchecked) */
    int *ranks;                  /* communicator rank of each local rank (NULL: the same) */
    gcoll__mismatch_t mm;        /* once the ranks' calls were found to differ, every request and call fails */
    int down;                    /* a local rank said a rank of the communicator died: progress fails */
    char down_why[GCOLL_SHM_NOTICE + 32];
};

/* Tells local rank peer (-1: every rank) that a ring between them moved, waking it if it sleeps. */
static void ring_event(gcoll__shm_t *s, int peer)
{
    gcoll__shm_ring_event(s, ++s->p2p->events, peer);
}

struct gcoll__tp {
    gcoll__shm_t *ch;
};

/* ---- mismatch detection ---- */

int gcoll__shm_rank_of(const gcoll__shm_t *s, int local)
{
    return s->p2p && s->p2p->ranks ? s->p2p->ranks[local] : local;
}

/* The endpoint has just failed: its notice tells every peer, so that ranks which would only wait
 * for this one fail at once instead of at GCOLL_TIMEOUT. */
static void tell_peers(gcoll__shm_t *s)
{
    const gcoll__mismatch_t *mm = &s->p2p->mm;
    gcoll__shm_ctrl_t *c = &s->ctrl[s->info.me];
    size_t n = strnlen(mm->why, sizeof(c->why) - 1);
    memcpy(c->why, mm->why, n);
    c->why[n] = '\0';
    atomic_store_explicit(&c->mismatch, 1, memory_order_release);
    ring_event(s, -1); /* wakes the peers that sleep on the channel */
}

/* The transport table's mismatch: the other endpoint of a route found or was told of one. */
static void shm_mismatch(gcoll__tp_t *tp, const char *why)
{
    if (gcoll__mismatch_told(&tp->ch->p2p->mm, why))
        tell_peers(tp->ch);
}

/* Local rank peer has published a mismatch notice: this endpoint fails with its text. */
static void notice_arrived(gcoll__shm_t *s, int peer)
{
    char text[GCOLL_SHM_NOTICE];
    memcpy(text, s->ctrl[peer].why, sizeof(text));
    text[sizeof(text) - 1] = '\0';
    gcoll__mismatch_notice(&s->p2p->mm, gcoll__shm_rank_of(s, peer), text);
}

/* The transport table's peer_down: the other endpoint of a route lost a rank (of another host):
 * this rank's notice tells the ranks of this host, which fail as soon as they read it. */
static void shm_peer_down(gcoll__tp_t *tp, int rank, const char *why)
{
    (void)rank; /* not a rank of this host: the text names it */
    gcoll__shm_t *s = tp->ch;
    gcoll__shm_ctrl_t *c = &s->ctrl[s->info.me];
    if (atomic_load_explicit(&c->down, memory_order_relaxed))
        return;
    size_t n = strnlen(why, sizeof(c->down_why) - 1);
    memcpy(c->down_why, why, n);
    c->down_why[n] = '\0';
    atomic_store_explicit(&c->down, 1, memory_order_release);
    ring_event(s, -1); /* wakes the peers that sleep on the channel */
}

/* Local rank peer has said that a rank of the communicator died: every later progress fails. */
static void down_arrived(gcoll__shm_t *s, int peer)
{
    char text[GCOLL_SHM_NOTICE];
    memcpy(text, s->ctrl[peer].down_why, sizeof(text));
    text[sizeof(text) - 1] = '\0';
    gcoll__opdesc_printable(text);
    snprintf(s->p2p->down_why, sizeof(s->p2p->down_why), "rank %d reports: %s", gcoll__shm_rank_of(s, peer), text);
    s->p2p->down = 1;
}

/* Compares the descriptor of a message from local rank peer with this rank's operation of its
 * tag, if that has started (else it is compared when it does: a receive or send under the tag);
 * a difference fails the endpoint. */
static gcoll_status_t check_desc(gcoll__shm_t *s, int peer, uint32_t tag, const gcoll__opdesc_t *theirs)
{
    gcoll__shm_p2p_t *p2p = s->p2p;
    if (gcoll__mismatch_agree(p2p->optab, tag, theirs))
        return GCOLL_SUCCESS;
    if (gcoll__mismatch_found(&p2p->mm, p2p->optab, tag, gcoll__shm_rank_of(s, s->info.me), theirs,
                              gcoll__shm_rank_of(s, peer)))
        tell_peers(s);
    return gcoll__mismatch_error(&p2p->mm);
}

static void unlink_req(gcoll__tp_req_t **head, gcoll__tp_req_t **tail, const gcoll__tp_req_t *r)
{
    gcoll__tp_req_t *prev = NULL;
    for (gcoll__tp_req_t *x = *head; x; prev = x, x = x->next)
        if (x == r) {
            *(prev ? &prev->next : head) = x->next;
            if (*tail == r)
                *tail = prev;
            return;
        }
}

gcoll_status_t gcoll__shm_p2p_open(gcoll__shm_t *s, const gcoll__optab_t *optab, const int *ranks, gcoll__tp_t **out)
{
    gcoll__tp_t *tp = calloc(1, sizeof(*tp));
    s->p2p = calloc(1, sizeof(*s->p2p));
    if (s->p2p) {
        s->p2p->peers = calloc((size_t)s->info.n, sizeof(peer_t));
        s->p2p->ranks = ranks ? malloc((size_t)s->info.n * sizeof(int)) : NULL;
    }
    if (!tp || !s->p2p || !s->p2p->peers || (ranks && !s->p2p->ranks)) {
        free(tp);
        if (s->p2p) { /* the channel's destroy frees s->p2p itself */
            free(s->p2p->peers);
            free(s->p2p->ranks);
            s->p2p->peers = NULL;
            s->p2p->ranks = NULL;
        }
        return gcoll__error(GCOLL_ERR_NOMEM, "shm: no memory for the point-to-point endpoint");
    }
    if (ranks)
        memcpy(s->p2p->ranks, ranks, (size_t)s->info.n * sizeof(int));
    s->p2p->optab = optab;
    s->p2p->mm.name = "shm";
    tp->ch = s;
    *out = tp;
    return GCOLL_SUCCESS;
}

/* Completes the single-copy sends to `peer` that the receiver has acknowledged, in whatever
 * order its receives came. */
static void reap_acks(gcoll__shm_t *s, int peer)
{
    peer_t *p = &s->p2p->peers[peer];
    for (gcoll__tp_req_t *r = p->acks, *prev = NULL, *next; r; r = next) {
        next = r->next;
        if (atomic_load_explicit(gcoll__shm_ack(s, s->info.me, peer, r->msgid), memory_order_acquire) != r->msgid) {
            prev = r;
            continue;
        }
        *(prev ? &prev->next : &p->acks) = next;
        if (p->acks_tail == r)
            p->acks_tail = prev;
        r->done = 1;
    }
}

/* Whether the next single-copy id to `peer` has an acknowledgement slot that no message in
 * flight holds: the ids in flight lie between the oldest and the last one sent. */
static int ack_slot_free(const peer_t *p)
{
    return !p->acks || p->cma_sent + 1 - p->acks->msgid < GCOLL_SHM_ACKS;
}

/* Writes the sends queued for `peer` into the ring, in posting order, as far as there is room.
 * A large send goes single copy when an acknowledgement slot is free (else in fragments, which
 * need no acknowledgement), and waits for its acknowledgement in p->acks. */
static gcoll_status_t push_sends(gcoll__shm_t *s, int peer)
{
    peer_t *p = &s->p2p->peers[peer];
    reap_acks(s, peer);
    while (p->sends) {
        gcoll__tp_req_t *r = p->sends;
        gcoll__shm_cell_t *c = gcoll__shm_cell(s, s->info.me, peer, p->tail);
        if (atomic_load_explicit(&c->full, memory_order_acquire))
            return GCOLL_SUCCESS; /* the ring is full */
        int cma = s->info.cma && r->bytes > s->cell_bytes && !r->started && ack_slot_free(p);
        size_t len = cma ? 0 : (r->bytes - r->moved < s->cell_bytes ? r->bytes - r->moved : s->cell_bytes);
        c->kind = cma ? GCOLL_SHM_MSG_CMA : r->started ? GCOLL_SHM_MSG_MORE : GCOLL_SHM_MSG_FIRST;
        c->tag = r->tag;
        c->len = (uint32_t)len;
        c->total = r->bytes;
        c->addr = (uint64_t)(uintptr_t)r->buf;
        c->msgid = cma ? ++p->cma_sent : 0;
        c->desc = r->desc;
        if (len) /* empty messages (a barrier's) may come with a NULL buffer */
            memcpy((char *)(c + 1), r->buf + r->moved, len);
        atomic_store_explicit(&c->full, 1, memory_order_release);
        ring_event(s, peer);
        p->tail++;
        r->started = 1;
        r->moved += len;
        if (!cma && r->moved < r->bytes)
            continue;
        p->sends = r->next;
        if (!p->sends)
            p->sends_tail = NULL;
        if (cma) {
            r->msgid = p->cma_sent;
            Q_PUSH(p->acks, p->acks_tail, r);
        } else {
            r->done = 1;
        }
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t size_mismatch(int peer, size_t got, size_t want)
{
    return gcoll__error(GCOLL_ERR_TRANSPORT,
                        "shm transport: a message of %zu bytes from local rank %d, "
                        "expected %zu",
                        got, peer, want);
}

static void landed(gcoll__tp_req_t *r, size_t off, size_t len)
{
    if (r->landed)
        r->landed(r->landed_arg, off, len);
}

/* Single copy: read the sender's buffer, then acknowledge so its send completes. A receive
 * that is told of its parts reads GCOLL_SHM_READ_CHUNK at a time, so that each part is still in
 * cache when its consumer reads it. */
static gcoll_status_t pull(gcoll__shm_t *s, int peer, gcoll__tp_req_t *r, uint64_t addr, size_t total, uint64_t msgid)
{
    gcoll_status_t st = total == r->bytes ? GCOLL_SUCCESS : size_mismatch(peer, total, r->bytes);
    size_t step = r->landed ? s->info.read_bytes : total;
    for (size_t o = 0; st == GCOLL_SUCCESS && o < total; o += step) {
        size_t len = total - o < step ? total - o : step;
        st = gcoll__shm_read(s, peer, r->buf + o, addr + o, len);
        if (st == GCOLL_SUCCESS)
            landed(r, o, len);
    }
    atomic_store_explicit(gcoll__shm_ack(s, peer, s->info.me, msgid), msgid, memory_order_release);
    ring_event(s, peer);
    r->status = st;
    r->done = 1;
    return GCOLL_SUCCESS;
}

static void unlink_unexpected(peer_t *p, unexpected_t *u)
{
    unexpected_t *prev = NULL;
    for (unexpected_t *x = p->unexp; x; prev = x, x = x->next)
        if (x == u) {
            *(prev ? &prev->next : &p->unexp) = u->next;
            if (p->unexp_tail == u)
                p->unexp_tail = prev;
            return;
        }
}

static gcoll__tp_req_t *take_recv(peer_t *p, uint32_t tag)
{
    for (gcoll__tp_req_t *r = p->recvs; r; r = r->next)
        if (r->tag == tag) {
            unlink_req(&p->recvs, &p->recvs_tail, r);
            return r;
        }
    return NULL;
}

/* Hands a completely received unexpected message to receive r, and forgets it. */
static void deliver(peer_t *p, gcoll__tp_req_t *r, unexpected_t *u)
{
    unlink_unexpected(p, u);
    r->status = u->total == r->bytes ? GCOLL_SUCCESS : size_mismatch(r->peer, u->total, r->bytes);
    if (r->status == GCOLL_SUCCESS && r->bytes)
        memcpy(r->buf, u->data, r->bytes);
    if (r->status == GCOLL_SUCCESS)
        landed(r, 0, r->bytes);
    r->done = 1;
    free(u->data);
    free(u);
}

/* Consumes the cells that have arrived from `peer`. */
static gcoll_status_t drain(gcoll__shm_t *s, int peer)
{
    peer_t *p = &s->p2p->peers[peer];
    for (;;) {
        gcoll__shm_cell_t *c = gcoll__shm_cell(s, peer, s->info.me, p->head);
        if (!atomic_load_explicit(&c->full, memory_order_acquire))
            return GCOLL_SUCCESS;
        const char *payload = (const char *)(c + 1);
        if (c->kind == GCOLL_SHM_MSG_MORE) { /* continues the message in progress */
            if (p->receiving) {
                gcoll__tp_req_t *r = p->receiving;
                memcpy(r->buf + r->moved, payload, c->len);
                landed(r, r->moved, c->len);
                r->moved += c->len;
                if (r->moved == r->bytes) {
                    r->done = 1;
                    p->receiving = NULL;
                }
            } else if (p->stashing) {
                unexpected_t *u = p->stashing;
                memcpy(u->data + u->have, payload, c->len);
                u->have += c->len;
                if (u->have == u->total) {
                    p->stashing = NULL;
                    gcoll__tp_req_t *r = take_recv(p, u->tag); /* posted while it streamed in */
                    if (r)
                        deliver(p, r, u);
                }
            }
        } else {
            GCOLL_CHECK(check_desc(s, peer, c->tag, &c->desc)); /* before any of its data is read */
            gcoll__tp_req_t *r = take_recv(p, c->tag);
            if (r && c->kind == GCOLL_SHM_MSG_CMA) {
                pull(s, peer, r, c->addr, c->total, c->msgid);
            } else if (r) {
                if (c->total != r->bytes) {
                    r->status = size_mismatch(peer, c->total, r->bytes);
                    r->done = 1;
                } else {
                    if (c->len)
                        memcpy(r->buf, payload, c->len);
                    landed(r, 0, c->len);
                    r->moved = c->len;
                    r->done = r->moved == r->bytes;
                    p->receiving = r->done ? NULL : r;
                }
            } else {
                unexpected_t *u = calloc(1, sizeof(*u));
                if (u && c->kind != GCOLL_SHM_MSG_CMA && !(u->data = malloc(c->total ? c->total : 1))) {
                    free(u);
                    u = NULL;
                }
                if (!u)
                    return gcoll__error(GCOLL_ERR_NOMEM, "shm transport: no memory for an unexpected message");
                *u = (unexpected_t){.tag = c->tag,
                                    .kind = c->kind,
                                    .total = c->total,
                                    .addr = c->addr,
                                    .msgid = c->msgid,
                                    .desc = c->desc,
                                    .data = u->data};
                if (c->kind != GCOLL_SHM_MSG_CMA) {
                    if (c->len)
                        memcpy(u->data, payload, c->len);
                    u->have = c->len;
                    p->stashing = u->have < u->total ? u : NULL;
                }
                Q_PUSH(p->unexp, p->unexp_tail, u);
            }
        }
        atomic_store_explicit(&c->full, 0, memory_order_release);
        ring_event(s, peer);
        p->head++;
    }
}

static gcoll_status_t progress(gcoll__shm_t *s)
{
    gcoll__shm_p2p_t *p2p = s->p2p;
    for (int q = 0; q < s->info.n; q++) {
        if (q == s->info.me)
            continue;
        if (!p2p->mm.status && atomic_load_explicit(&s->ctrl[q].mismatch, memory_order_acquire))
            notice_arrived(s, q);
        if (p2p->mm.status)
            return gcoll__mismatch_error(&p2p->mm);
        if (!p2p->down && atomic_load_explicit(&s->ctrl[q].down, memory_order_acquire))
            down_arrived(s, q);
        if (p2p->down)
            return gcoll__error(GCOLL_ERR_REMOTE, "%s", p2p->down_why);
        GCOLL_CHECK(drain(s, q));
        GCOLL_CHECK(push_sends(s, q));
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t new_req(int peer, uint32_t tag, const void *buf, size_t bytes, int is_recv, gcoll__tp_req_t **out)
{
    gcoll__tp_req_t *r = calloc(1, sizeof(*r));
    if (!r)
        return gcoll__error(GCOLL_ERR_NOMEM, "shm transport: no memory for a request");
    *r = (gcoll__tp_req_t){.peer = peer, .is_recv = is_recv, .tag = tag, .buf = (char *)buf, .bytes = bytes};
    *out = r;
    return GCOLL_SUCCESS;
}

static gcoll_status_t shm_isend(gcoll__tp_t *tp, int peer, uint32_t tag, const void *buf, size_t bytes,
                                gcoll__tp_req_t **out)
{
    gcoll__shm_p2p_t *p2p = tp->ch->p2p;
    if (p2p->mm.status)
        return gcoll__mismatch_error(&p2p->mm);
    peer_t *p = &p2p->peers[peer];
    gcoll__opdesc_t mine;
    const gcoll__opdesc_t *op = gcoll__optab_find(p2p->optab, tag, &mine);
    /* a message the peer sent under this tag before this operation started (where both only
     * send, as two roots do, nothing else would compare them) */
    for (unexpected_t *u = op ? p->unexp : NULL; u; u = u->next)
        if (u->tag == tag)
            GCOLL_CHECK(check_desc(tp->ch, peer, tag, &u->desc));
    GCOLL_CHECK(new_req(peer, tag, buf, bytes, 0, out));
    if (op)
        (*out)->desc = *op;
    Q_PUSH(p->sends, p->sends_tail, *out);
    return push_sends(tp->ch, peer);
}

/* A posted receive first looks among the messages that arrived before it. */
static gcoll_status_t post_recv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                gcoll__tp_landed_fn fn, void *arg, gcoll__tp_req_t **out)
{
    gcoll__shm_t *s = tp->ch;
    if (s->p2p->mm.status)
        return gcoll__mismatch_error(&s->p2p->mm);
    peer_t *p = &s->p2p->peers[peer];
    for (unexpected_t *u = p->unexp; u; u = u->next)
        if (u->tag == tag) { /* it arrived before this operation started: compared now */
            GCOLL_CHECK(check_desc(s, peer, tag, &u->desc));
            break;
        }
    GCOLL_CHECK(new_req(peer, tag, buf, bytes, 1, out));
    gcoll__tp_req_t *r = *out;
    r->landed = fn;
    r->landed_arg = arg;
    for (unexpected_t *u = p->unexp; u; u = u->next) {
        if (u->tag != tag)
            continue;
        if (u == p->stashing)
            break; /* still streaming in: it is delivered when complete */
        if (u->kind == GCOLL_SHM_MSG_CMA) {
            unexpected_t d = *u; /* a descriptor: the data is read from the sender */
            unlink_unexpected(p, u);
            free(u);
            return pull(s, peer, r, d.addr, d.total, d.msgid);
        }
        deliver(p, r, u);
        return GCOLL_SUCCESS;
    }
    Q_PUSH(p->recvs, p->recvs_tail, r);
    return GCOLL_SUCCESS;
}

static gcoll_status_t shm_irecv(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes, gcoll__tp_req_t **out)
{
    return post_recv(tp, peer, tag, buf, bytes, NULL, NULL, out);
}

static gcoll_status_t shm_irecv_landed(gcoll__tp_t *tp, int peer, uint32_t tag, void *buf, size_t bytes,
                                       gcoll__tp_landed_fn fn, void *arg, int *parts, gcoll__tp_req_t **out)
{
    *parts = 1;
    return post_recv(tp, peer, tag, buf, bytes, fn, arg, out);
}

static void shm_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r);

static gcoll_status_t shm_test(gcoll__tp_t *tp, gcoll__tp_req_t *r, int *done)
{
    gcoll_status_t st = r->done ? GCOLL_SUCCESS : progress(tp->ch);
    *done = r->done || st != GCOLL_SUCCESS;
    if (!*done)
        return GCOLL_SUCCESS;
    if (!r->done) { /* the endpoint failed under it: take it out of the queues */
        shm_cancel(tp, r);
        return st;
    }
    st = r->status;
    free(r);
    return st;
}

static void shm_cancel(gcoll__tp_t *tp, gcoll__tp_req_t *r)
{
    peer_t *p = &tp->ch->p2p->peers[r->peer];
    if (r->is_recv) {
        unlink_req(&p->recvs, &p->recvs_tail, r);
        if (p->receiving == r)
            p->receiving = NULL;
    } else {
        unlink_req(&p->sends, &p->sends_tail, r);
        unlink_req(&p->acks, &p->acks_tail, r);
    }
    free(r);
}

static void shm_close(gcoll__tp_t *tp)
{
    gcoll__shm_p2p_t *p2p = tp->ch->p2p;
    for (int q = 0; p2p && q < tp->ch->info.n; q++) {
        for (unexpected_t *u = p2p->peers[q].unexp, *next; u; u = next) {
            next = u->next;
            free(u->data);
            free(u);
        }
    }
    if (p2p) {
        free(p2p->peers);
        free(p2p->ranks);
    }
    free(tp);
}

static gcoll_status_t shm_check(gcoll__tp_t *tp)
{
    return progress(tp->ch); /* reads the peers' notices first */
}

static int shm_dead_peer(gcoll__tp_t *tp, char *why, size_t len)
{
    return gcoll__shm_dead_peer(tp->ch, why, len);
}

const gcoll__transport_t gcoll__transport_shm = {
    .name = "shm",
    .isend = shm_isend,
    .irecv = shm_irecv,
    .irecv_landed = shm_irecv_landed,
    .test = shm_test,
    .cancel = shm_cancel,
    .dead_peer = shm_dead_peer,
    .mismatch = shm_mismatch,
    .peer_down = shm_peer_down,
    .check = shm_check,
    .close = shm_close,
};
