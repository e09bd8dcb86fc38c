/* The process's one libfabric endpoint, shared by all its communicators over ofi: a reference
 * count (the first communicator publishes what it opened, the last closes it), the channel that
 * tells a communicator's messages apart in the tag, agreed by its ranks at creation, and the
 * address vector's entries, one per peer process whichever communicators name it. */
#include "transports/ofi/ofi.h"

#if GCOLL_HAVE_OFI

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "transports/ofi/ofi_internal.h"

struct ofi_av_name {
    char *name; /* NULL: a free cell */
    size_t len;
    fi_addr_t addr;
};

static pthread_mutex_t procs_lock = PTHREAD_MUTEX_INITIALIZER; /* the_proc and every refs */
static gcoll__ofi_proc_t *the_proc;

gcoll__ofi_proc_t *gcoll__ofi_proc_new(void)
{
    gcoll__ofi_proc_t *p = calloc(1, sizeof(*p));
    if (p && pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

gcoll__ofi_proc_t *gcoll__ofi_proc_get(void)
{
    pthread_mutex_lock(&procs_lock);
    gcoll__ofi_proc_t *p = the_proc;
    if (p)
        p->refs++;
    pthread_mutex_unlock(&procs_lock);
    return p;
}

void gcoll__ofi_proc_free(gcoll__ofi_proc_t *p)
{
    gcoll__ofi_proc_close_objects(p);
    for (size_t i = 0; i < p->names_cap; i++)
        free(p->names[i].name);
    free(p->names);
    free(p->chans);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

gcoll__ofi_proc_t *gcoll__ofi_proc_publish(gcoll__ofi_proc_t *p)
{
    pthread_mutex_lock(&procs_lock);
    gcoll__ofi_proc_t *have = the_proc;
    if (have)
        have->refs++;
    else {
        p->refs = 1;
        the_proc = p;
    }
    pthread_mutex_unlock(&procs_lock);
    if (have)
        gcoll__ofi_proc_free(p);
    return have ? have : p;
}

void gcoll__ofi_proc_put(gcoll__ofi_proc_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&procs_lock);
    int last = --p->refs == 0;
    if (last && the_proc == p)
        the_proc = NULL;
    pthread_mutex_unlock(&procs_lock);
    if (last)
        gcoll__ofi_proc_free(p);
}

void gcoll__ofi_proc_close_objects(gcoll__ofi_proc_t *p)
{
    if (p->ep)
        fi_close(&p->ep->fid);
    gcoll__ofi_free_orphans(p);
    if (p->av)
        fi_close(&p->av->fid);
    if (p->cq)
        fi_close(&p->cq->fid);
    if (p->mrc) {
        gcoll__ofi_mr_stats_t s = gcoll__ofi_mrcache_stats(p->mrc);
        GCOLL_LOG(GCOLL_LOG_DEBUG, "ofi: registration cache: %llu hits, %llu misses, %llu evictions",
                  (unsigned long long)s.hits, (unsigned long long)s.misses, (unsigned long long)s.evictions);
        gcoll__ofi_mrcache_destroy(p->mrc);
    }
    if (p->domain)
        fi_close(&p->domain->fid);
    if (p->fabric)
        fi_close(&p->fabric->fid);
    fi_freeinfo(p->info);
    p->ep = NULL;
    p->av = NULL;
    p->cq = NULL;
    p->mrc = NULL;
    p->domain = NULL;
    p->fabric = NULL;
    p->info = NULL;
}

void gcoll__ofi_proc_retire(gcoll__ofi_proc_t *p, const char *why)
{
    pthread_mutex_lock(&procs_lock);
    if (the_proc == p)
        the_proc = NULL;
    pthread_mutex_unlock(&procs_lock);
    GCOLL_LOG(GCOLL_LOG_WARN, "%s", why);
    gcoll__ofi_proc_close_objects(p);
    snprintf(p->broken, sizeof(p->broken), "%s", why);
}

/* ---- channels ---- */

static int chan_used(const gcoll__ofi_proc_t *p, uint64_t c)
{
    for (int i = 0; i < p->nchans; i++)
        if (p->chans[i] == c)
            return 1;
    return 0;
}

/* Takes channel v % limit if no communicator of this process has it: 1 taken, 0 in use, -1 no memory. */
static int chan_take(gcoll__ofi_proc_t *p, uint64_t v)
{
    pthread_mutex_lock(&p->lock);
    uint64_t c = v % p->chan_limit;
    int rc = !chan_used(p, c);
    if (rc && p->nchans == p->chans_cap) {
        int cap = p->chans_cap ? 2 * p->chans_cap : 16;
        uint64_t *m = realloc(p->chans, (size_t)cap * sizeof(*m));
        if (m) {
            p->chans = m;
            p->chans_cap = cap;
        } else
            rc = -1;
    }
    if (rc == 1)
        p->chans[p->nchans++] = c;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void gcoll__ofi_proc_drop_channel(gcoll__ofi_proc_t *p, uint64_t chan)
{
    for (int i = 0; i < p->nchans; i++)
        if (p->chans[i] == chan) {
            p->chans[i] = p->chans[--p->nchans];
            return;
        }
}

void gcoll__ofi_proc_release_channel(gcoll__ofi_proc_t *p, uint64_t chan)
{
    pthread_mutex_lock(&p->lock);
    gcoll__ofi_proc_drop_channel(p, chan);
    pthread_mutex_unlock(&p->lock);
}

/* Every rank proposes the first draw from its cursor whose channel its process has free; the
 * largest proposal is tried everywhere (taken at once where free, so that a communicator made
 * meanwhile by another thread cannot draw it too); where any rank has it in use, all go past it.
 * Draws only go up, so channels of closed communicators come back only after all the others.
 * Every channel has been tried once the draws pass the first agreed one by the channel count:
 * that bound is the same on every rank, whatever their cursors. */
gcoll_status_t gcoll__ofi_proc_channel(gcoll__ofi_proc_t *p, gcoll__boot_t *group, uint64_t *chan)
{
    pthread_mutex_lock(&p->lock);
    uint64_t from = p->next_chan, start = 0;
    pthread_mutex_unlock(&p->lock);
    for (int round = 0;; round++) {
        pthread_mutex_lock(&p->lock);
        uint64_t mine = from;
        while (mine - from < p->chan_limit && chan_used(p, mine % p->chan_limit))
            mine++; /* past them all when every channel is in use here: the check below fails */
        pthread_mutex_unlock(&p->lock);
        int64_t v = (int64_t)mine;
        GCOLL_CHECK(gcoll__boot_reduce_i64(group, &v, 1, 1));
        if (round == 0)
            start = (uint64_t)v;
        /* each rank's verdict: 1 taken, 0 in use here, -1 no memory, -2 every channel tried */
        int took = (uint64_t)v - start >= p->chan_limit ? -2 : chan_take(p, (uint64_t)v), all = took;
        gcoll_status_t st = gcoll__boot_min_int(group, &all);
        if (st == GCOLL_SUCCESS && all == 1) {
            pthread_mutex_lock(&p->lock);
            if (p->next_chan <= (uint64_t)v)
                p->next_chan = (uint64_t)v + 1;
            pthread_mutex_unlock(&p->lock);
            *chan = (uint64_t)v % p->chan_limit;
            return GCOLL_SUCCESS;
        }
        if (took == 1)
            gcoll__ofi_proc_release_channel(p, (uint64_t)v % p->chan_limit);
        if (st != GCOLL_SUCCESS)
            return st;
        if (all == -1)
            return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for a channel");
        if (all == -2)
            return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                                "ofi transport: every one of provider %s's %llu channels is in use by a live "
                                "communicator of some rank's process (HINT: free communicators no longer used)",
                                p->prov, (unsigned long long)p->chan_limit);
        from = (uint64_t)v + 1;
    }
}

/* ---- the address vector ---- */

static size_t name_hash(const void *name, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const unsigned char *)name)[i]) * 1099511628211ull;
    return (size_t)h;
}

