/* Copies of large results (see copy.c). */
#ifndef GCOLL_COPY_H
#define GCOLL_COPY_H

#include <stddef.h>

void gcoll__copy_stream(void *dst, const void *src, size_t n);

#endif
