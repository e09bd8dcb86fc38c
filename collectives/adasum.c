/* Adasum's algorithms (halving, shm_cma, shm_slots, hierarchical), all computing DESIGN.md's
 * exact tree: ranks r >= P fold into r - P, then adjacent pairs combine level by level.
 * halving moves a Rabenseifner allreduce's volume, 2(P-1)/P of the vector per rank, plus
 * 3 doubles per tensor and level of partial sums. docs/design.md describes each algorithm. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../src/config.h"
#include "../src/copy.h"
#include "../src/dtype.h"
#include "../src/log.h"
#include "adasum.h"
#include "halving.h"
#include "select.h"
#include "shm_op.h"

/* ---- shared helpers ---- */

static void local_who(void *state, char *buf, size_t len)
{
    (void)state;
    snprintf(buf, len, "none (a local Adasum step)");
}

typedef enum { JOB_PARTIALS, JOB_SLICE, JOB_ADD, JOB_APPLY, JOB_PUSH, JOB_WHOLE } job_kind_t;

/* One local step of the halving schedule. */
typedef struct {
    job_kind_t kind;
    const gcoll__adasum_shape_t *sh;
    const char *a, *b; /* at element `first` */
    char *dst;
    size_t first, n;
    double *sums, *in; /* 3 nt doubles each */
    /* JOB_SLICE: the partial sums of one received slice, added in slice order as soon as the
     * slice has landed (while later ones are still arriving, and the slice is still in cache) */
    const gcoll__sched_t *s;
    size_t recv_step; /* the step that receives this slice */
    size_t prev_step; /* the previous slice's step, or SIZE_MAX for the first (which zeroes sums) */
    /* JOB_PUSH: ranks 0..npush-1 of the node channel shm (this one is me) and their outputs */
    struct gcoll__shm *shm;
    int me, npush;
    const uint64_t *outs;
} job_t;

static gcoll_status_t local_step(void *state, int *done)
{
    job_t *j = state;
    size_t m = 3 * j->sh->nt;
    switch (j->kind) {
    case JOB_SLICE:
        if (!j->s->steps[j->recv_step].done || (j->prev_step != SIZE_MAX && !j->s->steps[j->prev_step].done))
            return GCOLL_SUCCESS;
        if (j->prev_step == SIZE_MAX)
            memset(j->sums, 0, m * sizeof(double));
        gcoll__adasum_partials(j->sh, j->a, j->b, j->first, j->n, j->sums);
        break;
    case JOB_PARTIALS:
        memset(j->sums, 0, m * sizeof(double));
        gcoll__adasum_partials(j->sh, j->a, j->b, j->first, j->n, j->sums);
        break;
    case JOB_ADD:
        for (size_t i = 0; i < m; i++)
            j->sums[i] += j->in[i];
        break;
    case JOB_APPLY: gcoll__adasum_apply(j->sh, j->dst, j->a, j->b, j->first, j->n, j->sums); break;
    case JOB_PUSH: /* each read's worth of the result goes to every other output while in cache */
        for (size_t es = j->sh->es, step = j->shm->read_bytes / es, o = 0; o < j->n; o += step) {
            size_t len = j->n - o < step ? j->n - o : step;
            char *part = j->dst + o * es;
            gcoll__adasum_apply(j->sh, part, j->a + o * es, j->b + o * es, j->first + o, len, j->sums);
            for (int q = 0; q < j->npush; q++)
                if (q != j->me)
                    GCOLL_CHECK(gcoll__shm_write(j->shm, q, j->outs[q] + (j->first + o) * es, part, len * es));
        }
        break;
    default: /* a fold: both whole vectors are here */
        memset(j->sums, 0, m * sizeof(double));
        gcoll__adasum_partials(j->sh, j->a, j->b, 0, j->n, j->sums);
        gcoll__adasum_apply(j->sh, j->dst, j->a, j->b, 0, j->n, j->sums);
        break;
    }
    *done = 1;
    return GCOLL_SUCCESS;
}

/* A job recomputes from its inputs every run (its sums are zeroed by the job that starts
 * them), so a schedule runs again with nothing to reset. */
