/* The cost model: predictions checked against the alpha-beta formulas of the algorithms written
 * out by hand, and the picks that follow from them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "core/request.h"
#include "base/schedule.h"
#include "unit.h"
#include "collectives/cost.h"
#include "collectives/select.h"

#define REDUCE_BPS 4e9 /* src/collectives/cost.c's figure for the reduction kernels */

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
    links.intra = (gcoll__link_t){intra_lat, intra_bw, intra_bw};
    links.inter = (gcoll__link_t){inter_lat, inter_bw, inter_bw};
}

/* Two hosts of two ranks each: ranks 0,1 on host 0, ranks 2,3 on host 1. */
static int host[4] = {0, 0, 1, 1}, local[4] = {0, 1, 0, 1}, first[3] = {0, 2, 4}, by_host[4] = {0, 1, 2, 3};
static const gcoll__nodemap_t map2x2 = {2, 1, host, local, first, by_host, 0, 0, 0};

static gcoll__coll_args_t allreduce(size_t count, int n, const gcoll__nodemap_t *map)
{
    static float in, out;
    return (gcoll__coll_args_t){.coll = GCOLL_COLL_ALLREDUCE,
                                .sendbuf = &in,
                                .recvbuf = &out,
                                .count = count,
                                .dtype = GCOLL_FLOAT32,
                                .op = GCOLL_SUM,
                                .size = n,
                                .esize = 4,
                                .map = map,
                                .links = &links};
}

static double predict(const char *name, const gcoll__coll_args_t *a)
{
    int idx = gcoll__algo_find(a->coll, GCOLL_FAMILY_PLAIN, name);
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

START_TEST(a_ring_with_empty_blocks_still_takes_its_steps)
{
    /* one float over 16 ranks: 15 blocks are empty, and the one value passes a hop a step, 2(n-1)
     * steps one after another; the model priced them as a few rounds, tied recursive doubling
     * and picked the ring, which then ran 2.7x slower (1,615 against 601 us over tcp) */
    set_links(1e-6, 5e9, 10e-6, 1e9);
    gcoll__coll_args_t a = allreduce(1, 16, NULL);
    double ring = predict("ring", &a), rd = predict("recursive_doubling", &a);
    ck_assert_msg(ring >= 30 * 10e-6, "ring of 16 ranks, one float: predicted %g s, below 30 hops of 10 us", ring);
    ck_assert_msg(rd * 3 < ring, "recursive doubling %g s is not well below the ring's %g s", rd, ring);
    ck_assert_int_ne(gcoll__cost_pick(&a, &links), gcoll__algo_find(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_PLAIN, "ring"));
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
    ck_assert_msg(ring > ring_net && ring < ring_net * 1.2, "ring %g s against a network floor of %g s", ring,
                  ring_net);
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

static double max2(double x, double y)
{
    return x > y ? x : y;
}

/* The sustained floor: the bytes past the first GCOLL__COST_BURST_BYTES at the sustained rate. */
static double floor_of(double bytes, double bw)
{
    return max2(bytes - GCOLL__COST_BURST_BYTES, 0) / bw;
}

START_TEST(burst_prices_rounds_sustained_bounds_the_whole)
{
    /* 2 hosts x 2 ranks, network 10 us, 0.125 GB/s sustained, 1.5 GB/s burst. Recursive
     * doubling: round 1 inside a host (S each way), round 2 across (S from each rank: 2S and two
     * messages leave each host, a latency and a half), both reduce S. Rounds at the burst rate;
     * the whole at least 2S past the first 16 KiB at the sustained rate. */
    set_links(1e-6, 5e9, 10e-6, 0.125e9);
    links.inter.burst_Bps = 1.5e9;
    size_t counts[] = {2, 256, 16384};
    for (int i = 0; i < 3; i++) {
        gcoll__coll_args_t a = allreduce(counts[i], 4, &map2x2);
        double S = counts[i] * 4.0;
        double rounds = 1e-6 + S / 5e9 + S / REDUCE_BPS + 15e-6 + 2 * S / 1.5e9 + S / REDUCE_BPS;
        double want = max2(rounds, floor_of(2 * S, 0.125e9)), got_rounds = 0;
        double got = gcoll__cost_predict_parts(
            gcoll__algo_find(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_PLAIN, "recursive_doubling"), &a, &links, &got_rounds);
        ck_assert_msg(fabs(got - want) < 1e-3 * want, "rd %zu B: predicted %g s, formula %g s", (size_t)S, got, want);
        ck_assert_msg(fabs(got_rounds - rounds) < 1e-3 * rounds, "rd %zu B: rounds %g s, formula %g s", (size_t)S,
                      got_rounds, rounds);
        if (i == 2) /* 64 KiB: the floor binds */
            ck_assert(got > 1.5 * rounds);
    }
    /* the flat ring over 4 hosts: 2(n-1) rounds of one S/n block leaving each host, the first
     * n-1 reducing it; the floor is all 6 blocks at the sustained rate */
    size_t ring_counts[] = {64, 1 << 20};
    for (int i = 0; i < 2; i++) {
        gcoll__coll_args_t a = allreduce(ring_counts[i], 4, NULL);
        double blk = ring_counts[i] * 4.0 / 4;
        double want = max2(6 * (10e-6 + blk / 1.5e9) + 3 * blk / REDUCE_BPS, floor_of(6 * blk, 0.125e9));
        double got = predict("ring", &a);
        ck_assert_msg(fabs(got - want) < 1e-3 * want, "ring %g B blocks: predicted %g s, formula %g s", blk, got, want);
    }
    /* a burst rate at or below the bandwidth (0: not measured) prices like the bandwidth */
    gcoll__coll_args_t a = allreduce(256, 4, &map2x2);
    links.inter.burst_Bps = 0;
    double unset = predict("recursive_doubling", &a);
    links.inter.burst_Bps = 0.125e9;
    ck_assert(fabs(unset - predict("recursive_doubling", &a)) < 1e-12);
}
END_TEST

START_TEST(small_hierarchical_goes_through_one_rank_per_host)
{
    /* the sweep's links (README "Selection targets, measured"): up to 16 KiB hierarchical sends
     * the vector to the host's first rank (one message inside, S reduced), those allreduce it
     * (one message out of each host, S reduced), and send it back: one network message per host
     * where recursive doubling sends two, so it is the pick */
    set_links(1e-6, 9.4e9, 7.1e-6, 0.12e9);
    links.intra.burst_Bps = 11.8e9;
    links.inter.burst_Bps = 1.544e9;
    size_t counts[] = {1, 4, 256, 1024, 4096};
    for (int i = 0; i < 5; i++) {
        gcoll__coll_args_t a = allreduce(counts[i], 4, &map2x2);
        double S = counts[i] * 4.0;
        double want = 2 * (1e-6 + S / 11.8e9) + S / REDUCE_BPS + 7.1e-6 + S / 1.544e9 + S / REDUCE_BPS;
        double got = predict("hierarchical", &a);
        ck_assert_msg(fabs(got - want) < 1e-3 * want, "hierarchical %zu B: predicted %g s, formula %g s", (size_t)S,
                      got, want);
        ck_assert_msg(got < predict("recursive_doubling", &a), "%zu B: hierarchical %g s, recursive doubling %g s",
                      (size_t)S, got, predict("recursive_doubling", &a));
        ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&a, &links))->name, "hierarchical");
    }
}
END_TEST

