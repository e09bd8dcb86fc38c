/* The one C test harness: CHECK and its pass/fail counts, the failure line "FAIL [rank r/n]
 * file:line: ...", and the RESULT line, summed over ranks with plain MPI. Counting needs neither
 * gcoll nor MPI: gcoll tests (tests/mpi/harness.h adds gcoll_init), transport tests, the
 * interposer's plain MPI program and the cluster node check use it, each from one thread. */
#ifndef GCOLL_TEST_CHECK_H
#define GCOLL_TEST_CHECK_H

extern int check_rank, check_size; /* who this process is, for failure lines (0/1 until set) */
extern long check_passed, check_failed;

void check_set_rank(int rank, int size);

/* Counts one check; a failure (the first 20 of them) prints its line on stderr. */
void check_record(int ok, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define CHECK(cond, ...) check_record(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* RESULT lines: "RESULT <name> [np=N] passed=N failed=N", np= with CHECK_NP. */
enum { CHECK_NP = 1 };
/* Sums the counts over MPI_COMM_WORLD with MPI_Allreduce (MPI must be running); rank 0 prints.
 * Returns the exit code: 1 where any rank failed, else 0. */
int check_summary(const char *name, int flags);
/* Without MPI: this rank's own "RESULT <name> rank=R [np=N] passed=N failed=N" (the launching
 * script sums). Returns 1 where this rank failed, else 0. */
int check_summary_rank(const char *name, int flags);

double check_now(void); /* CLOCK_MONOTONIC seconds: one clock for every process of a host */

#endif