static void rewind_job(void *state)
{
    (void)state;
}

/* The partial sums of a level's kept part inside a host, taken as the received half lands (the
 * transport calls in order, the first part at offset 0). They are summed over blocks of a fixed
 * size, whatever the parts: how a message lands (single-copy reads, ring cells, whole) depends
 * on timing, and the result's bits must not. */
typedef struct {
    job_t j;
    size_t block; /* elements */
    size_t done;  /* elements summed so far, a multiple of block until the last */
} landing_t;

static void on_landed(void *arg, size_t off, size_t len)
{
    landing_t *l = arg;
    const job_t *j = &l->j;
    size_t es = j->sh->es, upto = (off + len) / es;
    if (off == 0) {
        memset(j->sums, 0, 3 * j->sh->nt * sizeof(double));
        l->done = 0;
    }
    if (upto < j->n)
        upto -= upto % l->block;
    for (; l->done < upto; l->done += l->block) {
        size_t n = upto - l->done < l->block ? upto - l->done : l->block;
        gcoll__adasum_partials(j->sh, j->a + l->done * es, j->b + l->done * es, j->first + l->done, n, j->sums);
    }
    if (l->done > upto) /* the last block was short */
        l->done = upto;
}

static job_t *add_job(gcoll__sched_t *s, job_t j)
{
    job_t *p = gcoll__sched_scratch(s, sizeof(*p));
    if (!p)
        return NULL;
    *p = j;
    gcoll__sched_custom(s, local_step, local_who, p);
    gcoll__sched_custom_rewind(s, rewind_job);
    return p;
}

static int largest_pow2(int n)
{
    int P = 1;
    while (P * 2 <= n)
        P *= 2;
    return P;
}

/* ---- halving: vector-halving distance-doubling over point-to-point messages ---- */

/* A round in which this rank r sends mine (bytes) to each other rank of 0..P-1 and receives
 * theirs into theirs[q] (all NULL when bytes is 0). */
static void swap_with_all(gcoll__sched_t *s, int P, int r, const void *mine, uint64_t *theirs, size_t bytes)
{
    gcoll__sched_round(s);
    for (int q = 0; q < P; q++)
        if (q != r) {
            gcoll__sched_send(s, q, mine, bytes);
            gcoll__sched_recv(s, q, theirs ? &theirs[q] : NULL, bytes);
        }
}

/* Whether halving's last level writes each piece of its result into the other ranks' outputs as
 * it computes it (their addresses swapped first) instead of a doubling allgather that reads the
 * results back: every rank on one host with single copy, and GCOLL_ADASUM_PUSH, by default once
 * the ranks' vectors together fill the L3 cache, so that the allgather would read from memory.
 * The setting and the cache size are the
 * host's first rank's (the node channel carries them), so every rank decides alike. */
static int pushes(const gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    if (!a->shm || !gcoll__shm_cma_usable(a) || s->peermap || a->shm->adasum_push == 2)
        return 0;
    size_t l3 = a->shm->l3 ? a->shm->l3 : (size_t)32 << 20;
    return a->shm->adasum_push == 1 || a->count * a->esize * (size_t)a->size >= l3;
}

