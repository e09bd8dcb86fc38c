/* The cost model: predictions checked against the alpha-beta formulas of the algorithms written
 * out by hand, and the picks that follow from them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "unit.h"
#include "../collectives/cost.h"
#include "../collectives/select.h"

#define REDUCE_BPS 4e9 /* collectives/cost.c's figure for the reduction kernels */

static gcoll__links_t links;

/* Builders slice by GCOLL_CHUNK_BYTES and GCOLL_PIPELINE_DEPTH: their defaults, as after gcoll_init. */
static void load_defaults(void)
{
    unsetenv("GCOLL_CHUNK_BYTES");
    unsetenv("GCOLL_PIPELINE_DEPTH");
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
}

static void set_links(double intra_lat, double intra_bw, double inter_lat, double inter_bw)
{
    memset(&links, 0, sizeof(links));
    links.intra = (gcoll__link_t){intra_lat, intra_bw};
    links.inter = (gcoll__link_t){inter_lat, inter_bw};
}

/* Two hosts of two ranks each: ranks 0,1 on host 0, ranks 2,3 on host 1. */
static int host[4] = {0, 0, 1, 1}, local[4] = {0, 1, 0, 1}, first[3] = {0, 2, 4}, by_host[4] = {0, 1, 2, 3};
static const gcoll__nodemap_t map2x2 = {2, 1, host, local, first, by_host};

static gcoll__coll_args_t allreduce(size_t count, int n, const gcoll__nodemap_t *map)
{
    static float in, out;
    return (gcoll__coll_args_t){.coll = GCOLL_COLL_ALLREDUCE, .sendbuf = &in, .recvbuf = &out, .count = count,
                                .dtype = GCOLL_FLOAT32, .op = GCOLL_SUM, .size = n, .esize = 4, .map = map,
                                .links = &links};
}

static double predict(const char *name, const gcoll__coll_args_t *a)
{
    int idx = gcoll__algo_find(a->coll, name);
    ck_assert_int_ge(idx, 0);
    return gcoll__cost_predict(idx, a, &links);
}

START_TEST(ring_matches_its_formula)
{
    /* flat ring over 4 hosts: 2(n-1) rounds, each one message of S/n across the network; the
     * first n-1 also reduce S/n */
    set_links(1e-6, 5e9, 10e-6, 1e9);
    size_t count = 1 << 20;
    gcoll__coll_args_t a = allreduce(count, 4, NULL);
    double blk = count * 4.0 / 4;
    double want = 6 * (10e-6 + blk / 1e9) + 3 * blk / REDUCE_BPS;
    double got = predict("ring", &a);
    ck_assert_msg(fabs(got - want) < 1e-3 * want, "ring: predicted %g s, formula %g s", got, want);
}
END_TEST

START_TEST(recursive_doubling_matches_its_formula)
{
    /* 4 ranks: log2(4) rounds moving the whole vector and reducing it into the output (no copy
     * is left: the first reduction already wrote the output) */
    set_links(1e-6, 5e9, 10e-6, 1e9);
    size_t count = 1000;
    gcoll__coll_args_t a = allreduce(count, 4, NULL);
    double S = count * 4.0;
    double want = 2 * (10e-6 + S / 1e9 + S / REDUCE_BPS);
    double got = predict("recursive_doubling", &a);
    ck_assert_msg(fabs(got - want) < 1e-3 * want, "rd: predicted %g s, formula %g s", got, want);
}
END_TEST