START_TEST(burst_moves_small_picks_and_ties_go_to_fewer_rounds)
{
    /* the 1 KiB miss of the README's sweep (the test cluster's links, 6 us inside a host):
     * priced at the sustained rate, recursive doubling's 2 KiB out of each host in one round
     * looks slower than hierarchical's 1 KiB after a round inside the host; with the link's
     * burst it is the pick, as measured */
    set_links(6e-6, 10e9, 5.3e-6, 0.134e9);
    gcoll__coll_args_t kib = allreduce(256, 4, &map2x2);
    ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&kib, &links))->name, "hierarchical");
    set_links(6e-6, 10e9, 5.3e-6, 0.134e9);
    links.inter.burst_Bps = 1.5e9;
    ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&kib, &links))->name, "recursive_doubling");
    /* 64 MiB: every candidate within 1% of the least prediction is bound by the floor; the pick
     * is the one among them with the least round cost */
    gcoll__coll_args_t big = allreduce(16 << 20, 4, &map2x2);
    int pick = gcoll__cost_pick(&big, &links);
    double least = -1, pick_rounds = 0;
    ck_assert(gcoll__cost_predict_parts(pick, &big, &links, &pick_rounds) > 0);
    for (int i = 0; gcoll__algo_get(i); i++) {
        double t = gcoll__cost_predict(i, &big, &links);
        least = t >= 0 && (least < 0 || t < least) ? t : least;
    }
    int tied = 0;
    for (int i = 0; gcoll__algo_get(i); i++) {
        double r, t = gcoll__cost_predict_parts(i, &big, &links, &r);
        if (t < 0 || t > least * 1.01)
            continue;
        tied++;
        ck_assert_msg(pick_rounds <= r, "pick %s has rounds %g s, %s %g s", gcoll__algo_get(pick)->name, pick_rounds,
                      gcoll__algo_get(i)->name, r);
    }
    ck_assert_int_ge(tied, 2); /* hierarchical and rabenseifner send alike between hosts */
}
END_TEST

