/* See report.h. Rows are kept until the end so the JSON can carry them with the header; the
 * human table is printed row by row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adasum_ref.h"
#include "report.h"

static bench_row_t *rows;
static size_t nrows;

/* group's times are a whole batch's: its bandwidth counts every allreduce of it */
static double algbw(const bench_opts_t *o, const bench_row_t *r, double usec)
{
    return bench_algbw(r->bytes * (o->subcmd == B_GROUP ? (size_t)o->batch : 1), usec);
}

static double busbw(const bench_opts_t *o, const bench_env_t *env, const bench_row_t *r, double usec)
{
    return algbw(o, r, usec) * bench_busbw_factor((bench_coll_t)o->subcmd, env->nranks);
}

/* One line of shares in percent: how --skew splits a total at this rank count (alltoallv: what
 * rank 0 sends to each). */
static void skew_line(const bench_opts_t *o, int n)
{
    static const char *const kind[] = {"even", "half", "zipf"};
    size_t counts[16], total = 1000000;
    printf("# counts: --skew %s", kind[o->skew.kind]);
    if (o->skew.kind == BENCH_SKEW_ZIPF)
        printf(":%g (seed %lu)", o->skew.s, o->skew.seed);
    printf("; bytes is the total of the blocks, count its even share; %s",
           o->subcmd == B_ALLTOALLV ? "rank 0 sends to ranks 0.. in %:" : "ranks 0.. hold in %:");
    if (n > 16) {
        printf(" (%d ranks, not listed)\n", n);
        return;
    }
    if (bench_skew_split(&o->skew, total, n, o->subcmd == B_ALLTOALLV ? 1 : 0, counts) != 0) {
        printf(" (no memory)\n");
        return;
    }
    for (int i = 0; i < n; i++)
        printf(" %.1f", 100.0 * (double)counts[i] / (double)total);
    printf("\n");
}

/* adasum's baseline is gcoll's sum allreduce, and its ratio is adasum's time over the sum's */
static int ada(const bench_opts_t *o)
{
    return o->subcmd == B_ADASUM;
}

/* The baseline's name: "sum" (adasum's), "MPI" or "NCCL"; lower: in CSV and JSON keys. */
static const char *base(const bench_opts_t *o, int lower)
{
    if (ada(o))
        return "sum";
    if (o->baseline_nccl)
        return lower ? "nccl" : "NCCL";
    return lower ? "mpi" : "MPI";
}

static double ratio(const bench_opts_t *o, const bench_row_t *r)
{
    if (ada(o))
        return r->m.avg > 0 ? r->g.avg / r->m.avg : 0;
    return r->g.avg > 0 ? r->m.avg / r->g.avg : 0;
}

static const char *valid_text(const bench_opts_t *o, const bench_row_t *r)
{
    if (!r->g_valid)
        return o->baseline_on && !r->m_valid ? "FAIL(both)" : ada(o) ? "FAIL(adasum)" : "FAIL(gcoll)";
    if (!o->baseline_on || r->m_valid)
        return "ok";
    return ada(o) ? "FAIL(sum)" : o->baseline_nccl ? "FAIL(nccl)" : "FAIL(mpi)";
}

const char *report_config(const char *name, char *buf, size_t len)
{
    char value[256];
    const char *source;
    if (gcoll_config_get(name, value, sizeof(value), &source) != GCOLL_SUCCESS)
        snprintf(buf, len, "? (%s)", gcoll_last_error());
    else
        snprintf(buf, len, "%s%s", value, strcmp(source, "default") == 0 ? " (default)" : "");
    return buf;
}

