/* One row of the benchmark: a collective at one size, gcoll and the MPI baseline alternating
 * in blocks of iterations on the same buffers, with validation against the reference. */
#ifndef GCOLL_BENCH_RUNNER_H
#define GCOLL_BENCH_RUNNER_H

#include "baseline.h"
#include "options.h"

typedef struct {
    size_t bytes, count;
    char algo[64]; /* the algorithm; "auto:PICK" for --algo's auto */
    int iters;
    bench_lat_t g, m;     /* microseconds, OSU style */
    int g_valid, m_valid; /* 1: every checked result matched the reference */
    double wire_bytes;    /* gcoll's payload bytes per call, mean over ranks (gcoll_comm_bytes_sent) */
    double g_med, m_med;  /* the median call in microseconds, a call as long as its slowest rank (0: unknown) */
} bench_row_t;

/* Collective over comm: one row per --algo name (one row without it), the algorithms and the
 * baseline interleaved block by block; the summaries are valid on rank 0. Returns the number of
 * rows, or -1 after printing why a call failed. */
int bench_run_size(const bench_opts_t *o, gcoll_comm_t comm, baseline_t *bl, size_t count, bench_row_t *rows);

#endif
