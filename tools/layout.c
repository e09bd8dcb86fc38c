/* gcoll-info's layouts: the node map of hosts x ranks per host, the links priced for it, and a
 * collective's arguments at a size (tools/layout.h). */
#include <stdio.h>
#include <stdlib.h>

#include "collectives/select.h"
#include "transports/choose.h"
#include "layout.h"

const char *size_str(size_t v, char *buf, size_t len)
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

int parse_layout(const char *s, int *hosts, int *rph)
{
    char *end;
    long h = strtol(s, &end, 10), r = *end == 'x' ? strtol(end + 1, &end, 10) : 0;
    if (*end || h < 1 || r < 1 || h > 65536 || r > 4096 || h * r > 65536)
        return 0;
    *hosts = (int)h;
    *rph = (int)r;
    return 1;
}

void layout_free(layout_t *l)
{
    free(l->host);
    free(l->first);
    free(l->links);
    free(l->counts);
    *l = (layout_t){0};
}

int layout_init(layout_t *l, int hosts, int rph)
{
    int n = hosts * rph;
    *l = (layout_t){0};
    l->host = malloc(sizeof(int) * (size_t)n * 3);
    l->first = malloc(sizeof(int) * (size_t)(hosts + 1));
    l->links = calloc(1, sizeof(*l->links));
    l->counts = malloc(2 * sizeof(size_t) * (size_t)n);
    if (!l->host || !l->first || !l->links || !l->counts) {
        layout_free(l);
        return 0;
    }
    l->displs = l->counts + n;
    l->map = (gcoll__nodemap_t){hosts, 1, l->host, l->host + n, l->first, l->host + 2 * n, 0, 0, 0};
    for (int p = 0; p < n; p++) {
        l->host[p] = p / rph;
        l->map.local[p] = p % rph;
        l->map.by_host[p] = p;
    }
    for (int h = 0; h <= hosts; h++)
        l->first[h] = h * rph;
    /* auto is priced as TCP: what it takes without a plugin or a NIC provider */
    const gcoll__tp_entry_t *named = gcoll__transport_inter(), *in_host = gcoll__transport_intra();
    l->inter = named ? named->name : "tcp";
    l->intra = in_host ? in_host->name : l->inter;
    l->links->intra = gcoll__cost_link(l->intra, 0);
    l->links->inter = gcoll__cost_link(l->inter, 1);
    return 1;
}

gcoll__coll_args_t layout_args(layout_t *l, int coll)
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

/* The collectives priced on blocks of given counts. */
static int is_vector(int coll)
{
    return coll == GCOLL_COLL_ALLGATHERV || coll == GCOLL_COLL_REDUCE_SCATTERV || coll == GCOLL_COLL_ALLTOALLV ||
        coll == GCOLL_COLL_GATHERV || coll == GCOLL_COLL_SCATTERV;
}

void layout_size(layout_t *l, gcoll__coll_args_t *a, size_t bytes, size_t *shown)
{
    size_t elems = (bytes / a->esize) ? bytes / a->esize : 1;
    if (is_vector(a->coll)) {
        gcoll__cost_even(a, elems, l->counts, l->displs);
        *shown = a->coll == GCOLL_COLL_ALLTOALLV ? a->counts[0] * (size_t)a->size * a->esize : elems * a->esize;
    } else {
        a->count = 1;
        size_t per = gcoll__coll_bytes(a);
        a->count = (bytes / per) ? bytes / per : 1;
        *shown = a->count * per;
    }
}
