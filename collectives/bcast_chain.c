/* Pipelined chain broadcast: the root sends the vector in slices of GCOLL_CHUNK_BYTES to the
 * next rank, and each rank forwards the slices it got in one round while the next ones arrive
 * (up to GCOLL_PIPELINE_DEPTH slices per round). Cost: n-1 + S/slice steps of one slice, the
 * whole vector once per rank: every link busy at once, for large vectors on slow links. */
#include "../src/config.h"
#include "algo.h"

/* Posts slices [g*depth, (g+1)*depth) of the vector as sends (to) or receives (from). */
static void slices(gcoll__sched_t *s, int peer, int send, char *buf, size_t bytes, size_t slice, size_t depth,
                   size_t g)
{
    for (size_t o = g * depth * slice; o < bytes && o < (g + 1) * depth * slice; o += slice) {
        size_t k = bytes - o < slice ? bytes - o : slice;
        if (send)
            gcoll__sched_send(s, peer, buf + o, k);
        else
            gcoll__sched_recv(s, peer, buf + o, k);
    }
}

void gcoll__bcast_chain(gcoll__sched_t *s, const gcoll__coll_args_t *a)
{
    int n = a->size, root = a->root, vr = gcoll__mod(a->rank - root, n);
    size_t bytes = a->count * a->esize;
    size_t slice = gcoll__config.chunk_bytes ? gcoll__config.chunk_bytes : bytes; /* 0: not loaded */
    size_t depth = gcoll__config.pipeline_depth > 0 ? (size_t)gcoll__config.pipeline_depth : 1;
    slice = slice ? slice : 1;
    size_t groups = (bytes + slice * depth - 1) / (slice * depth);
    int prev = (vr - 1 + n) % n + root, next = vr + 1 + root;
    prev %= n;
    next %= n;
    if (n == 1)
        return;
    /* round g: receive group g, forward group g-1 (the root sends group g) */
    for (size_t g = 0; g <= groups; g++) {
        gcoll__sched_round(s);
        if (vr && g < groups)
            slices(s, prev, 0, a->recvbuf, bytes, slice, depth, g);
        if (vr < n - 1 && (vr ? g >= 1 : g < groups))
            slices(s, next, 1, a->recvbuf, bytes, slice, depth, vr ? g - 1 : g);
    }
}
