/* The entry points of the vector and rooted block collectives (allgatherv, reduce_scatterv,
 * alltoallv, gather(v), scatter(v)): checks of their counts and displacements, which name the
 * argument, packed displacements where the caller passed NULL, then the shared posting path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/comm.h"
#include "core/post.h"

/* Displacements the call passed, or packed ones computed into *own (freed by the caller). */
typedef struct {
    const size_t *d;
    size_t *own;
} displs_t;

/* Checks the blocks of counts (n entries, name) at displs (dname; NULL: back to back): none
 * ends past what a size_t can address in elements of esize. *total: the sum of the counts;
 * *extent: the elements a buffer must hold. */
static gcoll_status_t check_blocks(const size_t *counts, const size_t *displs, int n, size_t esize, const char *name,
                                   const char *dname, size_t *total, size_t *extent)
{
    if (!counts)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL", name);
    size_t limit = SIZE_MAX / esize, sum = 0, end = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] > limit - sum)
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s: the counts add up past what memory can hold", name);
        sum += counts[i];
        if (displs) {
            if (displs[i] > limit - counts[i])
                return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s[%d] %zu with %s[%d] %zu ends past what memory can hold",
                                    dname, i, displs[i], name, i, counts[i]);
            if (counts[i] && displs[i] + counts[i] > end)
                end = displs[i] + counts[i];
        }
    }
    *total = sum;
    *extent = displs ? end : sum;
    return GCOLL_SUCCESS;
}

static gcoll_status_t pack(const size_t *counts, const size_t *displs, int n, displs_t *out)
{
    out->own = NULL;
    out->d = displs;
    if (displs)
        return GCOLL_SUCCESS;
    out->own = malloc((size_t)n * sizeof(size_t));
    if (!out->own)
        return gcoll__error(GCOLL_ERR_NOMEM, "no memory for %d displacements", n);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        out->own[i] = off;
        off += counts[i];
    }
    out->d = out->own;
    return GCOLL_SUCCESS;
}

static gcoll_status_t start_packed(gcoll__coll_args_t *a, gcoll_comm_t comm, const gcoll__attr_t *attr,
                                   gcoll_request_t *req, gcoll__frame_t *frame, displs_t *r, displs_t *s)
{
    gcoll_status_t st = gcoll__start(a, comm, attr, req, frame);
    free(r->own);
    free(s->own);
    return st;
}

static gcoll_status_t post_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                                      const size_t *displs, gcoll_dtype_t dtype, gcoll_comm_t comm,
                                      const gcoll_attr_t *user, gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = GCOLL_COLL_ALLGATHERV, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = sendcount, .dtype = dtype};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    size_t extent;
    GCOLL_CHECK(check_blocks(recvcounts, displs, a.size, a.esize, "recvcounts", "displs", &a.total, &extent));
    int inplace = sendbuf && sendbuf == recvbuf;
    if (!inplace && sendcount != recvcounts[a.rank])
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "sendcount %zu differs from recvcounts[%d] %zu on rank %d",
                            sendcount, a.rank, recvcounts[a.rank], a.rank);
    a.count = recvcounts[a.rank];
    if (!inplace)
        GCOLL_CHECK(gcoll__check_buf(sendbuf, sendcount, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, extent, "recvbuf"));
    displs_t r, none = {0};
    GCOLL_CHECK(pack(recvcounts, displs, a.size, &r));
    a.counts = recvcounts;
    a.displs = r.d;
    return start_packed(&a, comm, &attr, req, frame, &r, &none);
}

static gcoll_status_t post_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                           gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                           const gcoll_attr_t *user, gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = GCOLL_COLL_REDUCE_SCATTERV, .sendbuf = sendbuf, .recvbuf = recvbuf, .dtype = dtype, .op = op};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 1));
    size_t extent;
    GCOLL_CHECK(check_blocks(recvcounts, NULL, a.size, a.esize, "recvcounts", NULL, &a.total, &extent));
    a.count = a.total;
    int inplace = sendbuf && sendbuf == recvbuf;
    GCOLL_CHECK(gcoll__check_buf(sendbuf, inplace ? 0 : a.total, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, inplace ? a.total : recvcounts[a.rank], "recvbuf"));
    displs_t r, none = {0};
    GCOLL_CHECK(pack(recvcounts, NULL, a.size, &r));
    a.counts = recvcounts;
    a.displs = r.d;
    return start_packed(&a, comm, &attr, req, frame, &r, &none);
}

