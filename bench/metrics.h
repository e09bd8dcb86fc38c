/* Benchmark arithmetic, kept apart so the unit tests can check it: message sizes, the bus
 * bandwidth factor of each collective (nccl-tests' convention), and per-rank timing summaries. */
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
    B_NCOLL
} bench_coll_t;

const char *bench_coll_name(bench_coll_t c);
int bench_coll_find(const char *name); /* -1 if unknown */

/* busbw = algbw * factor: allreduce and adasum 2(n-1)/n; reduce_scatter, allgather, alltoall (n-1)/n;
 * bcast and reduce 1; barrier 0 (it moves no data). */
double bench_busbw_factor(bench_coll_t c, int nranks);

/* The per-call element count for a message of `bytes` (the whole vector, as the table's size
 * column) of elements of esize bytes; 0 when the size is too small for one element per rank. */
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

#endif
