/* gcoll-info --simulate: the predicted time of every algorithm of a collective at each size on a
 * layout of hosts x ranks, from the network simulator (tools/sim.h), beside the cost model's
 * pick; the links are the cost model's (GCOLL_COST_*, the transports') unless given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/select.h"
#include "layout.h"
#include "sim.h"
#include "simulate.h"

#define MAX_ALGOS 16

static const char usage[] =
    "usage: gcoll-info --simulate HOSTSxRANKS [options]\n"
    "  --coll NAME          the collective (default allreduce)\n"
    "  --algo A,B,...       these algorithms (default every one the simulator can run)\n"
    "  -m MIN:MAX           sizes in bytes, suffixes K M G (default 4:64M)\n"
    "  -f FACTOR            between sizes (default 16)\n"
    "  --intra US,GBIT      latency and Gbit/s between ranks of one host (default: the cost model's)\n"
    "  --inter US,GBIT      latency and Gbit/s of a host's link (default: the cost model's)\n"
    "  --reduce GBYTES      GB/s of a rank's reductions and copies (default 4 and 7: one core's)\n"
    "  --tbf BYTES,GBIT     a token bucket of BYTES before each host link, passing GBIT while it holds tokens\n"
    "  --fat-tree K,F       K hosts a leaf switch, uplinks oversubscribed F:1 (default one switch)\n"
    "  --spine-lat US       latency a message crossing the spine adds (default 1)\n"
    "  --machine GBIT       the hosts are one machine's namespaces, copying GBIT between them at most\n"
    "  --cores C            a host's ranks share C cores (with --machine: every rank the machine's C)\n"
    "  --cpu-msg US         core time a message costs its sender and its receiver (default: half its\n"
    "                       latency at the sender)\n"
    "  --straggler US[,H]   host H (default the last) starts US late\n"
    "  --chunk BYTES        piece size links interleave at (default 64K)\n"
    "  --max-steps N        refuse algorithms of more schedule steps, all ranks together (default 64M)\n";

static int parse_bytes(const char *s, size_t *out, char **end)
{
    double v = strtod(s, end);
    int shift = **end == 'K' || **end == 'k' ? 10
        : **end == 'M' || **end == 'm'       ? 20
        : **end == 'G' || **end == 'g'       ? 30
                                             : 0;
    if (shift)
        (*end)++;
    if (v < 0 || *end == s)
        return 0;
    *out = (size_t)(v * (double)((size_t)1 << shift));
    return 1;
}

/* "US,GBIT" into a latency and bytes per second. */
static int parse_link(const char *s, double *lat, double *Bps)
{
    char *end;
    double us = strtod(s, &end);
    if (*end != ',' || us < 0)
        return 0;
    double gbit = strtod(end + 1, &end);
    if (*end || gbit <= 0)
        return 0;
    *lat = us * 1e-6;
    *Bps = gbit * 1e9 / 8;
    return 1;
}

/* The bus factor of a collective on n ranks, as gcoll_bench and nccl-tests report bus bandwidth. */
static double bus_factor(int coll, int n)
{
    if (n < 2)
        return 0;
    if (coll == GCOLL_COLL_ALLREDUCE)
        return 2.0 * (n - 1) / n;
    if (coll == GCOLL_COLL_BCAST || coll == GCOLL_COLL_REDUCE)
        return 1;
    return (double)(n - 1) / n;
}

typedef struct {
    int hosts, rph, coll, nalgo, algo[MAX_ALGOS];
    size_t min, max, factor, burst;
    sim_net_t net;
    int intra_set, inter_set;
} opts_t;