static struct ofi_av_name *name_cell(struct ofi_av_name *t, size_t cap, const void *name, size_t len)
{
    for (size_t i = name_hash(name, len) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!t[i].name || (t[i].len == len && memcmp(t[i].name, name, len) == 0))
            return &t[i];
}

static gcoll_status_t names_grow(gcoll__ofi_proc_t *p)
{
    size_t cap = p->names_cap ? 2 * p->names_cap : 64;
    struct ofi_av_name *t = calloc(cap, sizeof(*t));
    if (!t)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for %zu peer names", cap);
    for (size_t i = 0; i < p->names_cap; i++)
        if (p->names[i].name)
            *name_cell(t, cap, p->names[i].name, p->names[i].len) = p->names[i];
    free(p->names);
    p->names = t;
    p->names_cap = cap;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__ofi_proc_av(gcoll__ofi_proc_t *p, const void *name, size_t len, fi_addr_t *out)
{
    if (p->broken[0])
        return gcoll__error(GCOLL_ERR_TRANSPORT, "%s", p->broken);
    if (2 * (p->names_used + 1) > p->names_cap)
        GCOLL_CHECK(names_grow(p));
    struct ofi_av_name *c = name_cell(p->names, p->names_cap, name, len);
    if (c->name) {
        *out = c->addr;
        return GCOLL_SUCCESS;
    }
    char *copy = malloc(len);
    if (!copy)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi transport: no memory for a peer name");
    int rc = fi_av_insert(p->av, name, 1, out, 0, NULL);
    if (rc != 1) {
        free(copy);
        return gcoll__error(GCOLL_ERR_TRANSPORT, "ofi transport: fi_av_insert failed on provider %s: %s", p->prov,
                            fi_strerror(rc < 0 ? -rc : FI_EINVAL));
    }
    memcpy(copy, name, len);
    c->name = copy;
    c->len = len;
    c->addr = *out;
    p->names_used++;
    return GCOLL_SUCCESS;
}

#endif
