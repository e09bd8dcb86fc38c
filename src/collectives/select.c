/* The algorithm registry (GCOLL_ALGOS) as a table, its queries, and the selection by message
 * size. The size of a collective is the bytes of its whole vector: count for allreduce, bcast
 * and reduce; count times the rank count for reduce_scatter, allgather and alltoall. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "collectives/adasum.h"
#include "collectives/cost.h"
#include "collectives/select.h"
#include "transports/shm/channel.h"

#define ENTRY(coll, name, fn, usable, family, flags) ENTRY_##family(coll, name, fn, usable, flags)
#define ENTRY_PLAIN(coll, name, fn, usable, flags) {coll, GCOLL_FAMILY_PLAIN, #name, #name, fn, NULL, usable, flags},
#define ENTRY_TOPK(coll, name, fn, usable, flags) {coll, GCOLL_FAMILY_TOPK, #name, #name, fn, NULL, usable, flags},
#define ENTRY_ADASUM(coll, name, fn, usable, flags) \
    {coll, GCOLL_FAMILY_ADASUM, #name, "adasum/" #name, NULL, fn, usable, flags},
static const gcoll__algo_t algos[] = {GCOLL_ALGOS(ENTRY)};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

/* Each family's name, and whether gcoll_algorithms lists it: the plain family under its
 * collective's name, Adasum's under "adasum" (the names gcoll_iadasum's attr.algorithm takes);
 * top-k's not, since attr.compress picks it. */
static const struct {
    const char *name;
    int listed;
} families[GCOLL_FAMILY_COUNT] = {
    [GCOLL_FAMILY_PLAIN] = {NULL, 1},
    [GCOLL_FAMILY_ADASUM] = {"adasum", 1},
    [GCOLL_FAMILY_TOPK] = {"topk", 0},
};

const gcoll__algo_t *gcoll__algo_get(int idx)
{
    return idx >= 0 && (size_t)idx < NALGOS ? &algos[idx] : NULL;
}

const char *gcoll__family_name(int family)
{
    return family >= 0 && family < GCOLL_FAMILY_COUNT ? families[family].name : NULL;
}

int gcoll__algo_find(int coll, int family, const char *name)
{
    for (size_t i = 0; i < NALGOS; i++)
        if ((int)algos[i].coll == coll && (int)algos[i].family == family && strcmp(algos[i].name, name) == 0)
            return (int)i;
    return -1;
}

int gcoll__algo_flagged(int coll, int family, unsigned mask, unsigned want)
{
    for (size_t i = 0; i < NALGOS; i++)
        if ((int)algos[i].coll == coll && (int)algos[i].family == family && (algos[i].flags & mask) == want)
            return (int)i;
    return -1;
}

int gcoll__algo_usable(const gcoll__algo_t *e, const gcoll__coll_args_t *a)
{
    return e && (!e->usable || e->usable(a));
}

char *gcoll__algo_list(char *buf, size_t len, int coll, int family, unsigned with)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NALGOS; i++) {
        const gcoll__algo_t *e = &algos[i];
        if ((int)e->coll != coll || (int)e->family != family || (e->flags & with) != with)
            continue;
        int w = snprintf(buf + n, len - n, "%s%s", n ? "|" : "", e->name);
        if (w < 0 || (size_t)w >= len - n) {
            buf[n] = '\0'; /* whole names only */
            break;
        }
        n += (size_t)w;
    }
    return buf;
}

/* What gcoll_algorithms hands out, per collective and family, and the built-in choice's
 * candidates on the node channel (slots, single copy), found once rather than on every call. */
static const char *lists[GCOLL_COLL_COUNT][GCOLL_FAMILY_COUNT][NALGOS + 1];
static size_t nnames[GCOLL_COLL_COUNT][GCOLL_FAMILY_COUNT];
static int node_slots[GCOLL_COLL_COUNT], node_cma[GCOLL_COLL_COUNT];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void index_registry(void)
{
    for (size_t i = 0; i < NALGOS; i++) {
        const gcoll__algo_t *e = &algos[i];
        lists[e->coll][e->family][nnames[e->coll][e->family]++] = e->name;
    }
    const unsigned node = GCOLL_ALGO_NODE | GCOLL_ALGO_CMA | GCOLL_ALGO_FORCED;
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        node_slots[c] = gcoll__algo_flagged(c, GCOLL_FAMILY_PLAIN, node, GCOLL_ALGO_NODE);
        node_cma[c] = gcoll__algo_flagged(c, GCOLL_FAMILY_PLAIN, node, GCOLL_ALGO_NODE | GCOLL_ALGO_CMA);
    }
}

