/* The host-staged pipeline for collectives on device buffers: chunks of GCOLL_CUDA_STAGE_CHUNK
 * are copied down to pinned host slots, run the host algorithm as requests of their own and are
 * copied back up, chunk k on the network while k+1 copies down and k-1 up. The driver is one
 * custom step of the operation's schedule, so the engine's timeouts and priorities apply.
 * docs/design.md describes the chunking and the reduction on the GPU across hosts. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/config.h"
#include "base/error.h"
#include "core/lane.h"
#include "core/request.h"
#include "base/schedule.h"
#include "cuda/cuda.h"
#include "collectives/adasum.h"

#define STAGE_SLOTS 4

/* A chunk's stages; CH_MID and CH_RUN2 only where an allreduce reduces on the GPU. */
enum { CH_IDLE, CH_DOWN, CH_RUN, CH_MID, CH_RUN2, CH_UP, CH_DONE };

typedef struct {
    struct gcoll_request req;  /* the host operation, or the blocks to reduce crossing; driven by
                                * the stage, never in the lane's list */
    struct gcoll_request req2; /* GPU reduction of an allreduce: the reduced blocks crossing */
    int state;
    void *ev_down, *ev_up, *ev_mid;
    size_t send_off, send_bytes, recv_off, recv_bytes;
    size_t n, bs; /* GPU reduction: the chunk's elements (of each block where cut by block), and
                   * the elements between the rank blocks in its slots */
    int down, up; /* whether this chunk is copied down / up */
} chunk_t;

typedef struct {
    const gcoll__cuda_ops_t *cu;
    int device;
    const char *sendbuf;
    char *recvbuf;
    char *pin;                   /* STAGE_SLOTS slots of slot_send + slot_recv bytes */
    size_t slot_send, slot_recv; /* slot_recv 0: in place, the send part holds both */
    char *dscratch;              /* GPU reduction: a device slot per pinned slot, for the peers' blocks */
    size_t dslot;                /* its bytes: the blocks as they crossed; compressed, also as fp32, and
                                  * this rank's send chunk in the wire format */
    int wire;                    /* GPU reduction, compressed: the blocks cross as wdt, wsize bytes each */
    gcoll_dtype_t wdt;
    size_t wsize; /* bytes of an element in the pinned slots (esize, or the wire's) */
    int gpu;      /* GPU reduction: blocks exchanged and reduced by the kernel, not the host */
    int whole;    /* GPU reduction of two ranks' allreduce: each reduces the whole chunk */
    int rank, size;
    gcoll__coll_t coll;
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    /* Cut by block: the send (recv) buffer holds nblocks blocks of count elements, and chunk k's
     * range of each is packed in its slot; 0: one contiguous range. */
    int blk_send, blk_recv, nblocks;
    size_t count, esize;
    void *s_down, *s_up;
    void *ev_start; /* recorded on the caller's stream, else the legacy default stream: the
                       * operation starts after it */
    void *user_stream;
    size_t nchunks, next; /* next: the first chunk not yet started */
    chunk_t *chunks;
    int started;
} stage_t;

static char *slot_send(const stage_t *g, size_t k)
{
    return g->pin + (k % STAGE_SLOTS) * (g->slot_send + g->slot_recv);
}
static char *slot_recv(const stage_t *g, size_t k)
{
    return g->slot_recv ? slot_send(g, k) + g->slot_send : slot_send(g, k);
}
static char *slot_dev(const stage_t *g, size_t k)
{
    return g->dscratch + (k % STAGE_SLOTS) * g->dslot;
}
static size_t up256(size_t bytes)
{
    return (bytes + 255) & ~(size_t)255;
}
/* Compressed: the device slot's blocks as fp32, and this rank's send chunk in the wire format. */
static char *slot_dev32(const stage_t *g, size_t k)
{
    return slot_dev(g, k) + up256(g->slot_recv);
}
static char *slot_devw(const stage_t *g, size_t k)
{
    return slot_dev32(g, k) + up256(g->slot_recv / g->wsize * g->esize);
}

/* Queues a chunk's copy of bytes: one range, or (blocked) its range of each of the nblocks
 * blocks, the buffer's blocks count elements apart and the slot's packed; up: slot to buffer. */
static gcoll_status_t copy(stage_t *g, char *dst, const char *src, size_t bytes, int blocked, int up, void *stream)
{
    size_t n = blocked ? bytes / (size_t)g->nblocks : bytes, stride = g->count * g->esize;
    for (int q = 0; q < (blocked ? g->nblocks : 1); q++) {
        char *d = dst + (size_t)q * (up ? stride : n);
        const char *s = src + (size_t)q * (up ? n : stride);
        GCOLL_CU(g->cu->memcpy_async(d, s, n, stream), up ? "copy to device" : "copy to host");
    }
    return GCOLL_SUCCESS;
}

