/* A schedule: the small program one collective runs on one rank. It is a list of rounds; in
 * each round all sends and receives are posted at once, and each local step (reduce, copy,
 * divide) runs in order as soon as every step listed before it in the round has completed; the
 * next round starts when all have. Algorithms build schedules; the
 * progress engine runs them; neither knows the transport underneath. */
#ifndef GCOLL_SCHED_H
#define GCOLL_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"
#include "base/opdesc.h"

typedef enum {
    GCOLL_STEP_SEND,
    GCOLL_STEP_RECV,
    GCOLL_STEP_REDUCE,
    GCOLL_STEP_COPY,
    GCOLL_STEP_DIV,
    GCOLL_STEP_CUSTOM, /* polled like a message: an algorithm's own resumable state machine */
    GCOLL_STEP_ROUND   /* rounds n fp32 values at dst to the schedule's wire format, in place */
} gcoll__step_kind_t;

/* A custom step: advances as far as it can without blocking; sets *done when finished. */
typedef gcoll_status_t (*gcoll__step_fn)(void *state, int *done);
/* Says whom a custom step still waits for, for timeout messages. */
typedef void (*gcoll__step_who_fn)(void *state, char *buf, size_t len);

typedef struct {
    gcoll__step_kind_t kind;
    int peer;
    void *dst;
    const void *a, *b;
    size_t n;                  /* bytes for send/recv/copy, elements for reduce/div */
    struct gcoll__tp_req *req; /* in flight, for send/recv (the transport's request) */
    gcoll__step_fn fn;         /* custom steps */
    gcoll__step_who_fn who;
    void (*rewind)(void *state); /* custom steps that can run again: back to their start */
    void (*issue)(void *state);  /* custom steps that take something in issue order (gcoll__sched_issue) */
    int local;                   /* a custom step that waits on this rank's own hardware (a GPU), which wakes no one */
    void *state;
    void *wire; /* a send or receive of fp32 that travels in the wire format: its staging buffer
                   (a: the fp32 to send, dst: where the received values land as fp32; n: wire bytes) */
    /* a receive whose consumer works on each part as it lands (gcoll__sched_recv_landed);
     * parts: the transport tells of the parts itself, else the engine hands over the whole */
    void (*landed)(void *arg, size_t off, size_t len);
    void *landed_arg;
    int parts;
    int done;
    int counted; /* a send in its lane's budget: every one but the first of its operation's in flight */
    double t0;   /* timeline: when the step was posted or started */
} gcoll__step_t;

typedef struct {
    size_t first, count;
    int idle; /* kept empty on purpose (gcoll__sched_idle): the next round does not reuse it */
} gcoll__round_t;

#define GCOLL_SCHED_INLINE_STEPS 4
#define GCOLL_SCHED_INLINE_ARENA 512

typedef struct gcoll__sched {
    gcoll__step_t *steps; /* inline_steps until it outgrows them */
    size_t nsteps, cap_steps;
    gcoll__round_t *rounds;
    size_t nrounds, cap_rounds;
    void **scratch; /* heap scratch buffers */
    size_t nscratch;
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    unsigned divisor;     /* for GCOLL_AVG */
    gcoll__opdesc_t desc; /* what its messages say about it (zero: unchecked) */
    uint32_t tag;         /* its messages' tag, set as it starts: named in mismatch messages */
    /* While set, builders address a sub-group: peer i of a send or receive is rank peermap[i]
     * of the communicator (hierarchical algorithms run flat ones inside groups this way). */
    const int *peermap;
    /* GCOLL_COMPRESS_FP16/BF16: every send and receive of this fp32 schedule travels 16-bit,
     * through staging buffers that a round's messages own and later rounds reuse */
    gcoll_compress_t wire;
    void **stage;
    size_t *stage_bytes;
    size_t nstage, stage_next;
    int dry; /* built only to be priced: scratch over 1 MiB is a stand-in (builders write tables, not data) */
    gcoll_status_t status;      /* first build failure (out of memory) */
    void (*cleanup)(void *arg); /* run when the schedule is freed, before its scratch goes */
    void *cleanup_arg;
    /* execution state */
    size_t cur;
    size_t lnext; /* the current round's next step to consider for running locally */
    int posted;
    size_t arena_used;
    int borrowed; /* the struct lives in the caller's storage: free only what it grew */
    /* small schedules need no allocation beyond the schedule itself (left uncleared) */
    gcoll__step_t inline_steps[GCOLL_SCHED_INLINE_STEPS];
    gcoll__round_t inline_rounds[GCOLL_SCHED_INLINE_STEPS];
    _Alignas(64) char arena[GCOLL_SCHED_INLINE_ARENA];
} gcoll__sched_t;

