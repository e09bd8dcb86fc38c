/* Point-to-point messages on a communicator. Each is a request of one step that the engine drives
 * like a collective's (priorities, timeouts, failure detection); the n-th send from rank a to rank
 * b has tag GCOLL_TAG_P2P | n, so the transport matches it with b's n-th receive from a, apart
 * from every collective. A message to oneself is matched here, in posting order. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/error.h"
#include "core/comm.h"
#include "core/lane.h"
#include "core/post.h"

/* A send to oneself, queued on the communicator (under the lane's lock) until a receive takes it. */
struct gcoll__self_msg {
    struct gcoll__self_msg *next;
    gcoll_comm_t comm;
    const void *buf;
    size_t bytes;
    int queued, taken;
};

typedef struct {
    gcoll_comm_t comm;
    void *buf;
    size_t bytes;
} self_recv_t;

static void self_unqueue(struct gcoll__self_msg *m)
{
    gcoll_comm_t c = m->comm;
    for (struct gcoll__self_msg **p = &c->self_head; *p; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            if (c->self_tail == &m->next)
                c->self_tail = p;
            break;
        }
    m->queued = 0;
}

static void self_send_issue(void *state)
{
    struct gcoll__self_msg *m = state;
    gcoll_comm_t c = m->comm;
    if (!c->self_head)
        c->self_tail = &c->self_head;
    m->next = NULL;
    *c->self_tail = m;
    c->self_tail = &m->next;
    m->queued = 1;
}

static gcoll_status_t self_send_step(void *state, int *done)
{
    *done = ((struct gcoll__self_msg *)state)->taken;
    return GCOLL_SUCCESS;
}

/* A send abandoned (a failure, a timeout) leaves the queue with its schedule. */
static void self_send_end(void *state)
{
    struct gcoll__self_msg *m = state;
    if (m->queued)
        self_unqueue(m);
}

static gcoll_status_t self_recv_step(void *state, int *done)
{
    self_recv_t *r = state;
    struct gcoll__self_msg *m = r->comm->self_head;
    *done = 0;
    if (!m)
        return GCOLL_SUCCESS;
    if (m->bytes != r->bytes)
        return gcoll__error(GCOLL_ERR_INVALID_USAGE,
                            "a receive of %zu bytes from rank %d (itself) meets its send of %zu bytes", r->bytes,
                            r->comm->rank, m->bytes);
    if (r->bytes)
        memcpy(r->buf, m->buf, r->bytes);
    self_unqueue(m);
    m->taken = 1;
    *done = 1;
    return GCOLL_SUCCESS;
}

static void self_who(void *state, char *buf, size_t len)
{
    (void)state;
    snprintf(buf, len, "itself");
}

/* The next tag on the pair (me, peer) in one direction. */
static gcoll_status_t next_tag(gcoll_comm_t comm, int peer, int sending, uint32_t *tag)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    pthread_mutex_lock(&comm->lane->lock);
    if (!comm->p2p_sent) {
        comm->p2p_sent = calloc((size_t)comm->size, sizeof(uint32_t));
        comm->p2p_rcvd = calloc((size_t)comm->size, sizeof(uint32_t));
        if (!comm->p2p_sent || !comm->p2p_rcvd) {
            free(comm->p2p_sent);
            free(comm->p2p_rcvd);
            comm->p2p_sent = comm->p2p_rcvd = NULL;
            st = gcoll__error(GCOLL_ERR_NOMEM, "no memory for the message counts of %d ranks", comm->size);
        }
    }
    if (st == GCOLL_SUCCESS) {
        uint32_t *n = sending ? &comm->p2p_sent[peer] : &comm->p2p_rcvd[peer];
        *tag = GCOLL_TAG_P2P | (*n & ~GCOLL_TAG_P2P);
        ++*n;
    }
    pthread_mutex_unlock(&comm->lane->lock);
    return st;
}

static gcoll_status_t post(int sending, const void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm,
                           const gcoll_attr_t *user, gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__comm_check(comm, "comm"));
    if (!gcoll__dtype_valid(dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %d is not a gcoll_dtype_t", (int)dtype);
    if (peer < 0 || peer >= comm->size)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "peer %d is out of range for a communicator of %d ranks", peer,
                            comm->size);
    size_t es = gcoll_dtype_size(dtype);
    if (count > SIZE_MAX / es)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "count %zu is too large for %s", count, gcoll_dtype_name(dtype));
    GCOLL_CHECK(gcoll__check_buf(buf, count, "buf"));
    if (attr.compress != GCOLL_COMPRESS_NONE)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "attr->compress: only allreduce takes compression, not %s",
                            sending ? "a send" : "a receive");
    if (attr.stream)
        return gcoll__error(GCOLL_ERR_UNSUPPORTED,
                            "attr->stream: point-to-point takes host memory only (docs/cuda.md)");
    size_t bytes = count * es;
    char name[64]; /* errors and timelines name both sides: the peer, and this side's count */
    if (!attr.name) {
        snprintf(name, sizeof(name), "%s %zu %s %s rank %d", sending ? "send of" : "receive of", count,
                 gcoll_dtype_name(dtype), sending ? "to" : "from", peer);
        attr.name = name;
    }
    gcoll__sched_t *s = gcoll__sched_new(dtype, GCOLL_SUM, (unsigned)comm->size, frame ? &frame->sched : NULL);
    if (!s)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a schedule");
    gcoll__sched_round(s);
    gcoll__start_t how = {.storage = frame ? &frame->req : NULL, .wake = !frame};
    if (peer == comm->rank) {
        if (sending) {
            struct gcoll__self_msg *m = gcoll__sched_scratch(s, sizeof(*m));
            if (m) {
                *m = (struct gcoll__self_msg){.comm = comm, .buf = buf, .bytes = bytes};
                gcoll__sched_custom(s, self_send_step, self_who, m);
                gcoll__sched_custom_issue(s, self_send_issue);
                s->cleanup = self_send_end;
                s->cleanup_arg = m;
            }
        } else {
            self_recv_t *r = gcoll__sched_scratch(s, sizeof(*r));
            if (r) {
                *r = (self_recv_t){.comm = comm, .buf = (void *)buf, .bytes = bytes};
                gcoll__sched_custom(s, self_recv_step, self_who, r);
            }
        }
        how.own_tag = 1; /* it takes no tag: no message leaves the process */
    } else {
        uint32_t tag = 0;
        gcoll_status_t st = next_tag(comm, peer, sending, &tag);
        if (st != GCOLL_SUCCESS) {
            gcoll__sched_free(s);
            return st;
        }
        if (sending)
            gcoll__sched_send(s, peer, buf, bytes);
        else
            gcoll__sched_recv(s, peer, (void *)buf, bytes);
        how.p2p = 1;
        how.tag = tag;
    }
    if (s->status != GCOLL_SUCCESS) {
        gcoll__sched_free(s);
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for a point-to-point schedule");
    }
    gcoll_status_t st = gcoll__request_start(comm, GCOLL_COLL_P2P, sending ? "send" : "recv", s, &attr, req, &how);
    return gcoll__group_track(st, *req);
}

GCOLL_API gcoll_status_t gcoll_isend(const void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm,
                                     const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post(1, buf, count, dtype, peer, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_irecv(void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm,
                                     const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post(0, buf, count, dtype, peer, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_send(const void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post(1, buf, count, dtype, peer, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_recv(void *buf, size_t count, gcoll_dtype_t dtype, int peer, gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post(0, buf, count, dtype, peer, comm, NULL, &r, fp), &r);
}