static gcoll_status_t post_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                     void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                     gcoll_dtype_t dtype, gcoll_comm_t comm, const gcoll_attr_t *user,
                                     gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {.coll = GCOLL_COLL_ALLTOALLV, .sendbuf = sendbuf, .recvbuf = recvbuf, .dtype = dtype};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    size_t stotal, sext, rtotal, rext;
    GCOLL_CHECK(check_blocks(sendcounts, sdispls, a.size, a.esize, "sendcounts", "sdispls", &stotal, &sext));
    GCOLL_CHECK(check_blocks(recvcounts, rdispls, a.size, a.esize, "recvcounts", "rdispls", &rtotal, &rext));
    GCOLL_CHECK(gcoll__check_buf(sendbuf, sext, "sendbuf"));
    GCOLL_CHECK(gcoll__check_buf(recvbuf, rext, "recvbuf"));
    displs_t s, r;
    GCOLL_CHECK(pack(sendcounts, sdispls, a.size, &s));
    gcoll_status_t st = pack(recvcounts, rdispls, a.size, &r);
    if (st != GCOLL_SUCCESS) {
        free(s.own);
        return st;
    }
    if (sendbuf && sendbuf == recvbuf)
        for (int i = 0; i < a.size; i++)
            if (sendcounts[i] != recvcounts[i] || s.d[i] != r.d[i]) {
                free(s.own);
                free(r.own);
                return gcoll__error(GCOLL_ERR_INVALID_ARG,
                                    "sendbuf == recvbuf (in place) needs sendcounts and sdispls equal to recvcounts "
                                    "and rdispls; they differ for rank %d",
                                    i);
            }
    a.scounts = sendcounts;
    a.sdispls = s.d;
    a.counts = recvcounts;
    a.displs = r.d;
    return start_packed(&a, comm, &attr, req, frame, &r, &s);
}

/* gather and gatherv (counts NULL: count elements from every rank). */
static gcoll_status_t post_gatherv(int coll, const void *sendbuf, size_t sendcount, void *recvbuf,
                                   const size_t *recvcounts, const size_t *displs, gcoll_dtype_t dtype, int root,
                                   gcoll_comm_t comm, const gcoll_attr_t *user, gcoll_request_t *req,
                                   gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = coll, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = sendcount, .dtype = dtype, .root = root};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    GCOLL_CHECK(gcoll__check_root(root, comm));
    int atroot = a.rank == root, inplace = atroot && sendbuf && sendbuf == recvbuf;
    displs_t r = {0}, none = {0};
    if (coll == GCOLL_COLL_GATHERV && atroot) {
        size_t total, extent;
        GCOLL_CHECK(check_blocks(recvcounts, displs, a.size, a.esize, "recvcounts", "displs", &total, &extent));
        if (!inplace && sendcount != recvcounts[root])
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "sendcount %zu differs from recvcounts[%d] %zu at the root",
                                sendcount, root, recvcounts[root]);
        GCOLL_CHECK(gcoll__check_buf(recvbuf, extent, "recvbuf"));
        GCOLL_CHECK(pack(recvcounts, displs, a.size, &r));
        a.counts = recvcounts;
        a.displs = r.d;
        a.count = recvcounts[root];
    } else if (atroot) {
        GCOLL_CHECK(gcoll__check_buf(recvbuf, sendcount * (size_t)a.size, "recvbuf"));
    }
    if (!inplace) {
        gcoll_status_t st = gcoll__check_buf(sendbuf, sendcount, "sendbuf");
        if (st != GCOLL_SUCCESS) {
            free(r.own);
            return st;
        }
    }
    return start_packed(&a, comm, &attr, req, frame, &r, &none);
}

