/* Check suites of the unit tests; main.c runs them all, each test in its own process. */
#ifndef GCOLL_UNIT_H
#define GCOLL_UNIT_H

#include <check.h>

Suite *dtype_suite(void);
Suite *reduce_suite(void);
Suite *config_suite(void);
Suite *errors_suite(void);
Suite *bench_suite(void);
Suite *cost_suite(void);
Suite *topo_suite(void);
Suite *sched_suite(void);
Suite *boot_suite(void);
Suite *topk_suite(void);

#endif
