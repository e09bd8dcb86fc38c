/* Check suites of the unit tests; main.c runs them all, each test in its own process. */
#ifndef GCOLL_UNIT_H
#define GCOLL_UNIT_H

#include <check.h>

/* ck_assert_msg for checks inside loops: Check records every passing assertion (a write to its
 * pipe per call), which makes a loop of many thousands cost seconds; this reaches Check only on
 * a failure, with the same message. */
#define CK_EXPECT(cond, ...)                         \
    do {                                             \
        if (!(cond))                                 \
            ck_assert_msg(0 && (cond), __VA_ARGS__); \
    } while (0)

Suite *dtype_suite(void);
Suite *reduce_suite(void);
Suite *fp8_suite(void);
Suite *config_suite(void);
Suite *errors_suite(void);
Suite *bench_suite(void);
Suite *cost_suite(void);
Suite *topo_suite(void);
Suite *sched_suite(void);
Suite *boot_suite(void);
Suite *topk_suite(void);
Suite *scratch_suite(void);
Suite *sim_suite(void);

#endif
