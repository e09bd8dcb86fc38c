/* See metrics.h: message sizes per collective, bus-bandwidth factors, the per-rank timing
 * summaries of the benchmark and the --skew splits. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static const char *const names[B_NCOLL] = {"allreduce", "reduce_scatter", "allgather", "bcast",      "reduce",
                                           "alltoall",  "barrier",        "adasum",    "allgatherv", "reduce_scatterv",
                                           "alltoallv", "gather",         "scatter",   "gatherv",    "scatterv",
                                           "sendrecv",  "group"};

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
    case B_ADASUM:
    case B_GROUP: return 2.0 * (n - 1) / n;
    case B_BCAST:
    case B_REDUCE:
    case B_SENDRECV: return 1.0;
    case B_BARRIER: return 0.0;
    default: return bench_per_rank_vector(c) ? (double)(n - 1) / n : 0.0;
    }
}

int bench_per_rank_vector(bench_coll_t c)
{
    switch (c) {
    case B_REDUCE_SCATTER:
    case B_ALLGATHER:
    case B_ALLTOALL:
    case B_ALLGATHERV:
    case B_REDUCE_SCATTERV:
    case B_ALLTOALLV:
    case B_GATHER:
    case B_SCATTER:
    case B_GATHERV:
    case B_SCATTERV: return 1;
    default: return 0;
    }
}

size_t bench_count_for(bench_coll_t c, size_t bytes, size_t esize, int n)
{
    if (c == B_BARRIER)
        return 0;
    size_t count = bytes / esize;
    return bench_per_rank_vector(c) ? count / (size_t)n : count;
}

size_t bench_bytes_for(bench_coll_t c, size_t count, size_t esize, int n)
{
    return count * esize * (bench_per_rank_vector(c) ? (size_t)n : 1);
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

int bench_skew_parse(const char *arg, bench_skew_t *out)
{
    *out = (bench_skew_t){.kind = BENCH_SKEW_EVEN, .seed = out->seed};
    if (strcmp(arg, "even") == 0)
        return 0;
    if (strcmp(arg, "half") == 0) {
        out->kind = BENCH_SKEW_HALF;
        return 0;
    }
    if (strncmp(arg, "zipf:", 5) != 0)
        return -1;
    char *end;
    errno = 0;
    double s = strtod(arg + 5, &end);
    if (errno || end == arg + 5 || *end || !(s > 0) || !isfinite(s))
        return -1;
    out->kind = BENCH_SKEW_ZIPF;
    out->s = s;
    return 0;
}

/* splitmix64: the draws of zipf's slot order, from (seed, stream) alone. */
static uint64_t mix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int bench_skew_split(const bench_skew_t *k, size_t total, int n, unsigned stream, size_t *counts)
{
    size_t un = (size_t)n;
    if (k->kind == BENCH_SKEW_EVEN || n == 1) {
        for (size_t i = 0; i < un; i++)
            counts[i] = total / un + (i < total % un);
        return 0;
    }
    if (k->kind == BENCH_SKEW_HALF) {
        size_t heavy = stream % un, each = total / 2 / (un - 1);
        for (size_t i = 0; i < un; i++)
            counts[i] = each;
        counts[heavy] = total - each * (un - 1);
        return 0;
    }
    /* order[j]: the slot with the j-th largest share (Fisher-Yates over the draws) */
    size_t *order = malloc(un * sizeof(*order));
    if (!order)
        return -1;
    uint64_t state = (uint64_t)k->seed * 0x2545f4914f6cdd1dull ^ ((uint64_t)stream << 32 | stream);
    for (size_t i = 0; i < un; i++)
        order[i] = i;
    for (size_t i = un - 1; i > 0; i--) {
        size_t j = (size_t)(mix(&state) % (i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    double norm = 0;
    for (size_t j = 0; j < un; j++)
        norm += pow((double)(j + 1), -k->s);
    size_t given = 0;
    for (size_t j = 0; j < un; j++) {
        counts[order[j]] = (size_t)floor((double)total * pow((double)(j + 1), -k->s) / norm);
        given += counts[order[j]];
    }
    for (size_t j = 0; given < total; j = (j + 1) % un, given++) /* what rounding left, largest first */
        counts[order[j]]++;
    free(order);
    return 0;
}
