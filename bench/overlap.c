/* See overlap.h. Out of place, so the input never changes and the output can be compared with
 * the reference after any iteration: once before and once after the timed iterations, or after
 * every one with -c. As OSU does by default, nothing calls into MPI or gcoll during the
 * computation: MPI then progresses only inside MPI_Wait, gcoll on its worker threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "overlap.h"
#include "reference.h"

typedef struct {
    const bench_opts_t *o;
    gcoll_comm_t comm;
    baseline_t *bl;
    const bench_compute_t *cmp;
    int rank, n;
    size_t count, bytes;
    char *sbuf, *rbuf, *expect;
} octx_t;

static int post(octx_t *x, int mpi, gcoll_request_t *greq, MPI_Request *mreq)
{
    const bench_opts_t *o = x->o;
    if (mpi) {
        int rc = baseline_iallreduce(x->bl, x->sbuf, x->rbuf, x->count, mreq);
        if (rc != MPI_SUCCESS)
            fprintf(stderr, "gcoll_bench [rank %d]: MPI_Iallreduce failed (%d)\n", x->rank, rc);
        return rc == MPI_SUCCESS ? 0 : -1;
    }
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.algorithm = o->algo;
    gcoll_status_t st = gcoll_iallreduce(x->sbuf, x->rbuf, x->count, o->dtype, o->op, x->comm, &attr, greq);
    if (st != GCOLL_SUCCESS)
        fprintf(stderr, "gcoll_bench [rank %d]: gcoll_iallreduce: %s: %s\n", x->rank, gcoll_status_name(st),
                gcoll_last_error());
    return st == GCOLL_SUCCESS ? 0 : -1;
}

static int complete(octx_t *x, int mpi, gcoll_request_t *greq, MPI_Request *mreq)
{
    if (mpi) {
        int rc = baseline_iallreduce_wait(x->bl, mreq, x->rbuf, x->count, x->o->dtype, x->o->op);
        if (rc != MPI_SUCCESS)
            fprintf(stderr, "gcoll_bench [rank %d]: MPI_Wait failed (%d)\n", x->rank, rc);
        return rc == MPI_SUCCESS ? 0 : -1;
    }
    gcoll_status_t st = gcoll_wait(greq);
    if (st != GCOLL_SUCCESS)
        fprintf(stderr, "gcoll_bench [rank %d]: gcoll_wait: %s: %s\n", x->rank, gcoll_status_name(st),
                gcoll_last_error());
    return st == GCOLL_SUCCESS ? 0 : -1;
}

static int check(const octx_t *x)
{
    return memcmp(x->rbuf, x->expect, x->bytes) == 0;
}

/* k iterations of one side, each after a barrier: post, compute for compute_ns (none when
 * negative: the pure measurement), wait. Adds seconds to *overall and *compute. */
static int iterate(octx_t *x, int mpi, int k, double compute_ns, double *overall, double *compute, int *valid)
{
    for (int i = 0; i < k; i++) {
        gcoll_request_t greq;
        MPI_Request mreq;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (post(x, mpi, &greq, &mreq) != 0)
            return -1;
        if (compute_ns >= 0) {
            double c0 = MPI_Wtime();
            bench_compute_run(x->cmp, compute_ns);
            *compute += MPI_Wtime() - c0;
        }
        if (complete(x, mpi, &greq, &mreq) != 0)
            return -1;
        *overall += MPI_Wtime() - t0;
        if (x->o->check_each && !check(x))
            *valid = 0;
    }
    return 0;
}

/* The mean over ranks of v, on every rank. */
static double rank_mean(const octx_t *x, double v)
{
    double sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / x->n;
}

static int all_true(int v)
{
    int r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return r;
}

/* One side at one size: validate, warm up, pure, then overall with compute of the pure time. */
static int measure(octx_t *x, int mpi, int iters, int warmup, bench_overlap_t *res, int *valid_out)
{
    double ignored = 0, pure = 0, overall = 0, compute = 0;
    int valid = 1;
    memset(x->rbuf, 0, x->bytes);
    if (iterate(x, mpi, 1, -1, &ignored, &ignored, &valid) != 0)
        return -1;
    valid &= check(x);
    if (iterate(x, mpi, warmup, -1, &ignored, &ignored, &valid) != 0 ||
        iterate(x, mpi, iters, -1, &pure, &ignored, &valid) != 0)
        return -1;
    res->pure = rank_mean(x, pure * 1e6 / iters);
    memset(x->rbuf, 0, x->bytes);
    if (iterate(x, mpi, iters, res->pure * 1e3, &overall, &compute, &valid) != 0)
        return -1;
    valid &= check(x);
    res->overall = rank_mean(x, overall * 1e6 / iters);
    res->compute = rank_mean(x, compute * 1e6 / iters);
    res->overlap = bench_overlap_percent(res->pure, res->compute, res->overall);
    *valid_out = all_true(valid);
    return 0;
}