START_TEST(exact_ties_go_to_hierarchical_where_hosts_hold_several_ranks)
{
    /* links as the 2 x 2 cluster measured them (README "Selection targets, measured"), where
     * hierarchical was as fast as rabenseifner or faster from 256 KiB to 4 MiB */
    static int h4[4] = {0, 1, 2, 3}, l4[4] = {0, 0, 0, 0}, f4[5] = {0, 1, 2, 3, 4}, b4[4] = {0, 1, 2, 3};
    const gcoll__nodemap_t four = {4, 1, h4, l4, f4, b4, 0, 0, 0};
    int hier = gcoll__algo_find(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_PLAIN, "hierarchical"),
        raben = gcoll__algo_find(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_PLAIN, "rabenseifner");
    for (size_t bytes = 256 << 10; bytes <= (4u << 20); bytes *= 4) {
        set_links(1.5e-6, 8.088e9, 9.4e-6, 0.120e9);
        links.inter.burst_Bps = 1.076e9;
        gcoll__coll_args_t a = allreduce(bytes / 4, 4, &map2x2);
        double rh, rr, th = gcoll__cost_predict_parts(hier, &a, &links, &rh),
                       tr = gcoll__cost_predict_parts(raben, &a, &links, &rr);
        ck_assert_msg(th == tr && rh == rr, "%zu B: hierarchical %g s (rounds %g), rabenseifner %g s (rounds %g)",
                      bytes, th, rh, tr, rr);
        ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&a, &links))->name, "hierarchical");
        /* one rank a host: the tie stays with the flat algorithm (hierarchical adds nothing);
         * fresh links, since a communicator's picks are remembered with its links */
        set_links(1.5e-6, 8.088e9, 9.4e-6, 0.120e9);
        links.inter.burst_Bps = 1.076e9;
        gcoll__coll_args_t flat = allreduce(bytes / 4, 4, &four);
        ck_assert_str_ne(gcoll__algo_get(gcoll__cost_pick(&flat, &links))->name, "hierarchical");
    }
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
    /* the third field: the burst rate, at least the bandwidth; without it, the bandwidth */
    setenv("GCOLL_COST_INTER", "50:0.125:1.5", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    l = gcoll__cost_link("tcp", 1);
    ck_assert(fabs(l.lat_s - 50e-6) < 1e-12 && fabs(l.bw_Bps - 0.125e9) < 1 && fabs(l.burst_Bps - 1.5e9) < 1);
    setenv("GCOLL_COST_INTER", "50:0.125", 1);
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
    ck_assert(fabs(gcoll__cost_link("tcp", 1).burst_Bps - 0.125e9) < 1);
    const char *bad_burst[] = {"50:1:0.5", "50:1:0", "50:1:2e4", NULL};
    for (int i = 0; bad_burst[i]; i++) {
        setenv("GCOLL_COST_INTER", bad_burst[i], 1);
        ck_assert_int_eq(gcoll__config_load(), GCOLL_ERR_INVALID_ARG);
        ck_assert_msg(strstr(gcoll_last_error(), "GCOLL_COST_INTER") && strstr(gcoll_last_error(), "burst rate") &&
                          strstr(gcoll_last_error(), bad_burst[i]),
                      "'%s': message '%s'", bad_burst[i], gcoll_last_error());
    }
    unsetenv("GCOLL_COST_INTER");
    const char *bad[] = {"",      "50",    "50:",   ":1",     "50:0",     "-1:1",    "x:1",
                         "50:1x", "1e7:1", "50:1:", "50:1:x", "50:1:2:3", "50:1:2x", NULL};
    for (int i = 0; bad[i]; i++) {
        setenv("GCOLL_COST_INTRA", bad[i], 1);
        ck_assert_int_eq(gcoll__config_load(), GCOLL_ERR_INVALID_ARG);
        ck_assert_msg(strstr(gcoll_last_error(), "GCOLL_COST_INTRA") &&
                          strstr(gcoll_last_error(), "LATENCY_US:GB_PER_S"),
                      "'%s': message '%s'", bad[i], gcoll_last_error());
    }
    unsetenv("GCOLL_COST_INTRA");
}
END_TEST

static gcoll__coll_args_t vector_coll(gcoll__coll_t coll, int n, const gcoll__nodemap_t *map, size_t *counts,
                                      size_t *displs)
{
    static float in, out;
    gcoll__coll_args_t a = {.coll = coll,
                            .sendbuf = &in,
                            .recvbuf = &out,
                            .dtype = GCOLL_FLOAT32,
                            .op = GCOLL_SUM,
                            .size = n,
                            .esize = 4,
                            .map = map,
                            .links = &links,
                            .counts = counts,
                            .displs = displs,
                            .scounts = counts,
                            .sdispls = displs};
    for (int i = 0; i < n; i++) {
        displs[i] = a.total;
        a.total += counts[i];
    }
    a.count = coll == GCOLL_COLL_REDUCE_SCATTERV ? a.total : counts[0];
    if (coll == GCOLL_COLL_ALLTOALLV)
        a.total = 0;
    return a;
}

