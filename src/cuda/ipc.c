/* Collectives on device buffers when every rank is on one host: each rank exports its buffers as
 * CUDA IPC handles once its input is ready, maps its peers' (cached per allocation), and reduces
 * or copies its share of the result straight between the GPUs with kernels; the host carries only
 * the handles and a completion byte per peer. Allreduce and reduce split the elements among the
 * ranks; the other collectives give each rank its own blocks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/comm.h"
#include "base/config.h"
#include "base/error.h"
#include "core/request.h"
#include "base/schedule.h"
#include "cuda/ipc.h"

/* What a rank tells its peers once its input is ready. */
struct gcoll__ipc_rec {
    uint64_t proc; /* its process (random: pids repeat across containers) */
    int32_t err;   /* 0, or the CUDA error of exporting: then nobody maps anything */
    int32_t pad0;
    uint64_t ptr[2]; /* send, receive: the buffers themselves, for ranks of the same process */
    uint64_t off[2]; /* their offsets in their allocations */
    uint64_t id[2];  /* their allocations' ids */
    gcoll__cuda_ipc_handle_t h[2];
    char bus[32];   /* its GPU's PCI bus id; empty when unknown */
    uint8_t has[2]; /* whether the rank passes each buffer */
    uint8_t pad[6];
};
typedef gcoll__ipc_rec_t rec_t;

/* A peer's allocation mapped into this process, by (process, id). A new id at the base address of
 * a mapped one means the peer freed that allocation: its mapping goes once nothing uses it. */
struct gcoll__ipc_imp {
    struct gcoll__ipc_imp *next;
    uint64_t proc;
    uint64_t id, ebase; /* ebase: the allocation's address in the peer */
    void *base;
    int refs, stale;
};
typedef gcoll__ipc_imp_t imp_t;
static pthread_mutex_t imp_lock = PTHREAD_MUTEX_INITIALIZER;
static imp_t *imps;

/* Unmaps the stale mappings nothing uses any more. */
static void unmap_stale(const gcoll__cuda_ops_t *cu)
{
    imp_t *gone = NULL;
    pthread_mutex_lock(&imp_lock);
    for (imp_t **p = &imps; *p;) {
        imp_t *e = *p;
        if (e->stale && e->refs == 0) {
            *p = e->next;
            e->next = gone;
            gone = e;
        } else {
            p = &e->next;
        }
    }
    pthread_mutex_unlock(&imp_lock);
    for (imp_t *n; gone; gone = n) {
        n = gone->next;
        cu->ipc_close(gone->base);
        free(gone);
    }
}

/* Maps rec's buffer side; NULL with the CUDA error in *err. */
static imp_t *imp_get(const gcoll__cuda_ops_t *cu, const rec_t *rec, int side, int *err)
{
    imp_t *hit = NULL;
    uint64_t ebase = rec->ptr[side] - rec->off[side];
    pthread_mutex_lock(&imp_lock);
    for (imp_t *m = imps; m; m = m->next)
        if (m->proc == rec->proc && !m->stale) {
            if (m->id == rec->id[side])
                hit = m;
            else if (m->ebase == ebase)
                m->stale = 1;
        }
    if (hit)
        hit->refs++;
    pthread_mutex_unlock(&imp_lock);
    if (hit)
        return hit;
    /* the driver refuses to map memory again while a stale mapping of it is open */
    unmap_stale(cu);
    imp_t *m = calloc(1, sizeof(*m));
    if (!m) {
        *err = 2; /* cudaErrorMemoryAllocation */
        return NULL;
    }
    if ((*err = cu->ipc_open(&rec->h[side], &m->base)) != 0) {
        free(m);
        return NULL;
    }
    m->proc = rec->proc;
    m->id = rec->id[side];
    m->ebase = ebase;
    m->refs = 1;
    pthread_mutex_lock(&imp_lock);
    m->next = imps;
    imps = m;
    pthread_mutex_unlock(&imp_lock);
    return m;
}

static void imp_put(const gcoll__cuda_ops_t *cu, imp_t *m)
{
    pthread_mutex_lock(&imp_lock);
    m->refs--;
    pthread_mutex_unlock(&imp_lock);
    unmap_stale(cu);
}