int overlap_run_size(const bench_opts_t *o, gcoll_comm_t comm, baseline_t *bl, const bench_compute_t *c, size_t count,
                     overlap_row_t *row)
{
    size_t es = gcoll_dtype_size(o->dtype);
    octx_t x = {.o = o,
                .comm = comm,
                .bl = bl,
                .cmp = c,
                .rank = gcoll_comm_rank(comm),
                .n = gcoll_comm_size(comm),
                .count = count,
                .bytes = count * es};
    int rc = -1;
    x.sbuf = malloc(x.bytes + 1);
    x.rbuf = malloc(x.bytes + 1);
    x.expect = malloc(x.bytes + 1);
    if (!x.sbuf || !x.rbuf || !x.expect) {
        fprintf(stderr, "gcoll_bench [rank %d]: out of memory at %zu elements\n", x.rank, count);
        goto out;
    }
    ref_fill_values(x.sbuf, count, x.rank, o->dtype, o->op);
    ref_fill_expected(x.expect, 0, count, o->dtype, o->op, x.n);
    *row = (overlap_row_t){.bytes = x.bytes, .count = count, .algo = o->algo};
    row->iters = o->iters ? o->iters : bench_default_iters(x.bytes);
    if (!row->algo && gcoll_comm_algorithm(comm, "allreduce", count, o->dtype, &row->algo))
        row->algo = "?";
    int warmup = o->warmup >= 0 ? o->warmup : bench_default_warmup(row->iters);
    if (measure(&x, 0, row->iters, warmup, &row->g, &row->g_valid) != 0 ||
        (o->baseline_on && measure(&x, 1, row->iters, warmup, &row->m, &row->m_valid) != 0))
        goto out;
    rc = 0;
out:
    free(x.sbuf);
    free(x.rbuf);
    free(x.expect);
    return rc;
}

static overlap_row_t *rows;
static size_t nrows;

static const char *valid_text(const bench_opts_t *o, const overlap_row_t *r)
{
    if (!r->g_valid)
        return o->baseline_on && !r->m_valid ? "FAIL(both)" : "FAIL(gcoll)";
    return o->baseline_on && !r->m_valid ? "FAIL(mpi)" : "ok";
}

void overlap_header(const bench_opts_t *o, const bench_env_t *env, const bench_compute_t *c)
{
    char workers[64];
    printf("# gcoll_bench iallreduce: gcoll %s", env->gcoll_version);
    if (o->baseline_on)
        printf(" beside %s", env->mpi_version);
    printf("\n# %d ranks on %d host%s (%s), transport %s, algorithm %s, GCOLL_WORKER_COUNT %s\n", env->nranks,
           env->nhosts, env->nhosts == 1 ? "" : "s", env->hosts, env->transport, o->algo ? o->algo : "by size (column)",
           report_config("GCOLL_WORKER_COUNT", workers, sizeof(workers)));
    printf("# dtype %s, op %s, out of place, validation %s\n", gcoll_dtype_name(o->dtype), gcoll_op_name(o->op),
           o->check_each ? "every iteration" : "before and after the timed iterations");
    if (c->mode == BENCH_COMPUTE_SPIN)
        printf("# compute: spin, a dependent multiply-add chain, %.3f ns per multiply-add on rank 0\n", c->ns_per_unit);
    else
        printf("# compute: sleep (nanosleep), the core is free for progress\n");
    printf("# OSU method: pure = post + wait; compute = computation of about pure while in flight;\n"
           "# overall = post + compute + wait; overlap %% = max(0, 100 - (overall - compute) / pure * 100);\n"
           "# times in us, averaged over ranks\n");
    printf("%12s %11s %-19s %11s %11s %11s %8s", "bytes", "count", "algorithm", "pure", "compute", "overall",
           "overlap%");
    if (o->baseline_on)
        printf(" | %11s %11s %11s %8s", "MPI pure", "compute", "overall", "overlap%");
    printf(" %6s %s\n", "iters", "valid");
    fflush(stdout);
}

