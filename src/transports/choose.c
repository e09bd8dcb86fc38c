/* The choice of transports. GCOLL_TRANSPORT_INTER and GCOLL_TRANSPORT_INTRA join the
 * configuration registry as a group of their own, their names and descriptions built from the
 * transport list (registry.h). At init the transport between hosts is the one INTER names, or
 * auto's first of the list whose probe says it can serve; the reason is kept for the
 * per-communicator log line. */
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "base/text.h"
#include "base/log.h"
#include "transports/choose.h"
#include "transports/plugin/plugin.h"

#define MAX_CHOICES 8

/* A variable's choices: their names (NULL-terminated, as the registry's parser wants them), the
 * entry each names (NULL: auto, or inter), and the index the parser stores. */
typedef struct {
    const char *names[MAX_CHOICES + 1];
    const gcoll__tp_entry_t *of[MAX_CHOICES];
    int n, picked;
    char accepts[128], desc[256];
} choices_t;

static choices_t inter, intra;

static gcoll__var_t vars[] = {
    {"GCOLL_TRANSPORT_INTRA", intra.accepts, NULL, intra.desc, NULL, intra.names, &intra.picked, 0},
    {"GCOLL_TRANSPORT_INTER", inter.accepts, "auto", inter.desc, NULL, inter.names, &inter.picked, 0},
};

static gcoll__var_group_t group = {2, vars, sizeof(vars) / sizeof(vars[0]), NULL};

static void add(choices_t *c, const char *name, const gcoll__tp_entry_t *e)
{
    if (c->n == MAX_CHOICES)
        return;
    gcoll__append(c->accepts, sizeof(c->accepts), "%s%s", c->n ? "|" : "", name);
    c->names[c->n] = name;
    c->of[c->n++] = e;
}

/* Walks the list: each transport a variable may name is a choice, and the automatic choice
 * between hosts ("auto" between hosts, "inter" inside one) stands where its candidates start. */
__attribute__((constructor)) static void add_vars(void)
{
    int autos = 0;
    gcoll__append(inter.desc, sizeof(inter.desc), "between hosts: auto takes");
    for (const gcoll__tp_entry_t *e = gcoll__transports; e->name; e++) {
        if (e->roles & GCOLL_TP_AUTO) {
            if (autos++ == 0) {
                add(&inter, "auto", NULL);
                add(&intra, "inter", NULL);
            }
            gcoll__append(inter.desc, sizeof(inter.desc), "%s %s", autos > 1 ? ", else" : "", e->desc);
        }
        if (e->roles & GCOLL_TP_INTER)
            add(&inter, e->name, e);
        if (e->roles & GCOLL_TP_INTRA)
            add(&intra, e->name, e);
    }
    gcoll__append(intra.desc, sizeof(intra.desc), "between ranks of one host:");
    for (int i = 0; i < intra.n; i++) {
        const char *sep = i == 0 ? "" : i + 1 < intra.n ? "," : ", or";
        gcoll__append(intra.desc, sizeof(intra.desc), "%s %s", sep,
                      intra.of[i] ? intra.of[i]->desc : "the transport used between hosts");
    }
    vars[0].def = intra.names[0]; /* the most preferred inside a host */
    gcoll__config_add_group(&group);
}

const gcoll__tp_entry_t *gcoll__transport_inter(void)
{
    return inter.of[inter.picked];
}

const gcoll__tp_entry_t *gcoll__transport_intra(void)
{
    return intra.of[intra.picked];
}

gcoll_status_t gcoll__transport_choose(const gcoll__transport_t **out, const char **why)
{
    int plugged = strcmp(gcoll__config.transport_plugin, "none") != 0;
    if (plugged)
        GCOLL_CHECK(gcoll__plugin_load(gcoll__config.transport_plugin));
    const gcoll__tp_entry_t *named = gcoll__transport_inter();
    if (named) {
        *out = named->ops;
        *why = " (GCOLL_TRANSPORT_INTER)";
        if (plugged)
            GCOLL_LOG(GCOLL_LOG_WARN,
                      "GCOLL_TRANSPORT_PLUGIN is loaded but GCOLL_TRANSPORT_INTER=%s "
                      "takes precedence (HINT: GCOLL_TRANSPORT_INTER=auto uses the plugin)",
                      named->name);
        return GCOLL_SUCCESS;
    }
    /* A transport that always serves is taken for want of those before it: the last one's
     * reason says why. */
    static char reason[160];
    char passed[128] = "";
    for (const gcoll__tp_entry_t *e = gcoll__transports; e->name; e++) {
        char w[128];
        if (!(e->roles & GCOLL_TP_AUTO))
            continue;
        if (e->probe(w, sizeof(w))) {
            snprintf(reason, sizeof(reason), " (auto: %s)", w[0] ? w : passed);
            *out = e->ops;
            *why = reason;
            return GCOLL_SUCCESS;
        }
        snprintf(passed, sizeof(passed), "%s", w);
    }
    return gcoll__error(GCOLL_ERR_INTERNAL, "no transport in the list can serve between hosts");
}

void gcoll__transport_release(void)
{
    gcoll__plugin_unload();
}
