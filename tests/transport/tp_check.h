/* What every transport-level test shares: its rank, the pass/fail counts it reports on its
 * RESULT line, CHECK (the first 30 failures are printed with file and line), and a clock. */
#ifndef GCOLL_TP_CHECK_H
#define GCOLL_TP_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include <mpi.h>

#include "boot.h"

static int rank, size;
static long passed, failed;

static void check(int ok, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void check(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    if (++failed > 30)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL [rank %d/%d] %s:%d: %s\n", rank, size, file, line, msg);
}
#define CHECK(cond, ...) check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The bootstrap group transports are created with: MPI_COMM_WORLD's, made at the first call and
 * kept to the end. */
static gcoll__boot_t *world_group(void)
{
    static gcoll__boot_t *g;
    if (!g && gcoll__boot_from_mpi(MPI_COMM_WORLD, &g) != GCOLL_SUCCESS) {
        fprintf(stderr, "test: no bootstrap group: %s\n", gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return g;
}

#endif
