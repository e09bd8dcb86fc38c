/* The network simulator (tools/sim.c): times checked against the latency and bandwidth formulas
 * of schedules simple enough to write out by hand, sharing of host links and oversubscribed
 * uplinks, ranks sharing cores, a straggler, and every algorithm finishing on odd layouts. */
#include <math.h>
#include <stdlib.h>

#include "base/config.h"
#include "collectives/cost.h"
#include "collectives/select.h"
#include "unit.h"
#include "sim.h"

#define MAXR 64

static int host[MAXR], local_[MAXR], first[MAXR + 1], by_host[MAXR];
static gcoll__nodemap_t map;
static gcoll__links_t links;
static float in_tok, out_tok;

static void load_defaults(void)
{
    unsetenv("GCOLL_CHUNK_BYTES");
    unsetenv("GCOLL_PIPELINE_DEPTH");
    ck_assert_int_eq(gcoll__config_load(), GCOLL_SUCCESS);
}

/* hosts x rph ranks in blocks, as gcoll-info lays them out */
static gcoll__coll_args_t args(int coll, int hosts, int rph, size_t count)
{
    int n = hosts * rph;
    ck_assert_int_le(n, MAXR);
    for (int r = 0; r < n; r++) {
        host[r] = r / rph;
        local_[r] = r % rph;
        by_host[r] = r;
    }
    for (int h = 0; h <= hosts; h++)
        first[h] = h * rph;
    map = (gcoll__nodemap_t){hosts, 1, host, local_, first, by_host, 0, 0, 0};
    links.intra = (gcoll__link_t){1e-6, 5e9, 5e9};
    links.inter = (gcoll__link_t){10e-6, 1e9, 1e9};
    return (gcoll__coll_args_t){.coll = (gcoll__coll_t)coll,
                                .sendbuf = &in_tok,
                                .recvbuf = &out_tok,
                                .count = count,
                                .dtype = GCOLL_FLOAT32,
                                .op = GCOLL_SUM,
                                .esize = 4,
                                .size = n,
                                .map = &map,
                                .links = &links};
}

/* 10 us and 1 GB/s between hosts, 1 us and 5 GB/s inside one; local work free unless a test
 * prices it */
static sim_net_t net(void)
{
    sim_net_t s = sim_net_default();
    s.intra_lat_s = 1e-6, s.intra_Bps = 5e9;
    s.inter_lat_s = 10e-6, s.inter_Bps = 1e9;
    s.reduce_Bps = s.copy_Bps = 1e30;
    s.straggler_host = -1;
    return s;
}

static double run(const char *algo, const gcoll__coll_args_t *a, const sim_net_t *s)
{
    int idx = gcoll__algo_find(a->coll, GCOLL_FAMILY_PLAIN, algo);
    ck_assert_int_ge(idx, 0);
    sim_result_t r;
    sim_status_t st = sim_run(idx, a, s, &r);
    ck_assert_msg(st == SIM_OK, "%s: status %d", algo, (int)st);
    return r.time_s;
}

#define NEAR(x, want, rel) ck_assert_msg(fabs((x) - (want)) <= (rel) * (want), "%.9g s, want %.9g s", (x), (want))

START_TEST(one_message_costs_a_latency_and_its_bytes)
{
    sim_net_t s = net();
    gcoll__coll_args_t a = args(GCOLL_COLL_BCAST, 2, 1, 1 << 18); /* 1 MiB from rank 0 to rank 1 */
    NEAR(run("binomial", &a, &s), 10e-6 + 1048576 / 1e9, 1e-9);
    a = args(GCOLL_COLL_BCAST, 1, 2, 1 << 18);
    NEAR(run("binomial", &a, &s), 1e-6 + 1048576 / 5e9, 1e-9);
    a = args(GCOLL_COLL_BCAST, 2, 1, 0);
    a.count = 1;
    NEAR(run("binomial", &a, &s), 10e-6 + 4 / 1e9, 1e-9);
}
END_TEST

START_TEST(recursive_doubling_costs_a_latency_a_round)
{
    sim_net_t s = net();
    gcoll__coll_args_t a = args(GCOLL_COLL_ALLREDUCE, 8, 1, 1);
    NEAR(run("recursive_doubling", &a, &s), 3 * (10e-6 + 4 / 1e9), 1e-9);
    /* reductions on the core add theirs: 4 bytes at 1 byte a microsecond, after each receive */
    s.reduce_Bps = 1e6;
    NEAR(run("recursive_doubling", &a, &s), 3 * (10e-6 + 4 / 1e9 + 4e-6), 1e-9);
}
END_TEST

/* Ring allreduce of p blocks on p hosts: 2(p - 1) steps of one latency and one block each. */
START_TEST(ring_allreduce_takes_its_formula)
{
    sim_net_t s = net();
    for (int p = 2; p <= 6; p++) {
        gcoll__coll_args_t a = args(GCOLL_COLL_ALLREDUCE, p, 1, 1024 * (size_t)p); /* 4 KiB blocks */
        NEAR(run("ring", &a, &s), 2 * (p - 1) * (10e-6 + 4096 / 1e9), 1e-9);
    }
}
END_TEST

