/* gcoll_bench's command line: a subcommand and OSU/nccl-tests style options, parsed strictly
 * into bench_opts_t, which the runner, overlap and train modes read. */
#ifndef GCOLL_BENCH_OPTIONS_H
#define GCOLL_BENCH_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "compute.h"
#include "gcoll.h"
#include "metrics.h"

#define BENCH_MEMBW B_NCOLL            /* the subcommand that measures the machine, not a collective */
#define BENCH_IALLREDUCE (B_NCOLL + 1) /* overlap of a nonblocking allreduce with computation */
#define BENCH_TRAIN (B_NCOLL + 2)      /* a training step's backprop and gradient exchange */
#define BENCH_MAX_ALGOS 8              /* names in one --algo list */

typedef struct {
    int subcmd; /* a bench_coll_t, or BENCH_MEMBW */
    size_t min_bytes, max_bytes;
    unsigned factor;
    int iters;  /* 0: by size */
    int warmup; /* -1: by iterations */
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    int root;
    int inplace;
    int check_each;    /* -c: validate every iteration, not only once per size */
    int baseline_on;   /* a baseline side: MPI's, or with baseline_nccl NCCL's */
    int baseline_nccl; /* -d cuda: NCCL's; 2 where it was not asked for (run it if it can) */
    const char *csv, *json;
    const char *algo;                   /* --algo as given (NULL: not given) */
    const char *algos[BENCH_MAX_ALGOS]; /* its comma-separated names, measured side by side */
    int nalgos;
    bench_compute_mode_t compute; /* iallreduce and train */
    const char *model;            /* train: resnet50 or bert */
    double scale;                 /* train: multiplies every tensor's element count */
    double compute_ms;            /* train: compute per step; < 0: equal to communication */
    double forward;               /* train: the forward pass's part of each step's compute */
    int compress_set;             /* allreduce --compress given: the bytes-on-the-wire column */
    gcoll_compress_t compress;    /* allreduce: attr.compress of the gcoll side */
    double density;               /* --compress topk:D */
    int device;                   /* 1: buffers in GPU memory (-d cuda / --device cuda) */
    bench_skew_t skew;            /* v collectives: how each total is split into per-rank counts */
    int batch;                    /* group: allreduces per batch */
} bench_opts_t;

/* Whether the subcommand's counts come from --skew: allgatherv, reduce_scatterv, alltoallv,
 * gatherv, scatterv. */
int bench_skewed(int subcmd);

/* Whether --algo forces through the communicator's selection table (gcoll_comm_set_algorithm),
 * so that the blocking call runs and a list of names and "auto" are allowed; otherwise it
 * forces one name through attr.algorithm (adasum, --compress, iallreduce). */
int bench_algo_by_table(const bench_opts_t *o);
/* 0: run; 1: help was asked for; -1: bad command line, err says why. */
int bench_parse(int argc, char **argv, bench_opts_t *o, char *err, size_t errlen);
void bench_usage(FILE *f, const char *prog);
/* "64K" -> 65536; K, M, G are powers of 1024. 0 on success. */
int bench_parse_bytes(const char *s, size_t *out);

#endif
