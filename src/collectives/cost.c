/* The cost model: every rank's schedule (a sample of hosts' at scale) built dry and priced round
 * by round (link latency, the heaviest transfer at the burst rate, unhidden local work), bounded
 * below by the busiest link's bytes at its sustained rate; algorithms whose lower bound cannot
 * win are not priced. docs/design.md describes the model. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/schedule.h"
#include "collectives/algo.h"
#include "collectives/cost.h"
#include "collectives/select.h"

/* Local work: the reduction kernels and copies of one core (what gcoll_bench membw reports). */
#define REDUCE_BPS 4e9
#define COPY_BPS 7e9
/* Messages a rank posts in one round overlap on the wire, but each beyond the first adds half a
 * latency of its own (the software cost of a message, which a loaded host pays in full).
 * The messages that leave one host in a round count alike, whichever of its ranks posts them:
 * they share the host's network stack. */
#define EXTRA_MSG 0.5
/* Predictions this close to the least count as a tie (below the model's own accuracy). */
#define TIE 0.01

gcoll__link_t gcoll__cost_link(const char *tp, int inter)
{
    const gcoll__link_t *set = &gcoll__config.cost[inter ? 1 : 0];
    if (set->bw_Bps > 0)
        return *set;
    static const struct {
        const char *name;
        gcoll__link_t link;
    } known[] = {
        /* built-in figures: an 8 B allreduce's latency and a 64 MiB ring's bandwidth */
        {"shm", {1e-6, 5e9, 5e9}},
        {"mpi", {5e-6, 2e9, 2e9}},
        {"tcp", {12e-6, 1e9, 1e9}},
        {"ofi", {15e-6, 1e9, 1e9}},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(tp, known[i].name) == 0)
            return known[i].link;
    return (gcoll__link_t){20e-6, 1e9, 1e9}; /* a plugin: assume a plain network */
}

/* A link's rate for one round's transfer. */
static double burst_rate(const gcoll__link_t *l)
{
    return l->burst_Bps > l->bw_Bps ? l->burst_Bps : l->bw_Bps;
}

typedef struct {
    double intra; /* the busiest rank's bytes inside its host */
    double red, copy;
    int nin; /* the most messages one rank posts inside its host (across: rounds_t.msgs, per host) */
} round_t;

typedef struct {
    round_t *r;
    double *outs; /* [round][host]: bytes leaving the host */
    int *msgs;    /* [round][host]: messages leaving the host */
    double *cpu;  /* [round][host]: the core time of the messages its ranks post, at both ends */
    size_t n, cap;
    int nhosts;
} rounds_t;

static round_t *round_at(rounds_t *rs, size_t k)
{
    while (k >= rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 16;
        round_t *r = realloc(rs->r, cap * sizeof(*r));
        if (r)
            rs->r = r;
        double *o = r ? realloc(rs->outs, cap * (size_t)rs->nhosts * sizeof(double)) : NULL;
        if (o)
            rs->outs = o;
        int *mg = o ? realloc(rs->msgs, cap * (size_t)rs->nhosts * sizeof(int)) : NULL;
        if (mg)
            rs->msgs = mg;
        double *c = mg ? realloc(rs->cpu, cap * (size_t)rs->nhosts * sizeof(double)) : NULL;
        if (!c)
            return NULL;
        rs->cpu = c;
        memset(rs->r + rs->cap, 0, (cap - rs->cap) * sizeof(*r));
        memset(o + rs->cap * (size_t)rs->nhosts, 0, (cap - rs->cap) * (size_t)rs->nhosts * sizeof(double));
        memset(mg + rs->cap * (size_t)rs->nhosts, 0, (cap - rs->cap) * (size_t)rs->nhosts * sizeof(int));
        memset(c + rs->cap * (size_t)rs->nhosts, 0, (cap - rs->cap) * (size_t)rs->nhosts * sizeof(double));
        rs->cap = cap;
    }
    if (k >= rs->n)
        rs->n = k + 1;
    return rs->r + k;
}