START_TEST(streaming_ring_costs_what_the_blocks_weigh)
{
    /* 4 hosts at 1 Gbit/s, 64 MiB in all, one rank holding half: the busiest link of the
     * streaming ring carries the total less a small block (5/6 of it), where an even ring's
     * links carry 3/4 of it and a lock-step ring would carry the large block at each of 3 steps */
    set_links(1e-6, 5e9, 50e-6, 0.125e9);
    static int h4[4] = {0, 1, 2, 3}, l4[4] = {0}, f4[5] = {0, 1, 2, 3, 4}, b4[4] = {0, 1, 2, 3};
    const gcoll__nodemap_t four = {4, 1, h4, l4, f4, b4, 0, 0, 0};
    size_t total = (size_t)16 << 20, counts[4], displs[4];
    for (int i = 0; i < 4; i++)
        counts[i] = i == 1 ? total / 2 : total / 6;
    gcoll__coll_args_t even = allreduce(total / 4, 4, &four);
    even.coll = GCOLL_COLL_ALLGATHER;
    double ring = predict("ring", &even);
    for (int c = 0; c < 2; c++) {
        gcoll__coll_args_t v =
            vector_coll(c ? GCOLL_COLL_REDUCE_SCATTERV : GCOLL_COLL_ALLGATHERV, 4, &four, counts, displs);
        double skew = predict("ring", &v), want = total * 4.0 * 5 / 6 / 0.125e9;
        ck_assert_msg(skew < 1.2 * ring, "%s ring with one rank holding half: %g s, even allgather ring %g s",
                      gcoll__coll_name(v.coll), skew, ring);
        ck_assert_msg(skew > want && skew < 1.1 * want, "%s: %g s against the busiest link's %g s",
                      gcoll__coll_name(v.coll), skew, want);
    }
}
END_TEST

START_TEST(unsized_collectives_choose_by_rule)
{
    /* alltoallv, gatherv and scatterv: no rank knows the size, so no pricing: scattered and
     * linear on every layout, and the same whatever this rank's counts */
    set_links(1e-6, 5e9, 50e-6, 0.125e9);
    size_t small[4] = {1, 0, 2, 0}, big[4] = {1 << 20, 1 << 22, 0, 5}, displs[4];
    const gcoll__coll_t colls[] = {GCOLL_COLL_ALLTOALLV, GCOLL_COLL_GATHERV, GCOLL_COLL_SCATTERV};
    const char *want[] = {"scattered", "linear", "linear"};
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 2; k++) {
            gcoll__coll_args_t a = vector_coll(colls[c], 4, k ? &map2x2 : NULL, k ? big : small, displs);
            ck_assert_int_eq(gcoll__coll_bytes(&a), 0);
            ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&a, &links))->name, want[c]);
        }
}
END_TEST

START_TEST(rooted_picks_are_the_same_on_every_rank)
{
    /* only the root's call of a rooted collective is in place, and a non-root's buffer may be
     * NULL: the pick, which every rank makes for itself, must not depend on either */
    static float in, out;
    const gcoll__coll_t colls[] = {GCOLL_COLL_REDUCE, GCOLL_COLL_GATHER, GCOLL_COLL_SCATTER};
    for (int c = 0; c < 3; c++)
        for (size_t count = 1; count <= ((size_t)1 << 22); count *= 32)
            for (int slow = 0; slow < 2; slow++) {
                int pick[3];
                for (int v = 0; v < 3; v++) {
                    set_links(1e-6, 5e9, slow ? 50e-6 : 12e-6, slow ? 0.125e9 : 1e9); /* and no picks yet */
                    gcoll__coll_args_t a = allreduce(count, 4, &map2x2);
                    a.coll = colls[c];
                    a.sendbuf = v == 0 ? (const void *)&out : &in;
                    a.recvbuf = v == 2 ? NULL : &out;
                    pick[v] = gcoll__cost_pick(&a, &links);
                }
                ck_assert_msg(pick[0] == pick[1] && pick[1] == pick[2], "%s count %zu: picks %d %d %d",
                              gcoll__coll_name(colls[c]), count, pick[0], pick[1], pick[2]);
            }
}
END_TEST

/* ---- the built-in choice builds what forcing its pick builds ---- */

/* Where a step's pointer lies: in a user buffer, the schedule's arena or one of its heap scratch
 * blocks (the one with the nearest base below it), as a region number and an offset, so that two
 * schedules built from the same arguments compare equal whatever their own scratch addresses. */
static void locate(const gcoll__sched_t *s, const void *p, const char *send, const char *recv, size_t len, int *region,
                   size_t *off)
{
    const char *c = p, *best = NULL;
    *region = -1;
    *off = 0;
    if (!p)
        return;
    if (c >= send && c < send + len) {
        *region = 0;
        *off = (size_t)(c - send);
        return;
    }
    if (c >= recv && c < recv + len) {
        *region = 1;
        *off = (size_t)(c - recv);
        return;
    }
    if (c >= s->arena && c < s->arena + sizeof(s->arena)) {
        *region = 2;
        *off = (size_t)(c - s->arena);
        return;
    }
    for (size_t i = 0; i < s->nscratch; i++) {
        const char *b = s->scratch[i];
        if (b <= c && (!best || b > best)) {
            best = b;
            *region = 3 + (int)i;
        }
    }
    *off = best ? (size_t)(c - best) : (size_t)(uintptr_t)c;
}