static void build_halving(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh)
{
    int n = a->size, r = a->rank, P = largest_pow2(n), rem = n - P;
    size_t es = a->esize, cnt = a->count, bytes = cnt * es, m = 3 * sh->nt;
    char *rb = a->recvbuf;
    const char *src = gcoll__input(a);
    if (gcoll__alone(s, a))
        return;
    if (r >= P) { /* folded into r - P, which sends the result back */
        gcoll__sched_round(s);
        gcoll__sched_send(s, r - P, src, bytes);
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r - P, rb, bytes);
        return;
    }
    double *sums = gcoll__sched_scratch(s, 2 * m * sizeof(double));
    if (!sums)
        return;
    double *in = sums + m;
    const char *cur = src;
    if (r < rem) { /* adasum(x[r], x[r + P]) on whole tensors */
        char *other = src == rb ? gcoll__sched_scratch(s, bytes) : rb;
        gcoll__sched_round(s);
        gcoll__sched_recv(s, r + P, other, bytes);
        gcoll__sched_round(s);
        add_job(s, (job_t){.kind = JOB_WHOLE, .sh = sh, .a = src, .b = other, .dst = rb, .n = cnt, .sums = sums});
        cur = rb;
    }
    uint64_t *outs = pushes(s, a) ? gcoll__sched_scratch(s, sizeof(uint64_t) * (size_t)P) : NULL;
    if (outs) {
        outs[r] = (uint64_t)(uintptr_t)rb;
        swap_with_all(s, P, r, &outs[r], outs, sizeof(uint64_t));
    }
    gcoll__halving_t h;
    gcoll__halving_init(&h, P, r, cnt, 0);
    /* what a level receives: out of place, the first lands in the output where it is kept;
     * later ones (a quarter of the vector at most) in scratch */
    int first_in_place = cur == rb;
    size_t later = P >= 4 ? gcoll__halving_off(&h, P / 4) : (size_t)0;
    size_t need = first_in_place ? gcoll__halving_off(&h, P / 2) : later;
    char *tmp = need ? gcoll__sched_scratch(s, need * es) : NULL;
    for (int mask = 1; mask < P; mask <<= 1) {
        int vp = r ^ mask, mid = (h.lo + h.hi) / 2, low = r < vp;
        int klo = low ? h.lo : mid, khi = low ? mid : h.hi, slo = low ? mid : h.lo, shi = low ? h.hi : mid;
        size_t ko = gcoll__halving_off(&h, klo), kn = gcoll__halving_off(&h, khi) - ko;
        size_t so = gcoll__halving_off(&h, slo), sn = gcoll__halving_off(&h, shi) - so;
        char *recv_at = cur != rb ? rb + ko * es : tmp;
        const char *mine = cur + ko * es;
        job_t j = {.sh = sh,
                   .a = low ? mine : recv_at,
                   .b = low ? recv_at : mine,
                   .dst = rb + ko * es,
                   .first = ko,
                   .n = kn,
                   .sums = sums,
                   .in = in,
                   .s = s};
        /* between hosts both halves go in slices of GCOLL_CHUNK_BYTES (the peer cuts alike), and
         * each received slice's partial sums are taken as soon as it lands, hiding them behind
         * the network; inside a host, where single copy moves a half at memory speed and slices
         * only cost, the half goes whole and its partial sums are taken as each chunk of the
         * copy lands, still in cache */
        int remote = !a->map || a->map->host[vp] != a->map->host[r];
        size_t slice = remote && gcoll__config.chunk_bytes / es ? gcoll__config.chunk_bytes / es : kn + sn + 1;
        gcoll__sched_round(s);
        for (size_t o = 0; o < sn; o += slice)
            gcoll__sched_send(s, vp, cur + (so + o) * es, (sn - o < slice ? sn - o : slice) * es);
        landing_t *l = !remote && kn ? gcoll__sched_scratch(s, sizeof(*l)) : NULL;
        if (l) { /* blocks of a single-copy read (any fixed size would do without the channel) */
            l->j = j;
            l->block = (a->shm ? a->shm->read_bytes : (size_t)1 << 20) / es;
            gcoll__sched_recv_landed(s, vp, recv_at, kn * es, on_landed, l);
        }
        size_t prev = SIZE_MAX;
        for (size_t o = 0; !l && o < kn; o += slice) {
            size_t len = kn - o < slice ? kn - o : slice;
            gcoll__sched_recv(s, vp, recv_at + o * es, len * es);
            job_t sj = j;
            sj.kind = JOB_SLICE;
            sj.a = j.a + o * es;
            sj.b = j.b + o * es;
            sj.first = ko + o;
            sj.n = len;
            sj.recv_step = s->nsteps - 1;
            sj.prev_step = prev;
            add_job(s, sj);
            prev = s->nsteps - 1;
        }
        gcoll__sched_round(s);
        j.kind = JOB_PARTIALS;
        if (!kn)
            add_job(s, j);
        /* the pair group is the 2 mask ranks that share r's bits above mask */
        for (int d = 1; d <= mask; d <<= 1) {
            gcoll__sched_round(s);
            gcoll__sched_send(s, r ^ d, sums, m * sizeof(double));
            gcoll__sched_recv(s, r ^ d, in, m * sizeof(double));
            gcoll__sched_round(s);
            j.kind = JOB_ADD;
            add_job(s, j);
        }
        j.kind = outs && 2 * mask == P ? JOB_PUSH : JOB_APPLY;
        j.shm = a->shm;
        j.me = r;
        j.npush = P;
        j.outs = outs;
        add_job(s, j);
        cur = rb;
        h.lo = klo;
        h.hi = khi;
    }
    if (outs) /* every output is whole once each rank says it has written its part */
        swap_with_all(s, P, r, NULL, NULL, 0);
    else
        gcoll__doubling_gather(s, &h, rb, es, 1);
    if (r < rem) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, r + P, rb, bytes);
    }
}

