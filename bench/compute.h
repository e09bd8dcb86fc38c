/* Simulated computation for the overlap benchmarks. spin: a dependent chain of floating-point
 * operations, calibrated once to a rate in ns per unit, so that a core taken away by another
 * thread stretches it as it would stretch real compute (OSU's dummy_compute does the same);
 * sleep: nanosleep, which leaves the core to gcoll's progress thread. */
#ifndef GCOLL_BENCH_COMPUTE_H
#define GCOLL_BENCH_COMPUTE_H

typedef enum { BENCH_COMPUTE_SPIN, BENCH_COMPUTE_SLEEP } bench_compute_mode_t;

typedef struct {
    bench_compute_mode_t mode;
    double ns_per_unit; /* spin: the calibrated cost of one unit */
} bench_compute_t;

/* Calibrates spin on the calling thread (the fastest of several short runs). */
void bench_compute_init(bench_compute_t *c, bench_compute_mode_t mode);
/* Computes (or sleeps) for about ns nanoseconds. */
void bench_compute_run(const bench_compute_t *c, double ns);
const char *bench_compute_name(bench_compute_mode_t mode);

#endif