void gcoll__cuda_ipc_release(void)
{
    pthread_mutex_lock(&imp_lock);
    imp_t *all = imps;
    imps = NULL;
    pthread_mutex_unlock(&imp_lock);
    const gcoll__cuda_ops_t *cu = all ? gcoll__cuda_get() : NULL;
    for (imp_t *n; all; all = n) {
        n = all->next;
        cu->ipc_close(all->base);
        free(all);
    }
}

typedef gcoll__ipc_t ipc_t;

/* Device memory proper: managed memory (is_device 2) has no IPC handle and stages. */
static int device_buf(const void *p)
{
    int dev;
    return p && gcoll__cuda_get()->is_device(p, &dev) == 1;
}

/* A number for this process that no other on the host shares (pids repeat across pid
 * namespaces): drawn once, the pid mixed in should the kernel's random source fail. */
static uint64_t proc_id;
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;
static void draw_proc_id(void)
{
    if (getrandom(&proc_id, sizeof(proc_id), GRND_NONBLOCK) != (ssize_t)sizeof(proc_id))
        proc_id = 0;
    proc_id ^= (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
}
static uint64_t process_id(void)
{
    pthread_once(&proc_once, draw_proc_id);
    return proc_id;
}

/* The buffers a rank's part of a needs on the device: send, receive (0 where it passes none). */
static void needs(const gcoll__coll_args_t *a, int *send, int *recv)
{
    *send = a->coll != GCOLL_COLL_BCAST || a->rank == a->root;
    *recv = a->coll != GCOLL_COLL_REDUCE || a->rank == a->root;
}

/* Why a cannot run over CUDA IPC whatever its collective (kernels: the table has them), or NULL. */
static const char *unusable(const gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr, int kernels)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    int s, r;
    if (!cu || !cu->ipc_export || !kernels)
        return "the CUDA driver, runtime or libgcoll_cuda.so lacks it (gcoll-info)";
    if (comm->map.nhosts != 1)
        return "the communicator spans several hosts";
    if (a->size > GCOLL_CUDA_MULTI_MAX)
        return "the communicator has more ranks than its kernels take (16)";
    if (attr->algorithm)
        return "attr->algorithm names a host algorithm";
    needs(a, &s, &r);
    if ((s && !device_buf(a->sendbuf)) || (r && !device_buf(a->recvbuf)))
        return "a buffer of this rank is host memory";
    return NULL;
}

int gcoll__cuda_ipc_eligible(const gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                             const char **why)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    *why = NULL;
    if (gcoll__config.cuda_ipc == 2 || a->count == 0) /* nothing to move: the staged path's no-op */
        return 0;
    if (a->coll == GCOLL_COLL_BARRIER || (a->coll == GCOLL_COLL_ALLREDUCE && a->op == GCOLL_ADASUM))
        *why = "barrier does not use it, and Adasum has its own";
    else
        *why = unusable(a, comm, attr, cu && cu->reduce_multi);
    return *why == NULL;
}

int gcoll__cuda_ipc_adasum_eligible(const gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                                    const char **why)
{
    const gcoll__cuda_ops_t *cu = gcoll__cuda_get();
    *why = NULL;
    if (gcoll__config.cuda_ipc == 2 || a->count == 0)
        return 0;
    *why = unusable(a, comm, attr, cu && cu->adasum_dots && cu->scaled_add);
    return *why == NULL;
}

/* Queues rank r's share of the result on g->stream; whole: r computes all of an allreduce or
 * reduce (the ranks share one GPU). */