/* ---- shm_cma: levels over the node channel, each rank owning a slice ---- */

/* The level structure: level k combines pairs (pa[i], pb[i]) of vectors (numbered by rank);
 * src[k][v] says where vector v's input to level k lives: a rank's input buffer, or this rank's
 * scratch slot for v (SLOT). */
#define SLOT (-1)

typedef struct {
    gcoll__adasum_shape_t *sh;
    int nlev, npairs_max;
    int *npairs;                  /* [nlev] */
    int *pa, *pb;                 /* [nlev][npairs_max] */
    int *src;                     /* [nlev + 1][n] */
    char **slot;                  /* [n]: this rank's slice of intermediate vector v, or NULL */
    size_t off, cnt;              /* this rank's slice */
    uint64_t *in_addr, *out_addr; /* [n]: every rank's input and output */
    double *parts[2];             /* [npairs_max][3 nt]: this rank's partials of the level, by parity */
    double *sums, *peer;          /* [npairs_max][3 nt]: summed partials; a peer's, read */
} shm_ada_t;

static shm_ada_t *ada_of(shm_op_t *op)
{
    return (shm_ada_t *)op->scratch;
}

static gcoll_status_t ada_publish(shm_op_t *op)
{
    shm_ada_t *st = ada_of(op);
    gcoll__shm_ctrl_t *c = &op->shm->ctrl[op->shm->me];
    if (op->round == 0) {
        c->src = (uint64_t)(uintptr_t)op->src;
        c->dst = (uint64_t)(uintptr_t)op->a.recvbuf;
    } else { /* the partials of the level before */
        c->src = (uint64_t)(uintptr_t)st->parts[(op->round - 1) & 1];
    }
    return GCOLL_SUCCESS;
}

/* Points *p at elements [first, first + len) of vector v as level k sees it, reading a peer's
 * input into buf. */