/* GPU reduction: the elements of rank q's block of chunk c (all of it where cut by block or
 * whole). */
static size_t blk_len(const stage_t *g, const chunk_t *c, int q)
{
    if (g->coll != GCOLL_COLL_ALLREDUCE || g->whole)
        return c->n;
    size_t lo = (size_t)q * c->bs;
    return lo >= c->n ? 0 : c->n - lo < c->bs ? c->n - lo : c->bs;
}
/* GPU reduction: where rank q's block sits in the chunk (and in the fp32 device slot), and in
 * the pinned and device slots, whose elements are the wire's where compressed. */
static size_t blk_off(const stage_t *g, const chunk_t *c, int q)
{
    return (size_t)q * c->bs * g->esize;
}
static size_t wblk_off(const stage_t *g, const chunk_t *c, int q)
{
    return (size_t)q * c->bs * g->wsize;
}
/* ... and where its data sits in this rank's send slot (whole: the chunk is one block). */
static size_t wdata_off(const stage_t *g, const chunk_t *c, int q)
{
    return g->whole ? 0 : wblk_off(g, c, q);
}
static size_t data_off(const stage_t *g, const chunk_t *c, int q)
{
    return g->whole ? 0 : blk_off(g, c, q);
}

/* Compressed: n elements of fp32 at src into the wire format at dst, or back (up). */
static gcoll_status_t convert(const stage_t *g, void *dst, const void *src, size_t n, int up, void *stream)
{
    GCOLL_CU(g->cu->convert(dst, up ? GCOLL_FLOAT32 : (int)g->wdt, src, up ? (int)g->wdt : GCOLL_FLOAT32, n, stream),
             "conversion kernel");
    return GCOLL_SUCCESS;
}

/* Peer q's block of chunk k (n elements) up from the pinned slot; compressed, converted to fp32
 * at dst (else copied there). */
static gcoll_status_t block_up(stage_t *g, size_t k, int q, size_t n, void *dst)
{
    const chunk_t *c = &g->chunks[k];
    const char *from = slot_recv(g, k) + wblk_off(g, c, q);
    if (!g->wire) {
        GCOLL_CU(g->cu->memcpy_async(dst, from, n * g->esize, g->s_up), "copy to device");
        return GCOLL_SUCCESS;
    }
    char *w = slot_dev(g, k) + wblk_off(g, c, q);
    GCOLL_CU(g->cu->memcpy_async(w, from, n * g->wsize, g->s_up), "copy to device");
    return convert(g, dst, w, n, 1, g->s_up);
}
/* Whether the reduced blocks cross in a second round: an allreduce's, unless each reduces all. */
static int two_rounds(const stage_t *g)
{
    return g->gpu && g->coll == GCOLL_COLL_ALLREDUCE && !g->whole;
}

/* GPU reduction, once this rank's block has arrived from every peer: the peers' copies up, the
 * kernel reducing them with this rank's own into the result (passes of at most
 * GCOLL_CUDA_MULTI_MAX sources), and for an allreduce the reduced block down for the peers. */