void report_header(const bench_opts_t *o, const bench_env_t *env)
{
    printf("# gcoll_bench %s: gcoll %s", bench_coll_name((bench_coll_t)o->subcmd), env->gcoll_version);
    if (o->baseline_on)
        printf(" beside %s",
               ada(o)                 ? "gcoll_allreduce sum on the same buffers"
                   : o->baseline_nccl ? "NCCL on the same GPU buffers"
                                      : env->mpi_version);
    printf("\n# %d ranks on %d host%s (%s), transport %s, algorithm %s\n", env->nranks, env->nhosts,
           env->nhosts == 1 ? "" : "s", env->hosts, env->transport, o->algo ? o->algo : "by size (column)");
    printf("# dtype %s, op %s, %s, validation %s; per size %s%s take turns in blocks of iterations\n",
           gcoll_dtype_name(o->dtype), gcoll_op_name(o->op), o->inplace ? "in place" : "out of place",
           o->check_each ? "every iteration" : "once per size", o->nalgos > 1 ? "the --algo list" : "gcoll",
           !o->baseline_on        ? " alone:"
               : ada(o)           ? " and the sum"
               : o->baseline_nccl ? " and NCCL"
                                  : " and MPI");
    if (o->compress_set) {
        static const char *const cname[] = {"none", "fp16", "bf16", "topk"};
        printf("# gcoll compression %s", cname[o->compress]);
        if (o->compress == GCOLL_COMPRESS_TOPK)
            printf(" density %g", o->density);
        printf(" (MPI dense); wire B/call: gcoll's payload bytes per call and rank\n");
    }
    if (ada(o))
        printf("# adasum validated against reference/adasum_ref.c (relative error <= %g), the sum bit for bit\n",
               adasum_ref_tolerance(o->dtype));
    if (bench_skewed(o->subcmd))
        skew_line(o, env->nranks);
    if (o->subcmd == B_GROUP)
        printf("# group: a batch of %d allreduces of each size in one gcoll_group_start/end, beside the same %d "
               "blocking calls one by one%s; times per batch, bytes per allreduce\n",
               o->batch, o->batch, o->baseline_on ? " and MPI's batch (MPI_Iallreduce each, one MPI_Waitall)" : "");
    printf("# memcpy bandwidth of this machine: %.1f GB/s (one core, 64 MiB)\n", env->memcpy_gbps);
    if (o->device) {
        char chunk[64];
        printf("# device buffers (cuda): CUDA IPC kernels where every rank is on this host (GCOLL_CUDA_IPC), "
               "else staged through pinned host memory in chunks of GCOLL_CUDA_STAGE_CHUNK %s\n",
               report_config("GCOLL_CUDA_STAGE_CHUNK", chunk, sizeof(chunk)));
        printf("# pinned copy bandwidth (64 MiB): host->device %.1f GB/s, device->host %.1f GB/s: the staged ceiling\n",
               env->h2d_gbps, env->d2h_gbps);
        printf("# device memory bandwidth (a 256 MiB copy on rank 0's GPU, read + written): %.0f GB/s; ranks sharing "
               "one GPU: an IPC allreduce of B bytes moves 2 x ranks x B there\n",
               env->dev_gbps);
    }
    if (env->nccl_off)
        printf("# NCCL: not run: %s\n", env->nccl_off);
    printf("# latency in us (avg of rank averages, min and max rank average); bandwidth in GB/s\n");
    printf("%12s %11s %-19s %10s %10s %10s %8s %8s", "bytes", "count", "algorithm", "avg", "min", "max", "algbw",
           "busbw");
    if (o->baseline_on) {
        char avg[16];
        snprintf(avg, sizeof(avg), "%s avg", base(o, 0));
        printf(" | %10s %8s %9s", avg, "busbw", ada(o) ? "ada/sum" : o->baseline_nccl ? "NCCL/gcoll" : "MPI/gcoll");
    }
    printf(" %6s %s", "iters", "valid");
    if (o->compress_set)
        printf(" %12s", "wire B/call");
    printf("\n");
    fflush(stdout);
}

