/* Large scratch buffers kept for reuse between operations: above malloc's mmap threshold each
 * fresh buffer is mapped, faulted in a page at a time and unmapped again on every call, which
 * costs more CPU than the copies that use it (GCOLL_SCRATCH_CACHE bounds what is kept). */
#ifndef GCOLL_SCRATCH_H
#define GCOLL_SCRATCH_H

#include <stddef.h>

/* A buffer of at least bytes (aligned as malloc's), a kept one where one fits; NULL without memory. */
void *gcoll__scratch_get(size_t bytes);
/* Gives back a buffer from gcoll__scratch_get (NULL is ignored): kept, or freed. */
void gcoll__scratch_put(void *p);
/* Frees every kept buffer (at finalize). */
void gcoll__scratch_drain(void);

#endif