static gcoll_status_t launch_for(ipc_t *g, int r, int whole)
{
    const gcoll__coll_args_t *a = &g->a;
    const gcoll__cuda_ops_t *cu = g->cu;
    int p = a->size;
    size_t es = a->esize, n = a->count, blk = n * es;
    void *dst[GCOLL_CUDA_MULTI_MAX];
    const void *src[GCOLL_CUDA_MULTI_MAX];
    unsigned div = a->op == GCOLL_AVG ? (unsigned)p : 1;
    switch (a->coll) {
    case GCOLL_COLL_ALLREDUCE:
    case GCOLL_COLL_REDUCE: {
        size_t lo = 0, hi = n;
        if (!whole)
            gcoll__cuda_share(n, r, p, &lo, &hi);
        if (lo == hi)
            return GCOLL_SUCCESS;
        int nd = 0;
        for (int q = 0; q < p; q++) {
            src[q] = g->sendp[q] + lo * es;
            if (a->coll == GCOLL_COLL_ALLREDUCE || q == a->root)
                dst[nd++] = g->recvp[q] + lo * es;
        }
        GCOLL_CU(cu->reduce_multi(dst, nd, src, p, hi - lo, (int)a->dtype, (int)a->op, div, g->stream),
                 "reduction kernel");
        return GCOLL_SUCCESS;
    }
    case GCOLL_COLL_REDUCE_SCATTER: /* in place, the share lands in the rank's own block first */
        for (int q = 0; q < p; q++)
            src[q] = g->sendp[q] + (size_t)r * blk;
        dst[0] = a->sendbuf == a->recvbuf ? g->sendp[r] + (size_t)r * blk : g->recvp[r];
        GCOLL_CU(cu->reduce_multi(dst, 1, src, p, n, (int)a->dtype, (int)a->op, div, g->stream), "reduction kernel");
        return GCOLL_SUCCESS;
    case GCOLL_COLL_ALLGATHER:
        for (int q = 0; q < p; q++)
            if (g->sendp[q] != g->recvp[r] + (size_t)q * blk)
                GCOLL_CU(cu->memcpy_async(g->recvp[r] + (size_t)q * blk, g->sendp[q], blk, g->stream), "copy");
        return GCOLL_SUCCESS;
    case GCOLL_COLL_BCAST:
        if (r != a->root)
            GCOLL_CU(cu->memcpy_async(g->recvp[r], g->sendp[a->root], blk, g->stream), "copy");
        return GCOLL_SUCCESS;
    case GCOLL_COLL_ALLTOALL: {
        char *out = g->scratch ? g->scratch : g->recvp[r];
        for (int q = 0; q < p; q++)
            GCOLL_CU(cu->memcpy_async(out + (size_t)q * blk, g->sendp[q] + (size_t)r * blk, blk, g->stream), "copy");
        return GCOLL_SUCCESS;
    }
    default: return gcoll__error(GCOLL_ERR_INTERNAL, "CUDA IPC: no plan for %s", gcoll__coll_name(a->coll));
    }
}

/* Whether every rank's buffers are on one GPU: then rank 0 computes the whole result, since
 * kernels of several processes on one GPU take turns, each switch costing more than a small
 * operation (in-place alltoall, which needs each rank's scratch, excepted). */
static int one_gpu(const ipc_t *g)
{
    if (g->a.coll == GCOLL_COLL_ALLTOALL && g->a.sendbuf == g->a.recvbuf)
        return 0;
    for (int q = 0; q < g->a.size; q++)
        if (!g->recs[q].bus[0] || strncmp(g->recs[q].bus, g->recs[0].bus, sizeof(g->recs[q].bus)) != 0)
            return 0;
    return 1;
}

/* Queues this rank's part: its share, or on one GPU, rank 0 everyone's. */
static gcoll_status_t launch(ipc_t *g)
{
    const gcoll__coll_args_t *a = &g->a;
    if (!g->whole)
        return launch_for(g, a->rank, 0);
    if (a->rank != 0)
        return GCOLL_SUCCESS;
    if (a->coll == GCOLL_COLL_ALLREDUCE || a->coll == GCOLL_COLL_REDUCE)
        return launch_for(g, 0, 1);
    for (int q = 0; q < a->size; q++)
        GCOLL_CHECK(launch_for(g, q, 0));
    size_t blk = a->count * a->esize;
    if (a->coll == GCOLL_COLL_REDUCE_SCATTER && a->sendbuf == a->recvbuf) /* after every read, in order */
        for (int q = 1; q < a->size; q++)
            GCOLL_CU(g->cu->memcpy_async(g->recvp[q], g->sendp[q] + (size_t)q * blk, blk, g->stream), "copy");
    return GCOLL_SUCCESS;
}

