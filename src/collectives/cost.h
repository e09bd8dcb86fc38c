/* The cost model behind the built-in choice: an algorithm's time is predicted by building the
 * schedule of every rank (of a sample of hosts past GCOLL__COST_SAMPLE_RANKS) without running it
 * and pricing its rounds with the latency and burst rate of the links its messages cross, the
 * host links shared by the ranks behind them, and bounded below by the busiest link's bytes at
 * its sustained bandwidth. */
#ifndef GCOLL_COST_H
#define GCOLL_COST_H

#include <stdatomic.h>

#include "base/coll.h"
#include "base/config.h"
#include "gcoll.h"

/* The bytes per collective that a link is trusted to pass at its burst rate before the
 * sustained rate bounds the whole: what the link probe measures the burst rate with (16 KiB
 * messages back to back). A token bucket holds more when idle, but collectives that follow each
 * other closely leave it little more than that to refill between them. */
#define GCOLL__COST_BURST_BYTES 16384
/* Up to this many ranks every rank's schedule is priced; beyond, the sampled hosts'. */
#define GCOLL__COST_SAMPLE_RANKS 128

/* The links of a communicator: between ranks of one host, and a host's link to the network. */
typedef struct gcoll__links {
    gcoll__link_t intra, inter;
    /* Past this many ranks a prediction builds the schedules of a sample of hosts only (cost.c);
     * 0: GCOLL__COST_SAMPLE_RANKS. */
    int sample_above;
    /* The picks so far, per collective and power-of-two size class (index + 1; 0: not yet). Two
     * tables: the communicator's own, and the sub-groups that hierarchical algorithms run. */
    _Atomic signed char pick[2][GCOLL_COLL_COUNT][64];
} gcoll__links_t;

/* The link parameters of a transport by name ("shm", "tcp", "ofi", "mpi", anything else), with
 * GCOLL_COST_INTRA / GCOLL_COST_INTER applied. */
gcoll__link_t gcoll__cost_link(const char *transport, int inter);
/* Predicted seconds of algorithm idx for a, on a's node map (NULL: every peer across the
 * network, one rank per host), or a negative value when it cannot serve a or is not of the
 * plain family (select.h). */
double gcoll__cost_predict(int idx, const gcoll__coll_args_t *a, const gcoll__links_t *links);
/* The same, and in *rounds_s the rounds' cost alone (without the sustained floor). */
double gcoll__cost_predict_parts(int idx, const gcoll__coll_args_t *a, const gcoll__links_t *links, double *rounds_s);
/* Rank's schedule of algorithm idx for a (a holding the root's view), as the model prices it:
 * built dry, never to run; NULL when idx cannot serve a or is not of the plain family, or out of
 * memory. Its status says whether it built; the caller frees it (gcoll__sched_free). */
struct gcoll__sched *gcoll__cost_schedule(int idx, const gcoll__coll_args_t *a, int rank);
/* The algorithm with the least predicted time among those that can serve a (never the node
 * channel's own algorithms, nor one marked GCOLL_ALGO_FORCED; within 1% of the least, the least
 * round cost); remembered per size class in links->pick. */
int gcoll__cost_pick(const gcoll__coll_args_t *a, gcoll__links_t *links);
/* Sets a's vector arguments (a->coll, a->size and a->rank given) to blocks of elems elements in
 * all, packed, in counts and displs (n entries each): what the model prices a size class of a
 * vector collective with. Even blocks, but allgatherv's and reduce_scatterv's with one rank
 * holding half beyond two ranks (uneven shards); alltoallv: elems per rank, elems / n, at least 1,
 * to each peer. Other collectives: count = elems. */
void gcoll__cost_even(gcoll__coll_args_t *a, size_t elems, size_t *counts, size_t *displs);

#endif