static gcoll_status_t reduce_block(stage_t *g, size_t k)
{
    chunk_t *c = &g->chunks[k];
    size_t n = blk_len(g, c, g->rank), off = data_off(g, c, g->rank);
    int ar = g->coll == GCOLL_COLL_ALLREDUCE, two = two_rounds(g);
    const char *own =
        ar ? g->sendbuf + c->send_off + off : g->sendbuf + (size_t)g->rank * g->count * g->esize + c->send_off;
    void *dst = ar ? g->recvbuf + c->recv_off + off : g->recvbuf + c->recv_off;
    char *dev = g->wire ? slot_dev32(g, k) : slot_dev(g, k);
    if (n) {
        const void *src[GCOLL_CUDA_MULTI_MAX];
        int nsrc = 1;
        if (g->wire && g->whole) { /* both ranks add the operands as they crossed: the same bits */
            GCOLL_CHECK(convert(g, dev + blk_off(g, c, g->rank), slot_devw(g, k), n, 1, g->s_up));
            own = dev + blk_off(g, c, g->rank);
        }
        src[0] = own;
        for (int i = 1; i < g->size; i++) {
            int q = (g->rank + i) % g->size;
            GCOLL_CHECK(block_up(g, k, q, n, dev + blk_off(g, c, q)));
            src[nsrc++] = dev + blk_off(g, c, q);
            if (nsrc == GCOLL_CUDA_MULTI_MAX || i == g->size - 1) {
                /* AVG sums in every pass and divides in the last */
                unsigned div = g->op == GCOLL_AVG && i == g->size - 1 ? (unsigned)g->size : 1;
                GCOLL_CU(g->cu->reduce_multi(&dst, 1, src, nsrc, n, (int)g->dtype, (int)g->op, div, g->s_up),
                         "reduction kernel");
                src[0] = dst;
                nsrc = 1;
            }
        }
        if (two && g->wire) { /* rounded to the wire format here too, so that every rank holds its bits */
            char *w = slot_devw(g, k) + wblk_off(g, c, g->rank);
            GCOLL_CHECK(convert(g, w, dst, n, 0, g->s_up));
            GCOLL_CHECK(convert(g, dst, w, n, 1, g->s_up));
            GCOLL_CU(g->cu->memcpy_async(slot_send(g, k) + wdata_off(g, c, g->rank), w, n * g->wsize, g->s_up),
                     "copy to host");
        } else if (two) {
            GCOLL_CU(g->cu->memcpy_async(slot_send(g, k) + off, dst, n * g->esize, g->s_up), "copy to host");
        }
    }
    GCOLL_CU(g->cu->event_record(two ? c->ev_mid : c->ev_up, g->s_up), "event record");
    return GCOLL_SUCCESS;
}

/* GPU reduction of an allreduce: the peers' reduced blocks up into the result. */
static gcoll_status_t gather_up(stage_t *g, size_t k)
{
    chunk_t *c = &g->chunks[k];
    for (int q = 0; q < g->size; q++) {
        size_t n = blk_len(g, c, q);
        if (q != g->rank && n)
            GCOLL_CHECK(block_up(g, k, q, n, g->recvbuf + c->recv_off + blk_off(g, c, q)));
    }
    GCOLL_CU(g->cu->event_record(c->ev_up, g->s_up), "event record");
    return GCOLL_SUCCESS;
}

static gcoll_status_t advance(struct gcoll_request *r, int *moved)
{
    unsigned m = 0;
    gcoll_status_t st = gcoll__request_advance(r, &m);
    *moved |= m != 0;
    return st;
}

/* Moves chunk k on as far as it can; *moved set when it changed stage or its request moved. */
static gcoll_status_t chunk_step(stage_t *g, size_t k, int *moved)
{
    chunk_t *c = &g->chunks[k];
    int done = 1;
    switch (c->state) {
    case CH_IDLE: /* chunks start in order, each once the chunk before it on its slot is done */
        if (k != g->next || (k >= STAGE_SLOTS && g->chunks[k - STAGE_SLOTS].state != CH_DONE))
            return GCOLL_SUCCESS;
        if (c->down && g->wire) { /* converted on the GPU: half the bytes cross PCIe */
            GCOLL_CHECK(convert(g, slot_devw(g, k), g->sendbuf + c->send_off, c->n, 0, g->s_down));
            GCOLL_CU(g->cu->memcpy_async(slot_send(g, k), slot_devw(g, k), c->n * g->wsize, g->s_down), "copy to host");
        } else if (c->down) {
            GCOLL_CHECK(copy(g, slot_send(g, k), g->sendbuf + c->send_off, c->send_bytes, g->blk_send, 0, g->s_down));
        }
        if (c->down)
            GCOLL_CU(g->cu->event_record(c->ev_down, g->s_down), "event record");
        g->next++;
        c->state = CH_DOWN;
        *moved = 1;
        /* fall through */
    case CH_DOWN:
        if (c->down)
            GCOLL_CHECK(gcoll__cuda_ready(c->ev_down, &done));
        if (!done)
            return GCOLL_SUCCESS;
        c->state = CH_RUN;
        *moved = 1;
        /* fall through */
    case CH_RUN:
        GCOLL_CHECK(advance(&c->req, moved));
        if (!c->req.done)
            return GCOLL_SUCCESS;
        if (g->gpu) {
            GCOLL_CHECK(reduce_block(g, k));
        } else if (c->up) {
            GCOLL_CHECK(copy(g, g->recvbuf + c->recv_off, slot_recv(g, k), c->recv_bytes, g->blk_recv, 1, g->s_up));
            GCOLL_CU(g->cu->event_record(c->ev_up, g->s_up), "event record");
        }
        c->state = two_rounds(g) ? CH_MID : CH_UP;
        *moved = 1;
        return GCOLL_SUCCESS;
    case CH_MID: /* the reduced block is down: it crosses to the peers */
        GCOLL_CHECK(gcoll__cuda_ready(c->ev_mid, &done));
        if (!done)
            return GCOLL_SUCCESS;
        c->state = CH_RUN2;
        *moved = 1;
        /* fall through */
    case CH_RUN2:
        GCOLL_CHECK(advance(&c->req2, moved));
        if (!c->req2.done)
            return GCOLL_SUCCESS;
        GCOLL_CHECK(gather_up(g, k));
        c->state = CH_UP;
        *moved = 1;
        /* fall through */
    case CH_UP:
        if (c->up)
            GCOLL_CHECK(gcoll__cuda_ready(c->ev_up, &done));
        if (done) {
            c->state = CH_DONE;
            *moved = 1;
        }
        return GCOLL_SUCCESS;
    default: return GCOLL_SUCCESS;
    }
}