/* Adds rank's schedule to the rounds, its host's bytes and messages in column slot; 0 when it
 * cannot be priced (a custom step, no memory). */
static int add_rank(rounds_t *rs, const gcoll__sched_t *s, const gcoll__coll_args_t *a, const gcoll__links_t *l,
                    int rank, int slot)
{
    const gcoll__nodemap_t *m = a->map;
    int host = m ? m->host[rank] : rank;
    for (size_t k = 0; k < s->nrounds; k++) {
        round_t *r = round_at(rs, k);
        if (!r)
            return 0;
        double *out = rs->outs + k * (size_t)rs->nhosts, in = 0, red = 0, copy = 0;
        double *cpu = rs->cpu + k * (size_t)rs->nhosts;
        int *msgs = rs->msgs + k * (size_t)rs->nhosts;
        int nin = 0;
        /* local steps listed before the round's last receive run while later messages are on
         * the wire (the engine starts each as soon as the steps before it are done): only
         * those after it add to the round */
        size_t last_recv = 0;
        for (size_t i = 0; i < s->rounds[k].count; i++)
            if (s->steps[s->rounds[k].first + i].kind == GCOLL_STEP_RECV)
                last_recv = i;
        for (size_t i = 0; i < s->rounds[k].count; i++) {
            const gcoll__step_t *st = &s->steps[s->rounds[k].first + i];
            if ((st->kind == GCOLL_STEP_REDUCE || st->kind == GCOLL_STEP_COPY) && i < last_recv)
                continue;
            switch (st->kind) {
            case GCOLL_STEP_SEND:
                if (!m || m->host[st->peer] != host) {
                    out[slot] += (double)st->n;
                    msgs[slot]++;
                    cpu[slot] += 2 * EXTRA_MSG * l->inter.lat_s;
                } else {
                    in += (double)st->n;
                    nin++;
                    cpu[slot] += 2 * EXTRA_MSG * l->intra.lat_s;
                }
                break;
            case GCOLL_STEP_REDUCE: red += (double)st->n * (double)a->esize; break;
            case GCOLL_STEP_COPY: copy += (double)st->n; break;
            case GCOLL_STEP_CUSTOM: return 0;
            default: break;
            }
        }
        r->intra = in > r->intra ? in : r->intra;
        r->red = red > r->red ? red : r->red;
        r->copy = copy > r->copy ? copy : r->copy;
        r->nin = nin > r->nin ? nin : r->nin;
    }
    return 1;
}

/* Rank's arguments where a holds the root's view (or every rank's alike, for alltoallv): the
 * count of the vector collectives is per rank, and non-roots of gatherv and scatterv know no
 * counts. */
/* The collectives in place at the root only (the others' buffers may be NULL): a rank's own
 * placement must not enter a price that every rank computes alike, so they are priced as out of
 * place everywhere. */
static int rooted(int coll)
{
    return coll == GCOLL_COLL_REDUCE || coll == GCOLL_COLL_GATHER || coll == GCOLL_COLL_GATHERV ||
        coll == GCOLL_COLL_SCATTER || coll == GCOLL_COLL_SCATTERV;
}

static gcoll__coll_args_t per_rank(const gcoll__coll_args_t *a, int rank)
{
    gcoll__coll_args_t r = *a;
    r.rank = rank;
    if (a->coll == GCOLL_COLL_ALLGATHERV || a->coll == GCOLL_COLL_GATHERV)
        r.count = a->counts[rank];
    if (a->coll == GCOLL_COLL_SCATTERV)
        r.count = a->scounts[rank];
    if (rank != a->root && a->coll == GCOLL_COLL_GATHERV)
        r.counts = r.displs = NULL;
    if (rank != a->root && a->coll == GCOLL_COLL_SCATTERV)
        r.scounts = r.sdispls = NULL;
    return r;
}

/* A round's latency: the slower link's, plus half a latency for every further message (on
 * either link: one core posts and completes them all). */