START_TEST(host_links_are_shared)
{
    /* 2 hosts x 2 ranks, a slow network: the flat ring's rounds each send S/4 out of a host
     * (one rank per host crosses); the hierarchical algorithm sends S/2 per rank-pair over the
     * network in 2 rounds, but both ranks of a host at once: S/2 leaves each host per round */
    set_links(1e-6, 5e9, 50e-6, 0.125e9);
    size_t count = 16 << 20;
    gcoll__coll_args_t a = allreduce(count, 4, &map2x2);
    double S = count * 4.0;
    double ring = predict("ring", &a), hier = predict("hierarchical", &a);
    double ring_net = 6 * S / 4 / 0.125e9, hier_net = 2 * (S / 2 / 2 * 2) / 0.125e9;
    ck_assert_msg(ring > ring_net && ring < ring_net * 1.2, "ring %g s against a network floor of %g s", ring, ring_net);
    ck_assert_msg(hier > hier_net && hier < hier_net * 1.2, "hierarchical %g s against %g s", hier, hier_net);
    ck_assert_msg(hier < 0.75 * ring, "hierarchical %g s is not well below ring %g s", hier, ring);
}
END_TEST

START_TEST(picks_follow_predictions)
{
    set_links(1e-6, 5e9, 50e-6, 0.125e9);
    gcoll__coll_args_t big = allreduce(16 << 20, 4, &map2x2), tiny = allreduce(2, 4, &map2x2);
    /* the pick is the least prediction, and at this size not the ring (hierarchical and
     * Rabenseifner's both send half the ring's bytes between hosts) */
    int pick = gcoll__cost_pick(&big, &links);
    double least = -1;
    for (int i = 0; gcoll__algo_get(i); i++) {
        double t = gcoll__cost_predict(i, &big, &links);
        least = t >= 0 && (least < 0 || t < least) ? t : least;
    }
    ck_assert(gcoll__cost_predict(pick, &big, &links) == least);
    ck_assert(least < 0.75 * predict("ring", &big));
    ck_assert_str_ne(gcoll__algo_get(gcoll__cost_pick(&tiny, &links))->name, "ring");
    /* one host: the hierarchical algorithm cannot serve, and is not priced */
    gcoll__coll_args_t flat = allreduce(16 << 20, 4, NULL);
    ck_assert(predict("hierarchical", &flat) < 0);
    ck_assert_str_ne(gcoll__algo_get(gcoll__cost_pick(&flat, &links))->name, "hierarchical");
}
END_TEST

START_TEST(cost_variables_parse)
{
    setenv("GCOLL_COST_INTER", "50:0.125", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    gcoll__link_t l = gcoll__cost_link("tcp", 1);
    ck_assert(fabs(l.lat_s - 50e-6) < 1e-12 && fabs(l.bw_Bps - 0.125e9) < 1);
    unsetenv("GCOLL_COST_INTER");
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert(gcoll__cost_link("tcp", 1).bw_Bps > 0); /* auto: the transport's own figure until measured */
    ck_assert_int_eq(gcoll__config.cost_probe[1], 1);
    ck_assert_int_eq(gcoll__config.cost_probe[0], 1);
    setenv("GCOLL_COST_INTER", "builtin", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert_int_eq(gcoll__config.cost_probe[1], 0);
    ck_assert_int_eq(gcoll__config.cost_probe[0], 1);
    unsetenv("GCOLL_COST_INTER");
    const char *bad[] = {"", "50", "50:", ":1", "50:0", "-1:1", "x:1", "50:1x", "1e7:1", NULL};
    for (int i = 0; bad[i]; i++) {
        setenv("GCOLL_COST_INTRA", bad[i], 1);
        ck_assert_int_eq(gcoll__config_load(), GCOLL_ERR_INVALID_ARG);
        ck_assert_msg(strstr(gcoll_last_error(), "GCOLL_COST_INTRA") && strstr(gcoll_last_error(), "LATENCY_US:GB_PER_S"),
                      "'%s': message '%s'", bad[i], gcoll_last_error());
    }
    unsetenv("GCOLL_COST_INTRA");
}
END_TEST

Suite *cost_suite(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("cost");
    tcase_add_checked_fixture(tc, load_defaults, NULL);
    tcase_add_test(tc, ring_matches_its_formula);
    tcase_add_test(tc, recursive_doubling_matches_its_formula);
    tcase_add_test(tc, host_links_are_shared);
    tcase_add_test(tc, picks_follow_predictions);
    tcase_add_test(tc, cost_variables_parse);
    suite_add_tcase(s, tc);
    return s;
}
