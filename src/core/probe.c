/* Measures the cost model's links once per process over the communicator's own transport: the
 * network link (rank 0 and the first rank of the second host) and a host's inner link. Latency
 * from 8 B round trips, burst rate from 16 KiB round trips, sustained bandwidth from 4 MiB one
 * way, each a median of several runs; every rank gets rank 0's results. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm.h"
#include "base/error.h"
#include "base/log.h"
#include "core/probe.h"

#define PROBE_TAG 0xfffffff0u               /* a collective's tag is its sequence number: far below this */
#define PROBE_SMALL_REPS 31                 /* 8 B round trips; the most of any kind */
#define PROBE_BURST GCOLL__COST_BURST_BYTES /* what the cost model trusts to pass at the burst rate */
/* 16 KiB round trips: 15 of them pass well inside a 1 Gbit/s tbf's default 500 kB bucket */
#define PROBE_BURST_REPS 15
#define PROBE_BIG ((size_t)4 << 20)
#define PROBE_BIG_REPS 3
#define PROBE_LIMIT_S 30.0
#define PROBE_SPIN 4        /* fruitless polls before a waiting rank yields its core */
#define PROBE_NAP_NS 100000 /* a sleeping rank's look at the barrier every 0.1 ms */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One message to or from peer, to completion. */
static gcoll_status_t xfer(gcoll_comm_t c, int peer, int send, void *buf, size_t n)
{
    gcoll__tp_req_t *r;
    GCOLL_CHECK(send ? c->tpops->isend(c->tp, peer, PROBE_TAG, buf, n, &r)
                     : c->tpops->irecv(c->tp, peer, PROBE_TAG, buf, n, &r));
    double limit = now_s() + PROBE_LIMIT_S;
    for (unsigned polls = 0;; polls++) {
        int done = 0;
        GCOLL_CHECK(c->tpops->test(c->tp, r, &done));
        if (done)
            return GCOLL_SUCCESS;
        if (polls % 64 == 63 && now_s() > limit) {
            c->tpops->cancel(c->tp, r);
            return gcoll__error(GCOLL_ERR_TIMEOUT, "link probe: rank %d did not answer in %.0f s", peer, PROBE_LIMIT_S);
        }
        if (polls >= PROBE_SPIN) /* the peer, or a rank it waits for, may need this core */
            sched_yield();
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/* reps round trips to peer: n bytes out and back_n bytes back (the pinging side: send first);
 * the median round trip in *rtt (NULL on the ponging side) */
static gcoll_status_t round_trips(gcoll_comm_t c, int peer, int ping, char *buf, size_t n, size_t back_n, int reps,
                                  double *rtt)
{
    double t[PROBE_SMALL_REPS] = {0};
    reps = reps < PROBE_SMALL_REPS ? reps : PROBE_SMALL_REPS;
    for (int i = 0; i < reps; i++) {
        double t0 = now_s();
        GCOLL_CHECK(xfer(c, peer, ping, buf, n));
        GCOLL_CHECK(xfer(c, peer, !ping, buf, back_n));
        t[i] = now_s() - t0;
    }
    if (rtt)
        *rtt = median(t, reps);
    return GCOLL_SUCCESS;
}

/* The pinging side of the rates, alone on the link: res[1] sustained bandwidth (4 MiB answered
 * by 8 B, less an 8 B round trip), res[2] the burst rate (16 KiB each way: the round trip beyond
 * the 8 B one is two transfers). A rate that the timer cannot resolve stays 0 (the cost model then
 * takes the sustained rate for the burst rate). */
static gcoll_status_t ping(gcoll_comm_t c, int peer, char *big, double *res)
{
    double small_rtt, burst_rtt, big_rtt;
    GCOLL_CHECK(round_trips(c, peer, 1, big, 8, 8, PROBE_SMALL_REPS, &small_rtt));
    GCOLL_CHECK(round_trips(c, peer, 1, big, PROBE_BURST, PROBE_BURST, PROBE_BURST_REPS, &burst_rtt));
    GCOLL_CHECK(round_trips(c, peer, 1, big, PROBE_BIG, 8, PROBE_BIG_REPS, &big_rtt));
    res[1] = big_rtt > small_rtt ? (double)PROBE_BIG / (big_rtt - small_rtt) : 0;
    res[2] = burst_rtt > small_rtt ? 2.0 * PROBE_BURST / (burst_rtt - small_rtt) : 0;
    return GCOLL_SUCCESS;
}

static gcoll_status_t pong(gcoll_comm_t c, int peer, char *big)
{
    GCOLL_CHECK(round_trips(c, peer, 0, big, 8, 8, PROBE_SMALL_REPS, NULL));
    GCOLL_CHECK(round_trips(c, peer, 0, big, PROBE_BURST, PROBE_BURST, PROBE_BURST_REPS, NULL));
    GCOLL_CHECK(round_trips(c, peer, 0, big, PROBE_BIG, 8, PROBE_BIG_REPS, NULL));
    return GCOLL_SUCCESS;
}

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
/* inter latency, bandwidth, burst rate; intra the same (0: not measured) */
static double probed[6];
static int tried;

/* Rank r's partner in a round where every rank exchanges at once: across, the rank of the same
 * local index on the paired host (hosts 0-1, 2-3, ...); inside, the paired local rank (0-1,
 * 2-3, ...) of its host; -1 when there is none. */
static int partner(const gcoll__nodemap_t *m, int r, int across)
{
    int h = m->host[r], l = m->local[r], ph = across ? h ^ 1 : h, pl = across ? l : l ^ 1;
    if (ph >= m->nhosts || pl >= m->first[ph + 1] - m->first[ph])
        return -1;
    return m->by_host[m->first[ph] + pl];
}

/* Measures one link into res[0..2]; every rank of c takes part. The latency is that of a round
 * of a collective: every rank with a partner exchanges at once, so that where ranks outnumber
 * cores a message pays the wake-up of a peer sharing its core, as it does in a collective. The
 * rates are rank 0's and its partner's alone (the others' traffic would share the link), while
 * the others sleep. */
static gcoll_status_t measure(gcoll_comm_t c, int across, double *res)
{
    int p = partner(&c->map, c->rank, across), b = partner(&c->map, 0, across);
    double rtt = 0;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (p >= 0) {
        char small[8] = {0};
        st = round_trips(c, p, c->rank < p, small, sizeof(small), sizeof(small), PROBE_SMALL_REPS, &rtt);
    }
    (void)gcoll__boot_barrier(c->boot); /* it naps: a failed one shows in the next steps */
    char *big = NULL;
    if (st == GCOLL_SUCCESS && (c->rank == 0 || c->rank == b) && !(big = malloc(PROBE_BIG)))
        st = gcoll__error(GCOLL_ERR_NOMEM, "link probe: no memory for %zu bytes", PROBE_BIG);
    else if (st == GCOLL_SUCCESS && c->rank == 0)
        st = ping(c, b, big, res);
    else if (st == GCOLL_SUCCESS && c->rank == b)
        st = pong(c, 0, big);
    free(big);
    res[0] = rtt / 2;
    if (st != GCOLL_SUCCESS)
        res[0] = res[1] = res[2] = 0;
    (void)gcoll__boot_barrier(c->boot); /* it naps: a failed one shows in the next steps */
    return st;
}

gcoll_status_t gcoll__probe_links(gcoll_comm_t c, int inter, int intra)
{
    pthread_mutex_lock(&probe_lock);
    /* rank 0's word goes for everyone: every rank must price algorithms alike, or they would
     * pick different ones */
    int go = !tried;
    gcoll_status_t st = GCOLL_SUCCESS;
    double res[6];
    memcpy(res, probed, sizeof(res));
    if (gcoll__boot_bcast(c->boot, &go, sizeof(go), 0) != GCOLL_SUCCESS)
        go = 0;
    int far = partner(&c->map, 0, 1), near = partner(&c->map, 0, 0);
    if (go) {
        memset(res, 0, sizeof(res));
        st = measure(c, 1, res);
        if (near > 0) {
            gcoll_status_t st2 = measure(c, 0, res + 3);
            st = st ? st : st2;
        }
    }
    if (gcoll__boot_bcast(c->boot, res, sizeof(res), 0) != GCOLL_SUCCESS)
        memset(res, 0, sizeof(res));
    if (go) {
        tried = 1;
        memcpy(probed, res, sizeof(res));
        char inside[128] = "inside a host: none (rank 0 is alone on its host)";
        if (near > 0)
            snprintf(inside, sizeof(inside), "inside a host (ranks 0 and %d) %.1f us, %.3f GB/s, burst %.3f GB/s", near,
                     res[3] * 1e6, res[4] * 1e-9, res[5] * 1e-9);
        GCOLL_LOG(GCOLL_LOG_INFO,
                  "comm %u: links measured: between hosts (ranks 0 and %d) %.1f us, %.3f GB/s, "
                  "burst %.3f GB/s; %s%s%s",
                  c->id, far, res[0] * 1e6, res[1] * 1e-9, res[2] * 1e-9, inside,
                  st != GCOLL_SUCCESS ? "; failed: " : "", st != GCOLL_SUCCESS ? gcoll_last_error() : "");
    }
    pthread_mutex_unlock(&probe_lock);
    if (inter && res[1] > 0)
        c->links.inter = (gcoll__link_t){res[0], res[1], res[2]};
    if (intra && res[4] > 0)
        c->links.intra = (gcoll__link_t){res[3], res[4], res[5]};
    return st;
}
