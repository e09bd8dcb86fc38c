/* The machine's physical ceiling: memcpy and reduction-kernel bandwidth on one core and on all
 * cores at once. */
#ifndef GCOLL_BENCH_MEMBW_H
#define GCOLL_BENCH_MEMBW_H

#include <stddef.h>

#include "gcoll.h"

/* GB/s of destination bytes written per second, best of reps, over buffers of `bytes`.
 * dtype < 0 measures memcpy; otherwise gcoll_reduce_local(SUM) of that dtype. nthreads > 1 runs
 * that many copies at once on separate buffers and reports their sum. */
double membw_measure(int dtype, size_t bytes, int nthreads, int reps);
/* Prints the membw table. */
void membw_report(void);

#endif
