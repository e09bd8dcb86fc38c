/* libFuzzer harness for the selection-string parser, GCOLL_<COLL>="algo:lo-hi;..." (src/base/config.c
 * and src/collectives/select.c). The first byte picks the collective, the rest is the value.
 * Properties: an accepted table has 1..GCOLL_MAX_RANGES ranges ("auto": none), each lo < hi with
 * an algorithm of that collective's plain family (never Adasum's or top-k's); printed back in its
 * shortest form and parsed again it gives the same table; a rejected value fails with
 * GCOLL_ERR_INVALID_ARG naming the variable. */
#include <ctype.h>

#include "base/config.h"
#include "fuzz.h"
#include "collectives/select.h"

/* The shortest spelling of a size: max, or the largest of K/M/G that divides it. */
static void size_str(size_t v, char *buf, size_t len)
{
    static const char units[] = "KMG";
    if (v == SIZE_MAX) {
        snprintf(buf, len, "max");
        return;
    }
    int u = 0;
    while (u < 3 && v && v % ((size_t)1 << (10 * (u + 1))) == 0)
        u++;
    if (u)
        snprintf(buf, len, "%zu%c", v >> (10 * u), units[u - 1]);
    else
        snprintf(buf, len, "%zu", v);
}

/* The table as a selection string; a range over every size as the bare algorithm name. */
static void table_str(const gcoll__algo_table_t *t, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (t->nranges == 0)
        snprintf(buf, len, "auto");
    for (int i = 0; i < t->nranges && n < len; i++) {
        const gcoll__algo_range_t *r = &t->range[i];
        char lo[32], hi[32];
        size_str(r->lo, lo, sizeof(lo));
        size_str(r->hi, hi, sizeof(hi));
        const char *name = gcoll__algo_get(r->algo)->name;
        if (r->lo == 0 && r->hi == SIZE_MAX)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ";" : "", name);
        else
            n += (size_t)snprintf(buf + n, len - n, "%s%s:%s-%s", i ? ";" : "", name, lo, hi);
    }
}

static int same_table(const gcoll__algo_table_t *a, const gcoll__algo_table_t *b)
{
    if (a->nranges != b->nranges)
        return 0;
    for (int i = 0; i < a->nranges; i++)
        if (a->range[i].lo != b->range[i].lo || a->range[i].hi != b->range[i].hi ||
            a->range[i].algo != b->range[i].algo)
            return 0;
    return 1;
}

/* The index of GCOLL_<COLL> in the registry, or -1. */
static long var_of(int coll)
{
    char want[64] = "GCOLL_";
    const char *name = gcoll__coll_name(coll);
    for (size_t i = 0; name[i] && i + 7 < sizeof(want); i++)
        want[6 + i] = (char)toupper((unsigned char)name[i]);
    for (size_t i = 0; i < gcoll_config_count(); i++) {
        gcoll_config_var_t v;
        if (gcoll_config_var(i, &v) == GCOLL_SUCCESS && strcmp(v.name, want) == 0)
            return (long)i;
    }
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int coll = data[0] % GCOLL_COLL_COUNT;
    long idx = var_of(coll);
    PROPERTY(idx >= 0, "no variable GCOLL_<%s> in the registry", gcoll__coll_name(coll));
    gcoll_config_var_t var;
    gcoll_config_var((size_t)idx, &var);
    char *s = fuzz_string(data, size, 1);
    memset(&gcoll__algo_tables[coll], 0xA5, sizeof(gcoll__algo_tables[coll]));
    gcoll_status_t st = gcoll__config_parse((size_t)idx, s);
    if (st != GCOLL_SUCCESS) {
        PROPERTY(st == GCOLL_ERR_INVALID_ARG, "%s='%s' fails with %s, not GCOLL_ERR_INVALID_ARG", var.name, s,
                 gcoll_status_name(st));
        PROPERTY(strstr(gcoll_last_error(), var.name) != NULL, "%s='%s' rejected without naming it: '%s'", var.name, s,
                 gcoll_last_error());
        free(s);
        return 0;
    }
    gcoll__algo_table_t t = gcoll__algo_tables[coll];
    PROPERTY(strcmp(s, "auto") == 0 ? t.nranges == 0 : t.nranges >= 1 && t.nranges <= GCOLL_MAX_RANGES,
             "%s='%s' gives %d ranges", var.name, s, t.nranges);
    for (int i = 0; i < t.nranges; i++) {
        const gcoll__algo_t *a = gcoll__algo_get(t.range[i].algo);
        PROPERTY(a && (int)a->coll == coll && a->family == GCOLL_FAMILY_PLAIN,
                 "%s='%s': range %d has algorithm %d, not one of %s's plain family", var.name, s, i, t.range[i].algo,
                 gcoll__coll_name(coll));
        PROPERTY(t.range[i].lo < t.range[i].hi, "%s='%s': range %d is %zu-%zu", var.name, s, i, t.range[i].lo,
                 t.range[i].hi);
    }
    char printed[1024];
    table_str(&t, printed, sizeof(printed));
    memset(&gcoll__algo_tables[coll], 0x5A, sizeof(gcoll__algo_tables[coll]));
    st = gcoll__config_parse((size_t)idx, printed);
    PROPERTY(st == GCOLL_SUCCESS, "%s='%s' printed back as '%s' is rejected: %s", var.name, s, printed,
             gcoll_last_error());
    PROPERTY(same_table(&t, &gcoll__algo_tables[coll]), "%s='%s' printed back as '%s' parses to another table",
             var.name, s, printed);
    free(s);
    return 0;
}
