/* See membw.h: memcpy and reduction-kernel bandwidth on one core and on all cores at once, the
 * ceiling `gcoll_bench membw` prints. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "membw.h"

typedef struct {
    int dtype;
    size_t bytes;
    int reps;
    pthread_barrier_t *start;
    double best; /* seconds for one pass */
} job_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
    job_t *j = arg;
    char *src = malloc(j->bytes), *dst = malloc(j->bytes);
    j->best = 0;
    if (!src || !dst)
        goto out;
    memset(src, 1, j->bytes); /* touch every page before timing */
    memset(dst, 0, j->bytes);
    size_t count = j->dtype >= 0 ? j->bytes / gcoll_dtype_size((gcoll_dtype_t)j->dtype) : 0;
    if (j->start)
        pthread_barrier_wait(j->start);
    for (int r = 0; r < j->reps; r++) {
        double t0 = now();
        if (j->dtype < 0)
            memcpy(dst, src, j->bytes);
        else
            gcoll_reduce_local(dst, src, count, (gcoll_dtype_t)j->dtype, GCOLL_SUM);
        double dt = now() - t0;
        if (j->best == 0 || dt < j->best)
            j->best = dt;
    }
out:
    free(src);
    free(dst);
    return NULL;
}

double membw_measure(int dtype, size_t bytes, int nthreads, int reps)
{
    if (nthreads <= 1) {
        job_t j = {dtype, bytes, reps, NULL, 0};
        worker(&j);
        return j.best > 0 ? (double)bytes / j.best / 1e9 : 0;
    }
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    job_t *jobs = calloc((size_t)nthreads, sizeof(job_t));
    pthread_t *tids = calloc((size_t)nthreads, sizeof(pthread_t));
    for (int i = 0; i < nthreads; i++) {
        jobs[i] = (job_t){dtype, bytes, reps, &start, 0};
        pthread_create(&tids[i], NULL, worker, &jobs[i]);
    }
    double total = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tids[i], NULL);
        total += jobs[i].best > 0 ? (double)bytes / jobs[i].best / 1e9 : 0;
    }
    pthread_barrier_destroy(&start);
    free(jobs);
    free(tids);
    return total;
}

void membw_report(void)
{
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    size_t bytes = (size_t)64 << 20;
    static const int kinds[] = {-1, GCOLL_FLOAT32, GCOLL_FLOAT64, GCOLL_FLOAT16, GCOLL_BFLOAT16, GCOLL_INT32};
    printf("# gcoll_bench membw: gcoll %s, %d cores, 64 MiB buffers, best of 10 passes\n", gcoll_version(), cores);
    printf("# GB/s of destination written: memcpy copies src to dst; reduce computes dst = dst + src\n");
    printf("%-24s %12s %12s\n", "kernel", "1 core", "all cores");
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        char name[40];
        snprintf(name, sizeof(name), "%s%s", kinds[k] < 0 ? "memcpy" : "reduce sum ",
                 kinds[k] < 0 ? "" : gcoll_dtype_name((gcoll_dtype_t)kinds[k]));
        printf("%-24s %12.2f %12.2f\n", name, membw_measure(kinds[k], bytes, 1, 10),
               membw_measure(kinds[k], bytes, cores, 10));
    }
}
