/* The collectives with a count per rank, and the rooted movers, blocking and nonblocking:
 * MPI_(I)Allgatherv, MPI_(I)Alltoallv, MPI_(I)Reduce_scatter, MPI_(I)Gather(v),
 * MPI_(I)Scatter(v). MPI's int counts and displacements become gcoll's size_t ones in the op's
 * scratch, which lives until the operation has ended; the movers move bytes, as colls.c's do. */
#include <stdlib.h>

#include "interposer.h"

/* n counts in elements of esize bytes, as bytes into out; 0 where one is negative. */
static int count_bytes(const int *counts, int n, size_t esize, size_t *out)
{
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0)
            return 0;
        out[i] = (size_t)counts[i] * esize;
    }
    return 1;
}

/* The blocks' offsets in bytes from the lowest displacement of a non-empty block, whose offset
 * in bytes from the program's buffer *base gets: MPI's displacements may be negative, gcoll's
 * may not. bytes: the blocks' sizes; an empty block's offset is 0. */
static void offsets(const int *displs, const size_t *bytes, int n, size_t esize, size_t *out, ptrdiff_t *base)
{
    long long low = 0;
    int any = 0;
    for (int i = 0; i < n; i++)
        if (bytes[i] && (!any || displs[i] < low))
            low = displs[i], any = 1;
    for (int i = 0; i < n; i++)
        out[i] = bytes[i] ? (size_t)(displs[i] - low) * esize : 0;
    *base = (ptrdiff_t)low * (ptrdiff_t)esize;
}

static void *shift(const void *p, ptrdiff_t by)
{
    return by ? (char *)p + by : (void *)p;
}

/* This rank's rank in an intra-communicator; -1 for an inter-communicator (MPI keeps its calls,
 * and root there is not a rank). */
static int rank_in(MPI_Comm comm)
{
    int inter = 1, rank = -1;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return -1;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

/* The op holding n size_t of scratch once the call maps to gcoll (routed); NULL where it goes
 * to MPI. */
static gcoll__ip_op_t *op_for(int call, int routed, size_t n)
{
    return routed ? gcoll__ip_op_new(call, n) : NULL;
}

/* In place (MPI_IN_PLACE as sendbuf) this rank's block is already at its place in recvbuf. */
static int allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                      const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IALLGATHERV : ALLGATHERV, inplace = sendbuf == MPI_IN_PLACE;
    size_t rsize = 0, sbytes = 0;
    int fits = gcoll__ip_on(call) && recvcounts && displs && gcoll__ip_dense(recvtype, &rsize) &&
        (inplace || gcoll__ip_contiguous_bytes(sendtype, sendcount, &sbytes));
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    int n = g ? gcoll_comm_size(g) : 0;
    gcoll__ip_op_t *o = op_for(call, g != NULL, 2 * (size_t)n);
    if (!o || !count_bytes(recvcounts, n, rsize, o->v)) {
        free(o);
        gcoll__ip_passed(call);
        return request
            ? PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request)
            : PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    }
    size_t *rbytes = o->v, *roff = o->v + n;
    ptrdiff_t base;
    offsets(displs, rbytes, n, rsize, roff, &base);
    void *rbuf = shift(recvbuf, base);
    const void *in = inplace ? rbuf : sendbuf;
    if (inplace)
        sbytes = rbytes[gcoll_comm_rank(g)];
    gcoll_status_t st = request ? GCOLL(gcoll_iallgatherv(in, sbytes, rbuf, rbytes, roff, GCOLL_UINT8, g, NULL, &o->g))
                                : GCOLL(gcoll_allgatherv(in, sbytes, rbuf, rbytes, roff, GCOLL_UINT8, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, NULL);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return request
        ? allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request)
        : PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
}

/* In place (MPI_IN_PLACE as sendbuf) the blocks are exchanged within recvbuf: gcoll's form is
 * sendbuf == recvbuf with the same counts and displacements on both sides. */
