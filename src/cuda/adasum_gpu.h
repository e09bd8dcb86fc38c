/* Adasum's tree (DESIGN.md's exact operator) on the GPU over this rank's slice of the elements,
 * shared by CUDA IPC (ipc_adasum.c) and the staged path across hosts (stage_adasum.c): the fold of
 * the ranks past a power of two, then the levels of pairs, each a dot-product kernel over the
 * slice, the ranks' partial sums exchanged and added in rank order (the same coefficients on every
 * rank), then the scaled adds. The frame supplies the slice's inputs and moves its result. */
#ifndef GCOLL_CUDA_ADASUM_GPU_H
#define GCOLL_CUDA_ADASUM_GPU_H

#include "cuda/cuda.h"
#include "base/schedule.h"
#include "collectives/adasum.h"

typedef struct gcoll__gpu_ada gcoll__gpu_ada_t;
struct gcoll__gpu_ada {
    const gcoll__cuda_ops_t *cu;
    void *stream; /* where every kernel and copy of the tree queues (the frame's) */
    int device;
    gcoll_dtype_t dtype;
    size_t es;
    int rank, size;
    gcoll__adasum_shape_t sh;
    int p2, fold, nlev;       /* the largest power of two <= size; 1 when ranks past it fold first; levels */
    int lev, queued, waiting; /* the level the step works on; its work queued; an event after it */
    size_t lo, hi;            /* this rank's slice */
    size_t maxpair;           /* the most pairs a level has */
    int *pa, *pb;             /* a level's pairs: vec[pa[j]] = adasum(vec[pa[j]], vec[pb[j]]) */
    char *dev;                /* device: the intermediate vectors, then the dot products */
    double *ddots, *hdots;    /* a level's dot products on the device, and copied down (pinned) */
    double **parts;           /* per level: every rank's row of them (rank, pair, tensor, 3) */
    char **vec;               /* per input vector: its slice as it stands (device); begin sets them */
    char *out;                /* where the last level writes: the result's slice (device) */
    void *ev;                 /* after a level's copy down */
    void *ev_last;            /* the frame's: recorded after finish's work */
    char *err;                /* the frame's error text (errlen bytes): a failure is kept there and the
                            * rank goes on exchanging zeros, so that no peer waits for it */
    size_t errlen;
    uint8_t *status; /* where the last step marks this rank failed or not (NULL: the frame does) */
    /* The frame's hooks, on the stream: before level 0 (sets lo, hi, vec and out, and calls
     * gcoll__gpu_ada_memory), and after the last level (moves the result's slice on). */
    gcoll_status_t (*begin)(gcoll__gpu_ada_t *d);
    gcoll_status_t (*finish)(gcoll__gpu_ada_t *d);
    void *frame;
};

/* Everything but the slice's memory, for a (an Adasum allreduce) over tensor_counts (checked). */
gcoll_status_t gcoll__gpu_ada_init(gcoll__gpu_ada_t *d, const gcoll__coll_args_t *a, const size_t *tensor_counts,
                                   size_t ntensors);
/* The intermediate vectors and dot products for the slice [lo, hi), from the memory cache. */
gcoll_status_t gcoll__gpu_ada_memory(gcoll__gpu_ada_t *d);
/* Appends the tree to s: a step a level, each followed by the partial sums crossing, and a last
 * step (the last level and finish). */
void gcoll__gpu_ada_rounds(gcoll__gpu_ada_t *d, gcoll__sched_t *s);
void gcoll__gpu_ada_free(gcoll__gpu_ada_t *d);

#endif