/* Empty when x and y are the same program (rounds, steps, peers, sizes, buffers); else the first
 * difference. */
static const char *sched_diff(const gcoll__sched_t *x, const gcoll__sched_t *y, const char *send, const char *recv,
                              size_t len)
{
    static char why[160];
    why[0] = '\0';
    if (x->nrounds != y->nrounds || x->nsteps != y->nsteps) {
        snprintf(why, sizeof(why), "%zu rounds, %zu steps against %zu, %zu", x->nrounds, x->nsteps, y->nrounds,
                 y->nsteps);
        return why;
    }
    for (size_t k = 0; k < x->nrounds; k++)
        if (x->rounds[k].first != y->rounds[k].first || x->rounds[k].count != y->rounds[k].count) {
            snprintf(why, sizeof(why), "round %zu differs", k);
            return why;
        }
    for (size_t i = 0; i < x->nsteps; i++) {
        const gcoll__step_t *a = &x->steps[i], *b = &y->steps[i];
        const void *pa[] = {a->dst, a->a, a->b, a->wire}, *pb[] = {b->dst, b->a, b->b, b->wire};
        int same = a->kind == b->kind && a->peer == b->peer && a->n == b->n && a->fn == b->fn;
        for (int j = 0; j < 4 && same; j++) {
            int ra, rb;
            size_t oa, ob;
            locate(x, pa[j], send, recv, len, &ra, &oa);
            locate(y, pb[j], send, recv, len, &rb, &ob);
            same = ra == rb && oa == ob;
        }
        if (!same) {
            snprintf(why, sizeof(why), "step %zu: kind %d peer %d n %zu against kind %d peer %d n %zu (or its buffers)",
                     i, (int)a->kind, a->peer, a->n, (int)b->kind, b->peer, b->n);
            return why;
        }
    }
    if (x->divisor != y->divisor || x->wire != y->wire || memcmp(&x->desc, &y->desc, sizeof(x->desc)) != 0)
        return "divisor, wire format or descriptor differs";
    return why;
}

/* The per-collective selection variable: GCOLL_ALLREDUCE, GCOLL_REDUCE_SCATTER, ... */
static void table_var(int coll, char *buf, size_t len)
{
    snprintf(buf, len, "GCOLL_%s", gcoll__coll_name(coll));
    for (char *c = buf; *c; c++)
        *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
}

/* The vector collectives' blocks for a test of about `per` elements a block: uneven (block i
 * holds i more), packed, as every rank of the collective sees them (gatherv and scatterv: only
 * the root knows the counts; their count is each rank's own). */
static void vector_args(gcoll__coll_args_t *a, size_t per, size_t *counts, size_t *displs)
{
    size_t total = 0;
    for (int i = 0; i < a->size; i++) {
        counts[i] = per + (size_t)i;
        displs[i] = total;
        total += counts[i];
    }
    int root = a->rank == a->root;
    switch (a->coll) {
    case GCOLL_COLL_ALLGATHERV: a->counts = counts, a->displs = displs, a->count = counts[a->rank]; break;
    case GCOLL_COLL_REDUCE_SCATTERV: a->counts = counts, a->displs = displs, a->count = total; break;
    case GCOLL_COLL_ALLTOALLV: a->counts = a->scounts = counts, a->displs = a->sdispls = displs, a->count = 0; break;
    case GCOLL_COLL_GATHERV:
        a->counts = root ? counts : NULL, a->displs = root ? displs : NULL, a->count = counts[a->rank];
        break;
    case GCOLL_COLL_SCATTERV:
        a->scounts = root ? counts : NULL, a->sdispls = root ? displs : NULL, a->count = counts[a->rank];
        break;
    default: return;
    }
    a->total = a->coll == GCOLL_COLL_ALLTOALLV ? 0 : total;
}

/* One layout: for every collective, size and rank, the schedule of the built-in choice (no
 * GCOLL_<COLL>, no attr.algorithm) against the schedule of its pick forced both ways
 * (GCOLL_<COLL>=pick, and attr.algorithm = pick); counts the distinct allreduce picks. */
