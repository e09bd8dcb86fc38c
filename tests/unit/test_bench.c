/* The benchmark's arithmetic and command line: bus-bandwidth factors, sizes and counts,
 * OSU latency summaries, default iterations, and strict option parsing. */
#include <string.h>

#include "metrics.h"
#include "options.h"
#include "unit.h"

START_TEST(busbw_factors)
{
    ck_assert_double_eq_tol(bench_busbw_factor(B_ALLREDUCE, 2), 1.0, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_ALLREDUCE, 4), 1.5, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_ALLREDUCE, 1), 0.0, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_REDUCE_SCATTER, 8), 0.875, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_ALLGATHER, 3), 2.0 / 3, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_ALLTOALL, 5), 0.8, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_BCAST, 7), 1.0, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_REDUCE, 7), 1.0, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_BARRIER, 7), 0.0, 1e-12);
    /* 1 MB in 1000 us is 1 GB/s */
    ck_assert_double_eq_tol(bench_algbw(1000000, 1000.0), 1.0, 1e-12);
    ck_assert_double_eq_tol(bench_algbw(64, 0.0), 0.0, 1e-12);
}
END_TEST

START_TEST(sizes_and_counts)
{
    ck_assert_uint_eq(bench_count_for(B_ALLREDUCE, 4096, 4, 3), 1024);
    ck_assert_uint_eq(bench_count_for(B_ALLREDUCE, 3, 4, 3), 0);
    ck_assert_uint_eq(bench_count_for(B_ALLGATHER, 4096, 4, 4), 256); /* per rank */
    ck_assert_uint_eq(bench_count_for(B_REDUCE_SCATTER, 1000, 2, 3), 166);
    ck_assert_uint_eq(bench_bytes_for(B_REDUCE_SCATTER, 166, 2, 3), 996);
    ck_assert_uint_eq(bench_bytes_for(B_BCAST, 10, 8, 5), 80);
    ck_assert_uint_eq(bench_count_for(B_BARRIER, 4096, 4, 2), 0);
}
END_TEST

START_TEST(latency_summary_is_osu_style)
{
    double v[] = {10, 30, 20, 40};
    bench_lat_t s = bench_summarize(v, 4);
    ck_assert_double_eq_tol(s.avg, 25, 1e-12);
    ck_assert_double_eq_tol(s.min, 10, 1e-12);
    ck_assert_double_eq_tol(s.max, 40, 1e-12);
    ck_assert_int_eq(bench_default_iters(4), 1000);
    ck_assert_int_eq(bench_default_iters(1 << 20), 64);
    ck_assert_int_eq(bench_default_iters(64 << 20), 20);
    ck_assert_int_eq(bench_default_warmup(1000), 100);
    ck_assert_int_eq(bench_default_warmup(20), 2);
}
END_TEST

static int parse(const char *line, bench_opts_t *o, char *err)
{
    static char buf[256]; /* options point into it after return */
    char *argv[32];
    int argc = 0;
    strcpy(buf, line);
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    return bench_parse(argc, argv, o, err, 200);
}

START_TEST(options_parse)
{
    bench_opts_t o;
    char err[200];
    ck_assert_int_eq(parse("b allreduce -m 4:64M -f 4 -i 7 -x 1 -d bfloat16 -o max -c --inplace --baseline none "
                           "--csv a.csv --json a.json --algo ring -r 1", &o, err), 0);
    ck_assert_int_eq(o.subcmd, B_ALLREDUCE);
    ck_assert_uint_eq(o.min_bytes, 4);
    ck_assert_uint_eq(o.max_bytes, 64u << 20);
    ck_assert_uint_eq(o.factor, 4);
    ck_assert_int_eq(o.iters, 7);
    ck_assert_int_eq(o.warmup, 1);
    ck_assert_int_eq(o.dtype, GCOLL_BFLOAT16);
    ck_assert_int_eq(o.op, GCOLL_MAX);
    ck_assert(o.check_each && o.inplace && !o.baseline_mpi);
    ck_assert_str_eq(o.csv, "a.csv");
    ck_assert_str_eq(o.algo, "ring");
    ck_assert_int_eq(o.root, 1);
    ck_assert_int_eq(parse("b barrier", &o, err), 0);
    ck_assert_int_eq(o.iters, 0); /* by size */
    ck_assert_int_eq(parse("b membw", &o, err), 0);
    ck_assert_int_eq(parse("b -h", &o, err), 1);
    ck_assert_int_eq(parse("b allgather -h", &o, err), 1);
}
END_TEST

START_TEST(bad_options_are_refused)
{
    static const char *const bad[] = {"b", "b allsorts", "b allreduce -m 64", "b allreduce -m 8:4",
                                      "b allreduce -m 4:1X", "b allreduce -f 1", "b allreduce -f two",
                                      "b allreduce -i 0", "b allreduce -x -1", "b allreduce -d float8",
                                      "b allreduce -o median", "b allreduce --baseline nccl",
                                      "b allreduce --bogus", "b allreduce -q", "b allreduce extra",
                                      "b allreduce -m"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bench_opts_t o;
        char err[200] = "";
        ck_assert_msg(parse(bad[i], &o, err) == -1, "'%s' was accepted", bad[i]);
        ck_assert_msg(err[0] != '\0', "'%s' gave no reason", bad[i]);
    }
}
END_TEST

Suite *bench_suite(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("metrics and options");
    tcase_add_test(tc, busbw_factors);
    tcase_add_test(tc, sizes_and_counts);
    tcase_add_test(tc, latency_summary_is_osu_style);
    tcase_add_test(tc, options_parse);
    tcase_add_test(tc, bad_options_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
