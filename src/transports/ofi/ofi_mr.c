/* The registration cache of ofi_mr.h: a small array searched linearly (tens of entries, each
 * lookup far cheaper than a registration). Entries in use by an operation are never evicted; when
 * every entry is in use the cache grows past its capacity and shrinks back as entries go idle. */
#include "base/error.h"

#if GCOLL_HAVE_OFI

#include <stdlib.h>
#include <unistd.h>

#include "transports/ofi/ofi_mr.h"

struct gcoll__ofi_mr_entry {
    uintptr_t base;
    size_t len;
    void *handle, *desc;
    unsigned refs;     /* operations (and reg_mem handles) holding it */
    uint64_t last_use; /* the cache's clock at the latest get: LRU order */
};

struct gcoll__ofi_mrcache {
    gcoll__ofi_mr_ops_t ops;
    size_t capacity, n, room;
    gcoll__ofi_mr_entry_t **e;
    uint64_t clock;
    uintptr_t page;
    gcoll__ofi_mr_stats_t stats;
};

gcoll_status_t gcoll__ofi_mrcache_create(size_t capacity, const gcoll__ofi_mr_ops_t *ops, gcoll__ofi_mrcache_t **out)
{
    if (capacity == 0)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "ofi: registration cache capacity 0");
    gcoll__ofi_mrcache_t *c = calloc(1, sizeof(*c));
    if (c)
        c->e = calloc(capacity, sizeof(*c->e));
    if (!c || !c->e) {
        free(c);
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi: no memory for the registration cache");
    }
    c->ops = *ops;
    c->capacity = c->room = capacity;
    long page = sysconf(_SC_PAGESIZE);
    c->page = page > 0 ? (uintptr_t)page : 4096;
    *out = c;
    return GCOLL_SUCCESS;
}

static void drop(gcoll__ofi_mrcache_t *c, size_t i)
{
    c->ops.dereg(c->ops.ctx, c->e[i]->handle);
    free(c->e[i]);
    c->e[i] = c->e[--c->n];
}

/* Makes room for one more entry: evicts idle ones, least recently used first, down to below
 * capacity; grows the array when every entry is held. */
static gcoll_status_t make_room(gcoll__ofi_mrcache_t *c)
{
    while (c->n >= c->capacity) {
        size_t victim = c->n;
        for (size_t i = 0; i < c->n; i++)
            if (c->e[i]->refs == 0 && (victim == c->n || c->e[i]->last_use < c->e[victim]->last_use))
                victim = i;
        if (victim == c->n)
            break;
        drop(c, victim);
        c->stats.evictions++;
    }
    if (c->n < c->room)
        return GCOLL_SUCCESS;
    gcoll__ofi_mr_entry_t **grown = realloc(c->e, 2 * c->room * sizeof(*grown));
    if (!grown)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi: no memory to grow the registration cache");
    c->e = grown;
    c->room *= 2;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__ofi_mrcache_get(gcoll__ofi_mrcache_t *c, const void *buf, size_t len, gcoll__ofi_mr_entry_t **out)
{
    uintptr_t lo = (uintptr_t)buf, hi = lo + (len ? len : 1);
    c->clock++;
    for (size_t i = 0; i < c->n; i++) {
        gcoll__ofi_mr_entry_t *e = c->e[i];
        if (e->base <= lo && hi <= e->base + e->len) {
            e->refs++;
            e->last_use = c->clock;
            c->stats.hits++;
            *out = e;
            return GCOLL_SUCCESS;
        }
    }
    GCOLL_CHECK(make_room(c));
    gcoll__ofi_mr_entry_t *e = calloc(1, sizeof(*e));
    if (!e)
        return gcoll__error(GCOLL_ERR_NOMEM, "ofi: no memory for a registration");
    /* Whole pages: neighbouring buffers of one allocation then share the registration. */
    e->base = lo & ~(c->page - 1);
    e->len = ((hi + c->page - 1) & ~(c->page - 1)) - e->base;
    gcoll_status_t st = c->ops.reg(c->ops.ctx, (void *)e->base, e->len, &e->handle, &e->desc);
    if (st != GCOLL_SUCCESS) {
        free(e);
        return st;
    }
    e->refs = 1;
    e->last_use = c->clock;
    c->e[c->n++] = e;
    c->stats.misses++;
    *out = e;
    return GCOLL_SUCCESS;
}

void *gcoll__ofi_mr_desc(const gcoll__ofi_mr_entry_t *e)
{
    return e->desc;
}

void gcoll__ofi_mrcache_put(gcoll__ofi_mrcache_t *c, gcoll__ofi_mr_entry_t *e)
{
    if (--e->refs || c->n <= c->capacity)
        return;
    /* Grown past capacity while everything was held: shrink as soon as entries go idle. */
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i] == e) {
            drop(c, i);
            c->stats.evictions++;
            return;
        }
}

gcoll__ofi_mr_stats_t gcoll__ofi_mrcache_stats(const gcoll__ofi_mrcache_t *c)
{
    gcoll__ofi_mr_stats_t s = c->stats;
    s.entries = c->n;
    return s;
}

void gcoll__ofi_mrcache_destroy(gcoll__ofi_mrcache_t *c)
{
    while (c->n)
        drop(c, c->n - 1);
    free(c->e);
    free(c);
}

#endif
