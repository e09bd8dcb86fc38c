/* The OFI transport's registration cache: providers that want FI_MR_LOCAL need every buffer
 * registered, and registering per message costs a system call or more. Entries are page-rounded
 * address ranges; a buffer inside one reuses it; idle entries are evicted, least recently used
 * first, once the cache holds its capacity. Registration itself is a callback, so the cache knows
 * nothing of libfabric (and the tests can count what it asks for). */
#ifndef GCOLL_OFI_MR_H
#define GCOLL_OFI_MR_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"

typedef struct {
    /* Registers [base, base + len); *handle is passed back to dereg, *desc to the operations. */
    gcoll_status_t (*reg)(void *ctx, void *base, size_t len, void **handle, void **desc);
    void (*dereg)(void *ctx, void *handle);
    void *ctx;
} gcoll__ofi_mr_ops_t;

typedef struct gcoll__ofi_mr_entry gcoll__ofi_mr_entry_t;
typedef struct gcoll__ofi_mrcache gcoll__ofi_mrcache_t;

typedef struct {
    uint64_t hits, misses, evictions;
    size_t entries;
} gcoll__ofi_mr_stats_t;

gcoll_status_t gcoll__ofi_mrcache_create(size_t capacity, const gcoll__ofi_mr_ops_t *ops, gcoll__ofi_mrcache_t **out);
/* Finds or makes a registration covering [buf, buf + len) and holds it until put. */
gcoll_status_t gcoll__ofi_mrcache_get(gcoll__ofi_mrcache_t *c, const void *buf, size_t len,
                                      gcoll__ofi_mr_entry_t **out);
void *gcoll__ofi_mr_desc(const gcoll__ofi_mr_entry_t *e);
void gcoll__ofi_mrcache_put(gcoll__ofi_mrcache_t *c, gcoll__ofi_mr_entry_t *e);
gcoll__ofi_mr_stats_t gcoll__ofi_mrcache_stats(const gcoll__ofi_mrcache_t *c);
/* Deregisters every entry, held or not: the endpoint that used them is already closed. */
void gcoll__ofi_mrcache_destroy(gcoll__ofi_mrcache_t *c);

#endif
