/* The benchmark's arithmetic and command line: bus-bandwidth factors, sizes and counts,
 * OSU latency summaries, default iterations, strict option parsing, the overlap formula, the
 * model tables of `train` and the calibrated computation. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compute.h"
#include "metrics.h"
#include "models.h"
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

START_TEST(skews_split_the_total)
{
    bench_skew_t k = {.kind = BENCH_SKEW_EVEN, .seed = 1};
    size_t c[8], d[8];
    bench_skew_split(&k, 10, 4, 0, c);
    ck_assert(c[0] == 3 && c[1] == 3 && c[2] == 2 && c[3] == 2);
    ck_assert_int_eq(bench_skew_parse("half", &k), 0);
    bench_skew_split(&k, 1000, 4, 1, c); /* slot 1 holds half */
    ck_assert(c[1] == 502 && c[0] == 166 && c[2] == 166 && c[3] == 166);
    bench_skew_split(&k, 7, 1, 0, c);
    ck_assert_uint_eq(c[0], 7);
    ck_assert_int_eq(bench_skew_parse("zipf:1.1", &k), 0);
    ck_assert_double_eq_tol(k.s, 1.1, 1e-15);
    ck_assert_uint_eq(k.seed, 1); /* kept from before */
    for (size_t total = 0; total < 2000; total += 37) {
        bench_skew_split(&k, total, 8, 3, c);
        size_t sum = 0;
        for (int i = 0; i < 8; i++)
            sum += c[i];
        ck_assert_uint_eq(sum, total);
    }
    /* Zipf's shares, 1/k^1.1 normalized at 4 ranks: 0.504, 0.235, 0.151, 0.110, in some order */
    bench_skew_split(&k, 1000000, 4, 0, c);
    size_t sorted[4];
    memcpy(sorted, c, sizeof(sorted));
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (sorted[j] > sorted[i]) {
                size_t t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
    ck_assert(sorted[0] > 503000 && sorted[0] < 505500 && sorted[1] > 234000 && sorted[1] < 236500);
    ck_assert(sorted[3] > 109000 && sorted[3] < 110500);
    /* the same seed and stream draw the same; another stream or seed another order, sometimes */
    bench_skew_split(&k, 1000000, 4, 0, d);
    ck_assert(memcmp(c, d, sizeof(c[0]) * 4) == 0);
    int differs = 0;
    for (unsigned st = 1; st < 20; st++) {
        bench_skew_split(&k, 1000000, 4, st, d);
        differs |= memcmp(c, d, sizeof(c[0]) * 4) != 0;
    }
    ck_assert(differs);
    ck_assert_int_ne(bench_skew_parse("zipf:", &k), 0);
    ck_assert_int_ne(bench_skew_parse("zipf:inf", &k), 0);
    /* a v collective's count is the even share of the whole vector, as its twin's */
    ck_assert_uint_eq(bench_count_for(B_ALLTOALLV, 4096, 4, 4), bench_count_for(B_ALLTOALL, 4096, 4, 4));
    ck_assert_uint_eq(bench_bytes_for(B_ALLTOALLV, 256, 4, 4), 4096);
    ck_assert_uint_eq(bench_count_for(B_SENDRECV, 4096, 4, 4), 1024);
    ck_assert_uint_eq(bench_count_for(B_GATHER, 4096, 4, 4), 256);
    ck_assert_double_eq_tol(bench_busbw_factor(B_ALLGATHERV, 4), 0.75, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_GROUP, 4), 1.5, 1e-12);
    ck_assert_double_eq_tol(bench_busbw_factor(B_SENDRECV, 4), 1.0, 1e-12);
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
                           "--csv a.csv --json a.json --algo ring -r 1",
                           &o, err),
                     0);
    ck_assert_int_eq(o.subcmd, B_ALLREDUCE);
    ck_assert_uint_eq(o.min_bytes, 4);
    ck_assert_uint_eq(o.max_bytes, 64u << 20);
    ck_assert_uint_eq(o.factor, 4);
    ck_assert_int_eq(o.iters, 7);
    ck_assert_int_eq(o.warmup, 1);
    ck_assert_int_eq(o.dtype, GCOLL_BFLOAT16);
    ck_assert_int_eq(o.op, GCOLL_MAX);
    ck_assert(o.check_each && o.inplace && !o.baseline_on);
    ck_assert_str_eq(o.csv, "a.csv");
    ck_assert_str_eq(o.algo, "ring");
    ck_assert_int_eq(o.nalgos, 1);
    ck_assert_int_eq(o.root, 1);
    /* a list, measured side by side through the communicator's table; auto among them */
    ck_assert_int_eq(parse("b allreduce --algo auto,ring,direct", &o, err), 0);
    ck_assert_int_eq(o.nalgos, 3);
    ck_assert_str_eq(o.algos[0], "auto");
    ck_assert_str_eq(o.algos[2], "direct");
    ck_assert_str_eq(o.algo, "auto,ring,direct");
    ck_assert(bench_algo_by_table(&o));
    ck_assert_int_eq(parse("b allreduce --compress fp16 --algo ring", &o, err), 0);
    ck_assert(!bench_algo_by_table(&o)); /* compression forces through attr */
    ck_assert_int_eq(parse("b adasum --algo halving", &o, err), 0);
    ck_assert(!bench_algo_by_table(&o));
    ck_assert_int_eq(parse("b alltoallv --seed 7 --skew zipf:1.1 -c", &o, err), 0);
    ck_assert(o.subcmd == B_ALLTOALLV && o.skew.kind == BENCH_SKEW_ZIPF && o.skew.seed == 7);
    ck_assert_double_eq_tol(o.skew.s, 1.1, 1e-15);
    ck_assert_int_eq(parse("b allgatherv --skew half --inplace", &o, err), 0);
    ck_assert(o.skew.kind == BENCH_SKEW_HALF && o.inplace);
    ck_assert_int_eq(parse("b alltoallv --skew even --inplace", &o, err), 0);
    ck_assert_int_eq(parse("b group", &o, err), 0);
    ck_assert(o.subcmd == B_GROUP && o.batch == 64 && o.min_bytes == 4096 && o.max_bytes == 4096);
    ck_assert_int_eq(parse("b group --batch 8 -m 1K:2K -o avg --inplace", &o, err), 0);
    ck_assert(o.batch == 8 && o.min_bytes == 1024 && o.op == GCOLL_AVG);
    ck_assert_int_eq(parse("b scatterv -r 2 --skew zipf:2", &o, err), 0);
    ck_assert_int_eq(parse("b sendrecv -d int16 -c", &o, err), 0);
    ck_assert_int_eq(o.dtype, GCOLL_INT16);
    ck_assert_msg(parse("b alltoall -d float8_e4m3", &o, err) == 0, "%s", err);
    ck_assert_int_eq(parse("b barrier", &o, err), 0);
    ck_assert_int_eq(o.iters, 0); /* by size */
    ck_assert_int_eq(parse("b membw", &o, err), 0);
    ck_assert_int_eq(parse("b -h", &o, err), 1);
    ck_assert_int_eq(parse("b allgather -h", &o, err), 1);
    ck_assert_int_eq(o.compute, BENCH_COMPUTE_SPIN);
    ck_assert_int_eq(parse("b iallreduce -m 1M:64M -i 5 --compute sleep -c --algo ring --baseline none", &o, err), 0);
    ck_assert_int_eq(o.subcmd, BENCH_IALLREDUCE);
    ck_assert_int_eq(o.compute, BENCH_COMPUTE_SLEEP);
    ck_assert_uint_eq(o.min_bytes, 1u << 20);
    ck_assert(o.check_each && !o.baseline_on);
    ck_assert_int_eq(parse("b train", &o, err), 0);
    ck_assert_int_eq(o.subcmd, BENCH_TRAIN);
    ck_assert_str_eq(o.model, "resnet50");
    ck_assert_double_eq_tol(o.scale, 1, 1e-15);
    ck_assert(o.compute_ms < 0); /* calibrated to the communication */
    ck_assert_double_eq_tol(o.forward, 1.0 / 3, 1e-15);
    ck_assert_int_eq(parse("b train --model bert --scale 0.001 --compute-ms 12.5 -i 3 -x 0 -o avg --compute sleep "
                           "--csv t.csv --json t.json --forward 0",
                           &o, err),
                     0);
    ck_assert_double_eq_tol(o.forward, 0, 1e-15);
    ck_assert_str_eq(o.model, "bert");
    ck_assert_double_eq_tol(o.scale, 0.001, 1e-15);
    ck_assert_double_eq_tol(o.compute_ms, 12.5, 1e-12);
    ck_assert_int_eq(o.iters, 3);
    ck_assert_int_eq(o.warmup, 0);
    ck_assert_int_eq(o.op, GCOLL_AVG);
    ck_assert_int_eq(o.compute, BENCH_COMPUTE_SLEEP);
    ck_assert_str_eq(o.json, "t.json");
    /* OSU's -d cuda names the buffers' device; the dtype stays; NCCL, not MPI, beside it where it
     * runs (2: not asked for), asked for, or none */
    ck_assert_int_eq(parse("b allreduce -d cuda -d float16", &o, err), 0);
    ck_assert(o.device && o.baseline_on && o.baseline_nccl == 2);
    ck_assert_int_eq(o.dtype, GCOLL_FLOAT16);
    ck_assert_int_eq(parse("b alltoall -d cuda --baseline nccl", &o, err), 0);
    ck_assert(o.device && o.baseline_on && o.baseline_nccl == 1);
    ck_assert_int_eq(parse("b bcast -d cuda --baseline none", &o, err), 0);
    ck_assert(o.device && !o.baseline_on && !o.baseline_nccl);
    ck_assert_int_eq(parse("b adasum --device cuda", &o, err), 0);
    ck_assert(o.device && o.baseline_on); /* adasum's other side is gcoll's own sum */
    ck_assert_int_eq(parse("b allreduce -d cuda --compress bf16", &o, err), 0); /* top-k alone is refused */
    ck_assert(o.device && o.compress == GCOLL_COMPRESS_BF16);
    ck_assert_int_eq(parse("b allreduce --device host", &o, err), 0);
    ck_assert(!o.device && o.baseline_on && !o.baseline_nccl);
}
END_TEST

