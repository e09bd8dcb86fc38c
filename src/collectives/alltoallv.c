/* Alltoallv, every block its own size (zero: no message; both sides know it from their own
 * counts). scattered: every peer at once, GCOLL__WINDOW of them a round (rank + k out, rank - k
 * in), the sends interleaved a slice at a time, so skewed blocks overlap instead of each step
 * waiting for its largest; cost: ceil((n-1)/W) rounds, each rank's bytes at its link's rate. pairwise: n - 1 steps, one peer each way (rank + k
 * out, rank - k in): one message in and out per rank at a time, for many peers over a network;
 * cost: n - 1 rounds, each as long as its largest pair. In place, pairwise exchanges with one peer
 * a step (rank + peer = step mod n) through a block of scratch; scattered packs what it sends. */
#include "base/config.h"
#include "collectives/algo.h"

/* Round 0: this rank's own block, unless in place (where it already lies). */
static void own_block(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    size_t es = a->esize;
    gcoll__sched_round(s);
    if (a->sendbuf != a->recvbuf)
        gcoll__sched_copy(s, (char *)a->recvbuf + a->displs[a->rank] * es,
                          (const char *)a->sendbuf + a->sdispls[a->rank] * es, a->counts[a->rank] * es);
}

void gcoll__alltoallv_scattered(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize;
    char *rb = a->recvbuf;
    const char *sb = a->sendbuf;
    const size_t *sdispls = a->sdispls;
    own_block(s, a);
    if (a->sendbuf == a->recvbuf) { /* the blocks still to be sent move aside first */
        size_t *at = gcoll__sched_scratch(s, (size_t)n * sizeof(size_t)), sum = 0;
        if (!at)
            return;
        for (int q = 0; q < n; q++) {
            at[q] = sum;
            sum += q == r ? 0 : a->scounts[q];
        }
        char *copy = gcoll__sched_scratch(s, sum * es);
        if (!copy)
            return;
        for (int q = 0; q < n; q++)
            if (q != r)
                gcoll__sched_copy(s, copy + at[q] * es, rb + sdispls[q] * es, a->scounts[q] * es);
        sb = copy;
        sdispls = at;
    }
    /* Blocks go in slices of GCOLL_CHUNK_BYTES, the sends taking the peers in turn a slice at a
     * time: what the lane lets in flight then feeds every receiver at once, so a rank that receives
     * much is busy from the start, rather than waiting while its senders serve others first. */
    size_t slice = gcoll__config.chunk_bytes / es;
    for (int k0 = 1; k0 < n; k0 += GCOLL__WINDOW) {
        int k1 = k0 + GCOLL__WINDOW < n ? k0 + GCOLL__WINDOW : n;
        size_t most = 0;
        gcoll__sched_round(s);
        for (int k = k0; k < k1; k++) {
            int from = gcoll__mod(r - k, n);
            for (size_t at = 0; at < a->counts[from]; at += slice)
                gcoll__sched_recv(s, from, rb + (a->displs[from] + at) * es,
                                  (a->counts[from] - at < slice ? a->counts[from] - at : slice) * es);
            most = a->scounts[(r + k) % n] > most ? a->scounts[(r + k) % n] : most;
        }
        for (size_t at = 0; at < most; at += slice)
            for (int k = k0; k < k1; k++) {
                int to = (r + k) % n;
                if (at < a->scounts[to])
                    gcoll__sched_send(s, to, sb + (sdispls[to] + at) * es,
                                      (a->scounts[to] - at < slice ? a->scounts[to] - at : slice) * es);
            }
    }
}

/* In place: with peer p = step - rank (mod n) at each step, both sides of a pair meet in the same
 * step; the block that arrives waits in scratch until the one it replaces has gone. */
static void pairwise_in_place(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize, most = 0;
    char *rb = a->recvbuf;
    for (int q = 0; q < n; q++)
        most = q != r && a->counts[q] > most ? a->counts[q] : most;
    char *tmp = gcoll__sched_scratch(s, most * es);
    if (!tmp)
        return;
    for (int step = 0; step < n; step++) {
        int p = gcoll__mod(step - r, n);
        if (p == r || !a->counts[p])
            continue;
        gcoll__sched_round(s);
        gcoll__sched_recv(s, p, tmp, a->counts[p] * es);
        gcoll__sched_send(s, p, rb + a->displs[p] * es, a->counts[p] * es);
        gcoll__sched_copy(s, rb + a->displs[p] * es, tmp, a->counts[p] * es); /* after both */
    }
}

void gcoll__alltoallv_pairwise(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, r = a->rank;
    size_t es = a->esize;
    char *rb = a->recvbuf;
    const char *sb = a->sendbuf;
    if (a->sendbuf == a->recvbuf) {
        pairwise_in_place(s, a);
        return;
    }
    own_block(s, a);
    for (int k = 1; k < n; k++) {
        int to = (r + k) % n, from = gcoll__mod(r - k, n);
        gcoll__sched_round(s);
        if (a->counts[from])
            gcoll__sched_recv(s, from, rb + a->displs[from] * es, a->counts[from] * es);
        if (a->scounts[to])
            gcoll__sched_send(s, to, sb + a->sdispls[to] * es, a->scounts[to] * es);
    }
}