static double round_lat(const gcoll__links_t *l, int nin, int nout)
{
    double in = nin ? l->intra.lat_s : 0, out = nout ? l->inter.lat_s : 0, base = in > out ? in : out;
    return (nin + nout) ? base + EXTRA_MSG * (nin * l->intra.lat_s + nout * l->inter.lat_s - base) : 0;
}

/* Whether the model prices algo for a: of a's collective, the plain family, and able to serve it. */
static int priceable(const gcoll__algo_t *algo, const gcoll__coll_args_t *a)
{
    return algo && algo->coll == a->coll && algo->family == GCOLL_FAMILY_PLAIN && gcoll__algo_usable(algo, a);
}

/* Rank's schedule of algo for a, built dry (NULL: no memory); its status says whether it built. */
static gcoll__sched_t *build_dry(const gcoll__algo_t *algo, const gcoll__coll_args_t *a, int rank,
                                 gcoll__coll_args_t *r)
{
    /* stand-in buffers: builders only do arithmetic on them */
    static char sendbuf, recvbuf;
    *r = per_rank(a, rank);
    r->recvbuf = &recvbuf;
    r->sendbuf = a->sendbuf == a->recvbuf && !rooted(a->coll) ? (const void *)&recvbuf : (const void *)&sendbuf;
    gcoll__sched_t *s = gcoll__sched_new(a->dtype, a->op, (unsigned)a->size, NULL);
    if (!s)
        return NULL;
    s->dry = 1;
    if (a->count || a->coll == GCOLL_COLL_BARRIER || gcoll__coll_vector(a->coll))
        algo->build(s, r);
    return s;
}

static void add_host(int *hosts, int *k, int h, int nh)
{
    if (h < 0 || h >= nh)
        return;
    for (int i = 0; i < *k; i++)
        if (hosts[i] == h)
            return;
    hosts[(*k)++] = h;
}

/* The largest power of two at most x (x >= 1). */
static int pow2_floor(int x)
{
    int p = 1;
    while (p <= x / 2)
        p *= 2;
    return p;
}

/* Where a power-of-two algorithm over x members changes role: on either side of p, the largest
 * power of two in x, of p / 2, and of q = x - p and 2q (recursive doubling's folded pairs end
 * there), and the two ends. */
static int role_edges(int x, int *e)
{
    int p = pow2_floor(x), q = x - p, k = 0;
    const int at[] = {0, 1,     2,     x - 2, x - 1, p / 2 - 1, p / 2, p - 1,
                      p, p + 1, q - 1, q,     q + 1, 2 * q - 1, 2 * q, 2 * q + 1};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        e[k++] = at[i];
    return k;
}

#define MAX_SAMPLED 48

/* The hosts a sampled prediction builds every rank of: the role edges of the ranks (their hosts)
 * and of the hosts (where hierarchical algorithms' leaders change role), and the root's. Ranks
 * elsewhere repeat what these do, up to blocks one element apart. Returns how many (sorted). */
static int sample_hosts(const gcoll__coll_args_t *a, int *hosts)
{
    const gcoll__nodemap_t *m = a->map;
    int n = a->size, nh = m ? m->nhosts : n, e[16], k = 0, ne = role_edges(n, e);
    for (int i = 0; i < ne; i++)
        if (e[i] >= 0 && e[i] < n)
            add_host(hosts, &k, m ? m->host[e[i]] : e[i], nh);
    ne = role_edges(nh, e);
    for (int i = 0; i < ne; i++)
        add_host(hosts, &k, e[i], nh);
    if (a->root >= 0 && a->root < n)
        add_host(hosts, &k, m ? m->host[a->root] : a->root, nh);
    for (int i = 1; i < k; i++) /* insertion sort: a few dozen */
        for (int j = i; j > 0 && hosts[j - 1] > hosts[j]; j--) {
            int t = hosts[j];
            hosts[j] = hosts[j - 1];
            hosts[j - 1] = t;
        }
    return k;
}