/* A schedule in storage, or on the heap when storage is NULL. */
gcoll__sched_t *gcoll__sched_new(gcoll_dtype_t dtype, gcoll_op_t op, unsigned divisor, gcoll__sched_t *storage);
void gcoll__sched_free(gcoll__sched_t *s);

/* Builder calls. Failures are remembered in s->status and reported once building ends. */
void *gcoll__sched_scratch(gcoll__sched_t *s, size_t bytes);
void gcoll__sched_round(gcoll__sched_t *s);
/* A round in which this rank moves nothing, for a step in which other ranks do (a ring's only
 * non-empty block passes one hop a step): free at run time, it keeps every rank's rounds aligned
 * by step, so the cost model prices the steps one after another rather than as one. */
void gcoll__sched_idle(gcoll__sched_t *s);
void gcoll__sched_send(gcoll__sched_t *s, int peer, const void *buf, size_t bytes);
void gcoll__sched_recv(gcoll__sched_t *s, int peer, void *buf, size_t bytes);
/* A receive that calls landed(arg, off, len) for each part of the message as it lands (in
 * order, all of it before the step is done): where the transport reads a large message a chunk
 * at a time, its consumer reads each chunk while it is in cache. */
void gcoll__sched_recv_landed(gcoll__sched_t *s, int peer, void *buf, size_t bytes,
                              void (*landed)(void *arg, size_t off, size_t len), void *arg);
/* A round of its own in which items[rank] (bytes each) goes to every other of size ranks and
 * theirs come in (nothing with one rank). */
void gcoll__sched_exchange(gcoll__sched_t *s, int rank, int size, void *items, size_t bytes);
void gcoll__sched_reduce(gcoll__sched_t *s, void *dst, const void *a, const void *b, size_t count);
void gcoll__sched_copy(gcoll__sched_t *s, void *dst, const void *src, size_t bytes);
void gcoll__sched_avg(gcoll__sched_t *s, void *buf, size_t count); /* no step unless op is AVG */
/* A reduced block about to be copied to other ranks: rounded to the wire format first (no step
 * without one), so the rank that reduced it holds the same bits as those that receive it. */
void gcoll__sched_wire_round(gcoll__sched_t *s, void *buf, size_t count);
void gcoll__sched_custom(gcoll__sched_t *s, gcoll__step_fn fn, gcoll__step_who_fn who, void *state);
/* Marks the last custom step added as waiting on local hardware: while it is pending, waiters
 * poll instead of sleeping until a peer's message wakes them. */
void gcoll__sched_custom_local(gcoll__sched_t *s);
/* Gives the last custom step added an issue hook: called by gcoll__sched_issue, when the
 * schedule is issued (each time it runs), in the order the ranks issue their operations, which
 * is the same on every rank. What must follow that order (a node channel's sequence numbers) is
 * taken there, so that building a schedule, a dry one included, changes no shared state. */
void gcoll__sched_custom_issue(gcoll__sched_t *s, void (*issue)(void *state));
void gcoll__sched_issue(gcoll__sched_t *s);
/* Gives the last custom step added a rewind hook, so the schedule can run again. */
void gcoll__sched_custom_rewind(gcoll__sched_t *s, void (*rewind)(void *state));

/* Whether s can run again after gcoll__sched_rewind: every custom step has a rewind hook, or an
 * issue hook, which starts it afresh each time it is issued. */
int gcoll__sched_rewindable(const gcoll__sched_t *s);
/* Back to the state of a schedule just built, for the next run of the same operation. */
void gcoll__sched_rewind(gcoll__sched_t *s);

#endif
