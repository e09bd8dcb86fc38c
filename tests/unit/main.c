/* Runs every unit suite; exits non-zero if any test failed. */
#include <stdlib.h>

#include "unit.h"

int main(void)
{
    SRunner *sr = srunner_create(dtype_suite());
    srunner_add_suite(sr, fp8_suite());
    srunner_add_suite(sr, reduce_suite());
    srunner_add_suite(sr, config_suite());
    srunner_add_suite(sr, errors_suite());
    srunner_add_suite(sr, bench_suite());
    srunner_add_suite(sr, cost_suite());
    srunner_add_suite(sr, topo_suite());
    srunner_add_suite(sr, sched_suite());
    srunner_add_suite(sr, boot_suite());
    srunner_add_suite(sr, topk_suite());
    srunner_add_suite(sr, scratch_suite());
    srunner_add_suite(sr, sim_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
