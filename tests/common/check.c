/* See check.h. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime under plain -std=c11 (tests/cluster/run_tests.sh) */
#endif
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "check.h"

enum { MAX_PRINTED = 20 }; /* failure lines printed; enough to diagnose, the count still grows */

int check_rank = 0, check_size = 1;
long check_passed, check_failed;

void check_set_rank(int rank, int size)
{
    check_rank = rank;
    check_size = size;
}

void check_record(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        check_passed++;
        return;
    }
    if (++check_failed > MAX_PRINTED)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* one write: ranks' lines stay whole */
    fprintf(stderr, "FAIL [rank %d/%d] %s:%d: %s\n", check_rank, check_size, file, line, msg);
}

static void print_result(const char *name, const char *who, int flags, long passed, long failed)
{
    if (flags & CHECK_NP)
        printf("RESULT %s %snp=%d passed=%ld failed=%ld\n", name, who, check_size, passed, failed);
    else
        printf("RESULT %s %spassed=%ld failed=%ld\n", name, who, passed, failed);
    fflush(stdout);
}

int check_summary(const char *name, int flags)
{
    long mine[2] = {check_passed, check_failed}, all[2] = {0, 0};
    MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (check_rank == 0)
        print_result(name, "", flags, all[0], all[1]);
    fflush(stdout);
    return all[1] ? 1 : 0;
}

int check_summary_rank(const char *name, int flags)
{
    char who[32];
    snprintf(who, sizeof(who), "rank=%d ", check_rank);
    print_result(name, who, flags, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

double check_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
