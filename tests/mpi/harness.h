/* Multi-rank test harness: pass/fail accounting per rank, summed with plain MPI (not gcoll) at
 * the end; rank 0 prints "RESULT <name> passed=N failed=N" for tests/run.sh. */
#ifndef GCOLL_TEST_HARNESS_H
#define GCOLL_TEST_HARNESS_H

#include <stdint.h>
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

/* Deterministic, well-mixed 32 bits of (a, b, c): the independent source of test inputs. */
static inline uint32_t h_hash(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t x = ((uint64_t)a * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)b * 0xC2B2AE3D27D4EB4Full) ^
                 ((uint64_t)c * 0x165667B19E3779F9ull);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint32_t)(x >> 16);
}

double h_now(void); /* CLOCK_MONOTONIC seconds: one clock for every process of a host */

#endif
