/* See vref.h: the block counts, matrices and displacements the vector-collective tests draw, and
 * each dtype's store and load from its format (OCP fp8: e4m3 bias 7, e5m2 bias 15). */
#include <math.h>
#include <string.h>

#include "reference.h"
#include "vref.h"

static const size_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67};
#define NPRIMES (sizeof(primes) / sizeof(primes[0]))

const char *vref_pattern_name(vref_pattern_t p)
{
    static const char *const names[VREF_PATTERNS] = {"random", "zero", "single", "primes", "half"};
    return p < VREF_PATTERNS ? names[p] : "?";
}

/* One in four random counts is 0; the rest 1..40. */
static size_t random_count(uint32_t a, uint32_t b, uint32_t seed)
{
    uint32_t h = ref_hash(a, b, seed);
    return h % 4 == 0 ? 0 : 1 + (h >> 2) % 40;
}

size_t vref_sum(const size_t *counts, int n)
{
    size_t s = 0;
    for (int i = 0; i < n; i++)
        s += counts[i];
    return s;
}

void vref_counts(size_t *counts, int n, vref_pattern_t p, uint32_t seed)
{
    int one = (int)(seed % (uint32_t)n);
    for (int r = 0; r < n; r++) {
        switch (p) {
        case VREF_RANDOM: counts[r] = random_count((uint32_t)r, 0, seed); break;
        case VREF_SINGLE: counts[r] = r == one ? 1000 + seed % 37 : 0; break;
        case VREF_PRIMES: counts[r] = primes[((size_t)r + seed) % NPRIMES]; break;
        case VREF_HALF: counts[r] = 1 + ref_hash((uint32_t)r, 1, seed) % 300; break;
        default: counts[r] = 0; break;
        }
    }
    if (p == VREF_HALF) {
        counts[one] = 0;
        counts[one] = n == 1 ? 500 : vref_sum(counts, n);
    }
}

void vref_matrix(size_t *m, int n, vref_pattern_t p, uint32_t seed, int sym)
{
    int half = (int)(seed % (uint32_t)n); /* VREF_HALF: the destination of half of everything */
    for (int s = 0; s < n; s++) {
        int peer = (int)(((uint32_t)s + 1 + seed) % (uint32_t)n); /* VREF_SINGLE's only destination */
        size_t *row = m + (size_t)s * (size_t)n;
        for (int d = 0; d < n; d++) {
            uint32_t cell = (uint32_t)(s * n + d);
            switch (p) {
            case VREF_RANDOM: row[d] = random_count(cell, 1, seed); break;
            case VREF_SINGLE: row[d] = d == peer ? 700 + ref_hash(cell, 2, seed) % 300 : 0; break;
            case VREF_PRIMES: row[d] = primes[(cell + seed) % NPRIMES]; break;
            case VREF_HALF: row[d] = 1 + ref_hash(cell, 3, seed) % 200; break;
            default: row[d] = 0; break;
            }
        }
        if (p == VREF_HALF) {
            row[half] = 0;
            row[half] = n == 1 ? 300 : vref_sum(row, n);
        }
    }
    if (sym)
        for (int a = 0; a < n; a++)
            for (int b = 0; b < a; b++)
                m[(size_t)a * (size_t)n + (size_t)b] = m[(size_t)b * (size_t)n + (size_t)a];
}

size_t vref_displs(size_t *displs, const size_t *counts, int n, int gaps, uint32_t seed)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        int r = gaps ? n - 1 - i : i;
        if (gaps)
            at += 1 + ref_hash((uint32_t)r, 4, seed) % 5;
        displs[r] = at;
        at += counts[r];
    }
    return at + (gaps ? 1 + seed % 5 : 0);
}

int vref_is_float(gcoll_dtype_t d)
{
    switch (d) {
    case GCOLL_FLOAT16:
    case GCOLL_BFLOAT16:
    case GCOLL_FLOAT32:
    case GCOLL_FLOAT64:
    case GCOLL_FLOAT8_E4M3:
    case GCOLL_FLOAT8_E5M2: return 1;
    default: return 0;
    }
}