void overlap_report_row(const bench_opts_t *o, const overlap_row_t *r)
{
    printf("%12zu %11zu %-19s %11.2f %11.2f %11.2f %8.1f", r->bytes, r->count, r->algo, r->g.pure, r->g.compute,
           r->g.overall, r->g.overlap);
    if (o->baseline_on)
        printf(" | %11.2f %11.2f %11.2f %8.1f", r->m.pure, r->m.compute, r->m.overall, r->m.overlap);
    printf(" %6d %s\n", r->iters, valid_text(o, r));
    fflush(stdout);
    overlap_row_t *grown = realloc(rows, (nrows + 1) * sizeof(*rows));
    if (grown) {
        rows = grown;
        rows[nrows++] = *r;
    }
}

static int write_csv(const bench_opts_t *o, const bench_env_t *env)
{
    FILE *f = fopen(o->csv, "w");
    if (!f)
        return -1;
    fprintf(f,
            "collective,dtype,op,ranks,compute_mode,bytes,count,algorithm,iters,gcoll_pure_us,gcoll_compute_us,"
            "gcoll_overall_us,gcoll_overlap_pct,mpi_pure_us,mpi_compute_us,mpi_overall_us,mpi_overlap_pct,valid\n");
    for (size_t i = 0; i < nrows; i++) {
        const overlap_row_t *r = &rows[i];
        fprintf(f, "iallreduce,%s,%s,%d,%s,%zu,%zu,%s,%d,%.3f,%.3f,%.3f,%.2f,", gcoll_dtype_name(o->dtype),
                gcoll_op_name(o->op), env->nranks, bench_compute_name(o->compute), r->bytes, r->count, r->algo,
                r->iters, r->g.pure, r->g.compute, r->g.overall, r->g.overlap);
        if (o->baseline_on)
            fprintf(f, "%.3f,%.3f,%.3f,%.2f,", r->m.pure, r->m.compute, r->m.overall, r->m.overlap);
        else
            fprintf(f, ",,,,");
        fprintf(f, "%s\n", valid_text(o, r));
    }
    return fclose(f);
}

static void json_side(FILE *f, const char *name, const bench_overlap_t *s)
{
    fprintf(f, ", \"%s\": {\"pure_us\": %.3f, \"compute_us\": %.3f, \"overall_us\": %.3f, \"overlap_pct\": %.2f}", name,
            s->pure, s->compute, s->overall, s->overlap);
}

static int write_json(const bench_opts_t *o, const bench_env_t *env)
{
    FILE *f = fopen(o->json, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"collective\": \"iallreduce\", \"gcoll_version\": \"%s\", \"baseline\": \"%s\",\n",
            env->gcoll_version, o->baseline_on ? "mpi" : "none");
    fprintf(f, "  \"ranks\": %d, \"hosts\": %d, \"transport\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\",\n",
            env->nranks, env->nhosts, env->transport, gcoll_dtype_name(o->dtype), gcoll_op_name(o->op));
    fprintf(f, "  \"compute\": \"%s\", \"validate_every_iteration\": %s,\n  \"rows\": [",
            bench_compute_name(o->compute), o->check_each ? "true" : "false");
    for (size_t i = 0; i < nrows; i++) {
        const overlap_row_t *r = &rows[i];
        fprintf(f, "%s\n    {\"bytes\": %zu, \"count\": %zu, \"algorithm\": \"%s\", \"iters\": %d", i ? "," : "",
                r->bytes, r->count, r->algo, r->iters);
        json_side(f, "gcoll", &r->g);
        if (o->baseline_on)
            json_side(f, "mpi", &r->m);
        fprintf(f, ", \"valid\": \"%s\"}", valid_text(o, r));
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f);
}

int overlap_finish(const bench_opts_t *o, const bench_env_t *env)
{
    double g = 0, m = 0;
    for (size_t i = 0; i < nrows; i++) {
        g += rows[i].g.overlap;
        m += rows[i].m.overlap;
    }
    if (nrows) {
        printf("# average overlap over %zu sizes: gcoll %.1f%%", nrows, g / (double)nrows);
        if (o->baseline_on)
            printf(", MPI %.1f%%", m / (double)nrows);
        printf("\n");
    }
    int rc = 0;
    if (o->csv && write_csv(o, env) != 0) {
        fprintf(stderr, "gcoll_bench: cannot write %s\n", o->csv);
        rc = -1;
    }
    if (o->json && write_json(o, env) != 0) {
        fprintf(stderr, "gcoll_bench: cannot write %s\n", o->json);
        rc = -1;
    }
    free(rows);
    rows = NULL;
    nrows = 0;
    return rc;
}