size_t gcoll__coll_bytes(const gcoll__coll_args_t *a)
{
    size_t b = a->count * a->esize;
    switch (a->coll) {
    case GCOLL_COLL_REDUCE_SCATTER:
    case GCOLL_COLL_ALLGATHER:
    case GCOLL_COLL_ALLTOALL:
    case GCOLL_COLL_GATHER:
    case GCOLL_COLL_SCATTER: return b * (size_t)a->size;
    case GCOLL_COLL_ALLGATHERV:
    case GCOLL_COLL_REDUCE_SCATTERV: return a->total * a->esize;
    /* no rank knows every other's counts, and every rank must choose alike */
    case GCOLL_COLL_ALLTOALLV:
    case GCOLL_COLL_GATHERV:
    case GCOLL_COLL_SCATTERV: return 0;
    default: return b;
    }
}

int gcoll__coll_sized(int coll)
{
    return coll != GCOLL_COLL_ALLTOALLV && coll != GCOLL_COLL_GATHERV && coll != GCOLL_COLL_SCATTERV;
}

static int usable(int idx, const gcoll__coll_args_t *a)
{
    return gcoll__algo_usable(gcoll__algo_get(idx), a);
}

/* The built-in choice, among the plain family's entries that are not GCOLL_ALGO_FORCED: on one
 * host the node channel (slots while one round holds the vector, single copy above); elsewhere
 * the cost model's pick (a rule on the layout where no rank knows the size). */
static int builtin_choice(const gcoll__coll_args_t *a, size_t bytes)
{
    int idx = -1;
    pthread_once(&index_once, index_registry);
    if (a->shm) { /* without a size, the single copy serves any */
        if (bytes > gcoll__shm_info(a->shm)->slot_bytes || !gcoll__coll_sized(a->coll))
            idx = node_cma[a->coll];
        if (!usable(idx, a))
            idx = node_slots[a->coll];
    }
    if (!usable(idx, a) && a->links)
        idx = gcoll__cost_pick(a, a->links);
    for (size_t i = 0; i < NALGOS && !usable(idx, a); i++)
        if (algos[i].coll == a->coll && algos[i].family == GCOLL_FAMILY_PLAIN && !(algos[i].flags & GCOLL_ALGO_FORCED))
            idx = (int)i;
    return idx;
}

/* A compressed allreduce: top-k's family, or the usual choice narrowed to the algorithms that
 * carry the wire format (GCOLL_ALGO_WIRE16: docs/compression.md), ring from 1 MiB and
 * rabenseifner below where the choice was another. */
