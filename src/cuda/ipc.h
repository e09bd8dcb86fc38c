/* The frame every CUDA IPC operation shares (ipc.c): the handles' exchange, the peers' buffers
 * mapped, the completion bytes and the finish. An operation's own rounds (the plain collectives'
 * kernels in ipc.c, Adasum's levels in ipc_adasum.c) go between gcoll__ipc_begin and _end. */
#ifndef GCOLL_CUDA_IPC_H
#define GCOLL_CUDA_IPC_H

#include "cuda/cuda.h"
#include "base/schedule.h"

typedef struct gcoll__ipc_rec gcoll__ipc_rec_t;
typedef struct gcoll__ipc_imp gcoll__ipc_imp_t;

typedef struct {
    const gcoll__cuda_ops_t *cu;
    gcoll__coll_args_t a;
    int device;
    void *stream, *ev_start, *ev_done;
    gcoll__ipc_rec_t *recs;
    uint8_t *status;         /* each rank's after its kernels: 0, or 1 when it failed */
    char **sendp, **recvp;   /* each rank's buffers as this process addresses them */
    gcoll__ipc_imp_t **held; /* 2 per rank: the mappings this operation uses */
    char *scratch;           /* in-place alltoall: the result, until every peer has read its input */
    int launched, moved;     /* the kernels are queued; the result moved into place */
    int whole;               /* every rank on one GPU: rank 0 computes everything */
    /* The node channel, where there is one: the operation takes its place in the channel's order
     * (seq), as the node's host algorithms do, and compares its descriptor with theirs there, so
     * a rank that passed host memory meets a mismatch instead of a hang */
    struct gcoll__shm *shm;
    uint64_t seq;
    int stage; /* export step: 0 waiting its turn, 1 its input, 2 the others' arrival */
    const gcoll__sched_t *sched;
    void *ext; /* the operation's own state, freed with ext_free */
    void (*ext_free)(void *ext);
    char err[240];
} gcoll__ipc_t;

/* Sets up an operation on a (its buffers device memory) and its schedule's first rounds: once the
 * input is ready, export; the records cross. */
gcoll_status_t gcoll__ipc_begin(gcoll__coll_args_t *a, const gcoll__attr_t *attr, gcoll__ipc_t **g, gcoll__sched_t **s);
/* After the records crossed: whether the ranks share one GPU (g->whole), any rank's failed
 * export, the peers' buffers mapped (only rank 0's where whole); a failure lands in g->err. */
void gcoll__ipc_map(gcoll__ipc_t *g);
/* Appends the last rounds (the completion bytes cross; failures reported, results moved) and
 * starts s under algo's name; s is freed on failure. */
gcoll_status_t gcoll__ipc_end(gcoll__ipc_t *g, gcoll__sched_t *s, gcoll_comm_t comm, const gcoll__attr_t *attr,
                              gcoll_request_t *req, const char *algo);
void gcoll__ipc_who(void *state, char *buf, size_t len);

#endif
