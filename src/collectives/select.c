/* Algorithm registry (from GCOLL_ALGOS) and selection by message size. The size of a
 * collective is the bytes of its whole vector: count for allreduce, bcast and reduce; count
 * times the rank count for reduce_scatter, allgather and alltoall. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "collectives/adasum.h"
#include "collectives/cost.h"
#include "collectives/select.h"
#include "transports/shm/channel.h"

#define GCOLL_ALGO_ENTRY(coll, name, fn, usable) {coll, #name, fn, usable},
static const gcoll__algo_t algos[] = {GCOLL_ALGOS(GCOLL_ALGO_ENTRY)};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

const gcoll__algo_t *gcoll__algo_get(int idx)
{
    return idx >= 0 && (size_t)idx < NALGOS ? &algos[idx] : NULL;
}

int gcoll__algo_find(int coll, const char *name)
{
    for (size_t i = 0; i < NALGOS; i++)
        if ((int)algos[i].coll == coll && strcmp(algos[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Per-collective name lists, built once. */
static char lists[GCOLL_COLL_COUNT][128];
static const char *by_coll[GCOLL_COLL_COUNT][NALGOS + 1];
static size_t nby[GCOLL_COLL_COUNT];
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

/* The built-in choice's candidates, looked up once rather than by name on every call. */
static int idx_shm_slots[GCOLL_COLL_COUNT], idx_shm_cma[GCOLL_COLL_COUNT];

static void build_lists(void)
{
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        idx_shm_slots[c] = gcoll__algo_find(c, "shm_slots");
        idx_shm_cma[c] = gcoll__algo_find(c, "shm_cma");
    }
    for (size_t i = 0; i < NALGOS; i++) {
        int c = algos[i].coll;
        by_coll[c][nby[c]++] = algos[i].name;
        if (lists[c][0])
            strcat(lists[c], "|");
        strcat(lists[c], algos[i].name);
    }
}

const char *gcoll__algo_list(int coll)
{
    pthread_once(&lists_once, build_lists);
    return lists[coll];
}

size_t gcoll__coll_bytes(const gcoll__coll_args_t *a)
{
    size_t b = a->count * a->esize;
    switch (a->coll) {
    case GCOLL_COLL_REDUCE_SCATTER:
    case GCOLL_COLL_ALLGATHER:
    case GCOLL_COLL_ALLTOALL: return b * (size_t)a->size;
    default: return b;
    }
}

static int usable(int idx, const gcoll__coll_args_t *a)
{
    return idx >= 0 && (!algos[idx].usable || algos[idx].usable(a));
}

/* The built-in choice: on one host the node channel (slots while one round holds the vector,
 * single copy above); elsewhere the cost model's pick. */
static int builtin_choice(const gcoll__coll_args_t *a, size_t bytes)
{
    int idx = -1;
    pthread_once(&lists_once, build_lists);
    if (a->shm) {
        if (bytes > gcoll__shm_info(a->shm)->slot_bytes)
            idx = idx_shm_cma[a->coll];
        if (!usable(idx, a))
            idx = idx_shm_slots[a->coll];
    }
    if (!usable(idx, a) && a->links)
        idx = gcoll__cost_pick(a, a->links);
    for (size_t i = 0; i < NALGOS && !usable(idx, a); i++)
        if (algos[i].coll == a->coll)
            idx = (int)i;
    return idx;
}

/* Top-k sparse allreduce is chosen by attr.compress, never by size, so it is not in the table. */
static const gcoll__algo_t topk_algo = {GCOLL_COLL_ALLREDUCE, "topk", gcoll__allreduce_topk, NULL};

/* The algorithms that carry a 16-bit wire format: those that reduce each block at one rank
 * and round it before copying it everywhere (docs/compression.md). */
static int carries_wire(int idx)
{
    const char *n = algos[idx].name;
    return strcmp(n, "ring") == 0 || strcmp(n, "rabenseifner") == 0 || strcmp(n, "hierarchical") == 0;
}

/* A compressed allreduce: top-k, or the usual choice narrowed to the algorithms that carry
 * the wire format (ring from 1 MiB, rabenseifner below, where the choice was another). */
static gcoll_status_t select_compressed(const gcoll__coll_args_t *a, const char *forced, const gcoll__algo_t **out)
{
    if (a->compress == GCOLL_COMPRESS_TOPK) {
        if (forced && strcmp(forced, topk_algo.name) != 0)
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "attr->algorithm '%s' cannot serve attr->compress "
                                "GCOLL_COMPRESS_TOPK: only 'topk' does",
                                forced);
        *out = &topk_algo;
        return GCOLL_SUCCESS;
    }
    int idx = -1;
    if (forced) {
        idx = gcoll__algo_find(a->coll, forced);
        if (idx < 0 || !carries_wire(idx))
            return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                "attr->algorithm '%s' cannot carry attr->compress %s: "
                                "accepts ring|rabenseifner|hierarchical",
                                forced,
                                a->compress == GCOLL_COMPRESS_FP16 ? "GCOLL_COMPRESS_FP16" : "GCOLL_COMPRESS_BF16");
    }
    if (idx >= 0 && !usable(idx, a))
        idx = -1;
    if (idx < 0 && a->map && a->map->nhosts > 1) {
        int h = gcoll__algo_find(a->coll, "hierarchical");
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
        if (!carries_wire(idx) || !usable(idx, a))
            idx = gcoll__algo_find(a->coll, bytes >= ((size_t)1 << 20) ? "ring" : "rabenseifner");
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
        idx = gcoll__algo_find(a->coll, forced);
        if (idx < 0)
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "attr->algorithm '%s' is not a %s algorithm: accepts %s", forced,
                                gcoll__coll_name(a->coll), gcoll__algo_list(a->coll));
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
    if (strcmp(collective, "adasum") == 0) {
        *names = gcoll__adasum_names;
        *count = GCOLL_ADASUM_NALGOS;
        return GCOLL_SUCCESS;
    }
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        if (strcmp(collective, gcoll__coll_name(c)) != 0)
            continue;
        pthread_once(&lists_once, build_lists);
        *names = by_coll[c];
        *count = nby[c];
        return GCOLL_SUCCESS;
    }
    return gcoll__error(GCOLL_ERR_INVALID_ARG, "collective '%s' is unknown", collective);
}