static int parse_opts(int argc, char **argv, opts_t *o)
{
    if (argc < 1 || !parse_layout(argv[0], &o->hosts, &o->rph))
        return 0;
    const char *algos = NULL;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!v)
            return 0;
        i++;
        if (strcmp(k, "--coll") == 0) {
            o->coll = -1;
            for (int c = 0; c < GCOLL_COLL_COUNT; c++)
                if (strcmp(v, gcoll__coll_name(c)) == 0)
                    o->coll = c;
            if (o->coll < 0)
                return 0;
        } else if (strcmp(k, "--algo") == 0) {
            algos = v;
        } else if (strcmp(k, "-m") == 0) {
            if (!parse_bytes(v, &o->min, &end) || *end != ':' || !parse_bytes(end + 1, &o->max, &end) || *end ||
                o->min > o->max)
                return 0;
        } else if (strcmp(k, "-f") == 0) {
            long f = strtol(v, &end, 10);
            if (*end || f < 2)
                return 0;
            o->factor = (size_t)f;
        } else if (strcmp(k, "--intra") == 0) {
            if (!parse_link(v, &o->net.intra_lat_s, &o->net.intra_Bps))
                return 0;
            o->intra_set = 1;
        } else if (strcmp(k, "--inter") == 0) {
            if (!parse_link(v, &o->net.inter_lat_s, &o->net.inter_Bps))
                return 0;
            o->inter_set = 1;
        } else if (strcmp(k, "--reduce") == 0) {
            double gb = strtod(v, &end);
            if (*end || gb <= 0)
                return 0;
            o->net.reduce_Bps = o->net.copy_Bps = gb * 1e9;
        } else if (strcmp(k, "--tbf") == 0) {
            double gbit = 0;
            if (!parse_bytes(v, &o->burst, &end) || *end != ',' || (gbit = strtod(end + 1, &end)) <= 0 || *end)
                return 0;
            o->net.burst_bytes = (double)o->burst;
            o->net.burst_Bps = gbit * 1e9 / 8;
        } else if (strcmp(k, "--fat-tree") == 0) {
            long kk = strtol(v, &end, 10);
            double f = *end == ',' ? strtod(end + 1, &end) : 0;
            if (*end || kk < 1 || f < 1)
                return 0;
            o->net.hosts_per_leaf = (int)kk;
            o->net.oversub = f;
        } else if (strcmp(k, "--spine-lat") == 0) {
            o->net.spine_lat_s = strtod(v, &end) * 1e-6;
            if (*end || o->net.spine_lat_s < 0)
                return 0;
        } else if (strcmp(k, "--machine") == 0) {
            o->net.machine_Bps = strtod(v, &end) * 1e9 / 8;
            if (*end || o->net.machine_Bps <= 0)
                return 0;
        } else if (strcmp(k, "--cores") == 0) {
            long c = strtol(v, &end, 10);
            if (*end || c < 1 || c > 65536)
                return 0;
            o->net.cores = (int)c;
        } else if (strcmp(k, "--cpu-msg") == 0) {
            o->net.msg_cpu_s = strtod(v, &end) * 1e-6;
            if (*end || o->net.msg_cpu_s < 0)
                return 0;
        } else if (strcmp(k, "--straggler") == 0) {
            o->net.straggler_s = strtod(v, &end) * 1e-6;
            long h = *end == ',' ? strtol(end + 1, &end, 10) : o->hosts - 1;
            if (*end || o->net.straggler_s < 0 || h < 0 || h >= o->hosts)
                return 0;
            o->net.straggler_host = (int)h;
        } else if (strcmp(k, "--chunk") == 0) {
            if (!parse_bytes(v, &o->net.chunk, &end) || *end || o->net.chunk < 1)
                return 0;
        } else if (strcmp(k, "--max-steps") == 0) {
            if (!parse_bytes(v, &o->net.max_steps, &end) || *end)
                return 0;
        } else {
            return 0;
        }
    }
    /* the algorithms: named, or every plain one of the collective */
    o->nalgo = 0;
    if (algos) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", algos);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int idx = gcoll__algo_find(o->coll, GCOLL_FAMILY_PLAIN, t);
            if (idx < 0 || o->nalgo == MAX_ALGOS)
                return 0;
            o->algo[o->nalgo++] = idx;
        }
    } else {
        for (int i = 0; gcoll__algo_get(i) && o->nalgo < MAX_ALGOS; i++) {
            const gcoll__algo_t *e = gcoll__algo_get(i);
            if ((int)e->coll == o->coll && e->family == GCOLL_FAMILY_PLAIN && !(e->flags & GCOLL_ALGO_NODE))
                o->algo[o->nalgo++] = i;
        }
    }
    return o->nalgo > 0;
}

static void print_cell(sim_status_t st, const sim_result_t *r, int best)
{
    char buf[32];
    switch (st) {
    case SIM_OK: snprintf(buf, sizeof(buf), "%.1f%s", r->time_s * 1e6, best ? "*" : " "); break;
    case SIM_TOO_BIG: snprintf(buf, sizeof(buf), "(%.1e steps) ", (double)r->steps); break;
    case SIM_STUCK: snprintf(buf, sizeof(buf), "stuck "); break;
    case SIM_NOMEM: snprintf(buf, sizeof(buf), "no memory "); break;
    default: snprintf(buf, sizeof(buf), "- "); break;
    }
    printf(" %20s", buf);
}