static gcoll_status_t select_compressed(const gcoll__coll_args_t *a, const char *forced, const gcoll__algo_t **out)
{
    char list[GCOLL_ALGO_LIST_LEN];
    int idx;
    if (a->compress == GCOLL_COMPRESS_TOPK) {
        idx = forced ? gcoll__algo_find(a->coll, GCOLL_FAMILY_TOPK, forced)
                     : gcoll__algo_flagged(a->coll, GCOLL_FAMILY_TOPK, GCOLL_ALGO_FORCED, 0);
        if (idx < 0)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "attr->algorithm '%s' cannot serve attr->compress GCOLL_COMPRESS_TOPK: accepts %s",
                                forced ? forced : "",
                                gcoll__algo_list(list, sizeof(list), a->coll, GCOLL_FAMILY_TOPK, 0));
        *out = &algos[idx];
        return GCOLL_SUCCESS;
    }
    idx = -1;
    if (forced) {
        idx = gcoll__algo_find(a->coll, GCOLL_FAMILY_PLAIN, forced);
        if (idx < 0 || !(algos[idx].flags & GCOLL_ALGO_WIRE16))
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "attr->algorithm '%s' cannot carry attr->compress %s: accepts %s", forced,
                                a->compress == GCOLL_COMPRESS_FP16 ? "GCOLL_COMPRESS_FP16" : "GCOLL_COMPRESS_BF16",
                                gcoll__algo_list(list, sizeof(list), a->coll, GCOLL_FAMILY_PLAIN, GCOLL_ALGO_WIRE16));
    }
    if (idx >= 0 && !usable(idx, a))
        idx = -1;
    if (idx < 0 && a->map && a->map->nhosts > 1) {
        const unsigned hier = GCOLL_ALGO_HIER | GCOLL_ALGO_WIRE16;
        int h = gcoll__algo_flagged(a->coll, GCOLL_FAMILY_PLAIN, hier | GCOLL_ALGO_FORCED, hier);
        idx = usable(h, a) ? h : -1;
    }
    if (idx < 0) {
        size_t bytes = gcoll__coll_bytes(a);
        const gcoll__algo_t *plain;
        gcoll__coll_args_t b = *a;
        b.compress = GCOLL_COMPRESS_NONE;
        b.shm = NULL; /* the node channel's algorithms carry no wire format */
        GCOLL_CHECK(gcoll__algo_select(&b, NULL, &plain));
        idx = (int)(plain - algos);
        if (!(plain->flags & GCOLL_ALGO_WIRE16) || !usable(idx, a))
            idx = gcoll__algo_find(a->coll, GCOLL_FAMILY_PLAIN, bytes >= ((size_t)1 << 20) ? "ring" : "rabenseifner");
    }
    *out = &algos[idx];
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__algo_select(const gcoll__coll_args_t *a, const char *forced, const gcoll__algo_t **out)
{
    if (a->compress != GCOLL_COMPRESS_NONE)
        return select_compressed(a, forced, out);
    int idx = -1;
    size_t bytes = gcoll__coll_bytes(a);
    const char *asked = forced, *from = "attr->algorithm";
    if (forced) {
        idx = gcoll__algo_find(a->coll, GCOLL_FAMILY_PLAIN, forced);
        if (idx < 0) {
            char list[GCOLL_ALGO_LIST_LEN];
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "attr->algorithm '%s' is not a %s algorithm: accepts %s", forced,
                                gcoll__coll_name(a->coll),
                                gcoll__algo_list(list, sizeof(list), a->coll, GCOLL_FAMILY_PLAIN, 0));
        }
    } else {
        const gcoll__algo_table_t *t = a->table ? a->table : &gcoll__algo_tables[a->coll];
        for (int i = 0; i < t->nranges && idx < 0; i++)
            if (bytes >= t->range[i].lo && (bytes < t->range[i].hi || t->range[i].hi == SIZE_MAX))
                idx = t->range[i].algo;
        asked = idx >= 0 ? algos[idx].name : NULL;
        from = a->table ? "the communicator's selection table" : "the selection table";
    }
    if (idx >= 0 && !usable(idx, a)) {
        GCOLL_LOG(GCOLL_LOG_INFO,
                  "%s: %s cannot serve %zu bytes on this communicator (%s); using the built-in "
                  "choice",
                  gcoll__coll_name(a->coll), asked, bytes, from);
        idx = -1;
    }
    if (idx < 0)
        idx = builtin_choice(a, bytes);
    *out = &algos[idx];
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_algorithms(const char *collective, const char *const **names, size_t *count)
{
    if (!collective || !names || !count)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL",
                            !collective  ? "collective"
                                : !names ? "names"
                                         : "count");
    pthread_once(&index_once, index_registry);
    for (int c = 0; c < GCOLL_COLL_COUNT; c++)
        for (int f = 0; f < GCOLL_FAMILY_COUNT; f++) {
            const char *key = families[f].name ? families[f].name : gcoll__coll_name(c);
            if (nnames[c][f] && families[f].listed && strcmp(collective, key) == 0) {
                *names = lists[c][f];
                *count = nnames[c][f];
                return GCOLL_SUCCESS;
            }
        }
    return gcoll__error(GCOLL_ERR_INVALID_ARG, "collective '%s' is unknown", collective);
}
