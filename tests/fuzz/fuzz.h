/* Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c): a broken property prints what broke
 * and aborts, so libFuzzer keeps the input as a crash like any memory error. */
#ifndef GCOLL_FUZZ_H
#define GCOLL_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROPERTY(cond, ...)                                                    \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "property broken at %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input after its first `skip` bytes as a C string (up to its first NUL); free() it. */
static inline char *fuzz_string(const uint8_t *data, size_t size, size_t skip)
{
    size_t n = size > skip ? size - skip : 0;
    char *s = malloc(n + 1);
    if (!s)
        abort();
    if (n)
        memcpy(s, data + skip, n);
    s[n] = '\0';
    return s;
}

#endif