START_TEST(bad_options_are_refused)
{
    static const char *const bad[] = {"b",
                                      "b allsorts",
                                      "b allreduce -m 64",
                                      "b allreduce -m 8:4",
                                      "b allreduce -m 4:1X",
                                      "b allreduce -f 1",
                                      "b allreduce -f two",
                                      "b allreduce -i 0",
                                      "b allreduce -x -1",
                                      "b allreduce -d float8",
                                      "b allreduce -o median",
                                      "b allreduce --baseline nccl",
                                      "b allreduce --bogus",
                                      "b allreduce -q",
                                      "b allreduce extra",
                                      "b allreduce -m",
                                      "b allreduce --compute spin",
                                      "b bcast --model bert",
                                      "b iallreduce --compute busy",
                                      "b iallreduce --inplace",
                                      "b iallreduce -r 1",
                                      "b iallreduce --scale 2",
                                      "b train --model vgg",
                                      "b train --scale 0",
                                      "b train --scale -1",
                                      "b train --scale 1e9",
                                      "b train --scale x",
                                      "b train --scale nan",
                                      "b train --compute-ms -3",
                                      "b train --compute-ms 1ms",
                                      "b train --forward 0.95",
                                      "b train --forward -0.1",
                                      "b train --forward 1/3",
                                      "b allreduce --forward 0.3",
                                      "b train -o max",
                                      "b train -d float16",
                                      "b train -m 4:8",
                                      "b train -c",
                                      "b train --algo ring",
                                      "b train --baseline mpi",
                                      "b train --inplace",
                                      "b allreduce -d cuda --baseline mpi",
                                      "b iallreduce -d cuda",
                                      "b adasum -d cuda --baseline nccl",
                                      "b allreduce --baseline cuda",
                                      "b train --device cuda",
                                      "b allreduce --device gpu",
                                      "b allreduce -d cuda --compress topk:0.01",
                                      "b allreduce --algo ring,,direct",
                                      "b allreduce --algo ,ring",
                                      "b allreduce --algo ring,",
                                      "b allreduce --algo a,b,c,d,e,f,g,h,i",
                                      "b iallreduce --algo ring,direct",
                                      "b adasum --algo halving,shm_cma",
                                      "b allreduce --compress fp16 --algo ring,auto",
                                      "b adasum -d int32",
                                      "b allreduce -o adasum",
                                      "b alltoallv --skew zipf",
                                      "b alltoallv --skew zipf:0",
                                      "b alltoallv --skew zipf:-1",
                                      "b alltoallv --skew uneven",
                                      "b alltoallv --seed 3",
                                      "b alltoallv --skew half --seed 3",
                                      "b alltoallv --seed x --skew zipf:1",
                                      "b alltoallv --skew zipf:1.1 --inplace",
                                      "b alltoall --skew zipf:1.1",
                                      "b gather --skew half",
                                      "b group --skew half",
                                      "b group --batch 0",
                                      "b group --algo ring",
                                      "b allreduce --batch 4",
                                      "b sendrecv --inplace",
                                      "b sendrecv -r 1",
                                      "b allreduce -o premul_sum",
                                      "b allreduce -d float8_e4m3",
                                      "b group -d float8_e5m2",
                                      "b allreduce --compress topk:2",
                                      "b allreduce --compress zip",
                                      "b allreduce -d int32 --compress fp16",
                                      "b bcast --compress fp16"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bench_opts_t o;
        char err[200] = "";
        ck_assert_msg(parse(bad[i], &o, err) == -1, "'%s' was accepted", bad[i]);
        ck_assert_msg(err[0] != '\0', "'%s' gave no reason", bad[i]);
    }
}
END_TEST

