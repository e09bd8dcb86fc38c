/* Benchmark arithmetic, kept apart so the unit tests can check it: message sizes, the bus
 * bandwidth factor of each collective (nccl-tests' convention), per-rank timing summaries, and
 * the split of a total into per-rank counts that --skew asks for. */
#ifndef GCOLL_BENCH_METRICS_H
#define GCOLL_BENCH_METRICS_H

#include <stddef.h>

typedef enum {
    B_ALLREDUCE,
    B_REDUCE_SCATTER,
    B_ALLGATHER,
    B_BCAST,
    B_REDUCE,
    B_ALLTOALL,
    B_BARRIER,
    B_ADASUM, /* gcoll_adasum, beside gcoll's sum allreduce instead of MPI */
    B_ALLGATHERV,
    B_REDUCE_SCATTERV,
    B_ALLTOALLV,
    B_GATHER,
    B_SCATTER,
    B_GATHERV,
    B_SCATTERV,
    B_SENDRECV, /* a ring exchange: gcoll_send to the right and gcoll_recv from the left in a group */
    B_GROUP,    /* a batch of small allreduces in one group, beside the same blocking calls one by one */
    B_NCOLL
} bench_coll_t;

const char *bench_coll_name(bench_coll_t c);
int bench_coll_find(const char *name); /* -1 if unknown */

/* busbw = algbw * factor: allreduce, adasum and group 2(n-1)/n; reduce_scatter, allgather,
 * alltoall, their v forms, gather(v) and scatter(v) (n-1)/n; bcast, reduce and sendrecv 1;
 * barrier 0 (it moves no data). */
double bench_busbw_factor(bench_coll_t c, int nranks);

/* Whether a collective's size is the whole vector of size blocks, one per rank (its count is a
 * block's): reduce_scatter, allgather, alltoall, gather, scatter and the v forms. */
int bench_per_rank_vector(bench_coll_t c);
/* The per-call element count for a message of `bytes` (the whole vector, as the table's size
 * column) of elements of esize bytes; 0 when the size is too small for one element per rank.
 * A v collective's count is the even share of the total, count * nranks elements, so that it
 * moves the same bytes as its even twin at the same size. */
size_t bench_count_for(bench_coll_t c, size_t bytes, size_t esize, int nranks);
/* The message size that count stands for (the inverse of bench_count_for). */
size_t bench_bytes_for(bench_coll_t c, size_t count, size_t esize, int nranks);

/* GB/s (1e9 bytes per second) for bytes moved in usec microseconds. */
double bench_algbw(size_t bytes, double usec);

/* OSU's latency summary: avg is the mean of each rank's average, min and max are the smallest
 * and largest rank averages. */
typedef struct {
    double avg, min, max;
} bench_lat_t;
bench_lat_t bench_summarize(const double *rank_avgs, int nranks);

/* OSU's overlap of communication with computation in percent: 100 - (overall - compute) / pure
 * * 100, at least 0 (and 0 when pure is 0). pure: the operation alone; compute: the computation
 * while the operation was in flight; overall: post, compute and wait together. */
double bench_overlap_percent(double pure, double compute, double overall);

/* The median of v[0..n) (the mean of the middle two for even n); sorts v. 0 for n == 0. */
double bench_median(double *v, int n);

/* Default iterations for a size, scaled down for large messages as OSU does, and warmup. */
int bench_default_iters(size_t bytes);
int bench_default_warmup(int iters);

/* --skew: how a total of elements is split into n per-rank counts. even: equal shares (the
 * first total % n one more); half: slot heavy % n takes half, the others share the rest
 * evenly; zipf: the slots in an order drawn from (seed, stream) get shares proportional to
 * 1/k^s, k = 1..n (Zipf's law with exponent s), rounded down, the rest one each to the largest. */
typedef enum { BENCH_SKEW_EVEN, BENCH_SKEW_HALF, BENCH_SKEW_ZIPF } bench_skew_kind_t;
typedef struct {
    bench_skew_kind_t kind;
    double s;           /* zipf's exponent, > 0 */
    unsigned long seed; /* zipf's draws */
} bench_skew_t;
/* "even", "half" or "zipf:S" with S > 0; 0 on success. */
int bench_skew_parse(const char *arg, bench_skew_t *out);
/* counts[0..n) adding up to total; stream tells the draws apart (a sender's row of alltoallv),
 * and is the heavy slot of half. The same arguments give the same counts on every rank. 0, or
 * -1 out of memory. */
int bench_skew_split(const bench_skew_t *k, size_t total, int n, unsigned stream, size_t *counts);

#endif