/* This rank's record: its buffers exported for the peers to map. */
static void export(ipc_t *g)
{
    rec_t *me = &g->recs[g->a.rank];
    const void *buf[2] = {g->sendp[g->a.rank], g->recvp[g->a.rank]};
    me->proc = process_id();
    if (!g->cu->bus_id || g->cu->bus_id(g->device, me->bus, (int)sizeof(me->bus)) != 0)
        me->bus[0] = '\0';
    me->bus[sizeof(me->bus) - 1] = '\0';
    for (int side = 0; side < 2 && !me->err; side++)
        if (me->has[side]) {
            size_t off = 0;
            unsigned long long id = 0;
            me->ptr[side] = (uint64_t)(uintptr_t)buf[side];
            me->err = g->cu->ipc_export(buf[side], &me->h[side], &off, &id);
            me->off[side] = off;
            me->id[side] = id;
        }
}

/* Round 1: in the node channel's order, once the input is ready (the caller's stream reached
 * the start event), export; on the channel, publish the descriptor and compare the others'. */
static gcoll_status_t step_export(void *state, int *done)
{
    ipc_t *g = state;
    gcoll__shm_t *shm = g->shm;
    if (g->stage == 0) {
        if (shm && !gcoll__shm_turn(shm, g->seq))
            return GCOLL_SUCCESS;
        g->stage = 1;
    }
    if (g->stage == 1) {
        int ok = 0;
        GCOLL_CU(g->cu->set_device(g->device), "set device");
        GCOLL_CHECK(gcoll__cuda_ready(g->ev_start, &ok));
        if (!ok)
            return GCOLL_SUCCESS;
        export(g);
        if (shm) {
            gcoll__shm_announce(shm, g->seq, &g->sched->desc);
            gcoll__shm_arrive(shm, g->seq);
        }
        g->stage = 2;
    }
    if (shm) {
        if (!gcoll__shm_all_arrived(shm, g->seq))
            return GCOLL_SUCCESS;
        GCOLL_CHECK(gcoll__shm_agree(shm, g->seq, g->sched->tag, &g->sched->desc, g->a.rank));
    }
    *done = 1;
    return GCOLL_SUCCESS;
}

/* Maps every peer's buffers; a failure is recorded in g->err and this rank's status byte. */
static void map_peers(ipc_t *g)
{
    int p = g->a.size, me = g->a.rank;
    for (int q = 0; q < p && !g->err[0]; q++) {
        const rec_t *rec = &g->recs[q];
        for (int side = 0; side < 2 && q != me; side++) {
            char **slot = side ? &g->recvp[q] : &g->sendp[q];
            if (!rec->has[side])
                continue;
            if (rec->proc == g->recs[me].proc) { /* ranks of one process share the address space */
                *slot = (char *)(uintptr_t)rec->ptr[side];
                continue;
            }
            int e = 0;
            imp_t *m = imp_get(g->cu, rec, side, &e);
            if (!m) {
                snprintf(g->err, sizeof(g->err),
                         "cudaIpcOpenMemHandle of rank %d's %s buffer: %s (GCOLL_CUDA_IPC=off where GPUs lack "
                         "peer access or processes share no IPC namespace)",
                         q, side ? "receive" : "send", g->cu->error_string(e));
                break;
            }
            g->held[2 * q + side] = m;
            *slot = (char *)m->base + rec->off[side];
        }
    }
}

void gcoll__ipc_map(ipc_t *g)
{
    g->whole = one_gpu(g);
    for (int q = 0; q < g->a.size && !g->err[0]; q++) /* every rank names an export that failed */
        if (g->recs[q].err)
            snprintf(g->err, sizeof(g->err),
                     "rank %d could not export its buffer for CUDA IPC (%s): "
                     "cudaMallocAsync pools and VMM memory have none; GCOLL_CUDA_IPC=off",
                     q, g->cu->error_string(g->recs[q].err));
    if (!g->err[0] && (!g->whole || g->a.rank == 0)) /* on one GPU only rank 0 touches the peers' buffers */
        map_peers(g);
}