double gcoll__cost_predict_parts(int idx, const gcoll__coll_args_t *a, const gcoll__links_t *links, double *rounds_s)
{
    const gcoll__algo_t *algo = gcoll__algo_get(idx);
    if (!priceable(algo, a))
        return -1;
    int n = a->size, nh = a->map ? a->map->nhosts : n;
    int limit = links->sample_above > 0 ? links->sample_above : GCOLL__COST_SAMPLE_RANKS;
    /* allgatherv and reduce_scatterv are priced with one rank holding half (gcoll__cost_even):
     * the ring passes that block through every rank in turn, so each round's busiest rank is a
     * different one and no sample holds them all */
    int sample = n > limit && a->coll != GCOLL_COLL_ALLGATHERV && a->coll != GCOLL_COLL_REDUCE_SCATTERV;
    int hosts[MAX_SAMPLED], nslots = sample ? sample_hosts(a, hosts) : nh;
    rounds_t rs = {.nhosts = nslots};
    double t = 0, intra_total = 0;
    int ok = 1;
    for (int slot = 0; slot < nslots && ok; slot++) {
        int h = sample ? hosts[slot] : slot;
        int first = a->map ? a->map->first[h] : h, last = a->map ? a->map->first[h + 1] : h + 1;
        for (int i = first; i < last && ok; i++) {
            int rank = a->map ? a->map->by_host[i] : i;
            gcoll__coll_args_t r;
            gcoll__sched_t *s = build_dry(algo, a, rank, &r);
            ok = s && s->status == GCOLL_SUCCESS && add_rank(&rs, s, &r, links, rank, slot);
            gcoll__sched_free(s);
        }
    }
    double inter_burst = burst_rate(&links->inter), intra_burst = burst_rate(&links->intra);
    int crowd = a->map ? a->map->cores : 0;
    for (size_t k = 0; ok && k < rs.n; k++) {
        const round_t *r = &rs.r[k];
        const double *out = rs.outs + k * (size_t)rs.nhosts;
        const int *msgs = rs.msgs + k * (size_t)rs.nhosts;
        const double *cpu = rs.cpu + k * (size_t)rs.nhosts;
        double busiest = 0, queued = 0;
        int nout = 0; /* at least any one rank's, since its host counts them too */
        for (int h = 0; h < rs.nhosts; h++) {
            busiest = out[h] > busiest ? out[h] : busiest;
            nout = msgs[h] > nout ? msgs[h] : nout;
            queued = cpu[h] > queued ? cpu[h] : queued;
        }
        /* ranks that outnumber their host's cores take turns on them: the round waits for the
         * core time of every message its host's ranks post and take in */
        double lat = round_lat(links, r->nin, nout), wait = crowd > 0 ? queued / crowd : 0;
        double across = busiest / inter_burst, inside = r->intra / intra_burst;
        t += (lat > wait ? lat : wait) + (across > inside ? across : inside) + r->red / REDUCE_BPS + r->copy / COPY_BPS;
        intra_total += r->intra;
    }
    /* the sustained floor: the bytes that leave the busiest host, and those of the busiest rank
     * inside one (summed per round: at most that), past the first GCOLL__COST_BURST_BYTES */
    double host_total = 0;
    for (int h = 0; ok && h < rs.nhosts; h++) {
        double sum = 0;
        for (size_t k = 0; k < rs.n; k++)
            sum += rs.outs[k * (size_t)rs.nhosts + h];
        host_total = sum > host_total ? sum : host_total;
    }
    host_total = host_total > GCOLL__COST_BURST_BYTES ? host_total - GCOLL__COST_BURST_BYTES : 0;
    intra_total = intra_total > GCOLL__COST_BURST_BYTES ? intra_total - GCOLL__COST_BURST_BYTES : 0;
    double floor_across = host_total / links->inter.bw_Bps, floor_inside = intra_total / links->intra.bw_Bps;
    double floor = floor_across > floor_inside ? floor_across : floor_inside;
    free(rs.r);
    free(rs.outs);
    free(rs.msgs);
    free(rs.cpu);
    if (rounds_s)
        *rounds_s = ok ? t : -1;
    return ok ? (t > floor ? t : floor) : -1;
}