START_TEST(overlap_formula_is_osu)
{
    /* overall = compute + pure: nothing overlapped; overall = compute: all of it */
    ck_assert_double_eq_tol(bench_overlap_percent(100, 100, 200), 0, 1e-12);
    ck_assert_double_eq_tol(bench_overlap_percent(100, 100, 100), 100, 1e-12);
    ck_assert_double_eq_tol(bench_overlap_percent(100, 110, 130), 80, 1e-12);
    ck_assert_double_eq_tol(bench_overlap_percent(100, 100, 350), 0, 1e-12); /* clamped at 0 */
    ck_assert_double_eq_tol(bench_overlap_percent(0, 5, 5), 0, 1e-12);
    double v[] = {5, 1, 4, 2, 3};
    ck_assert_double_eq_tol(bench_median(v, 5), 3, 1e-12);
    double w[] = {8, 2, 4, 6};
    ck_assert_double_eq_tol(bench_median(w, 4), 5, 1e-12);
    ck_assert_double_eq_tol(bench_median(w, 0), 0, 1e-12);
}
END_TEST

/* The totals that torchvision and Hugging Face print for these models. */
START_TEST(model_tables_match_the_published_totals)
{
    const bench_model_t *r = bench_model_find("resnet50"), *b = bench_model_find("bert");
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(bench_model_find("vgg16"));
    ck_assert_uint_eq(r->ntensors, 161);
    ck_assert_uint_eq(bench_model_params(r), 25557032);
    ck_assert_str_eq(r->tensors[0].name, "conv1.weight");
    ck_assert_uint_eq(bench_tensor_numel(&r->tensors[0]), 64 * 3 * 7 * 7);
    ck_assert_str_eq(r->tensors[160].name, "fc.bias");
    ck_assert_uint_eq(b->ntensors, 199);
    ck_assert_uint_eq(bench_model_params(b), 109482240);
    ck_assert_uint_eq(bench_tensor_numel(&b->tensors[0]), 30522 * 768);
    ck_assert_str_eq(b->tensors[198].name, "pooler.dense.bias");
    for (size_t i = 0; i < b->ntensors; i++) /* forward order: layer k's tensors before layer k+1's */
        if (strncmp(b->tensors[i].name, "encoder.layer.", 14) == 0)
            ck_assert_uint_eq((size_t)atoi(b->tensors[i].name + 14), (i - 5) / 16);
}
END_TEST

static double elapsed_ms(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

/* Calibrated from the fastest runs, so it never finishes early by much; a busy machine can
 * only make it longer, hence the loose upper bound. */
START_TEST(compute_takes_the_time_asked)
{
    for (int mode = BENCH_COMPUTE_SPIN; mode <= BENCH_COMPUTE_SLEEP; mode++) {
        bench_compute_t c;
        bench_compute_init(&c, (bench_compute_mode_t)mode);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bench_compute_run(&c, 20e6);
        double ms = elapsed_ms(&t0);
        ck_assert_msg(ms > 15 && ms < 200, "%s for 20 ms took %.2f ms", bench_compute_name(c.mode), ms);
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
    tcase_add_test(tc, skews_split_the_total);
    tcase_add_test(tc, options_parse);
    tcase_add_test(tc, bad_options_are_refused);
    tcase_add_test(tc, overlap_formula_is_osu);
    tcase_add_test(tc, model_tables_match_the_published_totals);
    tcase_add_test(tc, compute_takes_the_time_asked);
    suite_add_tcase(s, tc);
    return s;
}