/* Round 3: map the peers' buffers, run this rank's kernels and wait for them. */
static gcoll_status_t step_run(void *state, int *done)
{
    ipc_t *g = state;
    GCOLL_CU(g->cu->set_device(g->device), "set device");
    if (!g->launched) {
        g->launched = 1;
        gcoll__ipc_map(g);
        if (!g->err[0]) {
            gcoll_status_t st = launch(g);
            if (st == GCOLL_SUCCESS)
                st = g->cu->event_record(g->ev_done, g->stream) ? GCOLL_ERR_SYSTEM : GCOLL_SUCCESS;
            if (st != GCOLL_SUCCESS) {
                snprintf(g->err, sizeof(g->err), "%s", gcoll_last_error());
                /* what was queued may still write the peers' buffers: it ends before they hear */
                if (!g->cu->event_record(g->ev_done, g->stream))
                    g->cu->event_sync(g->ev_done);
            }
        }
        g->status[g->a.rank] = g->err[0] != 0;
    }
    int ok = 1;
    if (!g->err[0])
        GCOLL_CHECK(gcoll__cuda_ready(g->ev_done, &ok));
    *done = ok;
    return GCOLL_SUCCESS;
}

/* Round 5: every peer is done with this rank's buffers: report failures, move a result
 * computed aside into place. */
static gcoll_status_t step_finish(void *state, int *done)
{
    ipc_t *g = state;
    const gcoll__coll_args_t *a = &g->a;
    if (g->err[0])
        return gcoll__error(GCOLL_ERR_SYSTEM, "%s", g->err);
    if (g->shm) /* the channel's next operation may start */
        gcoll__shm_complete(g->shm, g->seq);
    for (int q = 0; q < a->size; q++)
        if (g->status[q])
            return gcoll__error(GCOLL_ERR_REMOTE, "%s over CUDA IPC failed on rank %d (its own error says why)",
                                gcoll__coll_name(a->coll), q);
    GCOLL_CU(g->cu->set_device(g->device), "set device");
    size_t blk = a->count * a->esize;
    if (!g->moved) {
        g->moved = 1;
        if (a->coll == GCOLL_COLL_REDUCE_SCATTER && a->sendbuf == a->recvbuf && a->rank && !g->whole)
            GCOLL_CU(g->cu->memcpy_async(a->recvbuf, (char *)a->recvbuf + (size_t)a->rank * blk, blk, g->stream),
                     "copy");
        else if (g->scratch)
            GCOLL_CU(g->cu->memcpy_async(a->recvbuf, g->scratch, blk * (size_t)a->size, g->stream), "copy");
        else {
            *done = 1;
            return GCOLL_SUCCESS;
        }
        GCOLL_CU(g->cu->event_record(g->ev_done, g->stream), "event record");
    }
    int ok = 0;
    GCOLL_CHECK(gcoll__cuda_ready(g->ev_done, &ok));
    *done = ok;
    return GCOLL_SUCCESS;
}

void gcoll__ipc_who(void *state, char *buf, size_t len)
{
    ipc_t *g = state;
    snprintf(buf, len, "%s", g->launched ? "this rank's CUDA IPC kernels" : "this rank's input on its CUDA stream");
}

static void ipc_free(void *arg)
{
    ipc_t *g = arg;
    const gcoll__cuda_ops_t *cu = g->cu;
    cu->set_device(g->device);
    /* whatever is queued finishes before the mappings and scratch go (a failed or aborted
     * operation may still have kernels in flight; destroying the stream does not wait) */
    if (g->stream && g->ev_done && !cu->event_record(g->ev_done, g->stream))
        cu->event_sync(g->ev_done);
    if (g->stream)
        cu->stream_destroy(g->stream);
    for (int i = 0; g->held && i < 2 * g->a.size; i++)
        if (g->held[i])
            imp_put(cu, g->held[i]);
    if (g->ev_start)
        cu->event_destroy(g->ev_start);
    if (g->ev_done)
        cu->event_destroy(g->ev_done);
    if (g->scratch)
        gcoll__cuda_cached_put(g->scratch);
    if (g->ext)
        g->ext_free(g->ext);
    free(g->recs);
    free(g->status);
    free(g->sendp);
    free(g->recvp);
    free(g->held);
    free(g);
}