static int alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                     void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request *request)
{
    int call = request ? IALLTOALLV : ALLTOALLV, inplace = sendbuf == MPI_IN_PLACE;
    size_t rsize = 0, ssize = 0;
    int fits = gcoll__ip_on(call) && recvcounts && rdispls && gcoll__ip_dense(recvtype, &rsize) &&
        (inplace || (sendcounts && sdispls && gcoll__ip_dense(sendtype, &ssize)));
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    int n = g ? gcoll_comm_size(g) : 0;
    gcoll__ip_op_t *o = op_for(call, g != NULL, (inplace ? 2 : 4) * (size_t)n);
    size_t *rbytes = o ? o->v : NULL, *roff = o ? o->v + n : NULL;
    size_t *sbytes = inplace || !o ? rbytes : o->v + 2 * n, *soff = inplace || !o ? roff : o->v + 3 * n;
    if (!o || !count_bytes(recvcounts, n, rsize, rbytes) || (!inplace && !count_bytes(sendcounts, n, ssize, sbytes))) {
        free(o);
        gcoll__ip_passed(call);
        return request
            ? PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                              request)
            : PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    }
    ptrdiff_t rbase, sbase = 0;
    offsets(rdispls, rbytes, n, rsize, roff, &rbase);
    if (!inplace)
        offsets(sdispls, sbytes, n, ssize, soff, &sbase);
    void *rbuf = shift(recvbuf, rbase);
    const void *sbuf = inplace ? rbuf : shift(sendbuf, sbase);
    gcoll_status_t st = request
        ? GCOLL(gcoll_ialltoallv(sbuf, sbytes, soff, rbuf, rbytes, roff, GCOLL_UINT8, g, NULL, &o->g))
        : GCOLL(gcoll_alltoallv(sbuf, sbytes, soff, rbuf, rbytes, roff, GCOLL_UINT8, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, NULL);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request)
{
    return request
        ? alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, request)
        : PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                          request);
}

/* In place (MPI_IN_PLACE as sendbuf) the whole input is in recvbuf, as gcoll's in-place form. */
static int reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                          MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IREDUCE_SCATTER : REDUCE_SCATTER;
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll_comm_t g = recvcounts ? gcoll__ip_reduction_target(call, 0, datatype, op, comm, &dt, &gop) : NULL;
    int n = g ? gcoll_comm_size(g) : 0;
    gcoll__ip_op_t *o = op_for(call, g != NULL, (size_t)n);
    if (!o || !count_bytes(recvcounts, n, 1, o->v)) {
        free(o);
        gcoll__ip_passed(call);
        return request ? PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request)
                       : PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    gcoll_status_t st = request ? GCOLL(gcoll_ireduce_scatterv(in, recvbuf, o->v, dt, gop, g, NULL, &o->g))
                                : GCOLL(gcoll_reduce_scatterv(in, recvbuf, o->v, dt, gop, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm)
{
    return reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, NULL);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Request *request)
{
    return request ? reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request)
                   : PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
}

/* The bytes of a rank's block of a rooted mover: the root checks its side of blocks (dense, as
 * they lie count extents apart) and, unless in place, its own block on the other side; the other
 * ranks their one block. */
static int rooted_bytes(int at_root, int inplace, MPI_Datatype blocks_t, int blocks_count, MPI_Datatype one_t,
                        int one_count, size_t *bytes)
{
    size_t size, own = 0;
    if (!at_root)
        return gcoll__ip_contiguous_bytes(one_t, one_count, bytes);
    if (blocks_count < 0 || !gcoll__ip_dense(blocks_t, &size))
        return 0;
    *bytes = (size_t)blocks_count * size;
    return inplace || (gcoll__ip_contiguous_bytes(one_t, one_count, &own) && own == *bytes);
}

