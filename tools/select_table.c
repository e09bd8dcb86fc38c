/* gcoll-info's algorithm registry, each family of each collective with its entries' flags, and
 * its selection table, like NCCL's tuning table: for a layout of hosts x ranks (one host: the
 * point-to-point algorithms, as over GCOLL_TRANSPORT_INTRA=mpi), each collective and size, the
 * predicted microseconds of every algorithm that can serve it, the pick starred; the vector
 * collectives with even blocks. The links are the settings' (GCOLL_TRANSPORT_*, GCOLL_COST_*): no
 * measurement without a job. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/config.h"
#include "collectives/cost.h"
#include "collectives/select.h"
#include "transports/choose.h"
#include "layout.h"
#include "select_table.h"

#define FIRST_SIZE 4
#define LAST_SIZE ((size_t)64 << 20)
#define SIZE_STEP 16

/* Sets a's count for about bytes (layout_size); 0 past the last size. */
static int set_size(layout_t *l, gcoll__coll_args_t *a, size_t bytes, size_t *shown)
{
    layout_size(l, a, bytes, shown);
    return bytes <= LAST_SIZE;
}

/* The flags' short names, as the legend explains them (src/collectives/algo.h). */
static const struct {
    unsigned flag;
    const char *name, *meaning;
} flags[] = {
    {GCOLL_ALGO_NODE, "node", "over the node's shared-memory channel"},
    {GCOLL_ALGO_CMA, "cma", "single copy"},
    {GCOLL_ALGO_HIER, "hier", "hierarchical"},
    {GCOLL_ALGO_WIRE16, "wire16", "carries fp16/bf16"},
    {GCOLL_ALGO_FORCED, "forced", "only when named"},
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

/* " [node cma]" for an entry's flags, nothing for none. */
static void print_flags(unsigned f)
{
    for (size_t k = 0, m = 0; k < NFLAGS; k++)
        if (f & flags[k].flag)
            printf("%s%s", m++ ? " " : " [", flags[k].name);
    printf("%s", f ? "]" : "");
}

void print_algorithms(void)
{
    printf("flags:");
    for (size_t k = 0; k < NFLAGS; k++)
        printf("%s [%s] %s", k ? ";" : "", flags[k].name, flags[k].meaning);
    printf("\n");
    for (int c = 0; c < GCOLL_COLL_COUNT; c++)
        for (int f = 0; f < GCOLL_FAMILY_COUNT; f++) {
            int n = 0;
            for (int i = 0; gcoll__algo_get(i); i++) {
                const gcoll__algo_t *e = gcoll__algo_get(i);
                if ((int)e->coll != c || (int)e->family != f)
                    continue;
                if (++n == 1 && f == GCOLL_FAMILY_PLAIN)
                    printf("%s:", gcoll__coll_name(c));
                else if (n == 1) /* Adasum's or top-k's family of the collective */
                    printf("%s (%s):", gcoll__family_name(f), gcoll__coll_name(c));
                printf("%s %s", n > 1 ? "," : "", e->name);
                print_flags(e->flags);
            }
            if (n)
                printf("\n");
        }
}

static void print_coll(layout_t *l, gcoll__coll_args_t *a)
{
    int idx[32], n = 0;
    /* the columns: algorithms of this collective that can serve the layout at some size (the
     * node channel's cannot serve these point-to-point layouts) */
    for (int i = 0; gcoll__algo_get(i) && n < 32; i++) {
        if ((int)gcoll__algo_get(i)->coll != (int)a->coll)
            continue;
        int serves = 0;
        size_t shown;
        for (size_t b = FIRST_SIZE; !serves && set_size(l, a, b, &shown); b *= SIZE_STEP)
            serves = gcoll__cost_predict(i, a, l->links) >= 0;
        if (serves)
            idx[n++] = i;
    }
    printf("\n%s (microseconds; * the built-in pick, - cannot serve)\n%10s", gcoll__coll_name(a->coll), "bytes");
    for (int k = 0; k < n; k++)
        printf(" %19s", gcoll__algo_get(idx[k])->name);
    printf("\n");
    size_t shown;
    for (size_t bytes = FIRST_SIZE; set_size(l, a, bytes, &shown); bytes *= SIZE_STEP) {
        int pick = gcoll__cost_pick(a, l->links);
        char buf[16];
        printf("%10s", a->coll == GCOLL_COLL_BARRIER ? "-" : size_str(shown, buf, sizeof(buf)));
        for (int k = 0; k < n; k++) {
            double t = gcoll__cost_predict(idx[k], a, l->links);
            if (t < 0)
                printf(" %19s", "-");
            else
                printf(" %18.1f%c", t * 1e6, idx[k] == pick ? '*' : ' ');
        }
        printf("\n");
        if (a->coll == GCOLL_COLL_BARRIER)
            break;
    }
}

/* Sets l up for hosts x rph and prints its line; 0 when out of memory (said). */
static int layout_open(layout_t *l, int hosts, int rph)
{
    if (!layout_init(l, hosts, rph)) {
        printf("no memory for the selection table\n");
        return 0;
    }
    const gcoll__links_t *links = l->links;
    /* a burst rate at or below the bandwidth counts as the bandwidth (src/collectives/cost.c) */
    double intra_burst = links->intra.burst_Bps > links->intra.bw_Bps ? links->intra.burst_Bps : links->intra.bw_Bps;
    double inter_burst = links->inter.burst_Bps > links->inter.bw_Bps ? links->inter.burst_Bps : links->inter.bw_Bps;
    printf("%d hosts x %d ranks; links: inside a host %s %.1f us %.2f GB/s (burst %.2f GB/s), between hosts %s %.1f us "
           "%.3f GB/s (burst %.3f GB/s)%s\n",
           hosts, rph, l->intra, links->intra.lat_s * 1e6, links->intra.bw_Bps * 1e-9, intra_burst * 1e-9, l->inter,
           links->inter.lat_s * 1e6, links->inter.bw_Bps * 1e-9, inter_burst * 1e-9,
           (gcoll__config.cost_probe[0] || gcoll__config.cost_probe[1]) && hosts > 1
               ? " (a job spanning hosts measures the links set to auto in GCOLL_COST_*)"
               : "");
    return 1;
}

void print_selection(int hosts, int rph)
{
    layout_t l;
    if (!layout_open(&l, hosts, rph))
        return;
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        gcoll__coll_args_t a = layout_args(&l, c);
        print_coll(&l, &a);
    }
    layout_free(&l);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void print_picks(int hosts, int rph)
{
    layout_t l;
    if (!layout_open(&l, hosts, rph))
        return;
    printf("%-16s %10s %-20s %12s\n", "collective", "bytes", "pick", "ms to pick");
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        gcoll__coll_args_t a = layout_args(&l, c);
        size_t shown, last = 0;
        for (size_t bytes = FIRST_SIZE; set_size(&l, &a, bytes, &shown); bytes *= SIZE_STEP) {
            char buf[16];
            if (shown == last) /* per-rank counts: the smallest sizes round up to one element each */
                continue;
            last = shown;
            double t0 = now_s();
            int pick = gcoll__cost_pick(&a, l.links);
            double ms = (now_s() - t0) * 1e3;
            printf("%-16s %10s %-20s %12.1f\n", gcoll__coll_name(c),
                   c == GCOLL_COLL_BARRIER ? "-" : size_str(shown, buf, sizeof(buf)),
                   pick >= 0 ? gcoll__algo_get(pick)->name : "-", ms);
            if (c == GCOLL_COLL_BARRIER)
                break;
        }
    }
    layout_free(&l);
}