/* scatter and scatterv (counts NULL: count elements to every rank). */
static gcoll_status_t post_scatterv(int coll, const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                                    void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, int root, gcoll_comm_t comm,
                                    const gcoll_attr_t *user, gcoll_request_t *req, gcoll__frame_t *frame)
{
    gcoll__coll_args_t a = {
        .coll = coll, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = recvcount, .dtype = dtype, .root = root};
    gcoll__attr_t attr;
    GCOLL_CHECK(gcoll__begin(req, user, &attr));
    GCOLL_CHECK(gcoll__check_common(&a, comm, 0));
    GCOLL_CHECK(gcoll__check_root(root, comm));
    int atroot = a.rank == root, inplace = atroot && sendbuf && sendbuf == recvbuf;
    displs_t s = {0}, none = {0};
    if (coll == GCOLL_COLL_SCATTERV && atroot) {
        size_t total, extent;
        GCOLL_CHECK(check_blocks(sendcounts, displs, a.size, a.esize, "sendcounts", "displs", &total, &extent));
        if (!inplace && recvcount != sendcounts[root])
            return gcoll__error(GCOLL_ERR_INVALID_ARG, "recvcount %zu differs from sendcounts[%d] %zu at the root",
                                recvcount, root, sendcounts[root]);
        GCOLL_CHECK(gcoll__check_buf(sendbuf, extent, "sendbuf"));
        GCOLL_CHECK(pack(sendcounts, displs, a.size, &s));
        a.scounts = sendcounts;
        a.sdispls = s.d;
        a.count = sendcounts[root];
    } else if (atroot) {
        GCOLL_CHECK(gcoll__check_buf(sendbuf, recvcount * (size_t)a.size, "sendbuf"));
    }
    if (!inplace) {
        gcoll_status_t st = gcoll__check_buf(recvbuf, recvcount, "recvbuf");
        if (st != GCOLL_SUCCESS) {
            free(s.own);
            return st;
        }
    }
    return start_packed(&a, comm, &attr, req, frame, &none, &s);
}

GCOLL_API gcoll_status_t gcoll_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                           const size_t *recvcounts, const size_t *displs, gcoll_dtype_t dtype,
                                           gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                                gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                                const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_reduce_scatterv(sendbuf, recvbuf, recvcounts, dtype, op, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                          void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                          gcoll_dtype_t dtype, gcoll_comm_t comm, const gcoll_attr_t *attr,
                                          gcoll_request_t *req)
{
    return post_alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_igather(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                       gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_gatherv(GCOLL_COLL_GATHER, sendbuf, count, recvbuf, NULL, NULL, dtype, root, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                                        const size_t *displs, gcoll_dtype_t dtype, int root, gcoll_comm_t comm,
                                        const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_gatherv(GCOLL_COLL_GATHERV, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root, comm, attr,
                        req, NULL);
}

GCOLL_API gcoll_status_t gcoll_iscatter(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                        gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_scatterv(GCOLL_COLL_SCATTER, sendbuf, NULL, NULL, recvbuf, count, dtype, root, comm, attr, req, NULL);
}

GCOLL_API gcoll_status_t gcoll_iscatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                                         void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, int root,
                                         gcoll_comm_t comm, const gcoll_attr_t *attr, gcoll_request_t *req)
{
    return post_scatterv(GCOLL_COLL_SCATTERV, sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root, comm, attr,
                         req, NULL);
}

GCOLL_API gcoll_status_t gcoll_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                          const size_t *recvcounts, const size_t *displs, gcoll_dtype_t dtype,
                                          gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                               gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm)
{
    GCOLL_CHECK(gcoll__no_premul(op));
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_reduce_scatterv(sendbuf, recvbuf, recvcounts, dtype, op, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                         void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                         gcoll_dtype_t dtype, gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(
        post_alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_gather(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                      gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(
        post_gatherv(GCOLL_COLL_GATHER, sendbuf, count, recvbuf, NULL, NULL, dtype, root, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                                       const size_t *displs, gcoll_dtype_t dtype, int root, gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_gatherv(GCOLL_COLL_GATHERV, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root,
                                   comm, NULL, &r, fp),
                      &r);
}

GCOLL_API gcoll_status_t gcoll_scatter(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, int root,
                                       gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(
        post_scatterv(GCOLL_COLL_SCATTER, sendbuf, NULL, NULL, recvbuf, count, dtype, root, comm, NULL, &r, fp), &r);
}

GCOLL_API gcoll_status_t gcoll_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                                        void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, int root,
                                        gcoll_comm_t comm)
{
    gcoll_request_t r;
    gcoll__frame_t f, *fp = gcoll__group_frame(&f);
    return gcoll__run(post_scatterv(GCOLL_COLL_SCATTERV, sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root,
                                    comm, NULL, &r, fp),
                      &r);
}