static gcoll_status_t ipc_setup(ipc_t *g, const gcoll__attr_t *attr)
{
    const gcoll__cuda_ops_t *cu = g->cu;
    gcoll__coll_args_t *a = &g->a;
    size_t p = (size_t)a->size;
    g->recs = calloc(p, sizeof(rec_t));
    g->status = calloc(p, 1);
    g->sendp = calloc(p, sizeof(char *));
    g->recvp = calloc(p, sizeof(char *));
    g->held = calloc(2 * p, sizeof(imp_t *));
    if (!g->recs || !g->status || !g->sendp || !g->recvp || !g->held)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a CUDA IPC operation of %zu ranks", p);
    int s, r;
    needs(a, &s, &r);
    const char *send = a->sendbuf;
    if (a->coll == GCOLL_COLL_ALLGATHER && a->sendbuf == a->recvbuf) /* in place: this rank's block */
        send += (size_t)a->rank * a->count * a->esize;
    g->sendp[a->rank] = (char *)send;
    g->recvp[a->rank] = a->recvbuf;
    g->recs[a->rank].has[0] = (uint8_t)s;
    g->recs[a->rank].has[1] = (uint8_t)r;
    if (!cu->is_device(a->sendbuf ? a->sendbuf : a->recvbuf, &g->device))
        g->device = 0;
    GCOLL_CU(cu->set_device(g->device), "set device");
    GCOLL_CU(cu->stream_create(&g->stream), "stream create");
    GCOLL_CU(cu->event_create(&g->ev_start), "event create");
    GCOLL_CU(cu->event_create(&g->ev_done), "event create");
    /* the input is ready once the caller's stream (the legacy default stream without one)
     * reaches this point: a cudaMemcpy from pageable memory may return before its bytes land */
    GCOLL_CU(cu->event_record(g->ev_start, attr->stream), "event record");
    GCOLL_CU(cu->stream_wait_event(g->stream, g->ev_start), "stream wait");
    if (a->coll == GCOLL_COLL_ALLTOALL && a->sendbuf == a->recvbuf &&
        !(g->scratch = gcoll__cuda_cached_get(g->device, a->count * a->esize * p)))
        return gcoll__error(GCOLL_ERR_NOMEM, "no device memory for %zu bytes of in-place alltoall",
                            a->count * a->esize * p);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__ipc_begin(gcoll__coll_args_t *a, const gcoll__attr_t *attr, ipc_t **out, gcoll__sched_t **sched)
{
    ipc_t *g = calloc(1, sizeof(*g));
    gcoll__sched_t *s = gcoll__sched_new(a->dtype, a->op, (unsigned)a->size, NULL);
    if (!g || !s) {
        free(g);
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a CUDA IPC operation");
    }
    g->cu = gcoll__cuda_get();
    g->a = *a;
    s->cleanup = ipc_free;
    s->cleanup_arg = g;
    s->desc = gcoll__opdesc_of(a->coll, a->dtype, a->op, a->count, a->root);
    s->desc.where = GCOLL_OPDESC_IPC; /* a staged rank (a host buffer, another GCOLL_CUDA_IPC) mismatches */
    g->sched = s;
    if ((g->shm = a->shm) != NULL)
        g->seq = gcoll__shm_reserve(a->shm, 1);
    gcoll_status_t st = ipc_setup(g, attr);
    if (st != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return st;
    }
    gcoll__sched_round(s);
    gcoll__sched_custom(s, step_export, gcoll__ipc_who, g);
    gcoll__sched_custom_local(s);
    gcoll__sched_exchange(s, a->rank, a->size, g->recs, sizeof(rec_t));
    *out = g;
    *sched = s;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__ipc_end(ipc_t *g, gcoll__sched_t *s, gcoll_comm_t comm, const gcoll__attr_t *attr,
                              gcoll_request_t *req, const char *algo)
{
    gcoll__sched_exchange(s, g->a.rank, g->a.size, g->status, 1);
    gcoll__sched_round(s);
    gcoll__sched_custom(s, step_finish, gcoll__ipc_who, g);
    gcoll__sched_custom_local(s);
    if (s->status != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
    }
    gcoll__start_t how = {.wake = 1};
    return gcoll__request_start(comm, g->a.coll, algo, s, attr, req, &how);
}

/* export; the records cross; map and run; the status bytes cross; finish */
gcoll_status_t gcoll__cuda_ipc_start(gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                                     gcoll_request_t *req)
{
    ipc_t *g;
    gcoll__sched_t *s;
    GCOLL_CHECK(gcoll__ipc_begin(a, attr, &g, &s));
    gcoll__sched_round(s);
    gcoll__sched_custom(s, step_run, gcoll__ipc_who, g);
    gcoll__sched_custom_local(s);
    return gcoll__ipc_end(g, s, comm, attr, req, "cuda_ipc");
}
