/* The bootstrap group of ranks that meet through a key-value store the application provides
 * (gcoll_store_t: a c10d store, a shared directory). Every operation has a number; a rank
 * publishes its part under "gcoll/<group>/<number>/<rank>", an allgather's result under
 * ".../<number>/all". A split's groups take their parent's key, the split's number and their
 * color as their own. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/boot.h"
#include "base/error.h"

#define KEY_BYTES 200

typedef struct {
    gcoll__boot_t b;
    gcoll_store_t store;
    char group[128]; /* this group's part of every key */
    unsigned long long seq;
    char why[256]; /* set once the group failed: every later call fails with it */
} kv_t;

static const gcoll__boot_ops_t kv_ops;

static kv_t *kv_new(const gcoll_store_t *store, int rank, int size, const char *group)
{
    kv_t *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->b = (gcoll__boot_t){&kv_ops, rank, size, MPI_COMM_NULL};
    k->store = *store;
    snprintf(k->group, sizeof(k->group), "%s", group);
    return k;
}

static void kv_free(gcoll__boot_t *b)
{
    free(b);
}

static gcoll_status_t failed(kv_t *k)
{
    return gcoll__error(GCOLL_ERR_ABORTED, "bootstrap: the store group failed earlier: %s", k->why);
}

/* A store call's failure: the group is failed from now on, and the message names the key. */
static gcoll_status_t store_error(kv_t *k, gcoll_status_t st, const char *what, const char *key, const char *why)
{
    if (st == GCOLL_SUCCESS)
        st = GCOLL_ERR_INTERNAL;
    snprintf(k->why, sizeof(k->why), "the store's %s of '%s' failed: %s (%s)", what, key,
             why[0] ? why : "no reason given", gcoll_status_name(st));
    return gcoll__error(st, "bootstrap: %s", k->why);
}

/* The key of rank's part of operation seq; rank -1: the operation's whole result. */
static void key_of(const kv_t *k, unsigned long long seq, int rank, char *key)
{
    if (rank < 0)
        snprintf(key, KEY_BYTES, "gcoll/%s/%llu/all", k->group, seq);
    else
        snprintf(key, KEY_BYTES, "gcoll/%s/%llu/%d", k->group, seq, rank);
}

/* Publishes this rank's part of operation seq (as_rank -1: its whole result). */
static gcoll_status_t put(kv_t *k, unsigned long long seq, int as_rank, const void *buf, size_t len)
{
    char key[KEY_BYTES], why[256] = "";
    key_of(k, seq, as_rank, key);
    gcoll_status_t st = k->store.set(k->store.ctx, key, buf, len, why, sizeof(why));
    return st == GCOLL_SUCCESS ? st : store_error(k, st, "set", key, why);
}

/* Reads rank's part of operation seq (-1: the whole result), which must be exactly len bytes. */
static gcoll_status_t take(kv_t *k, unsigned long long seq, int rank, void *buf, size_t len)
{
    char key[KEY_BYTES], why[256] = "";
    key_of(k, seq, rank, key);
    size_t got = 0;
    gcoll_status_t st = k->store.get(k->store.ctx, key, buf, len, &got, why, sizeof(why));
    if (st != GCOLL_SUCCESS)
        return store_error(k, st, "get", key, why);
    if (got != len) {
        snprintf(why, sizeof(why),
                 "%zu bytes where %zu were expected: ranks disagree on the setup, or the key "
                 "space is shared with another communicator",
                 got, len);
        return store_error(k, GCOLL_ERR_INVALID_USAGE, "value", key, why);
    }
    return GCOLL_SUCCESS;
}

/* Climbs a binomial tree of the group (a rank's parent clears its lowest set bit, so each child's
 * subtree is a block of contiguous ranks): a rank reads its children's blocks, publishes its
 * subtree's, and rank 0 publishes the whole, which the others read. A rank makes at most
 * log2(n) + 1 reads, the store n in all, where reading every rank's part would make each rank read
 * n - 1 and the store serve n * (n - 1). */
