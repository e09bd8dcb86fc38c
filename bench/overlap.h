/* `gcoll_bench iallreduce`: OSU's osu_iallreduce method per size, for gcoll_iallreduce and
 * MPI_Iallreduce in the same run: the operation alone (pure), then posted, computation of about
 * the pure time, and the wait (overall); overlap % = 100 - (overall - compute) / pure * 100. */
#ifndef GCOLL_BENCH_OVERLAP_H
#define GCOLL_BENCH_OVERLAP_H

#include "baseline.h"
#include "compute.h"
#include "options.h"
#include "report.h"

typedef struct {
    double pure, compute, overall, overlap; /* microseconds, averaged over ranks; percent */
} bench_overlap_t;

typedef struct {
    size_t bytes, count;
    const char *algo;
    int iters;
    bench_overlap_t g, m;
    int g_valid, m_valid;
} overlap_row_t;

/* One size over comm; the row is valid on every rank. Returns 0, or -1 after printing why. */
int overlap_run_size(const bench_opts_t *o, gcoll_comm_t comm, baseline_t *bl, const bench_compute_t *c, size_t count,
                     overlap_row_t *row);
void overlap_header(const bench_opts_t *o, const bench_env_t *env, const bench_compute_t *c);
void overlap_report_row(const bench_opts_t *o, const overlap_row_t *row);
/* The footer, and --csv and --json; -1 if a file could not be written. */
int overlap_finish(const bench_opts_t *o, const bench_env_t *env);

#endif
