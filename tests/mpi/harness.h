/* Multi-rank test harness: pass/fail accounting per rank, summed with plain MPI (not gcoll) at
 * the end; rank 0 prints "RESULT <name> passed=N failed=N" for tests/run.sh. Launched without
 * MPI (tests/boot.sh), every rank prints its own "RESULT <name> rank=R ..." line instead. */
#ifndef GCOLL_TEST_HARNESS_H
#define GCOLL_TEST_HARNESS_H

#include <stdio.h>

#include "gcoll.h"

extern int h_rank, h_size;
extern long h_passed, h_failed;

/* gcoll_init + world; exits the process on failure (test code, not library code). */
gcoll_comm_t h_init(int *argc, char ***argv);
/* Sums the counts over ranks with MPI, prints the RESULT line, finalizes; returns the exit code. */
int h_finish(const char *name);

void h_check(int ok, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define CHECK(cond, ...) h_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_OK(call) \
    do { gcoll_status_t st_ = (call); CHECK(st_ == GCOLL_SUCCESS, "%s -> %s: %s", #call, \
                                            gcoll_status_name(st_), gcoll_last_error()); } while (0)

double h_now(void); /* CLOCK_MONOTONIC seconds: one clock for every process of a host */

#endif
