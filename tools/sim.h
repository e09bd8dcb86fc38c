/* The network simulator behind gcoll-info --simulate: every rank's real schedule, built dry as the
 * cost model builds it, runs through a discrete-event model of the links (each rank's port inside
 * its host, each host's link shared by its ranks, leaf switches joined through a spine with an
 * oversubscription factor) and of each rank's core (posting messages, reductions, copies), or of
 * the cores a host's ranks share. */
#ifndef GCOLL_TOOLS_SIM_H
#define GCOLL_TOOLS_SIM_H

#include <stddef.h>

#include "base/coll.h"

typedef struct {
    double intra_lat_s, intra_Bps; /* between two ranks of one host: each rank's port, each way */
    double inter_lat_s, inter_Bps; /* a host's link to its switch, each way, shared by its ranks */
    /* a token bucket in front of each host link (tc's tbf; 0: none): inter_Bps refills it, and
     * while it holds tokens pieces pass at burst_Bps */
    double burst_bytes, burst_Bps;
    /* the share of a message's latency that its sender's core spends posting it (the rest is the
     * wire's): k messages posted in one round leave one after another */
    double post_share;
    int hosts_per_leaf; /* hosts under one leaf switch; 0: one switch joins them all */
    double oversub;     /* a leaf's uplink carries hosts_per_leaf * inter_Bps / oversub each way */
    double spine_lat_s; /* latency that a message crossing the spine adds */
    /* hosts that are one machine's namespaces (the test cluster): every message between hosts
     * also crosses the machine, whose cores copy at most this much at once (0: hosts apart) */
    double machine_Bps;
    double straggler_s; /* the ranks of straggler_host start this late */
    int straggler_host;
    double reduce_Bps, copy_Bps; /* one core's local work */
    /* Cores the ranks of a host share (with machine_Bps: the ranks of every host, the machine's);
     * 0: a core per rank. A rank's work (posting, receiving, reductions, copies) waits for the
     * earliest free one. */
    int cores;
    /* Core time a message costs each end, its sender posting it and its receiver taking it in;
     * below 0: post_share of the latency at the sender, nothing at the receiver. */
    double msg_cpu_s;
    size_t chunk;     /* links interleave messages in pieces of this many bytes... */
    int max_chunks;   /* ...or of a message's bytes / max_chunks, whichever is larger */
    size_t max_steps; /* refuse schedules of more steps than this, all ranks together */
} sim_net_t;

typedef struct {
    double time_s;   /* when the last rank finished */
    size_t steps;    /* in every rank's schedule */
    size_t messages; /* sent */
    size_t events;   /* that the simulation processed */
} sim_result_t;

typedef enum {
    SIM_OK,
    SIM_CANNOT,  /* the algorithm cannot serve a, or has steps no network model prices (the node channel's) */
    SIM_TOO_BIG, /* past max_steps (res->steps: an estimate from the first rank's) */
    SIM_STUCK,   /* some rank never finished: a receive without its send (a builder's bug) */
    SIM_NOMEM
} sim_status_t;

/* Defaults: 100 Gbit/s between hosts, one switch, no straggler, a core per rank, 64 KiB pieces,
 * 16 at most a message, 64 Mi steps. */
sim_net_t sim_net_default(void);
/* Runs algorithm idx (src/collectives/algo.h) for a, a->map giving the hosts, on net. */
sim_status_t sim_run(int idx, const gcoll__coll_args_t *a, const sim_net_t *net, sim_result_t *res);

#endif
