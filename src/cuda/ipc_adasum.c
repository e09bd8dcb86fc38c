/* Adasum on device buffers over CUDA IPC: the tree on the GPU (adasum_gpu.h) over each rank's
 * slice of the elements (rank 0 all of them where the ranks share one GPU), reading the peers'
 * inputs in place; each rank then writes its slice of the result into every rank's buffer. */
#include <stdlib.h>

#include "base/error.h"
#include "cuda/adasum_gpu.h"
#include "cuda/ipc.h"

typedef struct {
    gcoll__gpu_ada_t d;
    gcoll__ipc_t *g;
} ada_t;

static void ada_free(void *arg)
{
    ada_t *x = arg;
    gcoll__gpu_ada_free(&x->d);
    free(x);
}

/* After the records crossed: the peers mapped, this rank's slice of their inputs. */
static gcoll_status_t begin(gcoll__gpu_ada_t *d)
{
    gcoll__ipc_t *g = ((ada_t *)d->frame)->g;
    int p = g->a.size, me = g->a.rank;
    g->launched = 1;
    gcoll__ipc_map(g);
    if (g->err[0])
        return GCOLL_SUCCESS;
    if (g->whole) {
        d->lo = 0;
        d->hi = me == 0 ? g->a.count : 0;
    } else {
        gcoll__cuda_share(g->a.count, me, p, &d->lo, &d->hi);
    }
    for (int q = 0; q < p; q++)
        d->vec[q] = g->sendp[q] + d->lo * d->es;
    d->out = g->recvp[me] + d->lo * d->es;
    return gcoll__gpu_ada_memory(d);
}

/* The result's slice (a single rank's input where there is no level) goes to every rank. */
static gcoll_status_t push(gcoll__gpu_ada_t *d)
{
    gcoll__ipc_t *g = ((ada_t *)d->frame)->g;
    int me = g->a.rank;
    size_t bytes = (d->hi - d->lo) * d->es;
    if (d->nlev == 0 && g->sendp[me] != g->recvp[me])
        GCOLL_CU(g->cu->memcpy_async(d->out, g->sendp[me], bytes, g->stream), "copy");
    for (int q = 0; q < g->a.size; q++)
        if (q != me)
            GCOLL_CU(g->cu->memcpy_async(g->recvp[q] + d->lo * d->es, d->out, bytes, g->stream), "copy");
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll__cuda_ipc_adasum_start(gcoll__coll_args_t *a, const size_t *tensor_counts, size_t ntensors,
                                            gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req)
{
    GCOLL_CHECK(gcoll__adasum_check(a->count, a->dtype, tensor_counts, ntensors));
    gcoll__ipc_t *g;
    gcoll__sched_t *s;
    GCOLL_CHECK(gcoll__ipc_begin(a, attr, &g, &s));
    ada_t *x = calloc(1, sizeof(*x));
    if (!x) {
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a CUDA IPC Adasum");
    }
    x->g = g;
    g->ext = x;
    g->ext_free = ada_free;
    gcoll__gpu_ada_t *d = &x->d;
    d->stream = g->stream;
    d->device = g->device;
    d->ev_last = g->ev_done;
    d->err = g->err;
    d->errlen = sizeof(g->err);
    d->status = &g->status[a->rank];
    d->begin = begin;
    d->finish = push;
    d->frame = x;
    gcoll_status_t st = gcoll__gpu_ada_init(d, a, tensor_counts, ntensors);
    if (st != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return st;
    }
    gcoll__gpu_ada_rounds(d, s);
    return gcoll__ipc_end(g, s, comm, attr, req, "cuda_ipc_adasum");
}
