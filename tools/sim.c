/* The discrete-event network model (tools/sim.h). Each rank runs its schedule as the engine does:
 * a round posts its sends (one after another on the core) and receives at once, a local step
 * starts once every step listed before it in the round is done, the next round when all are.
 * A message is cut into pieces that cross the links of its path in order; a link serves the
 * pieces in the order they reach it at its own rate, and a piece cannot leave a link before it
 * has left the one before (cut-through), so flows that share a link share its bandwidth. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/schedule.h"
#include "collectives/cost.h"
#include "sim.h"

sim_net_t sim_net_default(void)
{
    return (sim_net_t){.intra_lat_s = 1e-6,
                       .intra_Bps = 5e9,
                       .inter_lat_s = 5e-6,
                       .inter_Bps = 12.5e9,
                       .post_share = 0.5,
                       .msg_cpu_s = -1,
                       .oversub = 1,
                       .reduce_Bps = 4e9,
                       .copy_Bps = 7e9,
                       .chunk = 64 << 10,
                       .max_chunks = 16,
                       .max_steps = (size_t)64 << 20};
}

enum { OP_SEND, OP_RECV, OP_LOCAL };

typedef struct {
    union {
        uint64_t bytes; /* send, receive */
        double secs;    /* local work */
    } u;
    int32_t peer;
    uint8_t kind;
} op_t;

typedef struct {
    op_t *ops;
    uint8_t *done;    /* per op: 0 waiting, 1 running (local work), 2 done */
    uint32_t *rfirst; /* nrounds + 1 offsets into ops */
    uint32_t nrounds, round, pending, frontier;
    double cpu, end;
    int finished;
} rank_t;

typedef struct {
    double free, Bps;
    double tokens, filled; /* a shaped link's bucket: bytes, and when last topped up */
    int shaped;
} link_t;

typedef struct {
    uint64_t left, piece; /* bytes not yet put on the first link; a piece's size */
    uint32_t pieces_out;  /* on the way */
    int32_t src, dst, next;
    uint32_t send_op, recv_op;
    int bound, arrived, nhops;
    int hop[5];
    double lat;
} msg_t;

enum { EV_PIECE, EV_ARRIVE, EV_SENT, EV_LOCAL };

typedef struct {
    double t, f; /* f: when the piece left the previous link */
    uint64_t seq, bytes;
    uint32_t a, b; /* EV_PIECE, EV_ARRIVE: message; EV_SENT, EV_LOCAL: rank, op */
    uint8_t type, hop;
} ev_t;

/* The messages and receives of one sender-receiver pair not yet matched, in posting order. */
typedef struct {
    uint64_t key; /* (src << 32 | dst) + 1; 0: empty */
    int32_t msg_head, msg_tail, recv_head, recv_tail;
} pair_t;

typedef struct {
    uint32_t op;
    int32_t next;
} recvrec_t;

typedef struct {
    const sim_net_t *net;
    const gcoll__nodemap_t *map;
    int n, nhosts, nleaves;
    rank_t *ranks;
    link_t *links;
    msg_t *msgs;
    size_t nmsgs, cap_msgs;
    int32_t free_msg;
    recvrec_t *recvs;
    size_t nrecvs, cap_recvs;
    int32_t free_recv;
    pair_t *pairs;
    size_t cap_pairs, npairs;
    ev_t *heap;
    size_t nheap, cap_heap;
    uint64_t seq;
    int nomem;
    double *cores; /* when the ranks share cores: when each is next free, net->cores a pool */
    sim_result_t *res;
} sim_t;

/* Room for one more of an array of n items of size bytes, doubling it when full; 0 (and S->nomem)
 * when there is no memory or the array would outgrow the 32-bit indices that name its items. */
static int room(sim_t *S, void **arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return 1;
    size_t c = *cap ? *cap * 2 : 1024;
    void *p = c <= INT32_MAX ? realloc(*arr, c * size) : NULL;
    if (!p) {
        S->nomem = 1;
        return 0;
    }
    *arr = p;
    *cap = c;
    return 1;
}

