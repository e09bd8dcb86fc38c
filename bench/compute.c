/* See compute.h: the calibration of the spinning computation and the sleeping one that the
 * overlap benchmarks run between posting an operation and waiting for it. */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "compute.h"

static volatile double sink; /* keeps the chain from being optimized away */

/* One unit is one multiply-add that depends on the previous one: a few cycles that no
 * compiler can vectorize or remove. */
static void spin_units(uint64_t n)
{
    double x = sink;
    for (uint64_t i = 0; i < n; i++)
        x = x * 0.9999999 + 1e-7;
    sink = x;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void bench_compute_init(bench_compute_t *c, bench_compute_mode_t mode)
{
    const uint64_t units = 1u << 20; /* about a millisecond */
    double best = 0;
    c->mode = mode;
    sink = 1.0;
    spin_units(units); /* wakes the core up to its working frequency */
    for (int i = 0; i < 10; i++) {
        double t0 = now_ns();
        spin_units(units);
        double t = now_ns() - t0;
        best = i == 0 || t < best ? t : best;
    }
    c->ns_per_unit = best / (double)units;
}

void bench_compute_run(const bench_compute_t *c, double ns)
{
    if (ns <= 0)
        return;
    if (c->mode == BENCH_COMPUTE_SPIN) {
        spin_units((uint64_t)(ns / c->ns_per_unit));
        return;
    }
    struct timespec ts = {(time_t)(ns / 1e9), (long)(ns - (double)(time_t)(ns / 1e9) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        // cppcheck-suppress redundantContinue ; the retry loop's body, written out so that it is seen
        continue;
}

const char *bench_compute_name(bench_compute_mode_t mode)
{
    return mode == BENCH_COMPUTE_SLEEP ? "sleep" : "spin";
}