static gcoll_status_t stage_poll(void *state, int *done)
{
    stage_t *g = state;
    if (g->device >= 0)
        GCOLL_CU(g->cu->set_device(g->device), "set device"); /* progress threads run this too */
    if (!g->started) {
        int ok = 0;
        GCOLL_CHECK(gcoll__cuda_ready(g->ev_start, &ok));
        if (!ok)
            return GCOLL_SUCCESS;
        g->started = 1;
    }
    int moved;
    do { /* again while a chunk moves on: its next stage may be ready at once */
        moved = 0;
        for (size_t k = 0; k < g->nchunks; k++)
            GCOLL_CHECK(chunk_step(g, k, &moved));
    } while (moved);
    for (size_t k = 0; k < g->nchunks; k++)
        if (g->chunks[k].state != CH_DONE)
            return GCOLL_SUCCESS;
    if (g->user_stream && g->nchunks && g->chunks[g->nchunks - 1].up) /* later work on the stream sees the result */
        GCOLL_CU(g->cu->stream_wait_event(g->user_stream, g->chunks[g->nchunks - 1].ev_up), "stream wait");
    *done = 1;
    return GCOLL_SUCCESS;
}

/* The peers the first chunk on the network waits on (none while only copies are pending). */
static void stage_who(void *state, char *buf, size_t len)
{
    stage_t *g = state;
    buf[0] = '\0';
    for (size_t k = 0; k < g->nchunks && !buf[0]; k++)
        if (g->chunks[k].state == CH_RUN || g->chunks[k].state == CH_RUN2)
            gcoll__request_peers(g->chunks[k].state == CH_RUN ? &g->chunks[k].req : &g->chunks[k].req2, buf, len);
}

static void drop_request(struct gcoll_request *r, int running)
{
    if (r->sched) {
        if (running)
            gcoll__request_cancel(r);
        gcoll__sched_free(r->sched);
    }
}

/* Destroys ev, waiting first where work it follows may still be in flight. */
static void drop_event(const gcoll__cuda_ops_t *cu, void *ev, int pending)
{
    if (ev) {
        if (pending)
            cu->event_sync(ev);
        cu->event_destroy(ev);
    }
}

/* Frees everything the stage holds; copies in flight finish first (they use the slots). */
static void stage_free(void *arg)
{
    stage_t *g = arg;
    const gcoll__cuda_ops_t *cu = g->cu;
    if (g->device >= 0)
        cu->set_device(g->device);
    for (size_t k = 0; g->chunks && k < g->nchunks; k++) {
        chunk_t *c = &g->chunks[k];
        drop_request(&c->req, c->state == CH_RUN);
        drop_request(&c->req2, c->state == CH_RUN2);
        drop_event(cu, c->ev_down, c->state == CH_DOWN);
        drop_event(cu, c->ev_mid, c->state == CH_MID);
        drop_event(cu, c->ev_up, c->state == CH_UP);
    }
    free(g->chunks);
    if (g->ev_start)
        cu->event_destroy(g->ev_start);
    if (g->s_down)
        cu->stream_destroy(g->s_down);
    if (g->s_up)
        cu->stream_destroy(g->s_up);
    if (g->pin)
        gcoll__cuda_cached_put(g->pin);
    if (g->dscratch)
        gcoll__cuda_cached_put(g->dscratch);
    free(g);
}

static int elementwise(const gcoll__coll_args_t *a)
{
    return (a->coll == GCOLL_COLL_ALLREDUCE && a->op != GCOLL_ADASUM) || a->coll == GCOLL_COLL_REDUCE ||
        a->coll == GCOLL_COLL_BCAST;
}

