/* The algorithm registry and the selection table: which algorithm serves a collective at a
 * given size, from GCOLL_<COLLECTIVE> ranges, a per-operation override, or the built-in choice. */
#ifndef GCOLL_SELECT_H
#define GCOLL_SELECT_H

#include "collectives/algo.h"

/* One size range of a selection table: algorithm index serves [lo, hi) bytes. */
typedef struct {
    size_t lo, hi;
    int algo;
} gcoll__algo_range_t;

#define GCOLL_MAX_RANGES 16
typedef struct gcoll__algo_table {
    int nranges; /* 0: the built-in choice everywhere */
    gcoll__algo_range_t range[GCOLL_MAX_RANGES];
} gcoll__algo_table_t;

/* GCOLL_<COLL>'s tables, parsed at init (select_parse.c). */
extern gcoll__algo_table_t gcoll__algo_tables[GCOLL_COLL_COUNT];
/* A selection table of collective coll in GCOLL_<COLL>'s syntax; messages begin with what. */
gcoll_status_t gcoll__parse_algo_table(const char *what, const char *s, gcoll__algo_table_t *out, int coll);

typedef struct {
    gcoll__coll_t coll;
    const char *name;
    gcoll__build_fn build;
    gcoll__usable_fn usable; /* NULL: serves everything */
} gcoll__algo_t;

int gcoll__algo_find(int coll, const char *name); /* index, or -1 */
const gcoll__algo_t *gcoll__algo_get(int idx);    /* NULL past the last */
const char *gcoll__algo_list(int coll);           /* "ring|recursive_doubling" */
/* Picks the algorithm; forced is attr.algorithm (NULL for the table). */
gcoll_status_t gcoll__algo_select(const gcoll__coll_args_t *a, const char *forced, const gcoll__algo_t **out);
size_t gcoll__coll_bytes(const gcoll__coll_args_t *a); /* the size the table is indexed by */

#endif
