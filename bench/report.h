/* Benchmark output: the human table on stdout (a header describing the machine, then a row per
 * size), and CSV and JSON files with the same rows. */
#ifndef GCOLL_BENCH_REPORT_H
#define GCOLL_BENCH_REPORT_H

#include "options.h"
#include "runner.h"

typedef struct {
    const char *gcoll_version, *mpi_version, *transport, *hosts;
    int nranks, nhosts;
    double memcpy_gbps;
    double h2d_gbps, d2h_gbps; /* -d cuda: pinned copy bandwidth */
    double dev_gbps;           /* -d cuda: device memory bandwidth, read + written */
    const char *nccl_off;      /* -d cuda: why NCCL's side does not run, or NULL */
} bench_env_t;

void report_header(const bench_opts_t *o, const bench_env_t *env);
/* A GCOLL_* variable as the library takes it, for a header: "2", or "4M (default)"; in buf. */
const char *report_config(const char *name, char *buf, size_t len);
void report_row(const bench_opts_t *o, const bench_env_t *env, const bench_row_t *row);
/* Prints the footer and writes --csv and --json; returns -1 if a file could not be written. */
int report_finish(const bench_opts_t *o, const bench_env_t *env);

#endif
