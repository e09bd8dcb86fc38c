/* Status names and messages, and calls made before gcoll_init: a status and a message, no crash. */
#include <string.h>

#include "gcoll.h"
#include "unit.h"

START_TEST(every_status_has_a_name_and_message)
{
    for (int s = GCOLL_SUCCESS; s < GCOLL_STATUS_COUNT; s++) {
        ck_assert(strncmp(gcoll_status_name((gcoll_status_t)s), "GCOLL_", 6) == 0);
        ck_assert(strlen(gcoll_strerror((gcoll_status_t)s)) > 0);
        for (int t = 0; t < s; t++)
            ck_assert_str_ne(gcoll_status_name((gcoll_status_t)s), gcoll_status_name((gcoll_status_t)t));
    }
    ck_assert_str_eq(gcoll_status_name(GCOLL_ERR_TIMEOUT), "GCOLL_ERR_TIMEOUT");
    ck_assert_str_eq(gcoll_strerror((gcoll_status_t)1000), "unknown status");
    ck_assert_str_eq(gcoll_strerror(GCOLL_STATUS_COUNT), "unknown status");
    ck_assert_int_eq(GCOLL_ERR_INTERNAL, 10); /* the ABI's values do not move */
    ck_assert_str_eq(gcoll_status_name((gcoll_status_t)-1), "GCOLL_STATUS_UNKNOWN");
}
END_TEST

START_TEST(calls_before_init_fail_cleanly)
{
    gcoll_comm_t c = NULL;
    float x = 1;
    ck_assert_int_eq(gcoll_comm_world(&c), GCOLL_ERR_INVALID_USAGE);
    ck_assert(strstr(gcoll_last_error(), "gcoll_init") != NULL);
    ck_assert_int_eq(gcoll_allreduce(&x, &x, 1, GCOLL_FLOAT32, GCOLL_SUM, c), GCOLL_ERR_INVALID_USAGE);
    ck_assert_int_eq(gcoll_comm_world(NULL), GCOLL_ERR_INVALID_ARG);
    ck_assert_int_eq(gcoll_finalize(), GCOLL_ERR_INVALID_USAGE);
    ck_assert_int_eq(gcoll_comm_rank(NULL), -1);
    ck_assert_int_eq(gcoll_wait(NULL), GCOLL_ERR_INVALID_ARG);
    ck_assert(strstr(gcoll_last_error(), "req") != NULL);
    ck_assert_str_eq(gcoll_version(), "0.2.0");
}
END_TEST

Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("status");
    tcase_add_test(tc, every_status_has_a_name_and_message);
    tcase_add_test(tc, calls_before_init_fail_cleanly);
    suite_add_tcase(s, tc);
    return s;
}
