/* Gather and gatherv to a root; the root's own block is copied unless in place (where it already
 * lies). linear: every rank sends its block to the root, which receives from GCOLL__WINDOW ranks a
 * round; cost: one step per rank, ceil((n-1)/W) rounds at the root, the whole vector into it.
 * binomial: each rank gathers its subtree's blocks (contiguous in rank order from it, counted from
 * the root) and sends them to its parent in one message; cost: ceil(log2 n) steps, the whole
 * vector into the root, log2 n times each block on the way: for small blocks and many ranks.
 * gatherv is linear: only the root knows the counts. */
#include "collectives/algo.h"

/* Receives from every rank but the root, GCOLL__WINDOW a round: rank q's block at rb + at[q]
 * elements, counts[q] of them (count for all when counts is NULL). */
static void receive_all(gcoll__sched_t *s, const gcoll__coll_args_t *a, const size_t *counts, const size_t *at)
{
    int n = a->size, root = a->root;
    size_t es = a->esize;
    for (int k0 = 1; k0 < n; k0 += GCOLL__WINDOW) {
        gcoll__sched_round(s);
        for (int k = k0; k < k0 + GCOLL__WINDOW && k < n; k++) {
            int q = (root + k) % n;
            size_t cnt = counts ? counts[q] : a->count, off = at ? at[q] : (size_t)q * a->count;
            if (cnt)
                gcoll__sched_recv(s, q, (char *)a->recvbuf + off * es, cnt * es);
        }
    }
}

static void send_root(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    gcoll__sched_round(s);
    if (a->count)
        gcoll__sched_send(s, a->root, a->sendbuf, a->count * a->esize);
}

void gcoll__gather_linear(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    if (a->rank != a->root) {
        send_root(s, a);
        return;
    }
    gcoll__sched_round(s);
    if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, (char *)a->recvbuf + (size_t)a->root * bytes, a->sendbuf, bytes);
    receive_all(s, a, NULL, NULL);
}

void gcoll__gatherv_linear(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t es = a->esize;
    if (a->rank != a->root) {
        send_root(s, a);
        return;
    }
    gcoll__sched_round(s);
    if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, (char *)a->recvbuf + a->displs[a->root] * es, a->sendbuf, a->count * es);
    receive_all(s, a, a->counts, a->displs);
}

void gcoll__gather_binomial(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, root = a->root, vr = gcoll__mod(a->rank - root, n);
    size_t bytes = a->count * a->esize;
    char *rb = a->recvbuf;
    /* vr's subtree: vrank vr up to its lowest set bit (the whole for the root) */
    int low = 1;
    while (low < n && !(vr & low))
        low <<= 1;
    int span = vr + low < n ? low : n - vr;
    if (vr && span == 1) { /* a leaf */
        gcoll__sched_round(s);
        gcoll__sched_send(s, gcoll__mod(vr - low + root, n), a->sendbuf, bytes);
        return;
    }
    /* the root receives straight into recvbuf unless a subtree's ranks wrap past n - 1; an
     * inner rank gathers its subtree in vrank order into scratch */
    char *buf = vr ? gcoll__sched_scratch(s, (size_t)span * bytes) : NULL, *wrap = NULL;
    if (vr && !buf)
        return;
    gcoll__sched_round(s);
    if (vr)
        gcoll__sched_copy(s, buf, a->sendbuf, bytes);
    else if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, rb + (size_t)root * bytes, a->sendbuf, bytes);
    int wrap_at = 0, wrap_span = 0;
    for (int mask = 1; mask < low && vr + mask < n; mask <<= 1) {
        int c = vr + mask, cspan = c + mask < n ? mask : n - c, q = (c + root) % n;
        char *dst = vr ? buf + (size_t)mask * bytes : rb + (size_t)q * bytes;
        if (!vr && q + cspan > n) {
            wrap = gcoll__sched_scratch(s, (size_t)cspan * bytes);
            if (!wrap)
                return;
            dst = wrap;
            wrap_at = q;
            wrap_span = cspan;
        }
        gcoll__sched_recv(s, (c + root) % n, dst, (size_t)cspan * bytes);
    }
    if (wrap) { /* after every receive: ranks wrap_at .. n - 1, then 0 .. */
        size_t head = (size_t)(n - wrap_at) * bytes;
        gcoll__sched_copy(s, rb + (size_t)wrap_at * bytes, wrap, head);
        gcoll__sched_copy(s, rb, wrap + head, (size_t)wrap_span * bytes - head);
    }
    if (vr) {
        gcoll__sched_round(s);
        gcoll__sched_send(s, gcoll__mod(vr - low + root, n), buf, (size_t)span * bytes);
    }
}