/* Two hosts under different leaves: the uplink of 1 host's bandwidth / F carries the message. */
START_TEST(oversubscribed_uplink_slows_what_crosses_it)
{
    sim_net_t s = net();
    s.hosts_per_leaf = 1;
    s.spine_lat_s = 2e-6;
    gcoll__coll_args_t a = args(GCOLL_COLL_BCAST, 2, 1, 1 << 18);
    s.oversub = 1;
    NEAR(run("binomial", &a, &s), 12e-6 + 1048576 / 1e9, 1e-9);
    s.oversub = 4;
    NEAR(run("binomial", &a, &s), 12e-6 + 4 * 1048576 / 1e9, 1e-9);
}
END_TEST

/* Hosts that are one machine's namespaces: recursive doubling on 4 hosts sends 4 messages at
 * once in each round, and a machine that copies 2 GB/s carries them in 4 MiB / 2 GB/s, where
 * 4 separate hosts need one message's time on their own 1 GB/s links. */
START_TEST(one_machine_carries_every_flow_between_its_hosts)
{
    sim_net_t s = net();
    gcoll__coll_args_t a = args(GCOLL_COLL_ALLREDUCE, 4, 1, 1 << 18); /* 1 MiB */
    NEAR(run("recursive_doubling", &a, &s), 2 * (10e-6 + 1048576 / 1e9), 0.02);
    s.machine_Bps = 2e9;
    NEAR(run("recursive_doubling", &a, &s), 2 * (10e-6 + 4 * 1048576 / 2e9), 0.02);
}
END_TEST

/* Ranks that share cores: recursive doubling on 8 ranks, 5 us of core time a message at each
 * end. A core each: a round is the send's 5 us, the rest of the latency (5 us) and the receive's 5
 * us. Fewer cores than ranks: the 24 messages' 240 us of core time queue on them, so the whole
 * takes at least that over the cores and, the cores never idle long, not much more. */
START_TEST(ranks_that_share_cores_queue_for_them)
{
    sim_net_t s = net();
    s.msg_cpu_s = 5e-6;
    gcoll__coll_args_t a = args(GCOLL_COLL_ALLREDUCE, 8, 1, 1);
    double own = 3 * (15e-6 + 4 / 1e9);
    NEAR(run("recursive_doubling", &a, &s), own, 1e-9);
    s.machine_Bps = 1e30; /* one machine: every rank in one pool of cores */
    s.cores = 8;
    NEAR(run("recursive_doubling", &a, &s), own, 1e-9);
    for (int cores = 1; cores <= 4; cores *= 2) {
        s.cores = cores;
        double t = run("recursive_doubling", &a, &s), work = 24 * 2 * 5e-6 / cores;
        ck_assert_msg(t >= work * (1 - 1e-9) && t <= work + own, "%d cores: %.9g s, want %.9g to %.9g", cores, t, work,
                      work + own);
    }
    /* per host: 2 hosts of 4 ranks, a core each host: each host's 12 messages in and 12 out */
    s.machine_Bps = 0;
    s.cores = 1;
    a = args(GCOLL_COLL_ALLREDUCE, 2, 4, 1);
    double t = run("recursive_doubling", &a, &s);
    ck_assert_msg(t >= 120e-6 * (1 - 1e-9) && t <= 120e-6 + 3 * (15e-6 + 10e-6), "2 hosts, 1 core each: %.9g s", t);
}
END_TEST

/* A shaped host link (tbf): the bucket starts empty, as after the calls before; what it gathers
 * while the link is idle passes at the burst rate. */
START_TEST(a_token_bucket_passes_what_it_gathered_fast)
{
    sim_net_t s = net();
    s.burst_bytes = 65536;
    s.burst_Bps = 10e9;
    gcoll__coll_args_t a = args(GCOLL_COLL_BCAST, 2, 1, 1 << 18);
    /* empty at the start: what 5 us of posting gather (5,000 bytes) at 10 GB/s, the rest at 1 GB/s */
    NEAR(run("binomial", &a, &s), 10e-6 + 5000 / 10e9 + (1048576 - 5000) / 1e9, 1e-9);
    /* a late start lets the buckets fill: 64 KiB goes at 10 GB/s, the rest at the link's rate */
    s.straggler_host = 0;
    s.straggler_s = 1;
    NEAR(run("binomial", &a, &s), 1 + 10e-6 + 65536 / 10e9 + (1048576 - 65536) / 1e9, 1e-9);
}
END_TEST

/* Direct allreduce sends the whole vector to every other rank at once. On 4 hosts, 2 a leaf, each
 * host's link carries 3 vectors out and each leaf's uplink 4 (2 hosts x 2 on the other leaf):
 * at 2:1 the uplink (2 hosts' bandwidth / 2) is the bottleneck, at 1:1 the host's link. */