/* Whether a is cut by block: its blocked buffers must be device memory, packed by the copies. */
static int blockwise(const gcoll__coll_args_t *a)
{
    int dev;
    return (a->coll == GCOLL_COLL_REDUCE_SCATTER || a->coll == GCOLL_COLL_ALLGATHER ||
            a->coll == GCOLL_COLL_ALLTOALL) &&
        a->sendbuf != a->recvbuf && a->count && gcoll__cuda_get()->is_device(a->sendbuf, &dev) &&
        gcoll__cuda_get()->is_device(a->recvbuf, &dev);
}

/* Element counts of a's send and receive buffers. */
static void extents(const gcoll__coll_args_t *a, size_t *nsend, size_t *nrecv)
{
    size_t n = a->count, p = (size_t)a->size;
    *nsend = *nrecv = n;
    if (a->coll == GCOLL_COLL_REDUCE_SCATTER || a->coll == GCOLL_COLL_ALLTOALL)
        *nsend = n * p;
    if (a->coll == GCOLL_COLL_ALLGATHER || a->coll == GCOLL_COLL_ALLTOALL)
        *nrecv = n * p;
    if (a->coll == GCOLL_COLL_BARRIER)
        *nsend = *nrecv = 0;
}

/* Not on one host's node channel (where a peer with host buffers runs a node-channel algorithm
 * that would never read the GPU paths' messages: the host algorithms on the staged chunks compare
 * descriptors on the channel, and IPC is the fast path). */
int gcoll__cuda_stage_gpu_placed(const gcoll__coll_args_t *a)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    int dev;
    size_t nsend, nrecv;
    extents(a, &nsend, &nrecv);
    return a->size >= 2 && !a->shm && a->count && cu && cu->is_device(a->sendbuf, &dev) &&
        cu->is_device(a->recvbuf, &dev) && (a->size == 2 || nsend * a->esize >= gcoll__config.cuda_reduce_min);
}

/* Whether a reduces on the GPU: an allreduce (not Adasum; compressed, where the kernels library
 * converts) or a reduce_scatter cut by block, placed for it, the kernels library there. */
static int gpu_reduce(const stage_t *g, const gcoll__coll_args_t *a)
{
    return ((a->coll == GCOLL_COLL_ALLREDUCE && a->op != GCOLL_ADASUM &&
             (a->compress == GCOLL_COMPRESS_NONE || g->cu->convert)) ||
            (a->coll == GCOLL_COLL_REDUCE_SCATTER && blockwise(a))) &&
        g->cu->reduce_multi && gcoll__cuda_stage_gpu_placed(a);
}

/* GPU reduction: the elements between rank blocks in the slots of a chunk of n elements (of each
 * block where cut by block); an allreduce's blocks are whole 256-byte lines, so that the kernel
 * moves 16-byte words. */
static size_t block_stride(const stage_t *g, size_t n)
{
    if (g->coll != GCOLL_COLL_ALLREDUCE || g->whole)
        return n;
    size_t line = 256 / g->esize, per = (n + (size_t)g->size - 1) / (size_t)g->size;
    return (per + line - 1) / line * line;
}

/* GPU reduction: chunk c's blocks crossing in one round, each rank receiving every peer's copy
 * of its own block (reduced 0), or every peer's reduced block (reduced 1); peers in a rotated
 * order so that no rank is everyone's first. */
static gcoll__sched_t *exchange(const stage_t *g, const gcoll__coll_args_t *a, size_t k, int reduced)
{
    const chunk_t *c = &g->chunks[k];
    gcoll__sched_t *s = gcoll__sched_new(a->dtype, a->op, (unsigned)a->size, NULL);
    if (!s)
        return NULL;
    gcoll__sched_round(s);
    size_t mine = blk_len(g, c, g->rank);
    for (int i = 1; i < g->size; i++) {
        int to = (g->rank + i) % g->size, from = (g->rank - i + g->size) % g->size;
        size_t nto = reduced ? mine : blk_len(g, c, to), nfrom = reduced ? blk_len(g, c, from) : mine;
        if (nto)
            gcoll__sched_send(s, to, slot_send(g, k) + wdata_off(g, c, reduced ? g->rank : to), nto * g->wsize);
        if (nfrom)
            gcoll__sched_recv(s, from, slot_recv(g, k) + wblk_off(g, c, from), nfrom * g->wsize);
    }
    if (s->status != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return NULL;
    }
    s->desc = gcoll__opdesc_of(a->coll, a->dtype, a->op, c->n, a->root); /* they cross as this collective's */
    return s;
}

