/* libFuzzer harness for the GCOLL_* variable parsers (src/base/config.c, through gcoll__config_parse:
 * no environment). The first byte picks a variable, or, one past the last, gcoll__parse_size; the
 * rest is the value. Properties: an accepted value parses to the same configuration again, also
 * after another value of the variable; a rejected one fails with GCOLL_ERR_INVALID_ARG and a
 * message naming the variable; gcoll__parse_size agrees with an independent parser. */
#include <stddef.h>
#include <string.h>

#include "base/config.h"
#include "collectives/select.h"
#include "fuzz.h"

/* Reference for gcoll__parse_size: "max", or decimal digits with an optional K/M/G (either
 * case), the value fitting in 64 bits before and in size_t after the shift. */
static int ref_size(const char *s, size_t *out)
{
    if (strcmp(s, "max") == 0) {
        *out = SIZE_MAX;
        return 1;
    }
    if (*s < '0' || *s > '9')
        return 0;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    const char *units = "KkMmGg", *u = *s ? strchr(units, *s) : NULL;
    unsigned shift = u ? 10 * (unsigned)(1 + (u - units) / 2) : 0;
    if (u)
        s++;
    if (*s || (shift && v > (SIZE_MAX >> shift)) || v > SIZE_MAX)
        return 0;
    *out = (size_t)(v << shift);
    return 1;
}

static void check_size(const char *s)
{
    size_t got = 0, want = 0;
    int ok = gcoll__parse_size(s, &got) == GCOLL_SUCCESS, ref_ok = ref_size(s, &want);
    PROPERTY(ok == ref_ok, "gcoll__parse_size('%s') %s, the reference %s", s, ok ? "accepts" : "rejects",
             ref_ok ? "accepts" : "rejects");
    PROPERTY(!ok || got == want, "gcoll__parse_size('%s') = %zu, the reference %zu", s, got, want);
}

/* The parsed state: the base's configuration and the selection's tables. */
typedef struct {
    gcoll__config_t config;
    gcoll__algo_table_t tables[GCOLL_COLL_COUNT];
} state_t;

static void clear_state(void)
{
    memset(&gcoll__config, 0, sizeof(gcoll__config));
    memset(gcoll__algo_tables, 0, sizeof(gcoll__algo_tables));
}

static void take_state(state_t *s)
{
    s->config = gcoll__config;
    memcpy(s->tables, gcoll__algo_tables, sizeof(s->tables));
}

/* Equal states: the configuration byte for byte, the selection tables by field (their padding
 * is whatever the parser's local table held). */
static int same_state(const state_t *a, const state_t *b)
{
    if (memcmp(&a->config, &b->config, sizeof(a->config)) != 0)
        return 0;
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        const gcoll__algo_table_t *x = &a->tables[c], *y = &b->tables[c];
        if (x->nranges != y->nranges)
            return 0;
        for (int i = 0; i < x->nranges; i++)
            if (x->range[i].lo != y->range[i].lo || x->range[i].hi != y->range[i].hi ||
                x->range[i].algo != y->range[i].algo)
                return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static state_t first, again;
    if (size < 1)
        return 0;
    size_t nvars = gcoll_config_count(), idx = data[0] % (nvars + 1);
    char *s = fuzz_string(data, size, 1);
    if (idx == nvars) {
        check_size(s);
        free(s);
        return 0;
    }
    gcoll_config_var_t var;
    PROPERTY(gcoll_config_var(idx, &var) == GCOLL_SUCCESS, "variable %zu has no entry", idx);
    clear_state();
    gcoll_status_t st = gcoll__config_parse(idx, s);
    if (st == GCOLL_SUCCESS) {
        take_state(&first);
        PROPERTY(gcoll__config_parse(idx, var.default_str) == GCOLL_SUCCESS, "%s: its default '%s' is rejected",
                 var.name, var.default_str);
        clear_state();
        st = gcoll__config_parse(idx, s);
        PROPERTY(st == GCOLL_SUCCESS, "%s='%s' accepted once, then rejected: %s", var.name, s, gcoll_last_error());
        take_state(&again);
        PROPERTY(same_state(&first, &again), "%s='%s' parses to a different value the second time", var.name, s);
    } else {
        PROPERTY(st == GCOLL_ERR_INVALID_ARG, "%s='%s' fails with %s, not GCOLL_ERR_INVALID_ARG", var.name, s,
                 gcoll_status_name(st));
        PROPERTY(strstr(gcoll_last_error(), var.name) != NULL, "%s='%s' rejected without naming it: '%s'", var.name, s,
                 gcoll_last_error());
    }
    free(s);
    return 0;
}