static gcoll_status_t load(shm_op_t *op, int k, int v, size_t first, size_t len, char *buf, const char **p)
{
    shm_ada_t *st = ada_of(op);
    size_t es = op->a.esize;
    int q = st->src[k * op->shm->n + v];
    if (q == SLOT) {
        *p = st->slot[v] + (first - st->off) * es;
    } else if (q == op->shm->me) {
        *p = op->src + first * es;
    } else {
        GCOLL_CHECK(gcoll__shm_read(op->shm, q, buf, st->in_addr[q] + first * es, len * es));
        *p = buf;
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t ada_work(shm_op_t *op)
{
    shm_ada_t *st = ada_of(op);
    gcoll__shm_t *shm = op->shm;
    int k = op->round, n = shm->n, me = shm->me;
    size_t es = op->a.esize, m = 3 * st->sh->nt;
    if (k == 0)
        for (int q = 0; q < n; q++) {
            st->in_addr[q] = shm->ctrl[q].src;
            st->out_addr[q] = shm->ctrl[q].dst;
        }
    if (k > 0) { /* the whole-tensor sums of level k - 1: every rank's partials, in rank order */
        size_t bytes = (size_t)st->npairs[k - 1] * m * sizeof(double);
        for (int q = 0; q < n; q++) {
            const double *pq = st->parts[(k - 1) & 1];
            if (q != me) {
                GCOLL_CHECK(gcoll__shm_read(shm, q, st->peer, shm->ctrl[q].src, bytes));
                pq = st->peer;
            }
            for (size_t i = 0; i < bytes / sizeof(double); i++)
                st->sums[i] = q ? st->sums[i] + pq[i] : pq[i];
        }
    }
    double *parts = k < st->nlev ? st->parts[k & 1] : NULL;
    if (parts)
        memset(parts, 0, (size_t)st->npairs[k] * m * sizeof(double));
    char *ba = shm->tmp, *bb = shm->tmp + shm->tmp_stride;
    size_t step = shm->chunk_bytes / es;
    for (size_t c0 = 0; c0 < st->cnt; c0 += step) {
        size_t len = st->cnt - c0 < step ? st->cnt - c0 : step, first = st->off + c0;
        if (k > 0) { /* apply level k - 1 */
            int l = k - 1, last = k == st->nlev;
            for (int i = 0; i < st->npairs[l]; i++) {
                int va = st->pa[l * st->npairs_max + i], vb = st->pb[l * st->npairs_max + i];
                const char *xa, *xb;
                GCOLL_CHECK(load(op, l, va, first, len, ba, &xa));
                GCOLL_CHECK(load(op, l, vb, first, len, bb, &xb));
                char *out = last ? ba : st->slot[va] + c0 * es;
                gcoll__adasum_apply(st->sh, out, xa, xb, first, len, st->sums + (size_t)i * m);
                if (!last)
                    continue;
                gcoll__copy_stream((char *)op->a.recvbuf + first * es, out, len * es);
                for (int q = 0; q < n; q++)
                    if (q != me)
                        GCOLL_CHECK(gcoll__shm_write(shm, q, st->out_addr[q] + first * es, out, len * es));
            }
        }
        if (parts) /* the partials of level k */
            for (int i = 0; i < st->npairs[k]; i++) {
                const char *xa, *xb;
                GCOLL_CHECK(load(op, k, st->pa[k * st->npairs_max + i], first, len, ba, &xa));
                GCOLL_CHECK(load(op, k, st->pb[k * st->npairs_max + i], first, len, bb, &xb));
                gcoll__adasum_partials(st->sh, xa, xb, first, len, parts + (size_t)i * m);
            }
    }
    return GCOLL_SUCCESS;
}

/* The levels of the tree over n vectors, and where each level finds its inputs. */
static int plan_levels(gcoll__sched_t *s, shm_ada_t *st, int n, int me, size_t count, size_t es)
{
    int P = largest_pow2(n), rem = n - P, nlev = (rem > 0);
    for (int d = 1; d < P; d <<= 1)
        nlev++;
    int npm = rem > P / 2 ? rem : P / 2;
    st->nlev = nlev;
    st->npairs_max = npm;
    st->npairs = gcoll__sched_scratch(s, sizeof(int) * (size_t)nlev);
    st->pa = gcoll__sched_scratch(s, sizeof(int) * (size_t)(nlev * npm));
    st->pb = gcoll__sched_scratch(s, sizeof(int) * (size_t)(nlev * npm));
    st->src = gcoll__sched_scratch(s, sizeof(int) * (size_t)((nlev + 1) * n));
    st->slot = gcoll__sched_scratch(s, sizeof(char *) * (size_t)n);
    st->in_addr = gcoll__sched_scratch(s, sizeof(uint64_t) * (size_t)n);
    st->out_addr = gcoll__sched_scratch(s, sizeof(uint64_t) * (size_t)n);
    if (!st->npairs || !st->pa || !st->pb || !st->src || !st->slot || !st->in_addr || !st->out_addr)
        return -1;
    int l = 0;
    if (rem > 0) {
        st->npairs[l] = rem;
        for (int i = 0; i < rem; i++) {
            st->pa[i] = i;
            st->pb[i] = i + P;
        }
        l++;
    }
    for (int d = 1; d < P; d <<= 1, l++) {
        st->npairs[l] = P / (2 * d);
        for (int i = 0; i < P / (2 * d); i++) {
            st->pa[l * npm + i] = 2 * d * i;
            st->pb[l * npm + i] = 2 * d * i + d;
        }
    }
    st->off = gcoll__blk_off(count, n, me);
    st->cnt = gcoll__blk_cnt(count, n, me);
    for (int v = 0; v < n; v++) {
        st->src[v] = v;
        st->slot[v] = NULL;
    }
    for (l = 0; l < nlev; l++) {
        memcpy(st->src + (l + 1) * n, st->src + l * n, sizeof(int) * (size_t)n);
        for (int i = 0; i < st->npairs[l]; i++) {
            int va = st->pa[l * npm + i];
            st->src[(l + 1) * n + va] = SLOT;
            if (l + 1 < nlev && !st->slot[va] && !(st->slot[va] = gcoll__sched_scratch(s, st->cnt * es + 1)))
                return -1;
        }
    }
    return 0;
}

static void build_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a, gcoll__adasum_shape_t *sh)
{
    if (gcoll__alone(s, a))
        return;
    shm_op_t *op = gcoll__shm_op(s, a, 1, 1, ada_publish, ada_work, sizeof(shm_ada_t));
    if (!op)
        return;
    shm_ada_t *st = ada_of(op);
    memset(st, 0, sizeof(*st));
    st->sh = sh;
    if (plan_levels(s, st, a->size, a->rank, a->count, a->esize) != 0)
        return;
    size_t m = 3 * sh->nt * (size_t)st->npairs_max;
    double *d = gcoll__sched_scratch(s, 4 * m * sizeof(double));
    if (!d)
        return;
    st->parts[0] = d;
    st->parts[1] = d + m;
    st->sums = d + 2 * m;
    st->peer = d + 3 * m;
    /* one round per level and one to finish: claim the channel's sequence numbers for them */
    op->nrounds = st->nlev + 1;
    a->shm->issued += (uint64_t)st->nlev;
}

/* ---- shm_slots: the whole tree on every rank, from the slots ---- */

typedef struct {
    gcoll__adasum_shape_t *sh;
    char *tmp;    /* [P][count]: the intermediate vectors of ranks 0..P-1 */
    double *sums; /* 3 nt */
} slots_ada_t;

static gcoll_status_t slots_publish(shm_op_t *op)
{
    memcpy(shm_input(op, op->shm->me), op->src, op->a.count * op->a.esize);
    return GCOLL_SUCCESS;
}

/* dst = adasum(a, b) over the whole buffer. */
static void combine_whole(const slots_ada_t *st, char *dst, const char *a, const char *b, size_t count)
{
    memset(st->sums, 0, 3 * st->sh->nt * sizeof(double));
    gcoll__adasum_partials(st->sh, a, b, 0, count, st->sums);
    gcoll__adasum_apply(st->sh, dst, a, b, 0, count, st->sums);
}

static gcoll_status_t slots_work(shm_op_t *op)
{
    slots_ada_t *st = (slots_ada_t *)op->scratch;
    int n = op->shm->n, P = largest_pow2(n);
    size_t cnt = op->a.count, bytes = cnt * op->a.esize;
    const char **v = (const char **)(st->sums + 3 * st->sh->nt); /* [n]: where each vector is now */
    for (int q = 0; q < n; q++)
        v[q] = shm_input(op, q);
    for (int q = P; q < n; q++) {
        combine_whole(st, st->tmp + (size_t)(q - P) * bytes, v[q - P], v[q], cnt);
        v[q - P] = st->tmp + (size_t)(q - P) * bytes;
    }
    for (int d = 1; d < P; d <<= 1)
        for (int i = 0; i < P; i += 2 * d) {
            char *out = 2 * d == P ? op->a.recvbuf : st->tmp + (size_t)i * bytes;
            combine_whole(st, out, v[i], v[i + d], cnt);
            v[i] = out;
        }
    return GCOLL_SUCCESS;
}

static void build_slots(gcoll__sched_t *s, const gcoll__coll_args_t *a, gcoll__adasum_shape_t *sh)
{
    if (gcoll__alone(s, a))
        return;
    shm_op_t *op = gcoll__shm_op(s, a, 0, 1, slots_publish, slots_work, sizeof(slots_ada_t));
    if (!op)
        return;
    op->tiny = a->count * a->esize <= GCOLL_SHM_INLINE;
    slots_ada_t *st = (slots_ada_t *)op->scratch;
    st->sh = sh;
    st->tmp = gcoll__sched_scratch(s, (size_t)largest_pow2(a->size) * a->count * a->esize);
    st->sums = gcoll__sched_scratch(s, 3 * sh->nt * sizeof(double) + (size_t)a->size * sizeof(char *));
}

/* ---- hierarchical ---- */

static void build_hier(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh)
{
    const gcoll__nodemap_t *mp = a->map;
    int H = mp->nhosts, h = mp->host[a->rank], me = mp->local[a->rank];
    int L = mp->first[h + 1] - mp->first[h];
    const int *g = mp->by_host + mp->first[h];
    size_t bytes = a->count * a->esize;
    gcoll__coll_args_t sub = *a;
    sub.shm = NULL;
    sub.map = NULL;
    sub.op = GCOLL_SUM;
    sub.rank = me;
    sub.size = L;
    sub.root = 0;
    const gcoll__algo_t *alg;
    if (L == 1) {
        gcoll__sched_round(s);
        gcoll__sched_copy(s, a->recvbuf, gcoll__input(a), bytes);
    } else {
        sub.coll = GCOLL_COLL_REDUCE;
        if (gcoll__algo_select(&sub, NULL, &alg) != GCOLL_SUCCESS) {
            s->status = GCOLL_ERR_INTERNAL;
            return;
        }
        s->peermap = g;
        alg->build(s, &sub);
        s->peermap = NULL;
    }
    if (me == 0 && H > 1) {
        int *leaders = gcoll__sched_scratch(s, sizeof(int) * (size_t)H);
        if (!leaders)
            return;
        for (int k = 0; k < H; k++)
            leaders[k] = mp->by_host[mp->first[k]];
        gcoll__coll_args_t lead = *a;
        lead.sendbuf = lead.recvbuf;
        lead.rank = h;
        lead.size = H;
        lead.shm = NULL;
        lead.map = NULL;
        s->peermap = leaders;
        build_halving(s, &lead, sh);
        s->peermap = NULL;
    }
    if (L > 1) {
        sub.coll = GCOLL_COLL_BCAST;
        sub.sendbuf = sub.recvbuf;
        if (gcoll__algo_select(&sub, NULL, &alg) != GCOLL_SUCCESS) {
            s->status = GCOLL_ERR_INTERNAL;
            return;
        }
        s->peermap = g;
        alg->build(s, &sub);
        s->peermap = NULL;
    }
}

/* ---- entry ---- */

gcoll_status_t gcoll__adasum_check(size_t count, gcoll_dtype_t dtype, const size_t *tensor_counts, size_t ntensors)
{
    if (dtype != GCOLL_FLOAT16 && dtype != GCOLL_BFLOAT16 && dtype != GCOLL_FLOAT32 && dtype != GCOLL_FLOAT64)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %s: Adasum takes float16, bfloat16, float32 or float64",
                            gcoll_dtype_name(dtype));
    if (!tensor_counts) {
        if (ntensors > 1)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "tensor_counts is NULL with ntensors %zu (NULL means one tensor)", ntensors);
        return GCOLL_SUCCESS;
    }
    if (ntensors == 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "ntensors is 0 with tensor_counts given");
    size_t sum = 0;
    for (size_t t = 0; t < ntensors; t++) {
        if (tensor_counts[t] > count - sum)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "tensor_counts: tensors 0..%zu hold more than count %zu elements", t, count);
        sum += tensor_counts[t];
    }
    if (sum != count)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "tensor_counts add up to %zu, not count %zu", sum, count);
    return GCOLL_SUCCESS;
}