/* ---- the event queue: a binary heap by time, then by the order events were made ---- */

static int ev_before(const ev_t *x, const ev_t *y)
{
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static void push(sim_t *S, ev_t e)
{
    if (!room(S, (void **)&S->heap, S->nheap, &S->cap_heap, sizeof(*S->heap)))
        return;
    e.seq = S->seq++;
    size_t i = S->nheap++;
    while (i > 0 && ev_before(&e, &S->heap[(i - 1) / 2])) {
        S->heap[i] = S->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    S->heap[i] = e;
}

static ev_t pop(sim_t *S)
{
    ev_t top = S->heap[0], last = S->heap[--S->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= S->nheap)
            break;
        if (c + 1 < S->nheap && ev_before(&S->heap[c + 1], &S->heap[c]))
            c++;
        if (!ev_before(&S->heap[c], &last))
            break;
        S->heap[i] = S->heap[c];
        i = c;
    }
    if (S->nheap)
        S->heap[i] = last;
    return top;
}

/* ---- pools and the pair table ---- */

static int32_t msg_new(sim_t *S)
{
    if (S->free_msg >= 0) {
        int32_t m = S->free_msg;
        S->free_msg = S->msgs[m].next;
        return m;
    }
    if (!room(S, (void **)&S->msgs, S->nmsgs, &S->cap_msgs, sizeof(*S->msgs)))
        return -1;
    return (int32_t)S->nmsgs++;
}

static void msg_free(sim_t *S, int32_t m)
{
    S->msgs[m].next = S->free_msg;
    S->free_msg = m;
}

static int32_t recv_new(sim_t *S)
{
    if (S->free_recv >= 0) {
        int32_t r = S->free_recv;
        S->free_recv = S->recvs[r].next;
        return r;
    }
    if (!room(S, (void **)&S->recvs, S->nrecvs, &S->cap_recvs, sizeof(*S->recvs)))
        return -1;
    return (int32_t)S->nrecvs++;
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static pair_t *pair_find(sim_t *S, int src, int dst);

static int pairs_grow(sim_t *S)
{
    size_t old = S->cap_pairs, cap = old ? old * 2 : 1024;
    pair_t *prev = S->pairs, *p = calloc(cap, sizeof(*p));
    if (!p)
        return 0;
    S->pairs = p;
    S->cap_pairs = cap;
    for (size_t i = 0; i < old; i++)
        if (prev[i].key) {
            size_t j = mix(prev[i].key) & (cap - 1);
            while (p[j].key)
                j = (j + 1) & (cap - 1);
            p[j] = prev[i];
        }
    free(prev);
    return 1;
}

/* The pair's entry, made empty when new (NULL: no memory). Entries stay once made: a schedule
 * talks to few peers, so the table holds at most the pairs that ever exchange a message. */
static pair_t *pair_find(sim_t *S, int src, int dst)
{
    if (2 * (S->npairs + 1) > S->cap_pairs && !pairs_grow(S)) {
        S->nomem = 1;
        return NULL;
    }
    uint64_t key = (((uint64_t)(uint32_t)src << 32) | (uint32_t)dst) + 1;
    size_t j = mix(key) & (S->cap_pairs - 1);
    while (S->pairs[j].key && S->pairs[j].key != key)
        j = (j + 1) & (S->cap_pairs - 1);
    if (!S->pairs[j].key) {
        S->pairs[j] = (pair_t){key, -1, -1, -1, -1};
        S->npairs++;
    }
    return &S->pairs[j];
}

/* ---- the ranks ---- */

static void start_round(sim_t *S, int r, double t);

static int host_of(const sim_t *S, int r)
{
    return S->map ? S->map->host[r] : r;
}

static int leaf_of(const sim_t *S, int h)
{
    return S->net->hosts_per_leaf > 0 ? h / S->net->hosts_per_leaf : 0;
}

/* Runs secs of rank r's work from t on, after its earlier work, on its pool's earliest free core
 * where the ranks share cores; returns when it ends. */
static double cpu_run(sim_t *S, int r, double t, double secs)
{
    rank_t *k = &S->ranks[r];
    double s = k->cpu > t ? k->cpu : t;
    if (S->cores) {
        int pool = S->net->machine_Bps > 0 ? 0 : host_of(S, r);
        double *c = S->cores + (size_t)pool * (size_t)S->net->cores;
        /* a core idle at s, the one idle the shortest (work already booked later on another must
         * not hold this up), else the first to be free */
        int best = -1, first = 0;
        for (int i = 0; i < S->net->cores; i++) {
            if (c[i] <= s && (best < 0 || c[i] > c[best]))
                best = i;
            first = c[i] < c[first] ? i : first;
        }
        best = best >= 0 ? best : first;
        s = s > c[best] ? s : c[best];
        c[best] = s + secs;
    }
    k->cpu = s + secs;
    return k->cpu;
}

/* Core time of a message at its sender and at its receiver. */
static double send_cpu(const sim_t *S, int r, int peer)
{
    const sim_net_t *net = S->net;
    if (net->msg_cpu_s >= 0)
        return net->msg_cpu_s;
    return net->post_share * (host_of(S, r) != host_of(S, peer) ? net->inter_lat_s : net->intra_lat_s);
}

static double recv_cpu(const sim_t *S)
{
    return S->net->msg_cpu_s > 0 ? S->net->msg_cpu_s : 0;
}

/* Runs the round's first local step not yet started, if every step before it is done. */
static void advance(sim_t *S, int r, double t)
{
    rank_t *k = &S->ranks[r];
    uint32_t last = k->rfirst[k->round + 1];
    while (k->frontier < last && k->done[k->frontier] == 2)
        k->frontier++;
    if (k->frontier < last && k->ops[k->frontier].kind == OP_LOCAL && k->done[k->frontier] == 0) {
        cpu_run(S, r, t, k->ops[k->frontier].u.secs);
        k->done[k->frontier] = 1;
        push(S, (ev_t){.t = k->cpu, .a = (uint32_t)r, .b = k->frontier, .type = EV_LOCAL});
    }
}

static void complete(sim_t *S, int r, uint32_t op, double t)
{
    rank_t *k = &S->ranks[r];
    k->done[op] = 2;
    if (--k->pending == 0) {
        k->round++;
        start_round(S, r, t);
    } else {
        advance(S, r, t);
    }
}

static void post_send(sim_t *S, int r, uint32_t op, double t)
{
    const sim_net_t *net = S->net;
    const op_t *o = &S->ranks[r].ops[op];
    int32_t mi = msg_new(S);
    pair_t *p = mi >= 0 ? pair_find(S, r, o->peer) : NULL;
    if (!p)
        return;
    msg_t *m = &S->msgs[mi];
    uint64_t bytes = o->u.bytes, piece = bytes / (uint64_t)net->max_chunks + 1;
    piece = piece > net->chunk ? piece : net->chunk;
    *m = (msg_t){.left = bytes, .piece = piece, .src = r, .dst = o->peer, .next = -1, .send_op = op};
    int hs = host_of(S, r), hd = host_of(S, o->peer);
    if (hs == hd) {
        m->hop[m->nhops++] = r;
        m->hop[m->nhops++] = S->n + o->peer;
        m->lat = net->intra_lat_s * (1 - net->post_share);
    } else {
        int base = 2 * S->n, ls = leaf_of(S, hs), ld = leaf_of(S, hd);
        m->hop[m->nhops++] = base + hs;
        m->lat = net->inter_lat_s * (1 - net->post_share);
        if (ls != ld) {
            m->hop[m->nhops++] = base + 2 * S->nhosts + ls;
            m->hop[m->nhops++] = base + 2 * S->nhosts + S->nleaves + ld;
            m->lat += net->spine_lat_s;
        }
        if (net->machine_Bps > 0)
            m->hop[m->nhops++] = base + 2 * S->nhosts + 2 * S->nleaves;
        m->hop[m->nhops++] = base + S->nhosts + hd;
    }
    if (p->recv_head >= 0) { /* a receive waits: bind it */
        int32_t rr = p->recv_head;
        p->recv_head = S->recvs[rr].next;
        if (p->recv_head < 0)
            p->recv_tail = -1;
        m->recv_op = S->recvs[rr].op;
        m->bound = 1;
        S->recvs[rr].next = S->free_recv;
        S->free_recv = rr;
    } else {
        if (p->msg_tail >= 0)
            S->msgs[p->msg_tail].next = mi;
        else
            p->msg_head = mi;
        p->msg_tail = mi;
    }
    S->res->messages++;
    push(S, (ev_t){.t = t, .f = t, .a = (uint32_t)mi, .type = EV_PIECE, .hop = 0});
}

/* Posts a receive; 1 when its message has already arrived (the receive is done). */
static int post_recv(sim_t *S, int r, uint32_t op)
{
    int src = S->ranks[r].ops[op].peer;
    pair_t *p = pair_find(S, src, r);
    if (!p)
        return 0;
    if (p->msg_head >= 0) {
        int32_t mi = p->msg_head;
        msg_t *m = &S->msgs[mi];
        p->msg_head = m->next;
        if (p->msg_head < 0)
            p->msg_tail = -1;
        m->recv_op = op;
        m->bound = 1;
        if (m->arrived) {
            msg_free(S, mi);
            return 1;
        }
        return 0;
    }
    int32_t rr = recv_new(S);
    if (rr < 0)
        return 0;
    S->recvs[rr] = (recvrec_t){op, -1};
    if (p->recv_tail >= 0)
        S->recvs[p->recv_tail].next = rr;
    else
        p->recv_head = rr;
    p->recv_tail = rr;
    return 0;
}

static void start_round(sim_t *S, int r, double t)
{
    rank_t *k = &S->ranks[r];
    for (; k->round < k->nrounds; k->round++) {
        uint32_t first = k->rfirst[k->round], last = k->rfirst[k->round + 1];
        k->pending = last - first;
        k->frontier = first;
        k->cpu = k->cpu > t ? k->cpu : t;
        for (uint32_t i = first; i < last; i++) {
            const op_t *o = &k->ops[i];
            if (o->kind == OP_SEND) {
                post_send(S, r, i, cpu_run(S, r, k->cpu, send_cpu(S, r, o->peer)));
            } else if (o->kind == OP_RECV && post_recv(S, r, i)) {
                if (recv_cpu(S) > 0)
                    cpu_run(S, r, k->cpu, recv_cpu(S));
                k->done[i] = 2;
                k->pending--;
            }
        }
        if (k->pending) {
            advance(S, r, t);
            return;
        }
    }
    k->end = t > k->cpu ? t : k->cpu;
    k->finished = 1;
}

/* ---- the links ---- */

/* Seconds link l takes to pass bytes from start: a shaped link passes what its bucket holds at
 * the burst rate and the rest at its own. */
static double service(sim_t *S, link_t *l, double start, double bytes)
{
    if (!l->shaped)
        return bytes / l->Bps;
    double cap = S->net->burst_bytes, tok = l->tokens + (start - l->filled) * l->Bps;
    tok = tok < cap ? tok : cap;
    double fast = tok < bytes ? tok : bytes, t = fast / S->net->burst_Bps + (bytes - fast) / l->Bps;
    /* what passes at the link's own rate takes the tokens that come in meanwhile */
    l->tokens = tok - fast;
    l->filled = bytes > fast ? start + t : start;
    return t;
}

static void on_piece(sim_t *S, const ev_t *e)
{
    msg_t *m = &S->msgs[e->a];
    uint64_t bytes = e->bytes;
    if (e->hop == 0) { /* the next piece leaves the sender: take it now */
        bytes = m->left < m->piece ? m->left : m->piece;
        m->left -= bytes;
        m->pieces_out++;
    }
    link_t *l = &S->links[m->hop[e->hop]];
    double start = l->free > e->t ? l->free : e->t, busy = start + service(S, l, start, (double)bytes);
    double fin = busy > e->f ? busy : e->f;
    l->free = busy;
    if (e->hop == 0 && m->left)
        push(S, (ev_t){.t = busy, .f = busy, .a = e->a, .type = EV_PIECE, .hop = 0});
    if (e->hop == 0 && !m->left)
        push(S, (ev_t){.t = fin, .a = (uint32_t)m->src, .b = m->send_op, .type = EV_SENT});
    if (e->hop + 1 < m->nhops)
        push(S,
             (ev_t){.t = start, .f = fin, .bytes = bytes, .a = e->a, .type = EV_PIECE, .hop = (uint8_t)(e->hop + 1)});
    else
        push(S, (ev_t){.t = fin + m->lat, .a = e->a, .type = EV_ARRIVE});
}

static void on_arrive(sim_t *S, const ev_t *e)
{
    msg_t *m = &S->msgs[e->a];
    if (--m->pieces_out || m->left)
        return;
    m->arrived = 1;
    if (m->bound) {
        int dst = m->dst;
        uint32_t op = m->recv_op;
        msg_free(S, (int32_t)e->a);
        complete(S, dst, op, recv_cpu(S) > 0 ? cpu_run(S, dst, e->t, recv_cpu(S)) : e->t);
    }
}

/* ---- building the ranks' schedules ---- */

/* Rank r's schedule in compact form; SIM_CANNOT for a step no network model prices. */
static sim_status_t load_rank(sim_t *S, int idx, const gcoll__coll_args_t *a, int r)
{
    const sim_net_t *net = S->net;
    gcoll__sched_t *s = gcoll__cost_schedule(idx, a, r);
    if (!s)
        return r == 0 ? SIM_CANNOT : SIM_NOMEM;
    sim_status_t st = s->status == GCOLL_SUCCESS ? SIM_OK : SIM_NOMEM;
    rank_t *k = &S->ranks[r];
    k->nrounds = (uint32_t)s->nrounds;
    k->ops = malloc((s->nsteps + 1) * sizeof(*k->ops));
    k->done = calloc(s->nsteps + 1, 1);
    k->rfirst = malloc((s->nrounds + 1) * sizeof(*k->rfirst));
    if (st == SIM_OK && (!k->ops || !k->done || !k->rfirst || s->nsteps >= UINT32_MAX))
        st = SIM_NOMEM;
    uint32_t j = 0;
    for (size_t q = 0; st == SIM_OK && q < s->nrounds; q++) {
        k->rfirst[q] = j;
        for (size_t i = 0; i < s->rounds[q].count; i++) {
            const gcoll__step_t *x = &s->steps[s->rounds[q].first + i];
            op_t *o = &k->ops[j++];
            o->peer = x->peer;
            switch (x->kind) {
            case GCOLL_STEP_SEND: o->kind = OP_SEND, o->u.bytes = x->n; break;
            case GCOLL_STEP_RECV: o->kind = OP_RECV, o->u.bytes = x->n; break;
            case GCOLL_STEP_COPY: o->kind = OP_LOCAL, o->u.secs = (double)x->n / net->copy_Bps; break;
            case GCOLL_STEP_REDUCE:
            case GCOLL_STEP_DIV:
            case GCOLL_STEP_ROUND:
                o->kind = OP_LOCAL, o->u.secs = (double)x->n * (double)a->esize / net->reduce_Bps;
                break;
            default: st = SIM_CANNOT; break;
            }
        }
    }
    if (st == SIM_OK)
        k->rfirst[s->nrounds] = j;
    S->res->steps += s->nsteps;
    gcoll__sched_free(s);
    return st;
}

static void sim_free(sim_t *S)
{
    for (int r = 0; S->ranks && r < S->n; r++) {
        free(S->ranks[r].ops);
        free(S->ranks[r].done);
        free(S->ranks[r].rfirst);
    }
    free(S->ranks);
    free(S->links);
    free(S->msgs);
    free(S->recvs);
    free(S->pairs);
    free(S->heap);
    free(S->cores);
}

sim_status_t sim_run(int idx, const gcoll__coll_args_t *a, const sim_net_t *net, sim_result_t *res)
{
    *res = (sim_result_t){0};
    const gcoll__nodemap_t *map = a->map;
    int n = a->size, nh = map ? map->nhosts : n;
    int per_leaf = net->hosts_per_leaf > 0 ? net->hosts_per_leaf : nh;
    sim_t S = {.net = net,
               .map = map,
               .n = n,
               .nhosts = nh,
               .nleaves = (nh + per_leaf - 1) / per_leaf,
               .free_msg = -1,
               .free_recv = -1,
               .res = res};
    size_t nlinks = 2 * (size_t)n + 2 * (size_t)nh + 2 * (size_t)S.nleaves + 1; /* the last: the machine */
    S.ranks = calloc((size_t)n, sizeof(*S.ranks));
    S.links = calloc(nlinks, sizeof(*S.links));
    if (net->cores > 0)
        S.cores = calloc((size_t)(net->machine_Bps > 0 ? 1 : nh) * (size_t)net->cores, sizeof(*S.cores));
    if (!S.ranks || !S.links || (net->cores > 0 && !S.cores)) {
        sim_free(&S);
        return SIM_NOMEM;
    }
    double up = (double)per_leaf * net->inter_Bps / (net->oversub > 0 ? net->oversub : 1);
    for (size_t i = 0; i < nlinks; i++) {
        link_t *l = &S.links[i];
        l->Bps = i < 2 * (size_t)n     ? net->intra_Bps
            : i < 2 * (size_t)(n + nh) ? net->inter_Bps
            : i + 1 < nlinks           ? up
                                       : net->machine_Bps;
        l->shaped = i >= 2 * (size_t)n && i < 2 * (size_t)(n + nh) && net->burst_bytes > 0 && net->burst_Bps > l->Bps;
        l->tokens = 0;
    }
    sim_status_t st = SIM_OK;
    for (int r = 0; r < n && st == SIM_OK; r++) {
        st = load_rank(&S, idx, a, r);
        /* the first rank's steps times the ranks: refuse before building them all */
        if (st == SIM_OK && (r == 0 ? res->steps * (size_t)n : res->steps) > net->max_steps) {
            res->steps = r == 0 ? res->steps * (size_t)n : res->steps;
            st = SIM_TOO_BIG;
        }
    }
    for (int r = 0; r < n && st == SIM_OK; r++) {
        double t0 = host_of(&S, r) == net->straggler_host ? net->straggler_s : 0;
        S.ranks[r].cpu = t0;
        start_round(&S, r, t0);
    }
    while (st == SIM_OK && S.nheap && !S.nomem) {
        ev_t e = pop(&S);
        res->events++;
        switch (e.type) {
        case EV_PIECE: on_piece(&S, &e); break;
        case EV_ARRIVE: on_arrive(&S, &e); break;
        default: complete(&S, (int)e.a, e.b, e.t); break;
        }
    }
    if (st == SIM_OK && S.nomem)
        st = SIM_NOMEM;
    for (int r = 0; r < n && st == SIM_OK; r++) {
        if (!S.ranks[r].finished)
            st = SIM_STUCK;
        res->time_s = S.ranks[r].end > res->time_s ? S.ranks[r].end : res->time_s;
    }
    sim_free(&S);
    return st;
}
