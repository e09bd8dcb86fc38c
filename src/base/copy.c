/* A copy for results that are written once and not read again soon: non-temporal stores skip
 * the read-for-ownership that ordinary stores cost, so a large result takes one pass over
 * memory instead of two. Small copies, and CPUs without SSE2, use memcpy. */
#include <stdint.h>
#include <string.h>

#include "base/copy.h"

#if defined(__x86_64__)
#include <emmintrin.h>

void gcoll__copy_stream(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (n < 4096 || head >= n) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
    _mm_sfence(); /* the streamed lines are visible before whatever signal follows */
}
#else
void gcoll__copy_stream(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
#endif