const char *const gcoll__adasum_names[GCOLL_ADASUM_NALGOS] = {"halving", "shm_slots", "shm_cma", "hierarchical"};
static const char *const labels[GCOLL_ADASUM_NALGOS] = {"adasum/halving", "adasum/shm_slots", "adasum/shm_cma",
                                                        "adasum/hierarchical"};

/* shm_slots while a vector fits a slot in one round. The built-in choice takes it only up to 1/16
 * of the slot (4 KiB by default): every rank combines all n vectors, so halving wins above that. */
static int slots_usable(const gcoll__coll_args_t *a)
{
    return a->shm != NULL && a->count * a->esize <= a->shm->slot_bytes;
}

static const char *label(const char *name)
{
    for (int i = 0; i < GCOLL_ADASUM_NALGOS; i++)
        if (strcmp(name, gcoll__adasum_names[i]) == 0)
            return labels[i];
    return NULL;
}

/* The algorithm GCOLL_ADASUM asks for on these arguments. */
static const char *choose(const gcoll__coll_args_t *a)
{
    int spans = a->map && a->map->nhosts > 1, crowded = 0;
    for (int k = 0; spans && k < a->map->nhosts; k++)
        crowded |= a->map->first[k + 1] - a->map->first[k] > 1;
    int mode = gcoll__config.adasum; /* 0 auto, 1 flat, 2 hierarchical */
    if (mode == 2 || (mode == 0 && spans && crowded))
        return "hierarchical";
    if (slots_usable(a) && a->count * a->esize <= a->shm->slot_bytes / 16)
        return "shm_slots";
    /* not shm_cma: halving, over the node channel's single-copy messages, is faster at every size */
    return "halving";
}

