/* The gcoll part of the multi-rank test harness, on top of tests/common/check.h (CHECK, counts,
 * the RESULT line): h_init (gcoll_init and the world communicator) and CHECK_OK for gcoll calls.
 * h_finish sums with plain MPI and rank 0 prints "RESULT <name> np=N passed=N failed=N"; launched
 * without MPI (tests/boot.sh), every rank prints its own "RESULT <name> rank=R np=N ..." line. */
#ifndef GCOLL_TEST_HARNESS_H
#define GCOLL_TEST_HARNESS_H

#include <stdio.h>

#include "check.h"
#include "gcoll.h"

extern int h_rank, h_size; /* in the world communicator */

/* gcoll_init + world; exits the process on failure (test code, not library code). */
gcoll_comm_t h_init(int *argc, char ***argv);
/* Prints the RESULT line (counts summed over ranks with MPI where MPI runs), finalizes gcoll;
 * returns the exit code. */
int h_finish(const char *name);

#define CHECK_OK(call)                                                                                  \
    do {                                                                                                \
        gcoll_status_t st_ = (call);                                                                    \
        CHECK(st_ == GCOLL_SUCCESS, "%s -> %s: %s", #call, gcoll_status_name(st_), gcoll_last_error()); \
    } while (0)

static inline double h_now(void)
{
    return check_now();
}

#endif