/* Fills r, the request that runs s with tag on comm for a chunk of a. */
static void request_init(struct gcoll_request *r, gcoll__sched_t *s, const char *algo, const gcoll__coll_args_t *a,
                         gcoll_comm_t comm, const gcoll__attr_t *attr, uint64_t tag, int device, int gpu)
{
    if (device) /* a rank that passed host memory, or reduces on the other side, meets a mismatch, not a hang */
        s->desc.where = gpu ? GCOLL_OPDESC_GPU : GCOLL_OPDESC_DEVICE;
    s->tag = gcoll__tag_of(tag);
    gcoll__sched_issue(s); /* chunks are set up in order, at the call, as the ranks issue them */
    r->comm = comm;
    r->lane = comm->lane;
    r->coll = a->coll;
    r->algo = algo;
    r->sched = s;
    r->seq = tag;
    if (attr->name)
        snprintf(r->name, sizeof(r->name), "%s", attr->name);
}

/* Builds chunk k's host operation over the staging slot (or the caller's host buffer); with the
 * GPU reduction, its block exchanges (the second with tag + nchunks). */
static gcoll_status_t chunk_build(stage_t *g, const gcoll__coll_args_t *a, size_t k, size_t first, size_t n,
                                  const size_t *tensor_counts, size_t ntensors, const gcoll__attr_t *attr,
                                  gcoll_comm_t comm, uint64_t tag)
{
    chunk_t *c = &g->chunks[k];
    gcoll__coll_args_t ca = *a;
    size_t nsend, nrecv;
    ca.count = n;
    extents(&ca, &nsend, &nrecv);
    c->send_off = c->recv_off = first * a->esize;
    c->send_bytes = nsend * a->esize;
    c->recv_bytes = nrecv * a->esize;
    if (a->sendbuf == a->recvbuf && c->recv_bytes > c->send_bytes)
        c->send_bytes = c->recv_bytes; /* in place: the input sits somewhere in the whole buffer */
    int send_dev = gcoll__cuda_is_device(a->sendbuf), recv_dev = gcoll__cuda_is_device(a->recvbuf);
    int root = a->rank == a->root;
    c->down = send_dev && c->send_bytes && !(a->coll == GCOLL_COLL_BCAST && !root);
    c->up =
        recv_dev && c->recv_bytes && !(a->coll == GCOLL_COLL_BCAST && root) && !(a->coll == GCOLL_COLL_REDUCE && !root);
    if (a->sendbuf)
        ca.sendbuf = send_dev ? slot_send(g, k) : (const char *)a->sendbuf + c->send_off;
    if (a->recvbuf)
        ca.recvbuf = recv_dev ? slot_recv(g, k) : (char *)a->recvbuf + c->recv_off;
    const char *forced = attr->algorithm;
    gcoll__sched_t *s;
    const char *algo;
    if (g->gpu) {
        c->n = n;
        c->bs = block_stride(g, n);
        algo = "staged_gpu_reduce";
        if (!(s = exchange(g, a, k, 0)))
            return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
        c->up = 1;
        if (two_rounds(g)) {
            gcoll__sched_t *s2 = exchange(g, a, k, 1);
            if (!s2) {
                gcoll__sched_free(s);
                return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
            }
            request_init(&c->req2, s2, algo, a, comm, attr, tag + g->nchunks, 1, 1);
            if (g->cu->event_create(&c->ev_mid))
                return gcoll__error(GCOLL_ERR_SYSTEM, "CUDA event create failed");
        }
    } else if (a->op == GCOLL_ADASUM && a->coll == GCOLL_COLL_ALLREDUCE) {
        s = gcoll__sched_new(a->dtype, GCOLL_SUM, (unsigned)a->size, NULL);
        if (!s)
            return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
        gcoll_status_t st = gcoll__adasum_build(s, &ca, tensor_counts, ntensors, forced, &algo);
        if (st != GCOLL_SUCCESS) {
            gcoll__sched_free(s);
            return st;
        }
    } else {
        GCOLL_CHECK(gcoll__build(&ca, forced, NULL, &s, &algo));
    }
    request_init(&c->req, s, algo, a, comm, attr, tag, send_dev || recv_dev, g->gpu);
    if (c->down && g->cu->event_create(&c->ev_down))
        return gcoll__error(GCOLL_ERR_SYSTEM, "CUDA event create failed");
    if (c->up && g->cu->event_create(&c->ev_up))
        return gcoll__error(GCOLL_ERR_SYSTEM, "CUDA event create failed");
    return GCOLL_SUCCESS;
}

