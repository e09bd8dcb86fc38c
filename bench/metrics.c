/* See metrics.h: message sizes per collective, bus-bandwidth factors and the per-rank timing
 * summaries of the benchmark. */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static const char *const names[B_NCOLL] = {"allreduce", "reduce_scatter", "allgather", "bcast",
                                           "reduce",    "alltoall",       "barrier",   "adasum"};

const char *bench_coll_name(bench_coll_t c)
{
    return (unsigned)c < B_NCOLL ? names[c] : "unknown";
}

int bench_coll_find(const char *name)
{
    for (int c = 0; c < B_NCOLL; c++)
        if (strcmp(name, names[c]) == 0)
            return c;
    return -1;
}

double bench_busbw_factor(bench_coll_t c, int n)
{
    switch (c) {
    case B_ALLREDUCE:
    case B_ADASUM: return 2.0 * (n - 1) / n;
    case B_REDUCE_SCATTER:
    case B_ALLGATHER:
    case B_ALLTOALL: return (double)(n - 1) / n;
    case B_BCAST:
    case B_REDUCE: return 1.0;
    default: return 0.0;
    }
}

static int per_rank_vector(bench_coll_t c)
{
    return c == B_REDUCE_SCATTER || c == B_ALLGATHER || c == B_ALLTOALL;
}

size_t bench_count_for(bench_coll_t c, size_t bytes, size_t esize, int n)
{
    if (c == B_BARRIER)
        return 0;
    size_t count = bytes / esize;
    return per_rank_vector(c) ? count / (size_t)n : count;
}

size_t bench_bytes_for(bench_coll_t c, size_t count, size_t esize, int n)
{
    return count * esize * (per_rank_vector(c) ? (size_t)n : 1);
}

double bench_algbw(size_t bytes, double usec)
{
    return usec > 0 ? (double)bytes / (usec * 1e3) : 0.0;
}

bench_lat_t bench_summarize(const double *v, int n)
{
    bench_lat_t s = {0, v[0], v[0]};
    for (int i = 0; i < n; i++) {
        s.avg += v[i];
        s.min = v[i] < s.min ? v[i] : s.min;
        s.max = v[i] > s.max ? v[i] : s.max;
    }
    s.avg /= n;
    return s;
}

int bench_default_iters(size_t bytes)
{
    size_t it = bytes ? ((size_t)64 << 20) / bytes : 1000;
    return it > 1000 ? 1000 : it < 20 ? 20 : (int)it;
}

int bench_default_warmup(int iters)
{
    return iters / 10 > 2 ? iters / 10 : 2;
}

double bench_overlap_percent(double pure, double compute, double overall)
{
    if (!(pure > 0))
        return 0;
    double p = 100.0 - (overall - compute) / pure * 100.0;
    return p > 0 ? p : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
