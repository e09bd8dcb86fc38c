/* gcoll_bench's command line: a subcommand and OSU/nccl-tests style options, parsed strictly. */
#ifndef GCOLL_BENCH_OPTIONS_H
#define GCOLL_BENCH_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "gcoll.h"
#include "metrics.h"

#define BENCH_MEMBW B_NCOLL /* the subcommand that measures the machine, not a collective */

typedef struct {
    int subcmd;                 /* a bench_coll_t, or BENCH_MEMBW */
    size_t min_bytes, max_bytes;
    unsigned factor;
    int iters;                  /* 0: by size */
    int warmup;                 /* -1: by iterations */
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    int root;
    int inplace;
    int check_each;             /* -c: validate every iteration, not only once per size */
    int baseline_mpi;
    const char *csv, *json, *algo;
} bench_opts_t;

/* 0: run; 1: help was asked for; -1: bad command line, err says why. */
int bench_parse(int argc, char **argv, bench_opts_t *o, char *err, size_t errlen);
void bench_usage(FILE *f, const char *prog);
/* "64K" -> 65536; K, M, G are powers of 1024. 0 on success. */
int bench_parse_bytes(const char *s, size_t *out);

#endif
