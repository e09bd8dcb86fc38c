/* Top-k sparse allreduce (attr.compress = GCOLL_COMPRESS_TOPK). Each rank keeps its
 * k = floor(density * count) entries of largest magnitude (exact, ties to the lower index) as
 * (uint32 index, fp32 value) pairs, a ring allgathers every rank's pairs, and every rank adds
 * them into a zeroed dense result, rank 0's pairs first: one order everywhere, so all ranks get
 * the same bits. GCOLL_AVG divides the result by n.
 * Cost: selection reads the vector twice (a radix select on |x|: a histogram of the top 16 bits
 * finds the threshold's bin, a second pass takes what lies above it and histograms the bin's
 * low 16 bits); then n-1 ring steps of 8k bytes: a rank sends and receives 8k(n-1) bytes where a
 * dense ring moves 8 count (n-1)/n, so sparse moves less while k < count/n (density below 1/n);
 * last, one write of the dense vector and n k additions.
 * With a residual (the session's error feedback) it selects from x + residual and leaves in the
 * residual what it did not send. */
#include <stdio.h>
#include <string.h>

#include "../src/error.h"
#include "algo.h"
#include "topk.h"

#define BINS 65536u

size_t gcoll__topk_k(size_t count, double density)
{
    double k = density * (double)count;
    return k >= (double)count ? count : (size_t)k;
}

static inline uint32_t mag(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    return u & 0x7fffffffu; /* |v|'s bits order like |v|, NaN above infinity */
}

/* The bin holding the need-th largest key among the counts of hist, and how many of the bins
 * above it hold. */
static uint32_t bin_of(const uint32_t *hist, size_t need, size_t *above)
{
    size_t sum = 0;
    uint32_t b = BINS - 1;
    for (; b > 0 && sum + hist[b] < need; b--)
        sum += hist[b];
    *above = sum;
    return b;
}

void gcoll__topk_select(const float *x, float *residual, size_t count, size_t k, gcoll__topk_pair_t *out,
                        const gcoll__topk_work_t *w)
{
    /* the values selected from: x, or x + residual kept in the residual */
    const float *v = x;
    if (residual) {
        for (size_t i = 0; i < count; i++)
            residual[i] += x[i];
        v = residual;
    }
    if (k == 0)
        return;
    uint32_t *hi = w->hist, *lo = w->hist + BINS;
    memset(hi, 0, BINS * sizeof(*hi));
    memset(lo, 0, BINS * sizeof(*lo));
    for (size_t i = 0; i < count; i++)
        hi[mag(v[i]) >> 16]++;
    size_t above;
    uint32_t h = bin_of(hi, k, &above);
    size_t need = k - above, nsel = 0, ncand = 0;
    int kept_all = hi[h] <= w->cand_cap; /* else the third pass scans the vector */
    for (size_t i = 0; i < count; i++) {
        uint32_t key = mag(v[i]);
        if (key >> 16 > h) {
            out[nsel++] = (gcoll__topk_pair_t){(uint32_t)i, v[i]};
        } else if (key >> 16 == h) {
            lo[key & 0xffffu]++;
            if (kept_all)
                w->cand[ncand++] = (uint32_t)i;
        }
    }
    size_t above_lo;
    uint32_t l = bin_of(lo, need, &above_lo);
    size_t ties = need - above_lo; /* entries equal to the threshold to keep, lowest index first */
    uint32_t t = h << 16 | l;
    size_t n = kept_all ? ncand : count;
    for (size_t j = 0; j < n && nsel < k; j++) {
        size_t i = kept_all ? w->cand[j] : j;
        uint32_t key = mag(v[i]);
        if (key >> 16 != h || key < t || (key == t && ties == 0))
            continue;
        ties -= key == t;
        out[nsel++] = (gcoll__topk_pair_t){(uint32_t)i, v[i]};
    }
    if (residual)
        for (size_t j = 0; j < k; j++)
            residual[out[j].idx] = 0;
}

typedef struct {
    const float *in;
    float *out, *residual;
    size_t count, k;
    int n, rank;
    gcoll__topk_pair_t *pairs; /* n blocks of k, rank j's at j k */
    gcoll__topk_work_t work;
} topk_t;

static gcoll_status_t select_step(void *state, int *done)
{
    topk_t *t = state;
    gcoll__topk_select(t->in, t->residual, t->count, t->k, t->pairs + (size_t)t->rank * t->k, &t->work);
    *done = 1;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__topk_merge(float *out, size_t count, const gcoll__topk_pair_t *pairs, int n, size_t k)
{
    memset(out, 0, count * sizeof(float));
    for (int j = 0; j < n; j++) {
        const gcoll__topk_pair_t *p = pairs + (size_t)j * k;
        for (size_t i = 0; i < k; i++) {
            if (p[i].idx >= count)
                return gcoll__error(GCOLL_ERR_TRANSPORT, "top-k allreduce: rank %d sent index %u for a vector of %zu",
                                    j, p[i].idx, count);
            out[p[i].idx] += p[i].val;
        }
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t merge_step(void *state, int *done)
{
    topk_t *t = state;
    GCOLL_CHECK(gcoll__topk_merge(t->out, t->count, t->pairs, t->n, t->k));
    *done = 1;
    return GCOLL_SUCCESS;
}

static void local_who(void *state, char *buf, size_t len)
{
    (void)state;
    snprintf(buf, len, "%slocal top-k work", buf[0] ? ", " : "");
}

static void stateless_rewind(void *state)
{
    (void)state; /* the steps keep nothing between runs */
}

void gcoll__allreduce_topk(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, right = (r + 1) % n, left = gcoll__mod(r - 1, n);
    size_t k = gcoll__topk_k(a->count, a->density);
    topk_t *t = gcoll__sched_scratch(s, sizeof(*t));
    uint32_t *hist = gcoll__sched_scratch(s, 2 * BINS * sizeof(uint32_t));
    size_t cap = k + 4096;
    uint32_t *cand = gcoll__sched_scratch(s, cap * sizeof(uint32_t));
    gcoll__topk_pair_t *pairs = gcoll__sched_scratch(s, (size_t)n * k * sizeof(gcoll__topk_pair_t));
    if (!t || !hist || !cand || !pairs)
        return;
    *t = (topk_t){.in = (const float *)gcoll__input(a), .out = a->recvbuf, .residual = a->residual,
                  .count = a->count, .k = k, .n = n, .rank = r, .pairs = pairs,
                  .work = {.hist = hist, .cand = cand, .cand_cap = cap}};
    gcoll__sched_round(s);
    gcoll__sched_custom(s, select_step, local_who, t);
    gcoll__sched_custom_rewind(s, stateless_rewind);
    for (int step = 0; step < n - 1 && k; step++) {
        int sb = gcoll__mod(r - step, n), rbk = gcoll__mod(r - step - 1, n);
        gcoll__pipe(s, right, pairs + (size_t)sb * k, k, left, pairs + (size_t)rbk * k, k, NULL, NULL,
                    sizeof(gcoll__topk_pair_t));
    }
    gcoll__sched_round(s);
    gcoll__sched_custom(s, merge_step, local_who, t);
    gcoll__sched_custom_rewind(s, stateless_rewind);
    gcoll__sched_avg(s, a->recvbuf, a->count);
}