static void auto_equals_forced_on(const gcoll__nodemap_t *map, int n, unsigned *allreduce_picks)
{
    /* the largest vector, and room for the odd counts' last elements */
    const size_t max_bytes = (size_t)4 << 20, len = 2 * max_bytes;
    char *send = malloc(len), *recv = malloc(len);
    ck_assert(send && recv);
    for (int coll = 0; coll < GCOLL_COLL_COUNT; coll++) {
        char var[48];
        table_var(coll, var, sizeof(var));
        for (size_t bytes = 4; bytes <= max_bytes; bytes *= 8) {
            for (int rank = 0; rank < n; rank++) {
                int per_rank = coll == GCOLL_COLL_REDUCE_SCATTER || coll == GCOLL_COLL_ALLGATHER ||
                    coll == GCOLL_COLL_ALLTOALL || coll == GCOLL_COLL_GATHER || coll == GCOLL_COLL_SCATTER;
                /* odd counts too: 3 elements past the power of two */
                size_t count = coll == GCOLL_COLL_BARRIER ? 0 : bytes / 4 / (per_rank ? (size_t)n : 1) + 3;
                gcoll__coll_args_t a = {.coll = (gcoll__coll_t)coll,
                                        .sendbuf = send,
                                        .recvbuf = recv,
                                        .count = count,
                                        .dtype = GCOLL_FLOAT32,
                                        .op = GCOLL_SUM,
                                        .root = n - 1,
                                        .rank = rank,
                                        .size = n,
                                        .esize = 4,
                                        .map = map,
                                        .links = &links};
                if (coll == GCOLL_COLL_BCAST)
                    a.sendbuf = recv; /* bcast is in place */
                size_t counts[8], displs[8];
                vector_args(&a, bytes / 4 / (size_t)n, counts, displs);
                unsetenv(var);
                ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
                gcoll__sched_t *s_auto, *s_table, *s_attr;
                const char *pick, *name;
                ck_assert_int_eq(gcoll__build(&a, NULL, NULL, &s_auto, &pick), GCOLL_SUCCESS);
                setenv(var, pick, 1);
                ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
                ck_assert_int_eq(gcoll__build(&a, NULL, NULL, &s_table, &name), GCOLL_SUCCESS);
                ck_assert_str_eq(name, pick);
                unsetenv(var);
                ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
                ck_assert_int_eq(gcoll__build(&a, pick, NULL, &s_attr, &name), GCOLL_SUCCESS);
                ck_assert_str_eq(name, pick);
                const char *d1 = sched_diff(s_auto, s_table, send, recv, len);
                ck_assert_msg(!d1[0], "%s %zu B rank %d of %d (%d hosts): auto and %s=%s differ: %s",
                              gcoll__coll_name(coll), count * 4, rank, n, map->nhosts, var, pick, d1);
                const char *d2 = sched_diff(s_auto, s_attr, send, recv, len);
                ck_assert_msg(!d2[0], "%s %zu B rank %d of %d (%d hosts): auto and attr.algorithm %s differ: %s",
                              gcoll__coll_name(coll), count * 4, rank, n, map->nhosts, pick, d2);
                if (coll == GCOLL_COLL_ALLREDUCE)
                    *allreduce_picks |= 1u << gcoll__algo_find(coll, GCOLL_FAMILY_PLAIN, pick);
                gcoll__sched_free(s_auto);
                gcoll__sched_free(s_table);
                gcoll__sched_free(s_attr);
            }
        }
    }
    free(send);
    free(recv);
}

START_TEST(auto_builds_what_forcing_its_pick_builds)
{
    /* the layouts of the selection's cases: one host without the node channel (as with
     * GCOLL_TRANSPORT_INTRA=inter), 2 x 2, 4 x 1, 3 x 2, and 2 hosts of unequal rank counts */
    static int h1[3] = {0, 0, 0}, l1[3] = {0, 1, 2}, f1[2] = {0, 3}, b1[3] = {0, 1, 2};
    static int h4[4] = {0, 1, 2, 3}, l4[4] = {0}, f4[5] = {0, 1, 2, 3, 4}, b4[4] = {0, 1, 2, 3};
    static int h6[6] = {0, 0, 1, 1, 2, 2}, l6[6] = {0, 1, 0, 1, 0, 1}, f6[4] = {0, 2, 4, 6}, b6[6] = {0, 1, 2, 3, 4, 5};
    static int hu[3] = {0, 0, 1}, lu[3] = {0, 1, 0}, fu[3] = {0, 2, 3}, bu[3] = {0, 1, 2};
    const gcoll__nodemap_t one = {1, 1, h1, l1, f1, b1, 0, 0, 0}, four = {4, 1, h4, l4, f4, b4, 0, 0, 0},
                           six = {3, 1, h6, l6, f6, b6, 0, 0, 0}, uneven = {2, 0, hu, lu, fu, bu, 0, 0, 0};
    struct {
        const gcoll__nodemap_t *map;
        int n;
    } layouts[] = {{&one, 3}, {&map2x2, 4}, {&four, 4}, {&six, 6}, {&uneven, 3}};
    unsigned picks = 0;
    /* the transports' own figures, then a shaped network whose short exchanges burst */
    for (int links_set = 0; links_set < 2; links_set++)
        for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
            set_links(1e-6, 5e9, links_set ? 50e-6 : 12e-6, links_set ? 0.125e9 : 1e9);
            if (links_set)
                links.inter.burst_Bps = 1.5e9;
            auto_equals_forced_on(layouts[i].map, layouts[i].n, &picks);
        }
    /* the comparison saw the algorithms the choice moves between */
    int distinct = 0;
    for (unsigned p = picks; p; p &= p - 1)
        distinct++;
    ck_assert_msg(distinct >= 3, "only %d distinct allreduce picks", distinct);
}
END_TEST

