/* The payloads of the point-to-point transport tests (test_tcp.c, test_shm.c): bytes that depend
 * on the message's sender, receiver, tag and size, so a message delivered to the wrong receive,
 * or shifted, is caught. */
#ifndef GCOLL_TP_DATA_H
#define GCOLL_TP_DATA_H
#include <stdint.h>
#include <stdlib.h>

/* Bytes that depend on the message's identity and position, with no short period. */
static inline void fill(unsigned char *b, size_t n, unsigned seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        b[i] = (unsigned char)(s >> 24);
    }
}

/* The first byte of b that differs from what fill(seed) writes; n when none does. */
static inline size_t first_diff(const unsigned char *b, size_t n, unsigned seed)
{
    unsigned char *want = malloc(n ? n : 1);
    fill(want, n, seed);
    size_t i = 0;
    while (i < n && b[i] == want[i])
        i++;
    free(want);
    return i;
}

static inline unsigned seed_of(int src, int dst, uint32_t tag, size_t bytes)
{
    return (unsigned)src * 7919u + (unsigned)dst * 104729u + tag * 31u + (unsigned)bytes;
}
#endif