gcoll_status_t gcoll__adasum_build(gcoll__sched_t *s, const gcoll__coll_args_t *a, const size_t *tensor_counts,
                                   size_t ntensors, const char *forced, const char **algo)
{
    GCOLL_CHECK(gcoll__adasum_check(a->count, a->dtype, tensor_counts, ntensors));
    const char *name = forced ? forced : choose(a);
    if (!label(name))
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "attr->algorithm '%s' is not an adasum algorithm: accepts "
                            "halving|shm_slots|shm_cma|hierarchical",
                            name);
    /* as for the other collectives, an algorithm that cannot serve gives way to the built-in choice */
    if ((strcmp(name, "shm_cma") == 0 && !gcoll__shm_cma_usable(a)) || (strcmp(name, "hierarchical") == 0 && !a->map) ||
        (strcmp(name, "shm_slots") == 0 && !slots_usable(a))) {
        GCOLL_LOG(GCOLL_LOG_INFO,
                  "adasum: %s cannot serve this communicator (attr->algorithm); using the built-in "
                  "choice",
                  name);
        name = choose(a);
    }
    *algo = label(name);
    if (a->count == 0)
        return GCOLL_SUCCESS;
    size_t nt = tensor_counts ? ntensors : 1;
    gcoll__adasum_shape_t *sh = gcoll__sched_scratch(s, sizeof(*sh));
    size_t *off = gcoll__sched_scratch(s, (nt + 1) * sizeof(size_t));
    if (!sh || !off)
        return gcoll__error(GCOLL_ERR_NOMEM, "adasum: no memory for %zu tensors", nt);
    off[0] = 0;
    for (size_t t = 0; t < nt; t++)
        off[t + 1] = off[t] + (tensor_counts ? tensor_counts[t] : a->count);
    *sh = (gcoll__adasum_shape_t){.dtype = a->dtype, .es = a->esize, .nt = nt, .off = off};
    if (strcmp(name, "halving") == 0)
        build_halving(s, a, sh);
    else if (strcmp(name, "shm_cma") == 0)
        build_cma(s, a, sh);
    else if (strcmp(name, "shm_slots") == 0)
        build_slots(s, a, sh);
    else
        build_hier(s, a, sh);
    if (s->status != GCOLL_SUCCESS)
        return gcoll__error(s->status, "adasum: the schedule of %zu elements could not be built (%s)", a->count,
                            gcoll_status_name(s->status));
    return GCOLL_SUCCESS;
}

const char *gcoll__adasum_choice(const gcoll__coll_args_t *a)
{
    return label(choose(a));
}