/* ---- a sample of hosts picks what every rank's schedules pick ---- */

/* hosts x rph ranks, host after host; arrays from one block (free(map->host)). */
static gcoll__nodemap_t uniform_map(int hosts, int rph)
{
    int n = hosts * rph, *m = malloc(sizeof(int) * (size_t)(4 * n + 1));
    ck_assert(m);
    gcoll__nodemap_t map = {hosts, 1, m, m + n, m + 2 * n, m + 3 * n + 1, 0, 0, 0};
    for (int p = 0; p < n; p++) {
        map.host[p] = p / rph;
        map.local[p] = p % rph;
        map.by_host[p] = p;
    }
    for (int h = 0; h <= hosts; h++)
        map.first[h] = h * rph;
    return map;
}

START_TEST(sampled_hosts_pick_what_every_rank_picks)
{
    /* every collective the model prices, 4 B to 64 MiB, at up to 64 ranks in several shapes:
     * the pick from the sampled hosts' schedules (past sample_above = 1 rank) against the pick
     * from every rank's (allgatherv and reduce_scatterv, never sampled, are left out) */
    const int shapes[][2] = {{64, 1}, {32, 2}, {12, 5}, {7, 9}, {1, 24}};
    /* TEST_QUICK (the sanitizers' runs, where this takes a minute): each shape on one of the two
     * links in turn, every 64th size */
    int quick = getenv("TEST_QUICK") != NULL, compared = 0;
    for (size_t l = 0; l < sizeof(shapes) / sizeof(shapes[0]); l++)
        for (int slow = quick ? (int)(l % 2) : 0; slow < (quick ? (int)(l % 2) + 1 : 2); slow++) {
            gcoll__nodemap_t map = uniform_map(shapes[l][0], shapes[l][1]);
            int n = shapes[l][0] * shapes[l][1];
            for (int coll = 0; coll < GCOLL_COLL_COUNT; coll++) {
                if (!gcoll__coll_sized(coll) || coll == GCOLL_COLL_ALLGATHERV || coll == GCOLL_COLL_REDUCE_SCATTERV)
                    continue;
                for (size_t bytes = 4; bytes <= ((size_t)64 << 20); bytes *= quick ? 64 : 16) {
                    int pick[2];
                    for (int sampled = 0; sampled < 2; sampled++) {
                        set_links(1e-6, 5e9, slow ? 50e-6 : 12e-6, slow ? 0.125e9 : 1e9); /* no picks yet */
                        if (slow)
                            links.inter.burst_Bps = 1.5e9;
                        links.sample_above = sampled ? 1 : n;
                        gcoll__coll_args_t a = allreduce(1, n, &map);
                        a.coll = (gcoll__coll_t)coll;
                        a.count = (bytes / gcoll__coll_bytes(&a)) ? bytes / gcoll__coll_bytes(&a) : 1;
                        pick[sampled] = gcoll__cost_pick(&a, &links);
                    }
                    ck_assert_msg(pick[0] == pick[1], "%dx%d %s %zu B%s: sampled picks %s, every rank %s", shapes[l][0],
                                  shapes[l][1], gcoll__coll_name(coll), bytes, slow ? " (slow links)" : "",
                                  gcoll__algo_get(pick[1])->name, gcoll__algo_get(pick[0])->name);
                    compared++;
                }
            }
            free(map.host);
        }
    ck_assert_int_gt(compared, quick ? 150 : 300);
}
END_TEST

/* 16 ranks on a host of 2 cores, over links of 12 us: every message's core time (half a latency
 * at each end) queues on the 2 cores, so a round of recursive doubling costs 16 messages x 12 us
 * / 2, not one latency, and at 4 bytes Rabenseifner's, whose empty blocks send nothing, wins;
 * at 64 bytes, a float for each rank, recursive doubling's fewer messages still do; on 32 ranks
 * the two price alike there and the tie goes to the fewer rounds. */