gcoll__sched_t *gcoll__cost_schedule(int idx, const gcoll__coll_args_t *a, int rank)
{
    const gcoll__algo_t *algo = gcoll__algo_get(idx);
    gcoll__coll_args_t r;
    return priceable(algo, a) && rank >= 0 && rank < a->size ? build_dry(algo, a, rank, &r) : NULL;
}

/* Round costs alike: within TIE where the host's ranks outnumber its cores (the queued core
 * time dwarfs the byte terms that tell them apart), else but for rounding. */
static int same_cost(double x, double y, int crowded)
{
    return (x > y ? x - y : y - x) <= (crowded ? TIE : 1e-9) * (x > y ? x : y);
}

/* Whether algorithm i's schedule has fewer rounds than j's (rank 0's), or as many and i comes first. */
static int fewer_rounds(int i, int j, const gcoll__coll_args_t *a)
{
    gcoll__sched_t *si = gcoll__cost_schedule(i, a, 0), *sj = gcoll__cost_schedule(j, a, 0);
    size_t ni = si ? si->nrounds : SIZE_MAX, nj = sj ? sj->nrounds : SIZE_MAX;
    gcoll__sched_free(si);
    gcoll__sched_free(sj);
    return ni < nj || (ni == nj && i < j);
}

double gcoll__cost_predict(int idx, const gcoll__coll_args_t *a, const gcoll__links_t *links)
{
    return gcoll__cost_predict_parts(idx, a, links, NULL);
}

/* A lower bound of algorithm idx's prediction for a, from the schedules of three ranks alone
 * (the first, the last of the first host, whose ring neighbour is on the next host, and the
 * last): the latency of each round as their messages make it, which every rank's together can
 * only raise, or the sustained floor of the bytes each of them sends, whichever is more; -1 when
 * it cannot serve a. */
static double lower_bound(int idx, const gcoll__coll_args_t *a, const gcoll__links_t *links)
{
    const gcoll__algo_t *algo = gcoll__algo_get(idx);
    if (!priceable(algo, a))
        return -1;
    const gcoll__nodemap_t *m = a->map;
    int who[3] = {0, m ? m->by_host[m->first[1] - 1] : 0, a->size - 1};
    gcoll__sched_t *s[3] = {NULL, NULL, NULL};
    int ok = 1;
    size_t nrounds = 0;
    for (int w = 0; w < 3 && ok; w++) {
        gcoll__coll_args_t r;
        s[w] = build_dry(algo, a, who[w], &r);
        ok = s[w] && s[w]->status == GCOLL_SUCCESS;
        nrounds = ok && s[w]->nrounds > nrounds ? s[w]->nrounds : nrounds;
    }
    double lb = 0, bytes_in[3] = {0}, bytes_out[3] = {0}, floor = 0;
    for (size_t k = 0; ok && k < nrounds; k++) {
        int nin = 0, nout = 0;
        for (int w = 0; w < 3; w++) {
            int in = 0, out = 0, host = m ? m->host[who[w]] : who[w];
            for (size_t i = 0; k < s[w]->nrounds && i < s[w]->rounds[k].count; i++) {
                const gcoll__step_t *st = &s[w]->steps[s[w]->rounds[k].first + i];
                if (st->kind == GCOLL_STEP_SEND && (!m || m->host[st->peer] != host)) {
                    out++;
                    bytes_out[w] += (double)st->n;
                } else if (st->kind == GCOLL_STEP_SEND) {
                    in++;
                    bytes_in[w] += (double)st->n;
                }
            }
            nin = in > nin ? in : nin;
            nout = out > nout ? out : nout;
        }
        lb += round_lat(links, nin, nout);
    }
    for (int w = 0; w < 3; w++) {
        gcoll__sched_free(s[w]);
        /* its host's bytes out, and the busiest rank's inside a host, are at least its own */
        double across = (bytes_out[w] - GCOLL__COST_BURST_BYTES) / links->inter.bw_Bps;
        double inside = (bytes_in[w] - GCOLL__COST_BURST_BYTES) / links->intra.bw_Bps;
        floor = across > floor ? across : floor;
        floor = inside > floor ? inside : floor;
    }
    return ok ? (lb > floor ? lb : floor) : -1;
}

