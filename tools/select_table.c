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
#include "select_table.h"

#define FIRST_SIZE 4
#define LAST_SIZE ((size_t)64 << 20)
#define SIZE_STEP 16

static const char *size_str(size_t v, char *buf, size_t len)
{
    const char *unit[] = {"", "K", "M", "G"};
    int u = 0;
    while (u < 3 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%zu%s", v, unit[u]);
    return buf;
}

/* The vector collectives' blocks as priced here: an even split (print_selection's arrays). */
static size_t *even_counts, *even_displs;

static int is_vector(int coll)
{
    return coll == GCOLL_COLL_ALLGATHERV || coll == GCOLL_COLL_REDUCE_SCATTERV || coll == GCOLL_COLL_ALLTOALLV ||
        coll == GCOLL_COLL_GATHERV || coll == GCOLL_COLL_SCATTERV;
}

/* Sets a's count (the vector collectives: even blocks) for about bytes of the collective's whole
 * vector (alltoallv: of one rank's send buffer, as alltoall's); *shown: the bytes it covers; 0 past
 * the last size. */
static int set_size(gcoll__coll_args_t *a, size_t bytes, size_t *shown)
{
    size_t elems = (bytes / a->esize) ? bytes / a->esize : 1;
    if (is_vector(a->coll)) {
        gcoll__cost_even(a, elems, even_counts, even_displs);
        *shown = a->coll == GCOLL_COLL_ALLTOALLV ? a->counts[0] * (size_t)a->size * a->esize : elems * a->esize;
    } else {
        a->count = 1;
        size_t per = gcoll__coll_bytes(a);
        a->count = (bytes / per) ? bytes / per : 1;
        *shown = a->count * per;
    }
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

static void print_coll(gcoll__coll_args_t *a, gcoll__links_t *links)
{
    int idx[32], n = 0;
    /* the columns: algorithms of this collective that can serve the layout at some size (the
     * node channel's cannot serve these point-to-point layouts) */
    for (int i = 0; gcoll__algo_get(i) && n < 32; i++) {
        if ((int)gcoll__algo_get(i)->coll != (int)a->coll)
            continue;
        int serves = 0;
        size_t shown;
        for (size_t b = FIRST_SIZE; !serves && set_size(a, b, &shown); b *= SIZE_STEP)
            serves = gcoll__cost_predict(i, a, links) >= 0;
        if (serves)
            idx[n++] = i;
    }
    printf("\n%s (microseconds; * the built-in pick, - cannot serve)\n%10s", gcoll__coll_name(a->coll), "bytes");
    for (int k = 0; k < n; k++)
        printf(" %19s", gcoll__algo_get(idx[k])->name);
    printf("\n");
    size_t shown;
    for (size_t bytes = FIRST_SIZE; set_size(a, bytes, &shown); bytes *= SIZE_STEP) {
        int pick = gcoll__cost_pick(a, links);
        char buf[16];
        printf("%10s", a->coll == GCOLL_COLL_BARRIER ? "-" : size_str(shown, buf, sizeof(buf)));
        for (int k = 0; k < n; k++) {
            double t = gcoll__cost_predict(idx[k], a, links);
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

/* A layout's node map, links and vector blocks, as print_selection and print_picks price them. */
typedef struct {
    int *host, *first;
    gcoll__nodemap_t map;
    gcoll__links_t *links;
} layout_t;

static void layout_free(layout_t *l)
{
    free(l->host);
    free(l->first);
    free(l->links);
    free(even_counts);
}

/* Sets l up for hosts x rph and prints its line; 0 when out of memory (said). */
static int layout_init(layout_t *l, int hosts, int rph)
{
    int n = hosts * rph;
    l->host = malloc(sizeof(int) * (size_t)n * 3);
    l->first = malloc(sizeof(int) * (size_t)(hosts + 1));
    l->links = calloc(1, sizeof(*l->links));
    even_counts = malloc(2 * sizeof(size_t) * (size_t)n);
    even_displs = even_counts ? even_counts + n : NULL;
    if (!l->host || !l->first || !l->links || !even_counts) {
        printf("no memory for the selection table\n");
        layout_free(l);
        return 0;
    }
    l->map = (gcoll__nodemap_t){hosts, 1, l->host, l->host + n, l->first, l->host + 2 * n, 0, 0};
    for (int p = 0; p < n; p++) {
        l->host[p] = p / rph;
        l->map.local[p] = p % rph;
        l->map.by_host[p] = p;
    }
    for (int h = 0; h <= hosts; h++)
        l->first[h] = h * rph;
    /* auto is priced as TCP: what it takes without a plugin or a NIC provider */
    const gcoll__tp_entry_t *named = gcoll__transport_inter(), *in_host = gcoll__transport_intra();
    const char *inter = named ? named->name : "tcp", *intra = in_host ? in_host->name : inter;
    gcoll__links_t *links = l->links;
    links->intra = gcoll__cost_link(intra, 0);
    links->inter = gcoll__cost_link(inter, 1);
    /* a burst rate at or below the bandwidth counts as the bandwidth (src/collectives/cost.c) */
    double intra_burst = links->intra.burst_Bps > links->intra.bw_Bps ? links->intra.burst_Bps : links->intra.bw_Bps;
    double inter_burst = links->inter.burst_Bps > links->inter.bw_Bps ? links->inter.burst_Bps : links->inter.bw_Bps;
    printf("%d hosts x %d ranks; links: inside a host %s %.1f us %.2f GB/s (burst %.2f GB/s), between hosts %s %.1f us "
           "%.3f GB/s (burst %.3f GB/s)%s\n",
           hosts, rph, intra, links->intra.lat_s * 1e6, links->intra.bw_Bps * 1e-9, intra_burst * 1e-9, inter,
           links->inter.lat_s * 1e6, links->inter.bw_Bps * 1e-9, inter_burst * 1e-9,
           (gcoll__config.cost_probe[0] || gcoll__config.cost_probe[1]) && hosts > 1
               ? " (a job spanning hosts measures the links set to auto in GCOLL_COST_*)"
               : "");
    return 1;
}

static gcoll__coll_args_t layout_args(layout_t *l, int coll)
{
    static float in, out;
    return (gcoll__coll_args_t){.coll = (gcoll__coll_t)coll,
                                .sendbuf = &in,
                                .recvbuf = &out,
                                .dtype = GCOLL_FLOAT32,
                                .op = GCOLL_SUM,
                                .esize = 4,
                                .size = l->map.first[l->map.nhosts],
                                .map = &l->map,
                                .links = l->links};
}

void print_selection(int hosts, int rph)
{
    layout_t l;
    if (!layout_init(&l, hosts, rph))
        return;
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        gcoll__coll_args_t a = layout_args(&l, c);
        print_coll(&a, l.links);
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
    if (!layout_init(&l, hosts, rph))
        return;
    printf("%-16s %10s %-20s %12s\n", "collective", "bytes", "pick", "ms to pick");
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        gcoll__coll_args_t a = layout_args(&l, c);
        size_t shown, last = 0;
        for (size_t bytes = FIRST_SIZE; set_size(&a, bytes, &shown); bytes *= SIZE_STEP) {
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