START_TEST(ranks_that_outnumber_cores_queue_for_them)
{
    set_links(12e-6, 1e9, 12e-6, 1e9);
    gcoll__nodemap_t one_host = uniform_map(1, 16), *map = &one_host;
    gcoll__coll_args_t a = allreduce(1, 16, map);
    double own = 4 * (12e-6 + 4 / 1e9 + 4 / REDUCE_BPS);
    ck_assert_msg(fabs(predict("recursive_doubling", &a) - own) < 1e-12, "a core each: %.9g",
                  predict("recursive_doubling", &a));
    ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&a, &links))->name, "recursive_doubling");
    map->cores = 16; /* as many cores as ranks: nothing waits */
    ck_assert(fabs(predict("recursive_doubling", &a) - own) < 1e-12);
    map->cores = 2;
    set_links(12e-6, 1e9, 12e-6, 1e9); /* no picks yet */
    double queued = 4 * (16 * 12e-6 / 2 + 4 / 1e9 + 4 / REDUCE_BPS);
    ck_assert_msg(fabs(predict("recursive_doubling", &a) - queued) < 1e-12, "2 cores: %.9g, want %.9g",
                  predict("recursive_doubling", &a), queued);
    ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&a, &links))->name, "rabenseifner");
    a.count = 16;
    ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&a, &links))->name, "recursive_doubling");
    free(map->host);
    /* 16 floats on 32 ranks of 2 cores: recursive doubling's and Rabenseifner's round costs are
     * within 1% (Rabenseifner's a hair less), and the tie goes to recursive doubling's fewer
     * rounds (measured 1.13x faster) */
    one_host = uniform_map(1, 32);
    map->cores = 2;
    set_links(12e-6, 1e9, 12e-6, 1e9); /* no picks yet */
    a = allreduce(16, 32, map);
    int rd = gcoll__algo_find(a.coll, GCOLL_FAMILY_PLAIN, "recursive_doubling"),
        rab = gcoll__algo_find(a.coll, GCOLL_FAMILY_PLAIN, "rabenseifner");
    double r_rd = 0, r_rab = 0;
    ck_assert(gcoll__cost_predict_parts(rd, &a, &links, &r_rd) > 0);
    ck_assert(gcoll__cost_predict_parts(rab, &a, &links, &r_rab) > 0);
    ck_assert_msg(r_rab < r_rd && r_rd - r_rab < 0.01 * r_rd, "round costs %.9g and %.9g", r_rd, r_rab);
    ck_assert_str_eq(gcoll__algo_get(gcoll__cost_pick(&a, &links))->name, "recursive_doubling");
    free(map->host);
}
END_TEST

/* Every rank picks alike though one rank's buffers alias and the others' do not: an allgather
 * whose rank 0 sends from its own block of recvbuf (3 ranks on 2 cores, 512 bytes, where recursive
 * doubling and the ring price close). */
START_TEST(a_ranks_own_placement_does_not_move_the_pick)
{
    gcoll__nodemap_t one_host = uniform_map(1, 3), *map = &one_host;
    map->cores = 2;
    static char buf[4096];
    int pick[2];
    for (int aliased = 0; aliased < 2; aliased++) {
        set_links(5e-6, 2e9, 5e-6, 2e9); /* no picks yet */
        gcoll__coll_args_t a = allreduce(128, 3, map);
        a.coll = GCOLL_COLL_ALLGATHER;
        a.recvbuf = buf;
        a.sendbuf = aliased ? (const void *)buf : (const void *)(buf + 2048);
        pick[aliased] = gcoll__cost_pick(&a, &links);
    }
    ck_assert_msg(pick[0] == pick[1], "out of place %s, aliased %s", gcoll__algo_get(pick[0])->name,
                  gcoll__algo_get(pick[1])->name);
    free(map->host);
}
END_TEST

Suite *cost_suite(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("cost");
    tcase_add_checked_fixture(tc, load_defaults, NULL);
    tcase_add_test(tc, ring_matches_its_formula);
    tcase_add_test(tc, a_ring_with_empty_blocks_still_takes_its_steps);
    tcase_add_test(tc, recursive_doubling_matches_its_formula);
    tcase_add_test(tc, host_links_are_shared);
    tcase_add_test(tc, picks_follow_predictions);
    tcase_add_test(tc, ranks_that_outnumber_cores_queue_for_them);
    tcase_add_test(tc, a_ranks_own_placement_does_not_move_the_pick);
    tcase_add_test(tc, burst_prices_rounds_sustained_bounds_the_whole);
    tcase_add_test(tc, small_hierarchical_goes_through_one_rank_per_host);
    tcase_add_test(tc, burst_moves_small_picks_and_ties_go_to_fewer_rounds);
    tcase_add_test(tc, exact_ties_go_to_hierarchical_where_hosts_hold_several_ranks);
    tcase_add_test(tc, cost_variables_parse);
    tcase_add_test(tc, streaming_ring_costs_what_the_blocks_weigh);
    tcase_add_test(tc, unsized_collectives_choose_by_rule);
    tcase_add_test(tc, rooted_picks_are_the_same_on_every_rank);
    suite_add_tcase(s, tc);
    TCase *sampled = tcase_create("sampled");
    tcase_set_timeout(sampled, 120); /* the full pricing of 64 ranks, slow under the sanitizers */
    tcase_add_checked_fixture(sampled, load_defaults, NULL);
    tcase_add_test(sampled, sampled_hosts_pick_what_every_rank_picks);
    suite_add_tcase(s, sampled);
    TCase *same = tcase_create("auto_equals_forced");
    tcase_add_checked_fixture(same, load_defaults, NULL);
    tcase_add_test(same, auto_builds_what_forcing_its_pick_builds);
    suite_add_tcase(s, same);
    return s;
}