/* The collectives whose size no rank knows whole (alltoallv, gatherv, scatterv) cannot be priced
 * alike on every rank: a rule that needs no size chooses. Alltoallv scatters: every peer at once,
 * in windows, so skewed blocks overlap where pairwise steps would each wait for their largest
 * pair, and the window bounds what is in flight as pairwise's one peer at a time does; gatherv
 * and scatterv have their linear algorithm. */
static int unsized_pick(const gcoll__coll_args_t *a)
{
    int idx = a->coll == GCOLL_COLL_ALLTOALLV
        ? gcoll__algo_find(a->coll, GCOLL_FAMILY_PLAIN, "scattered")
        : gcoll__algo_flagged(a->coll, GCOLL_FAMILY_PLAIN, GCOLL_ALGO_NODE | GCOLL_ALGO_FORCED, 0);
    return gcoll__algo_usable(gcoll__algo_get(idx), a) ? idx : -1;
}

/* Even blocks of `elems` elements in all, packed: the vector collectives' arguments for the
 * price of a size class (counts and displs have n entries). */
/* The class's blocks as uneven shards make them: one rank holding half, the others the rest
 * evenly. Priced so, an algorithm whose steps wait on the largest block (recursive doubling)
 * shows what it costs; on even blocks it ties with the streaming ring and won the tie, then ran
 * 1.4x the ring's time on 4 hosts with one rank holding half. */
static void skew_half(gcoll__coll_args_t *a, size_t *counts, size_t *displs)
{
    int n = a->size;
    if (n < 3)
        return;
    size_t total = a->total, big = total / 2, rest = total - big;
    counts[0] = big;
    for (int i = 1; i < n; i++)
        counts[i] = gcoll__blk_cnt(rest, n - 1, i - 1);
    for (int i = 0; i < n; i++)
        displs[i] = i ? displs[i - 1] + counts[i - 1] : 0;
    if (a->coll == GCOLL_COLL_ALLGATHERV)
        a->count = counts[a->rank];
}

void gcoll__cost_even(gcoll__coll_args_t *a, size_t elems, size_t *counts, size_t *displs)
{
    int n = a->size;
    for (int i = 0; i < n; i++) {
        counts[i] = gcoll__blk_cnt(elems, n, i);
        displs[i] = gcoll__blk_off(elems, n, i);
    }
    a->total = elems;
    switch (a->coll) {
    case GCOLL_COLL_ALLGATHERV:
        a->counts = counts, a->displs = displs, a->count = counts[a->rank];
        skew_half(a, counts, displs);
        break;
    case GCOLL_COLL_GATHERV: a->counts = counts, a->displs = displs, a->count = counts[a->rank]; break;
    case GCOLL_COLL_REDUCE_SCATTERV:
        a->counts = counts, a->displs = displs, a->count = elems;
        skew_half(a, counts, displs);
        break;
    case GCOLL_COLL_SCATTERV: a->scounts = counts, a->sdispls = displs, a->count = counts[a->rank]; break;
    case GCOLL_COLL_ALLTOALLV: /* elems per rank: a block of elems / n (at least 1) to each peer */
        for (int i = 0; i < n; i++) {
            counts[i] = (elems / (size_t)n) ? elems / (size_t)n : 1;
            displs[i] = (size_t)i * counts[i];
        }
        a->counts = a->scounts = counts, a->displs = a->sdispls = displs, a->count = 0, a->total = 0;
        break;
    default: a->count = elems; break;
    }
}

