/* Bounded text building for messages and descriptions: appending to a fixed buffer, cut at
 * its end rather than overflowing it. */
#ifndef GCOLL_TEXT_H
#define GCOLL_TEXT_H

#include <stddef.h>

/* Appends the formatted text to the string in buf (len bytes in all), cutting it at len. */
void gcoll__append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
