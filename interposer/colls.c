/* The collectives of one count per rank, blocking and nonblocking: MPI_(I)Allreduce,
 * MPI_(I)Reduce_scatter_block, MPI_(I)Reduce, MPI_(I)Allgather, MPI_(I)Alltoall, MPI_(I)Bcast,
 * MPI_(I)Barrier. Each pair shares one body, which gets the program's request (NULL: blocking),
 * runs the call on gcoll where it can, and hands it to MPI's own form otherwise. */
#include <stdlib.h>

#include "interposer.h"

/* The op of a nonblocking call, which holds its gcoll request; none for a blocking one. Returns 0
 * where a nonblocking call found no memory (it goes to MPI). */
static int start(int call, const MPI_Request *request, gcoll__ip_op_t **op)
{
    *op = request ? gcoll__ip_op_new(call, 0) : NULL;
    return !request || *op;
}

static int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                     MPI_Request *request)
{
    int call = request ? IALLREDUCE : ALLREDUCE;
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll__ip_op_t *o = NULL;
    gcoll_comm_t g = gcoll__ip_reduction_target(call, count, datatype, op, comm, &dt, &gop);
    if (!g || !start(call, request, &o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request)
                       : PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    gcoll_status_t st = request ? GCOLL(gcoll_iallreduce(in, recvbuf, (size_t)count, dt, gop, g, NULL, &o->g))
                                : GCOLL(gcoll_allreduce(in, recvbuf, (size_t)count, dt, gop, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return allreduce(sendbuf, recvbuf, count, datatype, op, comm, NULL);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request)
{
    return request ? allreduce(sendbuf, recvbuf, count, datatype, op, comm, request)
                   : PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

static int reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IREDUCE_SCATTER_BLOCK : REDUCE_SCATTER_BLOCK;
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll__ip_op_t *o = NULL;
    gcoll_comm_t g = gcoll__ip_reduction_target(call, recvcount, datatype, op, comm, &dt, &gop);
    if (!g || !start(call, request, &o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request)
                       : PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    size_t n = (size_t)recvcount;
    gcoll_status_t st = request ? GCOLL(gcoll_ireduce_scatter(in, recvbuf, n, dt, gop, g, NULL, &o->g))
                                : GCOLL(gcoll_reduce_scatter(in, recvbuf, n, dt, gop, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm)
{
    return reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, NULL);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request)
{
    return request ? reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request)
                   : PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
}

static int reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                  MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IREDUCE : REDUCE;
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    gcoll__ip_op_t *o = NULL;
    gcoll_comm_t g = gcoll__ip_reduction_target(call, count, datatype, op, comm, &dt, &gop);
    if (!g || !start(call, request, &o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request)
                       : PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    gcoll_status_t st = request ? GCOLL(gcoll_ireduce(in, recvbuf, (size_t)count, dt, gop, root, g, NULL, &o->g))
                                : GCOLL(gcoll_reduce(in, recvbuf, (size_t)count, dt, gop, root, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    return reduce(sendbuf, recvbuf, count, datatype, op, root, comm, NULL);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request)
{
    return request ? reduce(sendbuf, recvbuf, count, datatype, op, root, comm, request)
                   : PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

/* The data movers move bytes. The decision rests on this rank's types: MPI lets ranks pass
 * different types of one signature, so a program that mixes a gapped type on one rank with a
 * contiguous one on another must leave these calls to MPI (GCOLL_MPI_COLLS). Blocks of the
 * rank-by-rank calls lie count extents apart, so their types must be dense (gcoll__ip_dense). */
static int block_bytes(MPI_Datatype t, int count, size_t *bytes)
{
    size_t size;
    if (count < 0 || !gcoll__ip_dense(t, &size))
        return 0;
    *bytes = (size_t)count * size;
    return 1;
}

static int allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IALLGATHER : ALLGATHER;
    size_t sbytes = 0, rbytes = 0;
    gcoll__ip_op_t *o = NULL;
    int fits = gcoll__ip_on(call) && block_bytes(recvtype, recvcount, &rbytes) &&
        (sendbuf == MPI_IN_PLACE || (gcoll__ip_contiguous_bytes(sendtype, sendcount, &sbytes) && sbytes == rbytes));
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    if (!g || !start(call, request, &o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request)
                       : PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    gcoll_status_t st = request ? GCOLL(gcoll_iallgather(in, recvbuf, rbytes, GCOLL_UINT8, g, NULL, &o->g))
                                : GCOLL(gcoll_allgather(in, recvbuf, rbytes, GCOLL_UINT8, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, NULL);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return request ? allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request)
                   : PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

/* In place (MPI_IN_PLACE as sendbuf) the blocks are exchanged within recvbuf. */
static int alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IALLTOALL : ALLTOALL;
    size_t sbytes = 0, rbytes = 0;
    gcoll__ip_op_t *o = NULL;
    int fits = gcoll__ip_on(call) && block_bytes(recvtype, recvcount, &rbytes) &&
        (sendbuf == MPI_IN_PLACE || (block_bytes(sendtype, sendcount, &sbytes) && sbytes == rbytes));
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    if (!g || !start(call, request, &o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request)
                       : PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    gcoll_status_t st = request ? GCOLL(gcoll_ialltoall(in, recvbuf, rbytes, GCOLL_UINT8, g, NULL, &o->g))
                                : GCOLL(gcoll_alltoall(in, recvbuf, rbytes, GCOLL_UINT8, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, NULL);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return request ? alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request)
                   : PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

static int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IBCAST : BCAST;
    size_t bytes = 0;
    gcoll__ip_op_t *o = NULL;
    int fits = gcoll__ip_on(call) && gcoll__ip_contiguous_bytes(datatype, count, &bytes);
    gcoll_comm_t g = fits ? gcoll__ip_map_comm(comm) : NULL;
    if (!g || !start(call, request, &o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Ibcast(buffer, count, datatype, root, comm, request)
                       : PMPI_Bcast(buffer, count, datatype, root, comm);
    }
    gcoll_status_t st = request ? GCOLL(gcoll_ibcast(buffer, bytes, GCOLL_UINT8, root, g, NULL, &o->g))
                                : GCOLL(gcoll_bcast(buffer, bytes, GCOLL_UINT8, root, g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    return bcast(buffer, count, datatype, root, comm, NULL);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
{
    return request ? bcast(buffer, count, datatype, root, comm, request)
                   : PMPI_Ibcast(buffer, count, datatype, root, comm, request);
}

static int barrier(MPI_Comm comm, MPI_Request *request)
{
    int call = request ? IBARRIER : BARRIER;
    gcoll__ip_op_t *o = NULL;
    gcoll_comm_t g = gcoll__ip_on(call) ? gcoll__ip_map_comm(comm) : NULL;
    if (!g || !start(call, request, &o)) {
        gcoll__ip_passed(call);
        return request ? PMPI_Ibarrier(comm, request) : PMPI_Barrier(comm);
    }
    gcoll_status_t st = request ? GCOLL(gcoll_ibarrier(g, NULL, &o->g)) : GCOLL(gcoll_barrier(g));
    return gcoll__ip_finish(call, o, comm, st, request);
}

int MPI_Barrier(MPI_Comm comm)
{
    return barrier(comm, NULL);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    return request ? barrier(comm, request) : PMPI_Ibarrier(comm, request);
}
