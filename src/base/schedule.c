/* Schedule construction: the builder calls of schedule.h. Steps and rounds grow in arrays (inline
 * in the schedule while small); scratch buffers belong to the schedule. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/schedule.h"
#include "base/scratch.h"

gcoll__sched_t *gcoll__sched_new(gcoll_dtype_t dtype, gcoll_op_t op, unsigned divisor, gcoll__sched_t *storage)
{
    gcoll__sched_t *s = storage ? storage : malloc(sizeof(*s));
    if (!s)
        return NULL;
    memset(s, 0, offsetof(gcoll__sched_t, inline_steps));
    s->borrowed = storage != NULL;
    s->steps = s->inline_steps;
    s->rounds = s->inline_rounds;
    s->cap_steps = s->cap_rounds = GCOLL_SCHED_INLINE_STEPS;
    s->dtype = dtype;
    s->op = op;
    s->divisor = divisor;
    return s;
}

void gcoll__sched_free(gcoll__sched_t *s)
{
    if (!s)
        return;
    if (s->cleanup)
        s->cleanup(s->cleanup_arg);
    for (size_t i = 0; i < s->nscratch; i++)
        if (s->dry)
            free(s->scratch[i]);
        else
            gcoll__scratch_put(s->scratch[i]);
    free(s->scratch);
    free(s->stage);
    free(s->stage_bytes);
    if (s->steps != s->inline_steps)
        free(s->steps);
    if (s->rounds != s->inline_rounds)
        free(s->rounds);
    if (!s->borrowed)
        free(s);
}

/* Grows an array that starts in the schedule's inline storage. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem, const void *inline_storage)
{
    if (need <= *cap)
        return 1;
    size_t ncap = *cap * 4;
    while (ncap < need)
        ncap *= 2;
    void *p = *arr == inline_storage ? malloc(ncap * elem) : realloc(*arr, ncap * elem);
    if (!p)
        return 0;
    if (*arr == inline_storage)
        memcpy(p, *arr, *cap * elem);
    *arr = p;
    *cap = ncap;
    return 1;
}

void *gcoll__sched_scratch(gcoll__sched_t *s, size_t bytes)
{
    if (s->dry && bytes > ((size_t)1 << 20)) /* vector-sized: never touched while pricing */
        bytes = (size_t)1 << 20;
    size_t at = (s->arena_used + 63) & ~(size_t)63;
    if (bytes && at + bytes <= GCOLL_SCHED_INLINE_ARENA) {
        s->arena_used = at + bytes;
        return s->arena + at;
    }
    void **arr = realloc(s->scratch, (s->nscratch + 1) * sizeof(void *));
    /* a dry build's buffers are never written: from the cache they would hand real operations
     * pages never faulted in, and push out warm ones */
    void *p = !arr ? NULL : s->dry ? malloc(bytes) : gcoll__scratch_get(bytes);
    if (arr)
        s->scratch = arr;
    if (!p) {
        s->status = GCOLL_ERR_NOMEM;
        return NULL;
    }
    s->scratch[s->nscratch++] = p;
    return p;
}

static void add_round(gcoll__sched_t *s, int idle)
{
    if (!grow((void **)&s->rounds, &s->cap_rounds, s->nrounds + 1, sizeof(gcoll__round_t), s->inline_rounds)) {
        s->status = GCOLL_ERR_NOMEM;
        return;
    }
    s->rounds[s->nrounds++] = (gcoll__round_t){s->nsteps, 0, idle};
    s->stage_next = 0;
}

/* The open round when it is still empty and not kept empty on purpose: the next one reuses it. */
static gcoll__round_t *reusable(gcoll__sched_t *s)
{
    gcoll__round_t *r = s->nrounds ? &s->rounds[s->nrounds - 1] : NULL;
    return r && r->count == 0 && !r->idle ? r : NULL;
}

void gcoll__sched_round(gcoll__sched_t *s)
{
    if (!reusable(s))
        add_round(s, 0);
}

void gcoll__sched_idle(gcoll__sched_t *s)
{
    gcoll__round_t *r = reusable(s);
    if (r)
        r->idle = 1;
    else
        add_round(s, 1);
}

/* The staging buffer of the round's next wire message: a round's messages are all done before
 * the next round posts any, so the i-th message of every round can share one buffer. */
static void *stage(gcoll__sched_t *s, size_t bytes)
{
    size_t i = s->stage_next++;
    if (i == s->nstage) {
        void **p = realloc(s->stage, (i + 1) * sizeof(*p));
        if (p)
            s->stage = p;
        size_t *q = p ? realloc(s->stage_bytes, (i + 1) * sizeof(*q)) : NULL;
        if (!q) {
            s->status = GCOLL_ERR_NOMEM;
            return NULL;
        }
        s->stage_bytes = q;
        s->stage_bytes[i] = 0;
        s->nstage++;
    }
    if (s->stage_bytes[i] < bytes) {
        s->stage[i] = gcoll__sched_scratch(s, bytes);
        s->stage_bytes[i] = bytes;
    }
    return s->stage[i];
}

static void add_step(gcoll__sched_t *s, gcoll__step_t step)
{
    if (s->status != GCOLL_SUCCESS)
        return;
    if (s->nrounds == 0)
        gcoll__sched_round(s);
    if (!grow((void **)&s->steps, &s->cap_steps, s->nsteps + 1, sizeof(gcoll__step_t), s->inline_steps)) {
        s->status = GCOLL_ERR_NOMEM;
        return;
    }
    s->steps[s->nsteps++] = step;
    s->rounds[s->nrounds - 1].count++;
}

