/* Copies of large results that are written once and not read again soon (see copy.c): non-temporal
 * stores where the CPU has them. */
#ifndef GCOLL_COPY_H
#define GCOLL_COPY_H

#include <stddef.h>

void gcoll__copy_stream(void *dst, const void *src, size_t n);

#endif