void report_row(const bench_opts_t *o, const bench_env_t *env, const bench_row_t *r)
{
    printf("%12zu %11zu %-19s %10.2f %10.2f %10.2f %8.3f %8.3f", r->bytes, r->count, r->algo, r->g.avg, r->g.min,
           r->g.max, algbw(o, r, r->g.avg), busbw(o, env, r, r->g.avg));
    if (o->baseline_on)
        printf(" | %10.2f %8.3f %9.2f", r->m.avg, busbw(o, env, r, r->m.avg), ratio(o, r));
    printf(" %6d %s", r->iters, valid_text(o, r));
    if (o->compress_set)
        printf(" %12.0f", r->wire_bytes);
    printf("\n");
    fflush(stdout);
    bench_row_t *grown = realloc(rows, (nrows + 1) * sizeof(*rows));
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
    const char *b = base(o, 1);
    fprintf(f,
            "collective,dtype,op,inplace,ranks,bytes,count,algorithm,iters,gcoll_avg_us,gcoll_min_us,"
            "gcoll_max_us,gcoll_algbw_GBps,gcoll_busbw_GBps,%s_avg_us,%s_min_us,%s_max_us,"
            "%s_algbw_GBps,%s_busbw_GBps,%s,valid,gcoll_med_us,%s_med_us\n",
            b, b, b, b, b,
            ada(o)                 ? "adasum_over_sum"
                : o->baseline_nccl ? "nccl_over_gcoll"
                                   : "mpi_over_gcoll",
            b);
    for (size_t i = 0; i < nrows; i++) {
        const bench_row_t *r = &rows[i];
        fprintf(f, "%s,%s,%s,%d,%d,%zu,%zu,%s,%d,%.3f,%.3f,%.3f,%.4f,%.4f,", bench_coll_name((bench_coll_t)o->subcmd),
                gcoll_dtype_name(o->dtype), gcoll_op_name(o->op), o->inplace, env->nranks, r->bytes, r->count, r->algo,
                r->iters, r->g.avg, r->g.min, r->g.max, algbw(o, r, r->g.avg), busbw(o, env, r, r->g.avg));
        if (o->baseline_on)
            fprintf(f, "%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,", r->m.avg, r->m.min, r->m.max, algbw(o, r, r->m.avg),
                    busbw(o, env, r, r->m.avg), ratio(o, r));
        else
            fprintf(f, ",,,,,,");
        fprintf(f, "%s,%.3f,", valid_text(o, r), r->g_med);
        if (o->baseline_on)
            fprintf(f, "%.3f", r->m_med);
        fprintf(f, "\n");
    }
    return fclose(f);
}

static int write_json(const bench_opts_t *o, const bench_env_t *env)
{
    FILE *f = fopen(o->json, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"collective\": \"%s\", \"gcoll_version\": \"%s\", \"baseline\": \"%s\",\n",
            bench_coll_name((bench_coll_t)o->subcmd), env->gcoll_version,
            !o->baseline_on ? "none"
                : ada(o)    ? "allreduce_sum"
                            : base(o, 1));
    fprintf(f, "  \"ranks\": %d, \"hosts\": %d, \"transport\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\",\n",
            env->nranks, env->nhosts, env->transport, gcoll_dtype_name(o->dtype), gcoll_op_name(o->op));
    fprintf(f, "  \"inplace\": %s, \"validate_every_iteration\": %s, \"memcpy_GBps\": %.2f,\n  \"rows\": [",
            o->inplace ? "true" : "false", o->check_each ? "true" : "false", env->memcpy_gbps);
    for (size_t i = 0; i < nrows; i++) {
        const bench_row_t *r = &rows[i];
        fprintf(f,
                "%s\n    {\"bytes\": %zu, \"count\": %zu, \"algorithm\": \"%s\", \"iters\": %d, "
                "\"gcoll\": {\"avg_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"median_us\": %.3f, "
                "\"busbw_GBps\": %.4f}",
                i ? "," : "", r->bytes, r->count, r->algo, r->iters, r->g.avg, r->g.min, r->g.max, r->g_med,
                busbw(o, env, r, r->g.avg));
        if (o->baseline_on)
            fprintf(f,
                    ", \"%s\": {\"avg_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"median_us\": %.3f, "
                    "\"busbw_GBps\": %.4f}",
                    base(o, 1), r->m.avg, r->m.min, r->m.max, r->m_med, busbw(o, env, r, r->m.avg));
        fprintf(f, ", \"valid\": \"%s\"}", valid_text(o, r));
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f);
}

int report_finish(const bench_opts_t *o, const bench_env_t *env)
{
    double g = 0, m = 0;
    for (size_t i = 0; i < nrows; i++) {
        g += busbw(o, env, &rows[i], rows[i].g.avg);
        m += busbw(o, env, &rows[i], rows[i].m.avg);
    }
    for (size_t i = 0; o->subcmd == B_GROUP && i + 1 < nrows; i += 2)
        printf("# group at %zu B: separate / group = %.2f\n", rows[i].bytes,
               rows[i].g.avg > 0 ? rows[i + 1].g.avg / rows[i].g.avg : 0);
    if (nrows && o->subcmd != B_BARRIER) {
        printf("# average bus bandwidth over %zu %s: gcoll %.3f GB/s", nrows, o->subcmd == B_GROUP ? "rows" : "sizes",
               g / (double)nrows);
        if (o->baseline_on)
            printf(", %s %.3f GB/s", base(o, 0), m / (double)nrows);
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
