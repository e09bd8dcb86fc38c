/* The algorithm registry's queries and the selection table: which algorithm serves a collective at
 * a given size, from GCOLL_<COLLECTIVE> ranges, a per-operation override, or the built-in choice. */
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

/* One entry of the registry (GCOLL_ALGOS). */
typedef struct {
    gcoll__coll_t coll;
    gcoll__family_t family;
    const char *name;
    const char *label;       /* what a request reports: the name, "adasum/" before Adasum's */
    gcoll__build_fn build;   /* the plain and top-k families' builder (NULL in Adasum's) */
    gcoll__adasum_fn adasum; /* Adasum's (NULL in the others) */
    gcoll__usable_fn usable; /* NULL: serves everything */
    unsigned flags;          /* GCOLL_ALGO_* */
} gcoll__algo_t;

const gcoll__algo_t *gcoll__algo_get(int idx);                /* NULL past the last */
int gcoll__algo_find(int coll, int family, const char *name); /* index, or -1 */
/* The first entry of coll's family whose flags, masked, equal want; -1 if none. */
int gcoll__algo_flagged(int coll, int family, unsigned mask, unsigned want);
/* Whether entry e (NULL: none) can serve a. */
int gcoll__algo_usable(const gcoll__algo_t *e, const gcoll__coll_args_t *a);
/* Writes to buf the names of coll's family that have every flag of `with` (0: all) as
 * "ring|recursive_doubling", for messages; returns buf. */
#define GCOLL_ALGO_LIST_LEN 256
char *gcoll__algo_list(char *buf, size_t len, int coll, int family, unsigned with);
/* A family's name ("adasum", "topk"; NULL for the plain one). gcoll_algorithms lists Adasum's
 * under its name as if it were a collective; top-k's, which attr.compress picks, it does not. */
const char *gcoll__family_name(int family);
/* Picks the algorithm; forced is attr.algorithm (NULL for the table). */
gcoll_status_t gcoll__algo_select(const gcoll__coll_args_t *a, const char *forced, const gcoll__algo_t **out);
size_t gcoll__coll_bytes(const gcoll__coll_args_t *a); /* the size the table is indexed by */
/* Whether every rank knows the size of collective coll (alltoallv, gatherv and scatterv: no rank
 * does, and gcoll__coll_bytes is 0 there). */
int gcoll__coll_sized(int coll);

#endif
