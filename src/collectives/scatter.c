/* Scatter and scatterv from a root; the root's own block is copied unless in place (where it
 * stays in sendbuf). linear: the root sends every rank its block, GCOLL__WINDOW a round; cost: one
 * step per rank, ceil((n-1)/W) rounds at the root, the whole vector out of it. binomial: each rank
 * receives its subtree's blocks (contiguous in rank order from it, counted from the root) in one
 * message and hands each child its part, farthest first; cost: ceil(log2 n) steps, the whole
 * vector out of the root, log2 n times each block on the way: for small blocks and many ranks.
 * scatterv is linear: only the root knows the counts. */
#include "collectives/algo.h"

/* Sends every rank but the root its block, GCOLL__WINDOW a round: rank q's is counts[q] elements at
 * sendbuf + at[q] (count at q * count when counts is NULL). */
static void send_all(gcoll__sched_t *s, const gcoll__coll_args_t *a, const size_t *counts, const size_t *at)
{
    int n = a->size, root = a->root;
    size_t es = a->esize;
    for (int k0 = 1; k0 < n; k0 += GCOLL__WINDOW) {
        gcoll__sched_round(s);
        for (int k = k0; k < k0 + GCOLL__WINDOW && k < n; k++) {
            int q = (root + k) % n;
            size_t cnt = counts ? counts[q] : a->count, off = at ? at[q] : (size_t)q * a->count;
            if (cnt)
                gcoll__sched_send(s, q, (const char *)a->sendbuf + off * es, cnt * es);
        }
    }
}

static void recv_root(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__sched_round(s);
    if (a->count)
        gcoll__sched_recv(s, a->root, a->recvbuf, a->count * a->esize);
}

void gcoll__scatter_linear(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    if (a->rank != a->root) {
        recv_root(s, a);
        return;
    }
    gcoll__sched_round(s);
    if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, a->recvbuf, (const char *)a->sendbuf + (size_t)a->root * bytes, bytes);
    send_all(s, a, NULL, NULL);
}

void gcoll__scatterv_linear(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t es = a->esize;
    if (a->rank != a->root) {
        recv_root(s, a);
        return;
    }
    gcoll__sched_round(s);
    if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, a->recvbuf, (const char *)a->sendbuf + a->sdispls[a->root] * es, a->count * es);
    send_all(s, a, a->scounts, a->sdispls);
}

void gcoll__scatter_binomial(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, root = a->root, vr = gcoll__mod(a->rank - root, n);
    size_t bytes = a->count * a->esize;
    const char *sb = a->sendbuf;
    /* vr's subtree: vrank vr up to its lowest set bit (the whole for the root) */
    int low = 1;
    while (low < n && !(vr & low))
        low <<= 1;
    int span = vr + low < n ? low : n - vr;
    if (vr && span == 1) { /* a leaf */
        gcoll__sched_round(s);
        gcoll__sched_recv(s, gcoll__mod(vr - low + root, n), a->recvbuf, bytes);
        return;
    }
    /* an inner rank receives its subtree in vrank order into scratch; the root sends from
     * sendbuf, except a subtree whose ranks wrap past n - 1, which it lines up in scratch first */
    const char *buf = NULL;
    if (vr) {
        char *in = gcoll__sched_scratch(s, (size_t)span * bytes);
        if (!in)
            return;
        gcoll__sched_round(s);
        gcoll__sched_recv(s, gcoll__mod(vr - low + root, n), in, (size_t)span * bytes);
        buf = in;
    }
    const char *from[32];
    int nchild = 0;
    for (int mask = low >> 1; mask >= 1; mask >>= 1) {
        int c = vr + mask, q = (c + root) % n;
        if (c >= n)
            continue;
        int cspan = c + mask < n ? mask : n - c;
        from[nchild] = vr ? buf + (size_t)mask * bytes : sb + (size_t)q * bytes;
        if (!vr && q + cspan > n) {
            char *wrap = gcoll__sched_scratch(s, (size_t)cspan * bytes);
            if (!wrap)
                return;
            size_t head = (size_t)(n - q) * bytes;
            gcoll__sched_round(s); /* lined up before any send is posted */
            gcoll__sched_copy(s, wrap, sb + (size_t)q * bytes, head);
            gcoll__sched_copy(s, wrap + head, sb, (size_t)cspan * bytes - head);
            from[nchild] = wrap;
        }
        nchild++;
    }
    gcoll__sched_round(s);
    if (vr)
        gcoll__sched_copy(s, a->recvbuf, buf, bytes);
    else if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, a->recvbuf, sb + (size_t)root * bytes, bytes);
    int k = 0;
    for (int mask = low >> 1; mask >= 1; mask >>= 1) {
        int c = vr + mask;
        if (c < n)
            gcoll__sched_send(s, (c + root) % n, from[k++], (size_t)(c + mask < n ? mask : n - c) * bytes);
    }
}
