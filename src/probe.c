/* Measures the links of the cost model, once per process: rank 0 and the first rank of the
 * second host ping-pong over the communicator's own transport, small messages for latency, then
 * a large one for bandwidth (4 MiB: past a token bucket's burst, so a shaped link shows its
 * rate); then rank 0 and rank 1, when they share the first host, for the link inside a host
 * (what a rank pays per message there includes waking a peer that shares its cores). Every rank
 * gets rank 0's results through the bootstrap communicator. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "error.h"
#include "log.h"
#include "probe.h"

#define PROBE_TAG 0xfffffff0u /* a collective's tag is its sequence number: far below this */
#define PROBE_ROUNDS 20
#define PROBE_BIG ((size_t)4 << 20)
#define PROBE_LIMIT_S 30.0

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
            return gcoll__error(GCOLL_ERR_TIMEOUT, "link probe: rank %d did not answer in %.0f s", peer,
                                PROBE_LIMIT_S);
        }
        if (polls > 200) /* the peer may need this core */
            sched_yield();
    }
}

/* The pinging side: latency from small round trips, bandwidth from a big message answered by a
 * small one (the better of two). */
static gcoll_status_t ping(gcoll_comm_t c, int peer, char *big, double *lat, double *bw)
{
    char small[8] = {0};
    double t0 = now_s();
    for (int i = 0; i < PROBE_ROUNDS; i++) {
        GCOLL_CHECK(xfer(c, peer, 1, small, sizeof(small)));
        GCOLL_CHECK(xfer(c, peer, 0, small, sizeof(small)));
    }
    *lat = (now_s() - t0) / (2 * PROBE_ROUNDS);
    double best = 0;
    for (int i = 0; i < 2; i++) {
        t0 = now_s();
        GCOLL_CHECK(xfer(c, peer, 1, big, PROBE_BIG));
        GCOLL_CHECK(xfer(c, peer, 0, small, sizeof(small)));
        double t = now_s() - t0 - 2 * *lat;
        best = best == 0 || t < best ? t : best;
    }
    *bw = best > 0 ? (double)PROBE_BIG / best : 0;
    return GCOLL_SUCCESS;
}

static gcoll_status_t pong(gcoll_comm_t c, int peer, char *big)
{
    char small[8];
    for (int i = 0; i < PROBE_ROUNDS; i++) {
        GCOLL_CHECK(xfer(c, peer, 0, small, sizeof(small)));
        GCOLL_CHECK(xfer(c, peer, 1, small, sizeof(small)));
    }
    for (int i = 0; i < 2; i++) {
        GCOLL_CHECK(xfer(c, peer, 0, big, PROBE_BIG));
        GCOLL_CHECK(xfer(c, peer, 1, small, sizeof(small)));
    }
    return GCOLL_SUCCESS;
}

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static double probed[4]; /* inter latency, bandwidth; intra latency, bandwidth (0: not measured) */
static int tried;

/* Measures the link between ranks a (rank 0) and b into res[0..1]. */
static gcoll_status_t measure(gcoll_comm_t c, int b, double *res)
{
    int a = 0;
    char *big = c->rank == a || c->rank == b ? malloc(PROBE_BIG) : NULL;
    gcoll_status_t st = GCOLL_SUCCESS;
    if ((c->rank == a || c->rank == b) && !big)
        st = gcoll__error(GCOLL_ERR_NOMEM, "link probe: no memory for %zu bytes", PROBE_BIG);
    else if (c->rank == a)
        st = ping(c, b, big, &res[0], &res[1]);
    else if (c->rank == b)
        st = pong(c, a, big);
    free(big);
    if (st != GCOLL_SUCCESS)
        res[0] = res[1] = 0;
    return st;
}

gcoll_status_t gcoll__probe_links(gcoll_comm_t c, int inter, int intra)
{
    pthread_mutex_lock(&probe_lock);
    /* rank 0's word goes for everyone: every rank must price algorithms alike, or they would
     * pick different ones */
    int go = !tried;
    gcoll_status_t st = GCOLL_SUCCESS;
    double res[4];
    memcpy(res, probed, sizeof(res));
    if (MPI_Bcast(&go, 1, MPI_INT, 0, c->boot) != MPI_SUCCESS)
        go = 0;
    int far = c->map.by_host[c->map.first[1]], near = c->map.host[1] == 0 ? 1 : -1;
    if (go) {
        memset(res, 0, sizeof(res));
        st = measure(c, far, res);
        if (near > 0) {
            gcoll_status_t st2 = measure(c, near, res + 2);
            st = st ? st : st2;
        }
    }
    if (MPI_Bcast(res, 4, MPI_DOUBLE, 0, c->boot) != MPI_SUCCESS)
        memset(res, 0, sizeof(res));
    if (go) {
        tried = 1;
        memcpy(probed, res, sizeof(res));
        GCOLL_LOG(GCOLL_LOG_INFO, "comm %u: links measured: between hosts (ranks 0 and %d) %.1f us, %.3f GB/s; "
                  "inside a host (ranks 0 and 1) %.1f us, %.3f GB/s%s%s", c->id, far, res[0] * 1e6, res[1] * 1e-9,
                  res[2] * 1e6, res[3] * 1e-9, st != GCOLL_SUCCESS ? "; failed: " : "",
                  st != GCOLL_SUCCESS ? gcoll_last_error() : "");
    }
    pthread_mutex_unlock(&probe_lock);
    if (inter && res[1] > 0)
        c->links.inter = (gcoll__link_t){res[0], res[1]};
    if (intra && res[3] > 0)
        c->links.intra = (gcoll__link_t){res[2], res[3]};
    return st;
}