int print_simulation(int argc, char **argv)
{
    opts_t o = {
        .coll = GCOLL_COLL_ALLREDUCE, .min = 4, .max = (size_t)64 << 20, .factor = 16, .net = sim_net_default()};
    o.net.spine_lat_s = 1e-6;
    if (!parse_opts(argc, argv, &o)) {
        fputs(usage, stderr);
        return 2;
    }
    layout_t l;
    if (!layout_init(&l, o.hosts, o.rph)) {
        fprintf(stderr, "gcoll-info: no memory for %d x %d ranks\n", o.hosts, o.rph);
        return 1;
    }
    if (!o.intra_set)
        o.net.intra_lat_s = l.links->intra.lat_s, o.net.intra_Bps = l.links->intra.bw_Bps;
    if (!o.inter_set)
        o.net.inter_lat_s = l.links->inter.lat_s, o.net.inter_Bps = l.links->inter.bw_Bps;
    /* the model prices the same links (their burst rate: the bandwidth) */
    l.links->intra = (gcoll__link_t){o.net.intra_lat_s, o.net.intra_Bps, o.net.intra_Bps};
    l.links->inter = (gcoll__link_t){o.net.inter_lat_s, o.net.inter_Bps, o.net.inter_Bps};
    if (o.net.straggler_s == 0)
        o.net.straggler_host = -1;
    if (o.net.cores > 0 && o.net.machine_Bps <= 0 && o.rph > o.net.cores)
        l.map.cores = o.net.cores; /* the model's pick for hosts whose ranks outnumber their cores */
    int n = o.hosts * o.rph;
    printf("# simulated %s, float32 sum, %d hosts x %d ranks; inside a host %.1f us %.1f Gbit/s, a host's link %.1f us "
           "%.1f Gbit/s; ",
           gcoll__coll_name(o.coll), o.hosts, o.rph, o.net.intra_lat_s * 1e6, o.net.intra_Bps * 8e-9,
           o.net.inter_lat_s * 1e6, o.net.inter_Bps * 8e-9);
    if (o.net.hosts_per_leaf > 0 && o.net.hosts_per_leaf < o.hosts)
        printf("%d hosts a leaf, uplinks %.3g:1, spine +%.1f us", o.net.hosts_per_leaf, o.net.oversub,
               o.net.spine_lat_s * 1e6);
    else
        printf("one switch");
    printf("; reductions %.1f GB/s", o.net.reduce_Bps * 1e-9);
    if (o.net.burst_bytes > 0)
        printf("; host links through a %zu-byte bucket at %.1f Gbit/s", o.burst, o.net.burst_Bps * 8e-9);
    if (o.net.machine_Bps > 0)
        printf("; all through one machine at %.1f Gbit/s", o.net.machine_Bps * 8e-9);
    if (o.net.cores > 0)
        printf("; %d cores %s", o.net.cores, o.net.machine_Bps > 0 ? "in all" : "a host");
    if (o.net.msg_cpu_s >= 0)
        printf("; %.1f us of core time a message at each end", o.net.msg_cpu_s * 1e6);
    if (o.net.straggler_host >= 0)
        printf("; host %d starts %.1f us late", o.net.straggler_host, o.net.straggler_s * 1e6);
    printf("\n# microseconds until the last rank is done; * the least; (N steps): past --max-steps; - cannot run\n");
    printf("%10s", "bytes");
    for (int k = 0; k < o.nalgo; k++)
        printf(" %20s", gcoll__algo_get(o.algo[k])->name);
    printf(" %20s %12s\n", "model's pick", "busbw GB/s");
    gcoll__coll_args_t a = layout_args(&l, o.coll);
    for (size_t bytes = o.min; bytes <= o.max; bytes = bytes * o.factor > bytes ? bytes * o.factor : o.max + 1) {
        size_t shown;
        layout_size(&l, &a, bytes, &shown);
        sim_result_t res[MAX_ALGOS];
        sim_status_t st[MAX_ALGOS];
        int best = -1;
        for (int k = 0; k < o.nalgo; k++) {
            st[k] = sim_run(o.algo[k], &a, &o.net, &res[k]);
            if (st[k] == SIM_OK && (best < 0 || res[k].time_s < res[best].time_s))
                best = k;
        }
        char buf[16];
        printf("%10s", o.coll == GCOLL_COLL_BARRIER ? "-" : size_str(shown, buf, sizeof(buf)));
        for (int k = 0; k < o.nalgo; k++)
            print_cell(st[k], &res[k], k == best);
        int pick = gcoll__cost_pick(&a, l.links);
        printf(" %20s", pick >= 0 ? gcoll__algo_get(pick)->name : "-");
        if (best >= 0 && o.coll != GCOLL_COLL_BARRIER)
            printf(" %12.3f", (double)shown * bus_factor(o.coll, n) / res[best].time_s * 1e-9);
        printf("\n");
        fflush(stdout);
        if (o.coll == GCOLL_COLL_BARRIER)
            break;
    }
    layout_free(&l);
    return 0;
}
