/* Adasum's halving algorithm (adasum.h): vector-halving distance-doubling over point-to-point
 * messages, DESIGN.md's exact tree (ranks r >= P fold into r - P first). It moves a Rabenseifner
 * allreduce's volume, 2(P-1)/P of the vector per rank, plus 3 doubles per tensor and level of
 * partial sums; its local steps (partial sums, applies, pushes) run as custom steps. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/copy.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/log.h"
#include "collectives/adasum.h"
#include "collectives/halving.h"
#include "collectives/select.h"
#include "transports/shm/channel.h"

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
        for (size_t es = j->sh->es, step = gcoll__shm_info(j->shm)->read_bytes / es, o = 0; o < j->n; o += step) {
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
 * host's first rank's (the communicator's host layout holds them), so every rank decides alike. */
static int pushes(const gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    if (!a->shm || !a->map || !gcoll__node_cma_usable(a) || s->peermap || a->map->adasum_push == 2)
        return 0;
    size_t l3 = a->map->l3 ? a->map->l3 : (size_t)32 << 20;
    return a->map->adasum_push == 1 || a->count * a->esize * (size_t)a->size >= l3;
}

void gcoll__adasum_halving(gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__adasum_shape_t *sh)
{
    int n = a->size, r = a->rank, P = gcoll__adasum_pow2(n), rem = n - P;
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
            l->block = (a->shm ? gcoll__shm_info(a->shm)->read_bytes : (size_t)1 << 20) / es;
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
