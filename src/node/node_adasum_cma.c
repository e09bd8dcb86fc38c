/* Adasum's shm_cma algorithm (adasum.h): the tree's levels over the node channel, each rank
 * owning a slice of every level's vectors and reading its peers' inputs with single-copy reads. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/copy.h"
#include "base/dtype.h"
#include "base/log.h"
#include "collectives/adasum.h"
#include "collectives/halving.h"
#include "collectives/select.h"
#include "node/node_op.h"

/* The level structure: level k combines pairs (pa[i], pb[i]) of vectors (numbered by rank);
 * src[k][v] says where vector v's input to level k lives: a rank's input buffer, or this rank's
 * scratch slot for v (SLOT). */
#define SLOT (-1)

typedef struct {
    const gcoll__adasum_shape_t *sh;
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

static shm_ada_t *ada_of(gcoll__node_op_t *op)
{
    return (shm_ada_t *)op->scratch;
}

static gcoll_status_t ada_publish(gcoll__node_op_t *op)
{
    shm_ada_t *st = ada_of(op);
    if (op->round == 0)
        gcoll__shm_publish(op->shm, op->src, op->a.recvbuf);
    else /* the partials of the level before */
        gcoll__shm_publish(op->shm, st->parts[(op->round - 1) & 1], NULL);
    return GCOLL_SUCCESS;
}

/* Points *p at elements [first, first + len) of vector v as level k sees it, reading a peer's
 * input into buf. */
static gcoll_status_t load(gcoll__node_op_t *op, int k, int v, size_t first, size_t len, char *buf, const char **p)
{
    shm_ada_t *st = ada_of(op);
    size_t es = op->a.esize;
    int q = st->src[k * op->n + v];
    if (q == SLOT) {
        *p = st->slot[v] + (first - st->off) * es;
    } else if (q == op->me) {
        *p = op->src + first * es;
    } else {
        GCOLL_CHECK(gcoll__shm_read(op->shm, q, buf, st->in_addr[q] + first * es, len * es));
        *p = buf;
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t ada_work(gcoll__node_op_t *op)
{
    shm_ada_t *st = ada_of(op);
    gcoll__shm_t *shm = op->shm;
    int k = op->round, n = op->n, me = op->me;
    size_t es = op->a.esize, m = 3 * st->sh->nt;
    if (k == 0)
        for (int q = 0; q < n; q++) {
            st->in_addr[q] = gcoll__shm_peer_src(shm, q);
            st->out_addr[q] = gcoll__shm_peer_dst(shm, q);
        }
    if (k > 0) { /* the whole-tensor sums of level k - 1: every rank's partials, in rank order */
        size_t bytes = (size_t)st->npairs[k - 1] * m * sizeof(double);
        for (int q = 0; q < n; q++) {
            const double *pq = st->parts[(k - 1) & 1];
            if (q != me) {
                GCOLL_CHECK(gcoll__shm_read(shm, q, st->peer, gcoll__shm_peer_src(shm, q), bytes));
                pq = st->peer;
            }
            for (size_t i = 0; i < bytes / sizeof(double); i++)
                st->sums[i] = q ? st->sums[i] + pq[i] : pq[i];
        }
    }
    double *parts = k < st->nlev ? st->parts[k & 1] : NULL;
    if (parts)
        memset(parts, 0, (size_t)st->npairs[k] * m * sizeof(double));
    char *ba = gcoll__shm_tmp(shm, 0), *bb = gcoll__shm_tmp(shm, 1);
    size_t step = gcoll__shm_info(shm)->chunk_bytes / es;
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
    int P = gcoll__adasum_pow2(n), rem = n - P, nlev = (rem > 0);
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

void gcoll__node_adasum_cma(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh)
{
    if (gcoll__alone(s, a))
        return;
    gcoll__node_op_t *op = gcoll__node_op(s, a, 1, 1, ada_publish, ada_work, sizeof(shm_ada_t));
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
    /* one round per level and one to finish: the channel's sequence numbers reserved at issue */
    op->nrounds = st->nlev + 1;
}
