/* Mismatch detection: the descriptor of one collective operation (its kind, dtype, op, per-rank
 * count, root and where its buffers are) that its messages carry, so that a receiver can compare it with its own
 * operation of the same sequence number; and the table of a communicator's recent operations
 * by tag, which the engine fills as operations start and the transports that frame their
 * messages read. A transport sees only the descriptor's bytes; this file names them. */
#ifndef GCOLL_OPDESC_H
#define GCOLL_OPDESC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gcoll.h"

typedef struct {
    uint8_t coll; /* the collective kind + 1; 0: unknown, never compared (transport tests) */
    uint8_t dtype;
    uint8_t op;    /* OPDESC_NONE where the collective reduces nothing */
    uint8_t where; /* 0: host memory; GCOLL_OPDESC_DEVICE: device memory, staged; GCOLL_OPDESC_IPC: over CUDA
                    * IPC; GCOLL_OPDESC_GPU: staged, reduced on the GPU */
    int32_t root;  /* -1 where there is none */
    uint64_t count;
} gcoll__opdesc_t;

#define GCOLL_OPDESC_NONE 0xff
#define GCOLL_OPDESC_DEVICE 1
#define GCOLL_OPDESC_IPC 2
#define GCOLL_OPDESC_GPU 3

/* Message tags: a collective's is its issue count below this bit; point-to-point messages' have it
 * set, so the two never meet. */
#define GCOLL_TAG_P2P 0x80000000u
static inline uint32_t gcoll__tag_of(uint64_t seq)
{
    return (uint32_t)seq & ~GCOLL_TAG_P2P;
}

/* Direct-mapped by tag: issue counts run in order, so 256 operations in flight never share a
 * slot; a slot holding another tag was reused, and a message of its operation goes unchecked.
 * The engine writes it under the communicator's lane lock, but a transport whose sockets the
 * process's communicators share reads it from whichever thread drives them: a spin lock (leaf,
 * held for a copy; zero is unlocked) keeps each slot whole. */
#define GCOLL_OPTAB_SLOTS 256
typedef struct {
    atomic_int busy;
    uint32_t tag[GCOLL_OPTAB_SLOTS];
    gcoll__opdesc_t d[GCOLL_OPTAB_SLOTS];
} gcoll__optab_t;

static inline void gcoll__optab_lock(const gcoll__optab_t *t)
{
    atomic_int *busy = (atomic_int *)&t->busy; /* the table is never defined const */
    while (atomic_exchange_explicit(busy, 1, memory_order_acquire))
        ;
}

static inline void gcoll__optab_unlock(const gcoll__optab_t *t)
{
    atomic_store_explicit((atomic_int *)&t->busy, 0, memory_order_release);
}

/* The descriptor of the operation under tag, copied into *copy: copy, or NULL where none is known. */
static inline const gcoll__opdesc_t *gcoll__optab_find(const gcoll__optab_t *t, uint32_t tag, gcoll__opdesc_t *copy)
{
    if (!t)
        return NULL;
    unsigned i = tag % GCOLL_OPTAB_SLOTS;
    gcoll__optab_lock(t);
    int known = t->tag[i] == tag && t->d[i].coll;
    if (known)
        *copy = t->d[i];
    gcoll__optab_unlock(t);
    return known ? copy : NULL;
}

static inline void gcoll__optab_put(gcoll__optab_t *t, uint32_t tag, const gcoll__opdesc_t *d)
{
    unsigned i = tag % GCOLL_OPTAB_SLOTS;
    gcoll__optab_lock(t);
    t->tag[i] = tag;
    t->d[i] = *d;
    gcoll__optab_unlock(t);
}

/* Whether two descriptors describe operations that can exchange messages: unknown ones always can. */
static inline int gcoll__opdesc_agree(const gcoll__opdesc_t *a, const gcoll__opdesc_t *b)
{
    return !a || !b || !a->coll || !b->coll ||
        (a->coll == b->coll && a->dtype == b->dtype && a->op == b->op && a->root == b->root && a->count == b->count &&
         a->where == b->where);
}

/* The descriptor of a collective (gcoll__coll_t) as the public call gave it; the fields a
 * collective does not use (op of a bcast, root of an allreduce) are left out of it. */
gcoll__opdesc_t gcoll__opdesc_of(int coll, gcoll_dtype_t dtype, gcoll_op_t op, size_t count, int root);
/* "allreduce #7 (float32 sum, count 1000)", "bcast #7 (int32, count 16, root 1)", "barrier #7". */
void gcoll__opdesc_str(const gcoll__opdesc_t *d, uint32_t tag, char *buf, size_t len);
/* A peer's mismatch notice came from another process: its text, up to its NUL, is made
 * printable in place. */
void gcoll__opdesc_printable(char *text);
/* Records the mismatch for gcoll_last_error ("<mine> on rank <me> does not match <theirs> from
 * rank <peer>") and returns GCOLL_ERR_INVALID_USAGE. */
gcoll_status_t gcoll__opdesc_mismatch(uint32_t tag, const gcoll__opdesc_t *mine, int me, const gcoll__opdesc_t *theirs,
                                      int peer);

#endif
