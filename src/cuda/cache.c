/* The cache of pinned host and device memory that the staged pipeline and the CUDA IPC
 * operations draw their scratch from: a list of free blocks, each reused for requests up to its
 * size (an allocation costs milliseconds, and freeing device memory waits for the whole GPU). */
#include <pthread.h>
#include <stdlib.h>

#include "cuda/cuda.h"

typedef struct cached {
    struct cached *next;
    void *p;
    size_t bytes;
    int device, busy;
} cached_t;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cached_t *cache;

void *gcoll__cuda_cached_get(int device, size_t bytes)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    cached_t *best = NULL;
    pthread_mutex_lock(&cache_lock);
    for (cached_t *b = cache; b; b = b->next)
        if (!b->busy && b->device == device && b->bytes >= bytes && (!best || b->bytes < best->bytes))
            best = b;
    if (best)
        best->busy = 1;
    pthread_mutex_unlock(&cache_lock);
    if (best)
        return best->p;
    cached_t *b = calloc(1, sizeof(*b));
    if (!b || (device < 0 ? cu->host_alloc(&b->p, bytes) : cu->dev_alloc(&b->p, bytes)) != 0) {
        free(b);
        return NULL;
    }
    b->bytes = bytes;
    b->device = device;
    b->busy = 1;
    pthread_mutex_lock(&cache_lock);
    b->next = cache;
    cache = b;
    pthread_mutex_unlock(&cache_lock);
    return b->p;
}

// cppcheck-suppress constParameter ; the buffer goes back to the pool, to be written again
void gcoll__cuda_cached_put(void *p)
{
    pthread_mutex_lock(&cache_lock);
    for (cached_t *b = cache; b; b = b->next)
        if (b->p == p)
            b->busy = 0;
    pthread_mutex_unlock(&cache_lock);
}

void gcoll__cuda_release(void)
{
    pthread_mutex_lock(&cache_lock);
    const gcoll__cuda_ops_t *cu = cache ? gcoll__cuda_get() : NULL; /* no load at all when never used */
    for (cached_t *b = cache, *n; b; b = n) {
        n = b->next;
        if (cu && b->device < 0)
            cu->host_free(b->p);
        else if (cu && cu->set_device(b->device) == 0)
            cu->dev_free(b->p);
        free(b);
    }
    cache = NULL;
    pthread_mutex_unlock(&cache_lock);
}