static gcoll_status_t kv_allgather(gcoll__boot_t *b, const void *mine, void *all, size_t len)
{
    kv_t *k = (kv_t *)b;
    if (k->why[0])
        return failed(k);
    unsigned long long seq = k->seq++;
    long n = b->size, r = b->rank, end = n;
    char *at = all;
    memcpy(at + (size_t)r * len, mine, len);
    for (long bit = 1; bit < n; bit <<= 1) {
        if (r & bit) { /* r's lowest set bit: its subtree ends there */
            end = r + bit < n ? r + bit : n;
            break;
        }
        long kid = r + bit, kid_end = kid + bit < n ? kid + bit : n;
        if (kid >= n)
            break;
        GCOLL_CHECK(take(k, seq, (int)kid, at + (size_t)kid * len, (size_t)(kid_end - kid) * len));
    }
    if (r == 0)
        return put(k, seq, -1, all, (size_t)n * len);
    GCOLL_CHECK(put(k, seq, (int)r, at + (size_t)r * len, (size_t)(end - r) * len));
    return take(k, seq, -1, all, (size_t)n * len);
}

static gcoll_status_t kv_bcast(gcoll__boot_t *b, void *buf, size_t len, int root)
{
    kv_t *k = (kv_t *)b;
    if (k->why[0])
        return failed(k);
    unsigned long long seq = k->seq++;
    return b->rank == root ? put(k, seq, root, buf, len) : take(k, seq, root, buf, len);
}

static gcoll_status_t kv_barrier(gcoll__boot_t *b)
{
    char one = 1, *all = malloc((size_t)b->size);
    if (!all)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a barrier of %d", b->size);
    gcoll_status_t st = kv_allgather(b, &one, all, 1);
    free(all);
    return st;
}

static gcoll_status_t kv_split(gcoll__boot_t *b, int color, int key, gcoll__boot_t **out)
{
    kv_t *k = (kv_t *)b;
    int n = b->size;
    int32_t mine[2] = {color < 0 ? -1 : color, key}, *ck = malloc(sizeof(int32_t) * 2 * (size_t)n);
    if (!ck)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory to split a group of %d", n);
    unsigned long long seq = k->seq;
    gcoll_status_t st = kv_allgather(b, mine, ck, sizeof(mine));
    /* the new group: ranks of this color by key, then rank */
    int size = 0, rank = 0;
    for (int r = 0; st == GCOLL_SUCCESS && color >= 0 && r < n; r++) {
        if (ck[2 * r] != mine[0])
            continue;
        size++;
        rank += ck[2 * r + 1] < key || (ck[2 * r + 1] == key && r < b->rank);
    }
    free(ck);
    if (st != GCOLL_SUCCESS || color < 0)
        return st;
    char group[sizeof(k->group)];
    int w = snprintf(group, sizeof(group), "%s.%llu.%d", k->group, seq, color);
    if (w < 0 || (size_t)w >= sizeof(group))
        return gcoll__error(GCOLL_ERR_UNSUPPORTED, "bootstrap: splits nested too deep for a store group's key (%s...)",
                            k->group);
    kv_t *sub = kv_new(&k->store, rank, size, group);
    if (!sub)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a group");
    *out = &sub->b;
    return GCOLL_SUCCESS;
}

static const gcoll__boot_ops_t kv_ops = {kv_allgather, kv_bcast, kv_barrier, kv_split, gcoll__boot_split_by_host,
                                         kv_free};

gcoll_status_t gcoll__boot_store(const gcoll_store_t *store, int rank, int size, gcoll__boot_t **out)
{
    *out = NULL;
    if (!store)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "store is NULL");
    size_t len;
    unsigned magic;
    memcpy(&len, (const char *)store + offsetof(gcoll_store_t, size), sizeof(len));
    memcpy(&magic, (const char *)store + offsetof(gcoll_store_t, magic), sizeof(magic));
    if (magic != GCOLL_STORE_MAGIC)
        return gcoll__error(GCOLL_ERR_INVALID_ARG,
                            "store is not initialized (store->magic is %#x, not GCOLL_STORE_MAGIC): start from "
                            "GCOLL_STORE_INIT",
                            magic);
    if (len < sizeof(gcoll_store_t))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "store->size %zu is smaller than gcoll_store_t (%zu bytes)", len,
                            sizeof(gcoll_store_t));
    if (!store->set || !store->get)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "store->%s is NULL", !store->set ? "set" : "get");
    if (size < 1)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "size %d is not a number of ranks (1 or more)", size);
    if (rank < 0 || rank >= size)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "rank %d is not in [0, size %d)", rank, size);
    kv_t *k = kv_new(store, rank, size, "c");
    if (!k)
        return gcoll__error(GCOLL_ERR_NOMEM, "bootstrap: no memory for a store group");
    *out = &k->b;
    return GCOLL_SUCCESS;
}
