/* The posting path that every entry point shares (api.c): the attribute and argument checks,
 * the start of a built operation, and the blocking calls' wait, which a group defers (group.c).
 * The vector collectives (api_v.c) and point-to-point (p2p.c) post through it. */
#ifndef GCOLL_POST_H
#define GCOLL_POST_H

#include "core/attr.h"
#include "core/request.h"

/* The request handle, then the caller's attributes (user), read into attr. */
gcoll_status_t gcoll__begin(gcoll_request_t *req, const gcoll_attr_t *user, gcoll__attr_t *attr);
gcoll_status_t gcoll__check_buf(const void *buf, size_t count, const char *name);
gcoll_status_t gcoll__check_root(int root, gcoll_comm_t comm);
/* A blocking call's op: GCOLL_PREMUL_SUM needs attr->premul, which only nonblocking calls take. */
gcoll_status_t gcoll__no_premul(gcoll_op_t op);
/* Builds a's schedule and starts it (or hands it to the open group); frame: a blocking call's
 * storage, NULL for the heap. */
gcoll_status_t gcoll__start(gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr, gcoll_request_t *req,
                            gcoll__frame_t *frame);

/* Groups (group.c). Inside an open group a blocking call posts on the heap (no frame) and its
 * wait moves to gcoll_group_end. */
int gcoll__group_open(void);
static inline gcoll__frame_t *gcoll__group_frame(gcoll__frame_t *f)
{
    return gcoll__group_open() ? NULL : f;
}
/* A blocking call's end: waits for the request, or, in an open group, leaves it to the group. */
gcoll_status_t gcoll__run(gcoll_status_t started, gcoll_request_t *req);
/* Whether the open group takes a (a small plain allreduce) to fuse it at the group's end; it
 * then posts it, and *req is the request that completes with it. */
int gcoll__group_fusable(const gcoll__coll_args_t *a, const gcoll__attr_t *attr);
gcoll_status_t gcoll__group_defer(const gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                                  gcoll_request_t *req);

#endif
