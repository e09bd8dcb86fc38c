/* The selection's own syntax: GCOLL_<COLL> tables ("algo:LO-HI;..." size ranges, or auto),
 * their variables in the configuration registry, described from the algorithm registry, and
 * the tables they hold. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "collectives/select.h"

gcoll__algo_table_t gcoll__algo_tables[GCOLL_COLL_COUNT];

/* "algo:lo-hi;algo:lo-hi" or a bare "algo" for the whole range; "auto" is the built-in choice. */
gcoll_status_t gcoll__parse_algo_table(const char *var, const char *s, gcoll__algo_table_t *out, int coll)
{
    gcoll__algo_table_t t = {0};
    if (strcmp(s, "auto") == 0) {
        *out = t;
        return GCOLL_SUCCESS;
    }
    char buf[512];
    if (strlen(s) >= sizeof(buf))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is too long (over %zu characters)", var, sizeof(buf) - 1);
    strcpy(buf, s);
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        if (t.nranges == GCOLL_MAX_RANGES)
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s has more than %d ranges", var, GCOLL_MAX_RANGES);
        gcoll__algo_range_t *r = &t.range[t.nranges];
        char *colon = strchr(item, ':');
        if (colon)
            *colon = '\0';
        r->algo = gcoll__algo_find(coll, GCOLL_FAMILY_PLAIN, item);
        if (r->algo < 0) {
            char list[GCOLL_ALGO_LIST_LEN];
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s: unknown %s algorithm '%s': accepts %s", var,
                                gcoll__coll_name(coll), item,
                                gcoll__algo_list(list, sizeof(list), coll, GCOLL_FAMILY_PLAIN, 0));
        }
        r->lo = 0;
        r->hi = SIZE_MAX;
        if (colon) {
            char *dash = strchr(colon + 1, '-');
            if (!dash)
                return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s: range '%s' needs the form LO-HI, e.g. 0-8K or 1M-max",
                                    var, colon + 1);
            *dash = '\0';
            if (gcoll__parse_size(colon + 1, &r->lo) != GCOLL_SUCCESS ||
                gcoll__parse_size(dash + 1, &r->hi) != GCOLL_SUCCESS || r->lo >= r->hi)
                return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                    "%s: bad range '%s-%s' for %s: accepts LO-HI in bytes with "
                                    "K/M/G suffixes or max, LO < HI",
                                    var, colon + 1, dash + 1, item);
        }
        t.nranges++;
    }
    if (t.nranges == 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is empty: accepts auto or algo:LO-HI;...", var);
    *out = t;
    return GCOLL_SUCCESS;
}

static gcoll_status_t parse_algo_var(const char *var, const char *s, void *out, int coll)
{
    return gcoll__parse_algo_table(var, s, out, coll);
}

static char descs[GCOLL_COLL_COUNT][256];

#define ALGO_VAR(NAME, COLL)                                                                     \
    {                                                                                            \
        "GCOLL_" NAME, "auto, or ALGO[:LO-HI][;...]", "auto", descs[COLL], parse_algo_var, NULL, \
            &gcoll__algo_tables[COLL], COLL                                                      \
    }

static gcoll__var_t vars[] = {
    ALGO_VAR("ALLREDUCE", GCOLL_COLL_ALLREDUCE),
    ALGO_VAR("REDUCE_SCATTER", GCOLL_COLL_REDUCE_SCATTER),
    ALGO_VAR("ALLGATHER", GCOLL_COLL_ALLGATHER),
    ALGO_VAR("BCAST", GCOLL_COLL_BCAST),
    ALGO_VAR("REDUCE", GCOLL_COLL_REDUCE),
    ALGO_VAR("ALLTOALL", GCOLL_COLL_ALLTOALL),
    ALGO_VAR("BARRIER", GCOLL_COLL_BARRIER),
    ALGO_VAR("ALLGATHERV", GCOLL_COLL_ALLGATHERV),
    ALGO_VAR("REDUCE_SCATTERV", GCOLL_COLL_REDUCE_SCATTERV),
    ALGO_VAR("ALLTOALLV", GCOLL_COLL_ALLTOALLV),
    ALGO_VAR("GATHER", GCOLL_COLL_GATHER),
    ALGO_VAR("GATHERV", GCOLL_COLL_GATHERV),
    ALGO_VAR("SCATTER", GCOLL_COLL_SCATTER),
    ALGO_VAR("SCATTERV", GCOLL_COLL_SCATTERV),
};
_Static_assert(sizeof(vars) / sizeof(vars[0]) == GCOLL_COLL_COUNT, "a variable per collective");

static gcoll__var_group_t group = {1, vars, sizeof(vars) / sizeof(vars[0]), NULL};

/* The descriptions name the algorithms the registry holds for each collective. */
__attribute__((constructor)) static void add_vars(void)
{
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        char list[GCOLL_ALGO_LIST_LEN];
        snprintf(descs[c], sizeof(descs[c]), "%s algorithm per size range: %s", gcoll__coll_name(c),
                 gcoll__algo_list(list, sizeof(list), c, GCOLL_FAMILY_PLAIN, 0));
    }
    gcoll__config_add_group(&group);
}