/* Sets up g: streams, the start event, the slots, and every chunk's host operation. */
static gcoll_status_t stage_setup(stage_t *g, gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                  gcoll_comm_t comm, const gcoll__attr_t *attr, uint64_t *tag)
{
    const gcoll__cuda_ops_t *cu = g->cu;
    int dev = -1;
    if (!(a->sendbuf && cu->is_device(a->sendbuf, &dev)) && !(a->recvbuf && cu->is_device(a->recvbuf, &dev)))
        dev = -1;
    g->device = dev;
    if (dev >= 0)
        GCOLL_CU(cu->set_device(dev), "set device");
    g->gpu = gpu_reduce(g, a);
    g->whole = g->gpu && a->coll == GCOLL_COLL_ALLREDUCE && a->size == 2; /* as many bytes, one round fewer */
    GCOLL_CU(cu->stream_create(&g->s_down), "stream create");
    GCOLL_CU(cu->stream_create(&g->s_up), "stream create");
    /* The copies start after the work queued before the call on the caller's stream, or without
     * one on the legacy default stream: a cudaMemcpy from pageable memory may return before its
     * bytes reached the device (seen on an H200: a 4-byte input read stale), and the staging
     * streams, being non-blocking, are not ordered after it by themselves. */
    g->user_stream = attr->stream;
    GCOLL_CU(cu->event_create(&g->ev_start), "event create");
    GCOLL_CU(cu->event_record(g->ev_start, g->user_stream), "event record");
    GCOLL_CU(cu->stream_wait_event(g->s_down, g->ev_start), "stream wait");
    GCOLL_CU(cu->stream_wait_event(g->s_up, g->ev_start), "stream wait");
    int blocks = blockwise(a);
    g->nblocks = a->size;
    g->count = a->count;
    g->esize = a->esize;
    g->blk_send = blocks && a->coll != GCOLL_COLL_ALLGATHER;
    g->blk_recv = blocks && a->coll != GCOLL_COLL_REDUCE_SCATTER;
    size_t per = elementwise(a) ? gcoll__config.cuda_chunk / a->esize
        : blocks                ? gcoll__config.cuda_chunk / a->esize / (size_t)a->size
                                : a->count;
    if (per == 0)
        per = 1;
    g->nchunks = a->count ? (a->count + per - 1) / per : 1;
    size_t nsend, nrecv;
    gcoll__coll_args_t first = *a;
    first.count = a->count < per ? a->count : per;
    extents(&first, &nsend, &nrecv);
    int inplace = a->sendbuf == a->recvbuf && !g->gpu; /* one slot, as large as the larger side */
    g->wire = g->gpu && a->compress != GCOLL_COMPRESS_NONE;
    g->wdt = a->compress == GCOLL_COMPRESS_FP16 ? GCOLL_FLOAT16 : GCOLL_BFLOAT16;
    g->wsize = g->wire ? gcoll_dtype_size(g->wdt) : a->esize;
    g->slot_send = (inplace && nrecv > nsend ? nrecv : nsend) * g->wsize;
    if (g->gpu) /* this rank's block arrives from every rank */
        nrecv = block_stride(g, first.count) * (size_t)a->size;
    g->slot_recv = inplace ? 0 : nrecv * g->wsize;
    /* each part whole 256-byte lines: a slot of an odd element count would misalign the next */
    g->dslot = g->wire ? up256(g->slot_recv) + up256(nrecv * a->esize) + up256(g->slot_send) : g->slot_recv;
    size_t slots = g->nchunks < STAGE_SLOTS ? g->nchunks : STAGE_SLOTS;
    if (g->gpu && !(g->dscratch = gcoll__cuda_cached_get(dev, slots * g->dslot)))
        return gcoll__error(GCOLL_ERR_NOMEM, "no device memory for %zu bytes of staging", slots * g->dslot);
    size_t pin_bytes = slots * (g->slot_send + g->slot_recv);
    if (pin_bytes && !(g->pin = gcoll__cuda_cached_get(-1, pin_bytes)))
        return gcoll__error(GCOLL_ERR_NOMEM, "no pinned host memory for %zu bytes of staging", pin_bytes);
    g->chunks = calloc(g->nchunks, sizeof(chunk_t));
    if (!g->chunks)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for %zu staged chunks", g->nchunks);
    /* every rank reserves the same tags in the same order: one per chunk, two where an allreduce
     * reduces on the GPU */
    int twice = two_rounds(g);
    pthread_mutex_lock(&comm->lane->lock);
    *tag = comm->seq;
    comm->seq += g->nchunks * (twice ? 2 : 1);
    pthread_mutex_unlock(&comm->lane->lock);
    for (size_t k = 0; k < g->nchunks; k++) {
        size_t lo = k * per, n = a->count - lo < per ? a->count - lo : per;
        GCOLL_CHECK(chunk_build(g, a, k, lo, n, tensor_counts, ntensors, attr, comm, *tag + k));
    }
    /* the chunks' messages say what they are, and arrivals are checked against it */
    pthread_mutex_lock(&comm->lane->lock);
    for (size_t k = 0; k < g->nchunks; k++) {
        gcoll__optab_put(&comm->optab, gcoll__tag_of(*tag + k), &g->chunks[k].req.sched->desc);
        if (twice)
            gcoll__optab_put(&comm->optab, gcoll__tag_of(*tag + g->nchunks + k), &g->chunks[k].req2.sched->desc);
    }
    pthread_mutex_unlock(&comm->lane->lock);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__cuda_stage_start(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                       gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    if (!cu)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "attr->stream is set but CUDA is not available");
    if (gcoll__cuda_stage_adasum_gpu(a, attr))
        return gcoll__cuda_stage_adasum_start(a, tensor_counts, ntensors, comm, attr, req);
    stage_t *g = calloc(1, sizeof(*g));
    gcoll__sched_t *s = gcoll__sched_new(a->dtype, a->op, (unsigned)a->size, NULL);
    if (!g || !s) {
        free(g);
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a staged operation");
    }
    g->cu = cu;
    g->rank = a->rank;
    g->size = a->size;
    g->coll = a->coll;
    g->dtype = a->dtype;
    g->op = a->op;
    g->sendbuf = a->sendbuf;
    g->recvbuf = a->recvbuf;
    s->cleanup = stage_free;
    s->cleanup_arg = g;
    uint64_t tag = 0;
    gcoll_status_t st = stage_setup(g, a, tensor_counts, ntensors, comm, attr, &tag);
    if (st != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return st;
    }
    gcoll__sched_custom(s, stage_poll, stage_who, g);
    gcoll__sched_custom_local(s);
    s->desc = g->chunks[0].req.sched->desc; /* the driver shares the first chunk's tag */
    if (s->status != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
    }
    /* the driver sends nothing itself: it shares the first chunk's tag */
    gcoll__start_t how = {.wake = 1, .own_tag = 1, .tag = tag};
    return gcoll__request_start(comm, a->coll, g->chunks[0].req.algo, s, attr, req, &how);
}