int gcoll__cost_pick(const gcoll__coll_args_t *a, gcoll__links_t *links)
{
    if (!gcoll__coll_sized(a->coll))
        return unsized_pick(a);
    size_t bytes = gcoll__coll_bytes(a);
    int cls = 0;
    while (cls < 63 && ((size_t)1 << cls) < bytes)
        cls++;
    _Atomic signed char *slot = &links->pick[a->map ? 0 : 1][a->coll][cls];
    int known = atomic_load_explicit(slot, memory_order_relaxed);
    if (known > 0)
        return known - 1;
    /* price the class by its upper bound, so every size in it gets the same pick, and out of
     * place on every rank: whether a rank's sendbuf is its recvbuf is its own (an allgather whose
     * rank 0 sends from its block of recvbuf), and every rank must pick alike */
    gcoll__coll_args_t c = *a;
    static char in_tok, out_tok;
    c.recvbuf = &out_tok;
    c.sendbuf = &in_tok;
    size_t *even = NULL;
    if (a->coll == GCOLL_COLL_ALLGATHERV || a->coll == GCOLL_COLL_REDUCE_SCATTERV) {
        size_t elems = ((size_t)1 << cls) / a->esize;
        if (!(even = malloc(2 * (size_t)a->size * sizeof(size_t))))
            return -1;
        gcoll__cost_even(&c, elems ? elems : 1, even, even + a->size);
    } else {
        c.count = 1;
        size_t per = gcoll__coll_bytes(&c); /* bytes per element of count */
        c.count = (((size_t)1 << cls) / per) ? ((size_t)1 << cls) / per : 1;
    }
    /* the least prediction; among those within TIE of it, the least round cost: where the
     * sustained floor bounds several algorithms alike, the one with fewer latencies and less
     * local work, which the floor hides, is the faster */
    int n = 0, nc = 0, idx[128], cand[128];
    double t[128], rounds[128], lb[128], least = -1;
    /* priced in the order of their lower bounds, and not at all past the least prediction's tie
     * band: a flat ring of thousands of ranks, say, whose latencies alone exceed it */
    for (int i = 0; gcoll__algo_get(i) && nc < 128; i++) {
        if (gcoll__algo_get(i)->flags & GCOLL_ALGO_FORCED)
            continue;
        double b = lower_bound(i, &c, links);
        if (b < 0)
            continue;
        int j = nc++;
        for (; j > 0 && lb[j - 1] > b; j--) {
            lb[j] = lb[j - 1];
            cand[j] = cand[j - 1];
        }
        lb[j] = b;
        cand[j] = i;
    }
    for (int k = 0; k < nc; k++) {
        if (least >= 0 && lb[k] > least * (1 + TIE))
            break;
        t[n] = gcoll__cost_predict_parts(cand[k], &c, links, &rounds[n]);
        if (t[n] < 0)
            continue;
        least = least < 0 || t[n] < least ? t[n] : least;
        idx[n++] = cand[k];
    }
    /* An exact tie of both (hierarchical and rabenseifner on two hosts of several ranks from 256
     * KiB to 4 MiB send the same bytes in rounds of the same cost) goes to hierarchical where a
     * host holds several ranks: it runs as fast there or faster, since the model prices its
     * shared-memory phases like any transfer. Another goes to the fewer rounds; on a crowded
     * host round costs within TIE tie too, since each round costs every rank a wake-up that the
     * queue of message core time leaves out (recursive doubling's 6 rounds against
     * Rabenseifner's 10 at 64 B on 32 ranks of 2 cores, priced 0.01% apart, measured 1.13x). */
    int hier = a->map && a->map->nhosts < a->size
        ? gcoll__algo_flagged(a->coll, GCOLL_FAMILY_PLAIN, GCOLL_ALGO_HIER, GCOLL_ALGO_HIER)
        : -1;
    int best = -1, crowded = a->map && a->map->cores > 0;
    double best_rounds = 0;
    for (int k = 0; k < n; k++) {
        if (t[k] > least * (1 + TIE))
            continue;
        int take = best < 0 || (!same_cost(rounds[k], best_rounds, crowded) && rounds[k] < best_rounds);
        if (!take && same_cost(rounds[k], best_rounds, crowded))
            take = idx[k] == hier || (best != hier && fewer_rounds(idx[k], best, &c));
        if (take) {
            best = idx[k];
            best_rounds = rounds[k];
        }
    }
    free(even);
    if (best >= 0 && best < 127)
        atomic_store_explicit(slot, (signed char)(best + 1), memory_order_relaxed);
    return best;
}
