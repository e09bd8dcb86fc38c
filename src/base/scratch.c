/* The scratch buffer cache (scratch.h): a few freed buffers, the most recent last, within
 * GCOLL_SCRATCH_CACHE bytes in all. A request takes the smallest kept buffer that holds it and is
 * at most twice its size, so a small request does not pin a large buffer. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "base/config.h"
#include "base/scratch.h"

#define SLOTS 32
#define MIN_KEPT ((size_t)64 << 10) /* smaller buffers come from malloc's own free lists */

/* A header before each buffer records its size; its alignment keeps malloc's for the buffer. */
typedef struct {
    _Alignas(max_align_t) size_t bytes;
} header_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static header_t *kept[SLOTS];
static size_t nkept, held;

/* Takes kept buffer i out of the cache (the lock held); 0 is the oldest. */
static header_t *take(size_t i)
{
    header_t *h = kept[i];
    held -= h->bytes;
    for (; i + 1 < nkept; i++)
        kept[i] = kept[i + 1];
    nkept--;
    return h;
}

void *gcoll__scratch_get(size_t bytes)
{
    header_t *h = NULL;
    if (bytes >= MIN_KEPT) {
        pthread_mutex_lock(&lock);
        size_t best = SLOTS;
        for (size_t i = 0; i < nkept; i++)
            if (kept[i]->bytes >= bytes && kept[i]->bytes / 2 <= bytes &&
                (best == SLOTS || kept[i]->bytes < kept[best]->bytes))
                best = i;
        if (best < SLOTS)
            h = take(best);
        pthread_mutex_unlock(&lock);
    }
    if (h)
        return h + 1;
    if (bytes > (size_t)-1 - sizeof(*h) || !(h = malloc(sizeof(*h) + (bytes ? bytes : 1))))
        return NULL;
    h->bytes = bytes;
    return h + 1;
}

void gcoll__scratch_put(void *p)
{
    if (!p)
        return;
    header_t *h = (header_t *)p - 1, *evicted[SLOTS + 1];
    size_t nev = 0, cap = gcoll__config.scratch_cache;
    if (h->bytes < MIN_KEPT || h->bytes > cap) {
        free(h);
        return;
    }
    pthread_mutex_lock(&lock);
    if (nkept == SLOTS)
        evicted[nev++] = take(0);
    kept[nkept++] = h;
    held += h->bytes;
    while (held > cap)
        evicted[nev++] = take(0);
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < nev; i++)
        free(evicted[i]);
}

void gcoll__scratch_drain(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nkept; i++)
        free(kept[i]);
    nkept = held = 0;
    pthread_mutex_unlock(&lock);
}
