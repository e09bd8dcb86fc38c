/* Top-k sparse allreduce (attr.compress = GCOLL_COMPRESS_TOPK): each rank keeps its k largest
 * magnitudes as 6-byte (index gap, fp32) pairs, a ring allgathers the blocks and every rank adds
 * them in rank order into a dense result (the same bits everywhere). Cost: about one read of the
 * vector to select, n-1 ring steps of 6(k + count/65535 + 1) bytes, n k additions; above
 * k = count/n it goes dense. With a residual it selects from x + residual (error feedback). */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "collectives/algo.h"
#include "collectives/topk.h"

#define BINS 65536u
#define ENTRY 6        /* bytes of an encoded entry: uint16 gap, fp32 value */
#define ESCAPE 0xffffu /* a gap entry: the next index lies 65535 further on */

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

/* The exact radix select over the m elements list[0..m) of v (list NULL: 0..m-1), in index
 * order: a histogram of the keys' top 16 bits finds the bin of the k-th largest; a second pass
 * keeps what lies above it and histograms the bin's low 16 bits; a third keeps the bin's entries
 * above the threshold and the ties, lowest index first. Over the whole vector, the third pass
 * reads only the bin's entries, remembered in w->cand when they fit. */
static void radix_select(const float *v, const uint32_t *list, size_t m, size_t k, gcoll__topk_pair_t *out,
                         const gcoll__topk_work_t *w)
{
    uint32_t *hi = w->hist, *lo = w->hist + BINS;
    memset(hi, 0, BINS * sizeof(*hi));
    memset(lo, 0, BINS * sizeof(*lo));
    for (size_t j = 0; j < m; j++)
        hi[mag(v[list ? list[j] : j]) >> 16]++;
    size_t above;
    uint32_t h = bin_of(hi, k, &above);
    size_t need = k - above, nsel = 0, ncand = 0;
    int kept_all = !list && hi[h] <= w->cand_cap;
    for (size_t j = 0; j < m; j++) {
        size_t i = list ? list[j] : j;
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
    size_t n = kept_all ? ncand : m;
    for (size_t j = 0; j < n && nsel < k; j++) {
        size_t i = kept_all ? w->cand[j] : list ? list[j] : j;
        uint32_t key = mag(v[i]);
        if (key >> 16 != h || key < t || (key == t && ties == 0))
            continue;
        ties -= key == t;
        out[nsel++] = (gcoll__topk_pair_t){(uint32_t)i, v[i]};
    }
}

/* Large vectors: one pass instead of two. A sample (SAMPLE_CHUNKS runs of SAMPLE_RUN entries
 * spread over the vector) picks a bin of the keys' top 16 bits that about 1.25 k + 64 entries
 * reach; one pass over the vector (which also adds the residual) collects the entries above that
 * bin as candidates and histograms the bin's own by their low 16 bits. If k or more lie above,
 * the exact radix select runs over the candidates; if the threshold lies in the bin (many equal
 * magnitudes), the candidates and the bin's entries above the threshold and ties, lowest index
 * first, come from one more pass that stops once it has them. Exact whatever the data: when
 * fewer than k reach the bin, or more than w->cand_cap lie above it, it says so and the caller
 * selects from the whole vector. Returns whether it selected; *v is then, either way, the
 * values selected from. */
#define SAMPLE_CHUNKS 256
#define SAMPLE_RUN 256
#define SAMPLED_MIN ((size_t)1 << 18)
#define SCAN_CHUNK 4096 /* entries per call of the scan: its masks, 1 KiB, stay on the stack */
static int sampled_select(const float *x, float *residual, size_t count, size_t k, gcoll__topk_pair_t *out,
                          const gcoll__topk_work_t *w, const float **v)
{
    uint32_t *hs = w->hist; /* the sample's histogram of the keys' top 16 bits */
    memset(hs, 0, BINS * sizeof(*hs));
    size_t stride = count / SAMPLE_CHUNKS;
    for (size_t c = 0; c < SAMPLE_CHUNKS; c++)
        for (size_t i = c * stride; i < c * stride + SAMPLE_RUN; i++)
            hs[mag(residual ? x[i] + residual[i] : x[i]) >> 16]++;
    double want = (1.25 * (double)k + 64) * (SAMPLE_CHUNKS * SAMPLE_RUN) / (double)count;
    size_t acc = 0;
    uint32_t lb = BINS - 1;
    for (; lb > 0 && (double)(acc += hs[lb]) < want; lb--)
        ;
    /* candidates: the entries above the bound's bin; the bin itself only counted by low bits.
     * The scan hands over masks a chunk at a time; their set bits are few. */
    uint32_t *lo = w->hist + BINS;
    memset(lo, 0, BINS * sizeof(*lo));
    uint64_t a[SCAN_CHUNK / 64], m[SCAN_CHUNK / 64];
    uint32_t bin = lb << 16, above_bin = (lb + 1) << 16; /* lb <= 0x7fff: |x| has 31 bits */
    size_t nc = 0, in_bin = 0;
    *v = residual ? residual : x;
    for (size_t i0 = 0; i0 < count; i0 += SCAN_CHUNK) {
        size_t n = count - i0 < SCAN_CHUNK ? count - i0 : SCAN_CHUNK;
        gcoll__topk_masks(x + i0, residual ? residual + i0 : NULL, n, bin, above_bin, 0x80000000u, a, m);
        for (size_t b = 0; b < (n + 63) / 64; b++) {
            for (uint64_t bits = a[b]; bits; bits &= bits - 1) {
                if (nc < w->cand_cap)
                    w->cand[nc] = (uint32_t)(i0 + b * 64 + (size_t)__builtin_ctzll(bits));
                nc++;
            }
            for (uint64_t bits = m[b]; bits; bits &= bits - 1, in_bin++)
                lo[mag((*v)[i0 + b * 64 + (size_t)__builtin_ctzll(bits)]) & 0xffffu]++;
        }
    }
    if (nc > w->cand_cap || nc + in_bin < k)
        return 0;
    if (nc >= k) { /* the threshold lies above the bound's bin */
        radix_select(*v, w->cand, nc, k, out, w);
        return 1;
    }
    /* in the bound's bin: all candidates, then the bin's entries above the threshold and the
     * ties, lowest index first, in one more scan that ends once it has them all */
    size_t above_lo;
    uint32_t l = bin_of(lo, k - nc, &above_lo), t = bin | l;
    size_t ties = k - nc - above_lo, more = above_lo, nsel = nc;
    for (size_t j = 0; j < nc; j++)
        out[j] = (gcoll__topk_pair_t){w->cand[j], (*v)[w->cand[j]]};
    for (size_t i0 = 0; i0 < count && (more || ties); i0 += SCAN_CHUNK) {
        size_t n = count - i0 < SCAN_CHUNK ? count - i0 : SCAN_CHUNK;
        gcoll__topk_masks(*v + i0, NULL, n, t, t + 1, above_bin, a, m); /* a: above t, m: ties */
        for (size_t b = 0; b < (n + 63) / 64; b++) {
            for (uint64_t bits = a[b]; bits; bits &= bits - 1, more--) {
                size_t i = i0 + b * 64 + (size_t)__builtin_ctzll(bits);
                out[nsel++] = (gcoll__topk_pair_t){(uint32_t)i, (*v)[i]};
            }
            for (uint64_t bits = m[b]; bits && ties; bits &= bits - 1, ties--) {
                size_t i = i0 + b * 64 + (size_t)__builtin_ctzll(bits);
                out[nsel++] = (gcoll__topk_pair_t){(uint32_t)i, (*v)[i]};
            }
        }
    }
    return 1;
}

void gcoll__topk_select(const float *x, float *residual, size_t count, size_t k, gcoll__topk_pair_t *out,
                        const gcoll__topk_work_t *w)
{
    const float *v = NULL; /* the values selected from: x, or x + residual kept in the residual */
    if (!(k && count >= SAMPLED_MIN && sampled_select(x, residual, count, k, out, w, &v))) {
        if (!v && residual) /* the sampled pass did not run: add the residual here */
            for (size_t i = 0; i < count; i++)
                residual[i] += x[i];
        v = v ? v : residual ? residual : x;
        if (k)
            radix_select(v, NULL, count, k, out, w);
    }
    if (residual)
        for (size_t j = 0; j < k; j++)
            residual[out[j].idx] = 0;
}

typedef struct {
    const float *in;
    float *out, *residual;
    size_t count, k;
    size_t zeroed; /* out[0..zeroed) is zero: the ring's rounds clear it while blocks travel */
    int n, rank;
    gcoll__topk_pair_t *pairs; /* this rank's k (dense: the kept entries) */
    unsigned char *wire;       /* sparse: n encoded blocks of wire_bytes, rank j's at j wire_bytes */
    size_t wire_bytes;
    gcoll__topk_work_t work;
} topk_t;

static gcoll_status_t select_step(void *state, int *done)
{
    topk_t *t = state;
    gcoll__topk_select(t->in, t->residual, t->count, t->k, t->pairs, &t->work);
    gcoll__topk_encode(t->wire + (size_t)t->rank * t->wire_bytes, t->pairs, t->k, t->count);
    *done = 1;
    return GCOLL_SUCCESS;
}

size_t gcoll__topk_wire_entries(size_t count, size_t k)
{
    return k ? k + count / ESCAPE + 1 : 0;
}

static void put_entry(unsigned char *e, uint16_t d, float v)
{
    memcpy(e, &d, sizeof(d));
    memcpy(e + sizeof(d), &v, sizeof(v));
}

void gcoll__topk_encode(void *dst, const gcoll__topk_pair_t *pairs, size_t k, size_t count)
{
    unsigned char *e = dst;
    size_t split = k ? 1 : 0; /* where the second ascending run starts (k: none) */
    while (split < k && pairs[split].idx > pairs[split - 1].idx)
        split++;
    size_t i = 0, j = split, next = 0; /* next: the lowest index the next entry can name */
    while (i < split || j < k) {
        const gcoll__topk_pair_t *p = j == k || (i < split && pairs[i].idx < pairs[j].idx) ? &pairs[i++] : &pairs[j++];
        for (; p->idx - next >= ESCAPE; next += ESCAPE, e += ENTRY)
            put_entry(e, ESCAPE, 0.0f);
        put_entry(e, (uint16_t)(p->idx - next), p->val);
        e += ENTRY;
        next = (size_t)p->idx + 1;
    }
    memset(e, 0, (size_t)((unsigned char *)dst + gcoll__topk_wire_entries(count, k) * ENTRY - e));
}

/* The merge's adds land all over the vector, each on a cache line of its own, and waiting for
 * each line in turn was most of its time: a second cursor, this many entries ahead, asks for
 * the lines early. */
#define PREFETCH 32

gcoll_status_t gcoll__topk_merge(float *out, size_t count, const void *blocks, int n, size_t k)
{
    size_t entries = gcoll__topk_wire_entries(count, k);
    for (int j = 0; j < n; j++) {
        const unsigned char *block = (const unsigned char *)blocks + (size_t)j * entries * ENTRY, *e = block;
        size_t next = 0, got = 0, ahead = 0, next_ahead = 0;
        for (size_t q = 0; q < entries && got < k; q++, e += ENTRY) {
            for (; ahead < entries && ahead < q + PREFETCH; ahead++) {
                uint16_t d;
                memcpy(&d, block + ahead * ENTRY, sizeof(d));
                next_ahead += d;
                if (d == ESCAPE)
                    continue;
                if (next_ahead < count)
                    __builtin_prefetch(out + next_ahead, 1);
                next_ahead++;
            }
            uint16_t d;
            float v;
            memcpy(&d, e, sizeof(d));
            memcpy(&v, e + sizeof(d), sizeof(v));
            next += d;
            if (d == ESCAPE)
                continue;
            if (next >= count)
                return gcoll__error(GCOLL_ERR_TRANSPORT, "top-k allreduce: rank %d sent index %zu for a vector of %zu",
                                    j, next, count);
            out[next++] += v;
            got++;
        }
        if (got < k)
            return gcoll__error(GCOLL_ERR_TRANSPORT, "top-k allreduce: rank %d sent %zu of %zu entries", j, got, k);
    }
    return GCOLL_SUCCESS;
}

/* Clears the result up to its share, end, a slice a call: the engine polls it beside the ring
 * round's messages, so writing 4 bytes an entry (64 MiB for 16 Mi) costs no time of its own
 * while the link is the bound, and each call is short enough not to hold the messages up. */
typedef struct {
    topk_t *t;
    size_t end;
} zero_t;

#define ZERO_SLICE ((size_t)1 << 16) /* entries: 256 KiB, a few tens of microseconds */

static gcoll_status_t zero_step(void *state, int *done)
{
    zero_t *z = state;
    topk_t *t = z->t;
    size_t m = z->end - t->zeroed < ZERO_SLICE ? z->end - t->zeroed : ZERO_SLICE;
    memset(t->out + t->zeroed, 0, m * sizeof(float));
    t->zeroed += m;
    *done = t->zeroed == z->end;
    return GCOLL_SUCCESS;
}

static gcoll_status_t merge_step(void *state, int *done)
{
    topk_t *t = state;
    memset(t->out + t->zeroed, 0, (t->count - t->zeroed) * sizeof(float)); /* k = 0: no ring */
    GCOLL_CHECK(gcoll__topk_merge(t->out, t->count, t->wire, t->n, t->k));
    *done = 1;
    return GCOLL_SUCCESS;
}

/* Dense above density 1/n: the rank's kept entries into its zeroed result, for the ring. */
static gcoll_status_t select_dense_step(void *state, int *done)
{
    topk_t *t = state;
    gcoll__topk_select(t->in, t->residual, t->count, t->k, t->pairs, &t->work);
    memset(t->out, 0, t->count * sizeof(float)); /* in place, the input is no longer needed */
    for (size_t i = 0; i < t->k; i++)
        t->out[t->pairs[i].idx] = t->pairs[i].val;
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

static void select_rewind(void *state)
{
    ((topk_t *)state)->zeroed = 0; /* the ring's rounds clear the result again */
}

void gcoll__allreduce_topk(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank, right = (r + 1) % n, left = gcoll__mod(r - 1, n);
    size_t k = gcoll__topk_k(a->count, a->density);
    int dense = (size_t)n * k > a->count; /* a dense ring moves less than the pairs would */
    topk_t *t = gcoll__sched_scratch(s, sizeof(*t));
    uint32_t *hist = gcoll__sched_scratch(s, 2 * BINS * sizeof(uint32_t));
    size_t cap = 2 * k + 65536; /* the sampled selection's candidates (see gcoll__topk_select) */
    uint32_t *cand = gcoll__sched_scratch(s, cap * sizeof(uint32_t));
    gcoll__topk_pair_t *pairs = gcoll__sched_scratch(s, k * sizeof(gcoll__topk_pair_t));
    size_t wire_bytes = dense ? 0 : gcoll__topk_wire_entries(a->count, k) * ENTRY;
    unsigned char *wire = gcoll__sched_scratch(s, (size_t)n * wire_bytes);
    if (!t || !hist || !cand || !pairs || !wire)
        return;
    // cppcheck-suppress invalidPointerCast ; the input's bytes are float32 values (topk is float32 only)
    *t = (topk_t){.in = (const float *)gcoll__input(a),
                  .out = a->recvbuf,
                  .residual = a->residual,
                  .count = a->count,
                  .k = k,
                  .n = n,
                  .rank = r,
                  .pairs = pairs,
                  .wire = wire,
                  .wire_bytes = wire_bytes,
                  .work = {.hist = hist, .cand = cand, .cand_cap = cap}};
    gcoll__sched_round(s);
    if (dense) {
        gcoll__sched_custom(s, select_dense_step, local_who, t);
        gcoll__sched_custom_rewind(s, stateless_rewind);
        gcoll__coll_args_t sum = *a;
        sum.sendbuf = a->recvbuf; /* in place: the ring sums the dense vectors */
        gcoll__allreduce_ring(s, &sum);
        return;
    }
    gcoll__sched_custom(s, select_step, local_who, t);
    gcoll__sched_custom_rewind(s, select_rewind);
    for (int step = 0; step < n - 1 && k; step++) {
        int sb = gcoll__mod(r - step, n), rbk = gcoll__mod(r - step - 1, n);
        gcoll__pipe(s, right, wire + (size_t)sb * wire_bytes, wire_bytes, left, wire + (size_t)rbk * wire_bytes,
                    wire_bytes, NULL, NULL, 1);
        zero_t *z = gcoll__sched_scratch(s, sizeof(*z)); /* each step's round clears its share */
        if (!z)
            return;
        *z = (zero_t){t, step == n - 2 ? a->count : a->count / (size_t)(n - 1) * (size_t)(step + 1)};
        gcoll__sched_custom(s, zero_step, local_who, z);
        gcoll__sched_custom_rewind(s, stateless_rewind);
    }
    gcoll__sched_round(s);
    gcoll__sched_custom(s, merge_step, local_who, t);
    gcoll__sched_custom_rewind(s, stateless_rewind);
    gcoll__sched_avg(s, a->recvbuf, a->count);
}