START_TEST(flows_share_the_links_they_cross)
{
    sim_net_t s = net();
    s.hosts_per_leaf = 2;
    size_t B = 1 << 20;
    gcoll__coll_args_t a = args(GCOLL_COLL_ALLREDUCE, 4, 1, B / 4);
    s.oversub = 1;
    NEAR(run("direct", &a, &s), 3 * B / 1e9, 0.02);
    s.oversub = 2;
    NEAR(run("direct", &a, &s), 4 * B / 1e9, 0.02);
    /* one host's link shared by its ranks: 2 ranks a host each send to the 2 ranks across */
    s = net();
    a = args(GCOLL_COLL_ALLREDUCE, 2, 2, B / 4);
    NEAR(run("direct", &a, &s), 4 * B / 1e9, 0.02);
    a = args(GCOLL_COLL_ALLREDUCE, 2, 1, B / 4);
    NEAR(run("direct", &a, &s), B / 1e9, 0.02);
}
END_TEST

/* A host that starts late holds up a ring: every rank waits on its blocks in turn. */
START_TEST(a_straggler_holds_up_the_ring)
{
    sim_net_t s = net();
    gcoll__coll_args_t a = args(GCOLL_COLL_ALLREDUCE, 4, 1, 4096);
    double t0 = run("ring", &a, &s);
    s.straggler_s = 1e-3;
    s.straggler_host = 3;
    double t = run("ring", &a, &s);
    ck_assert_msg(t >= 1e-3 + 0.5 * t0 && t <= 1e-3 + t0 * (1 + 1e-9), "%g s with the straggler, %g without", t, t0);
}
END_TEST

START_TEST(what_cannot_run_is_refused)
{
    sim_net_t s = net();
    gcoll__coll_args_t a = args(GCOLL_COLL_ALLREDUCE, 1, 4, 1000);
    sim_result_t r;
    /* the node channel's algorithms: custom steps, and no channel here */
    ck_assert_int_eq(sim_run(gcoll__algo_find(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_PLAIN, "shm_slots"), &a, &s, &r),
                     SIM_CANNOT);
    s.max_steps = 10;
    ck_assert_int_eq(sim_run(gcoll__algo_find(GCOLL_COLL_ALLREDUCE, GCOLL_FAMILY_PLAIN, "ring"), &a, &s, &r),
                     SIM_TOO_BIG);
    ck_assert_uint_gt(r.steps, 10);
}
END_TEST

/* Every algorithm that can serve a layout runs to the end (a receive without its send would leave
 * a rank waiting), and takes at least one message's latency. */
START_TEST(every_algorithm_finishes)
{
    static const int layouts[][2] = {{3, 2}, {5, 1}, {1, 4}, {2, 3}};
    static const size_t counts[] = {1, 13, 16384};
    sim_net_t s = net();
    s.reduce_Bps = 4e9, s.copy_Bps = 7e9;
    for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++)
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
            for (int i = 0; gcoll__algo_get(i); i++) {
                const gcoll__algo_t *e = gcoll__algo_get(i);
                if (e->family != GCOLL_FAMILY_PLAIN || (e->flags & GCOLL_ALGO_NODE) || gcoll__coll_vector(e->coll))
                    continue;
                gcoll__coll_args_t a = args(e->coll, layouts[li][0], layouts[li][1], counts[ci]);
                sim_result_t r;
                sim_status_t st = sim_run(i, &a, &s, &r);
                CK_EXPECT(st == SIM_OK || st == SIM_CANNOT, "%s %s %dx%d count %zu: status %d",
                          gcoll__coll_name(e->coll), e->name, layouts[li][0], layouts[li][1], counts[ci], (int)st);
                CK_EXPECT(st != SIM_OK || r.time_s >= 1e-6, "%s %s %dx%d: %g s", gcoll__coll_name(e->coll), e->name,
                          layouts[li][0], layouts[li][1], r.time_s);
            }
}
END_TEST

Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, load_defaults, NULL);
    tcase_add_test(tc, one_message_costs_a_latency_and_its_bytes);
    tcase_add_test(tc, recursive_doubling_costs_a_latency_a_round);
    tcase_add_test(tc, ring_allreduce_takes_its_formula);
    tcase_add_test(tc, oversubscribed_uplink_slows_what_crosses_it);
    tcase_add_test(tc, flows_share_the_links_they_cross);
    tcase_add_test(tc, a_token_bucket_passes_what_it_gathered_fast);
    tcase_add_test(tc, a_straggler_holds_up_the_ring);
    tcase_add_test(tc, one_machine_carries_every_flow_between_its_hosts);
    tcase_add_test(tc, ranks_that_share_cores_queue_for_them);
    tcase_add_test(tc, what_cannot_run_is_refused);
    tcase_add_test(tc, every_algorithm_finishes);
    suite_add_tcase(s, tc);
    return s;
}