/* In place (MPI_IN_PLACE as the root's sendbuf) the root's block is already in recvbuf. */
static int gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IGATHER : GATHER, me = gcoll__ip_on(call) ? rank_in(comm) : -1;
    int inplace = me == root && sendbuf == MPI_IN_PLACE;
    size_t bytes = 0;
    int fits = me >= 0 && rooted_bytes(me == root, inplace, recvtype, recvcount, sendtype, sendcount, &bytes);
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    gcoll__ip_op_t *o = request ? op_for(call, g != NULL, 0) : NULL;
    if (!g || (request && !o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
                       : PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    }
    const void *in = inplace ? recvbuf : sendbuf;
    void *out = me == root ? recvbuf : NULL;
    gcoll_status_t st = request ? GCOLL(gcoll_igather(in, out, bytes, GCOLL_UINT8, root, g, NULL, &o->g))
                                : GCOLL(gcoll_gather(in, out, bytes, GCOLL_UINT8, root, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return request ? gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
                   : PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
}

/* In place (MPI_IN_PLACE as the root's recvbuf) the root's block stays in sendbuf. */
static int scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? ISCATTER : SCATTER, me = gcoll__ip_on(call) ? rank_in(comm) : -1;
    int inplace = me == root && recvbuf == MPI_IN_PLACE;
    size_t bytes = 0;
    int fits = me >= 0 && rooted_bytes(me == root, inplace, sendtype, sendcount, recvtype, recvcount, &bytes);
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    gcoll__ip_op_t *o = request ? op_for(call, g != NULL, 0) : NULL;
    if (!g || (request && !o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
                       : PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    }
    const void *in = me == root ? sendbuf : NULL;
    void *out = inplace ? (void *)sendbuf : recvbuf;
    gcoll_status_t st = request ? GCOLL(gcoll_iscatter(in, out, bytes, GCOLL_UINT8, root, g, NULL, &o->g))
                                : GCOLL(gcoll_scatter(in, out, bytes, GCOLL_UINT8, root, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return request ? scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
                   : PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
}

/* The root's side of gatherv and scatterv: its type dense, its counts and displacements in bytes
 * (2n of scratch), the buffer shifted to the lowest block. The other ranks' side: one block of a
 * contiguous type. Returns 0 where the call goes to MPI. */
static int rooted_v(int at_root, MPI_Datatype blocks_t, const int *counts, const int *displs, int n, MPI_Datatype one_t,
                    int one_count, size_t *one_bytes, size_t *v, ptrdiff_t *base)
{
    size_t size;
    if (!at_root)
        return gcoll__ip_contiguous_bytes(one_t, one_count, one_bytes);
    if (!counts || !displs || !gcoll__ip_dense(blocks_t, &size) || !count_bytes(counts, n, size, v))
        return 0;
    offsets(displs, v, n, size, v + n, base);
    return 1;
}

/* In place (MPI_IN_PLACE as the root's sendbuf) the root's block is already in recvbuf. */
static int gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IGATHERV : GATHERV, me = gcoll__ip_on(call) ? rank_in(comm) : -1;
    int at_root = me == root, inplace = at_root && sendbuf == MPI_IN_PLACE, n = 0;
    size_t sbytes = 0;
    ptrdiff_t base = 0;
    gcoll__ip_op_t *o = NULL;
    if (me >= 0) {
        PMPI_Comm_size(comm, &n);
        o = gcoll__ip_op_new(call, at_root ? 2 * (size_t)n : 0);
    }
    int fits = o && rooted_v(at_root, recvtype, recvcounts, displs, n, sendtype, sendcount, &sbytes, o->v, &base) &&
        (!at_root || inplace || gcoll__ip_contiguous_bytes(sendtype, sendcount, &sbytes));
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    if (!g) {
        free(o);
        gcoll__ip_passed(call);
        return request
            ? PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request)
            : PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
    }
    void *rbuf = at_root ? shift(recvbuf, base) : NULL;
    const size_t *rbytes = at_root ? o->v : NULL, *roff = at_root ? o->v + n : NULL;
    const void *in = inplace ? rbuf : sendbuf;
    if (inplace)
        sbytes = rbytes[root];
    gcoll_status_t st = request
        ? GCOLL(gcoll_igatherv(in, sbytes, rbuf, rbytes, roff, GCOLL_UINT8, root, g, NULL, &o->g))
        : GCOLL(gcoll_gatherv(in, sbytes, rbuf, rbytes, roff, GCOLL_UINT8, root, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, NULL);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return request
        ? gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request)
        : PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request);
}

/* In place (MPI_IN_PLACE as the root's recvbuf) the root's block stays in sendbuf. */
static int scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                    void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? ISCATTERV : SCATTERV, me = gcoll__ip_on(call) ? rank_in(comm) : -1;
    int at_root = me == root, inplace = at_root && recvbuf == MPI_IN_PLACE, n = 0;
    size_t rbytes = 0;
    ptrdiff_t base = 0;
    gcoll__ip_op_t *o = NULL;
    if (me >= 0) {
        PMPI_Comm_size(comm, &n);
        o = gcoll__ip_op_new(call, at_root ? 2 * (size_t)n : 0);
    }
    int fits = o && rooted_v(at_root, sendtype, sendcounts, displs, n, recvtype, recvcount, &rbytes, o->v, &base) &&
        (!at_root || inplace || gcoll__ip_contiguous_bytes(recvtype, recvcount, &rbytes));
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    if (!g) {
        free(o);
        gcoll__ip_passed(call);
        return request
            ? PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
            : PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
    }
    const void *sbuf = at_root ? shift(sendbuf, base) : NULL;
    const size_t *sbytes = at_root ? o->v : NULL, *soff = at_root ? o->v + n : NULL;
    void *out = inplace ? (void *)sbuf : recvbuf;
    if (inplace)
        rbytes = sbytes[root];
    gcoll_status_t st = request
        ? GCOLL(gcoll_iscatterv(sbuf, sbytes, soff, out, rbytes, GCOLL_UINT8, root, g, NULL, &o->g))
        : GCOLL(gcoll_scatterv(sbuf, sbytes, soff, out, rbytes, GCOLL_UINT8, root, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    return request
        ? scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
        : PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
}