gcoll_status_t gcoll__cuda_reduce_local(void *inout, const void *in, size_t count, gcoll_dtype_t dtype, gcoll_op_t op)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    int dev = 0, d_inout = !!cu->is_device(inout, &dev), d_in = !!cu->is_device(in, &dev);
    if (d_inout != d_in)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is device memory and %s is not: both or neither",
                            d_inout ? "inout" : "in", d_inout ? "in" : "inout");
    if (dtype != GCOLL_FLOAT32 && dtype != GCOLL_FLOAT64 && dtype != GCOLL_FLOAT16 && dtype != GCOLL_BFLOAT16 &&
        dtype != GCOLL_FLOAT8_E4M3 && dtype != GCOLL_FLOAT8_E5M2)
        return gcoll__error(GCOLL_ERR_UNSUPPORTED, "dtype %s: device reductions take fp32, fp64, fp16, bf16, fp8",
                            gcoll_dtype_name(dtype));
    if (!cu->reduce)
        return gcoll__error(GCOLL_ERR_UNSUPPORTED, "device reduction: libgcoll_cuda.so was not found beside libgcoll");
    void *ev;
    GCOLL_CU(cu->set_device(dev), "set device");
    GCOLL_CU(cu->reduce(inout, inout, in, count, dtype, op, NULL), "reduction kernel");
    GCOLL_CU(cu->event_create(&ev), "event create");
    int e = cu->event_record(ev, NULL);
    if (!e)
        e = cu->event_sync(ev);
    cu->event_destroy(ev);
    GCOLL_CU(e, "wait for the reduction");
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__cuda_copy(void *dst, const void *src, size_t bytes)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    int dev = 0;
    if (!cu || !(cu->is_device(dst, &dev) | cu->is_device(src, &dev))) {
        memcpy(dst, src, bytes);
        return GCOLL_SUCCESS;
    }
    void *ev;
    GCOLL_CU(cu->set_device(dev), "set device");
    GCOLL_CU(cu->memcpy_async(dst, src, bytes, NULL), "copy");
    GCOLL_CU(cu->event_create(&ev), "event create");
    int e = cu->event_record(ev, NULL);
    if (!e)
        e = cu->event_sync(ev);
    cu->event_destroy(ev);
    GCOLL_CU(e, "wait for the copy");
    return GCOLL_SUCCESS;
}