void gcoll__sched_send(gcoll__sched_t *s, int peer, const void *buf, size_t bytes)
{
    if (s->nrounds == 0)
        gcoll__sched_round(s);
    void *w = s->wire && bytes ? stage(s, bytes / 2) : NULL;
    add_step(s,
             (gcoll__step_t){.kind = GCOLL_STEP_SEND,
                             .peer = s->peermap ? s->peermap[peer] : peer,
                             .a = buf,
                             .n = w ? bytes / 2 : bytes,
                             .wire = w});
}

void gcoll__sched_exchange(gcoll__sched_t *s, int rank, int size, void *items, size_t bytes)
{
    if (size == 1)
        return;
    gcoll__sched_round(s);
    for (int q = 0; q < size; q++)
        if (q != rank) {
            gcoll__sched_send(s, q, (char *)items + (size_t)rank * bytes, bytes);
            gcoll__sched_recv(s, q, (char *)items + (size_t)q * bytes, bytes);
        }
}

void gcoll__sched_recv(gcoll__sched_t *s, int peer, void *buf, size_t bytes)
{
    if (s->nrounds == 0)
        gcoll__sched_round(s);
    void *w = s->wire && bytes ? stage(s, bytes / 2) : NULL;
    add_step(s,
             (gcoll__step_t){.kind = GCOLL_STEP_RECV,
                             .peer = s->peermap ? s->peermap[peer] : peer,
                             .dst = buf,
                             .n = w ? bytes / 2 : bytes,
                             .wire = w});
}

void gcoll__sched_recv_landed(gcoll__sched_t *s, int peer, void *buf, size_t bytes,
                              void (*landed)(void *arg, size_t off, size_t len), void *arg)
{
    gcoll__sched_recv(s, peer, buf, bytes);
    if (s->status != GCOLL_SUCCESS)
        return;
    s->steps[s->nsteps - 1].landed = landed;
    s->steps[s->nsteps - 1].landed_arg = arg;
}

void gcoll__sched_wire_round(gcoll__sched_t *s, void *buf, size_t count)
{
    if (s->wire && count)
        add_step(s, (gcoll__step_t){.kind = GCOLL_STEP_ROUND, .dst = buf, .n = count});
}

void gcoll__sched_reduce(gcoll__sched_t *s, void *dst, const void *a, const void *b, size_t count)
{
    if (count)
        add_step(s, (gcoll__step_t){.kind = GCOLL_STEP_REDUCE, .dst = dst, .a = a, .b = b, .n = count});
}

void gcoll__sched_copy(gcoll__sched_t *s, void *dst, const void *src, size_t bytes)
{
    if (bytes && dst != src)
        add_step(s, (gcoll__step_t){.kind = GCOLL_STEP_COPY, .dst = dst, .a = src, .n = bytes});
}

void gcoll__sched_avg(gcoll__sched_t *s, void *buf, size_t count)
{
    if (s->op == GCOLL_AVG && count)
        add_step(s, (gcoll__step_t){.kind = GCOLL_STEP_DIV, .dst = buf, .n = count});
}

void gcoll__sched_custom(gcoll__sched_t *s, gcoll__step_fn fn, gcoll__step_who_fn who, void *state)
{
    add_step(s, (gcoll__step_t){.kind = GCOLL_STEP_CUSTOM, .peer = -1, .fn = fn, .who = who, .state = state});
}

void gcoll__sched_custom_local(gcoll__sched_t *s)
{
    if (s->nsteps && s->steps[s->nsteps - 1].kind == GCOLL_STEP_CUSTOM)
        s->steps[s->nsteps - 1].local = 1;
}

void gcoll__sched_custom_rewind(gcoll__sched_t *s, void (*rewind)(void *state))
{
    if (s->nsteps && s->steps[s->nsteps - 1].kind == GCOLL_STEP_CUSTOM)
        s->steps[s->nsteps - 1].rewind = rewind;
}

void gcoll__sched_custom_issue(gcoll__sched_t *s, void (*issue)(void *state))
{
    if (s->nsteps && s->steps[s->nsteps - 1].kind == GCOLL_STEP_CUSTOM)
        s->steps[s->nsteps - 1].issue = issue;
}

void gcoll__sched_issue(gcoll__sched_t *s)
{
    for (size_t i = 0; i < s->nsteps; i++)
        if (s->steps[i].kind == GCOLL_STEP_CUSTOM && s->steps[i].issue)
            s->steps[i].issue(s->steps[i].state);
}

int gcoll__sched_rewindable(const gcoll__sched_t *s)
{
    for (size_t i = 0; i < s->nsteps; i++)
        if (s->steps[i].kind == GCOLL_STEP_CUSTOM && !s->steps[i].rewind && !s->steps[i].issue)
            return 0;
    return 1;
}

void gcoll__sched_rewind(gcoll__sched_t *s)
{
    for (size_t i = 0; i < s->nsteps; i++) {
        gcoll__step_t *st = &s->steps[i];
        st->done = 0;
        st->req = NULL;
        if (st->kind == GCOLL_STEP_CUSTOM && st->rewind)
            st->rewind(st->state);
    }
    s->cur = 0;
    s->lnext = 0;
    s->posted = 0;
}
