/* Bad input gets a status and a message naming the argument, never a crash: NULL buffers with
 * a count, invalid dtype, op and root, NULL or freed communicators and requests, unknown
 * algorithms. Count 0 with NULL buffers is legal. */
#include <string.h>

#include <mpi.h>

#include "gcoll_mpi.h"
#include "harness.h"

static void expect(gcoll_status_t got, gcoll_status_t want, const char *needle, const char *what)
{
    CHECK(got == want, "%s: got %s want %s (%s)", what, gcoll_status_name(got), gcoll_status_name(want),
          gcoll_last_error());
    if (needle)
        CHECK(strstr(gcoll_last_error(), needle) != NULL, "%s: message '%s' does not mention '%s'", what,
              gcoll_last_error(), needle);
}

int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    int n = h_size;
    float buf[64] = {0};
    gcoll_request_t req;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;

    expect(gcoll_allreduce(NULL, buf, 4, GCOLL_FLOAT32, GCOLL_SUM, world), GCOLL_ERR_INVALID_ARG, "sendbuf",
           "allreduce NULL sendbuf");
    expect(gcoll_allreduce(buf, NULL, 4, GCOLL_FLOAT32, GCOLL_SUM, world), GCOLL_ERR_INVALID_ARG, "recvbuf",
           "allreduce NULL recvbuf");
    expect(gcoll_allreduce(buf, buf, 4, (gcoll_dtype_t)42, GCOLL_SUM, world), GCOLL_ERR_INVALID_ARG, "dtype",
           "allreduce bad dtype");
    expect(gcoll_allreduce(buf, buf, 4, GCOLL_FLOAT32, (gcoll_op_t)-1, world), GCOLL_ERR_INVALID_ARG, "op",
           "allreduce bad op");
    expect(gcoll_allreduce(buf, buf, 4, GCOLL_FLOAT32, GCOLL_SUM, NULL), GCOLL_ERR_INVALID_ARG, "comm",
           "allreduce NULL comm");
    expect(gcoll_allreduce(buf, buf, (size_t)-1 / 2, GCOLL_FLOAT64, GCOLL_SUM, world), GCOLL_ERR_INVALID_ARG,
           "count", "allreduce huge count");
    expect(gcoll_reduce_scatter(NULL, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, world), GCOLL_ERR_INVALID_ARG, "sendbuf",
           "reduce_scatter NULL sendbuf");
    expect(gcoll_allgather(buf, NULL, 1, GCOLL_FLOAT32, world), GCOLL_ERR_INVALID_ARG, "recvbuf",
           "allgather NULL recvbuf");
    expect(gcoll_alltoall(NULL, buf, 1, GCOLL_INT32, world), GCOLL_ERR_INVALID_ARG, "sendbuf",
           "alltoall NULL sendbuf");
    expect(gcoll_bcast(NULL, 3, GCOLL_INT8, 0, world), GCOLL_ERR_INVALID_ARG, "buf", "bcast NULL buf");
    expect(gcoll_bcast(buf, 3, GCOLL_INT8, n, world), GCOLL_ERR_INVALID_ARG, "root", "bcast root == size");
    expect(gcoll_bcast(buf, 3, GCOLL_INT8, -1, world), GCOLL_ERR_INVALID_ARG, "root", "bcast root -1");
    expect(gcoll_reduce(buf, buf, 3, GCOLL_FLOAT32, GCOLL_MAX, n + 5, world), GCOLL_ERR_INVALID_ARG, "root",
           "reduce bad root");
    expect(gcoll_reduce(buf, buf, 3, GCOLL_FLOAT32, (gcoll_op_t)77, 0, world), GCOLL_ERR_INVALID_ARG, "op",
           "reduce bad op");
    expect(gcoll_iallreduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, world, NULL, NULL), GCOLL_ERR_INVALID_ARG, "req",
           "iallreduce NULL req");
    expect(gcoll_ibarrier(world, NULL, NULL), GCOLL_ERR_INVALID_ARG, "req", "ibarrier NULL req");
    attr.algorithm = "quantum";
    expect(gcoll_iallreduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, world, &attr, &req), GCOLL_ERR_INVALID_ARG,
           "quantum", "iallreduce unknown algorithm");
    expect(gcoll_wait(NULL), GCOLL_ERR_INVALID_ARG, "req", "wait NULL");
    req = NULL;
    expect(gcoll_wait(&req), GCOLL_ERR_INVALID_ARG, "*req", "wait *req NULL");
    int done;
    expect(gcoll_test(&req, &done), GCOLL_ERR_INVALID_ARG, "*req", "test *req NULL");
    expect(gcoll_comm_split(world, 0, 0, NULL), GCOLL_ERR_INVALID_ARG, "newcomm", "split NULL newcomm");
    expect(gcoll_comm_free(NULL), GCOLL_ERR_INVALID_ARG, "comm", "free NULL");
    gcoll_comm_t w2 = world;
    expect(gcoll_comm_free(&w2), GCOLL_ERR_INVALID_USAGE, "world", "free world");
    gcoll_comm_t from;
    expect(gcoll_comm_from_mpi(MPI_COMM_NULL, &from), GCOLL_ERR_INVALID_ARG, "mpi_comm", "from_mpi NULL comm");

    /* count 0 with NULL buffers is legal everywhere */
    CHECK_OK(gcoll_allreduce(NULL, NULL, 0, GCOLL_FLOAT32, GCOLL_SUM, world));
    CHECK_OK(gcoll_reduce_scatter(NULL, NULL, 0, GCOLL_FLOAT32, GCOLL_AVG, world));
    CHECK_OK(gcoll_allgather(NULL, NULL, 0, GCOLL_INT64, world));
    CHECK_OK(gcoll_bcast(NULL, 0, GCOLL_INT64, n - 1, world));
    CHECK_OK(gcoll_reduce(NULL, NULL, 0, GCOLL_INT64, GCOLL_PROD, 0, world));
    CHECK_OK(gcoll_alltoall(NULL, NULL, 0, GCOLL_UINT8, world));

    /* reduce: recvbuf may be NULL away from the root */
    float one = 1, out = 0;
    CHECK_OK(gcoll_reduce(&one, h_rank == 0 ? &out : NULL, 1, GCOLL_FLOAT32, GCOLL_SUM, 0, world));
    if (h_rank == 0)
        CHECK(out == (float)n, "reduce with NULL recvbuf off-root: got %g want %d", (double)out, n);

    /* a freed communicator is refused, as is any later use of the stale handle */
    gcoll_comm_t dup;
    CHECK_OK(gcoll_comm_dup(world, &dup));
    CHECK(gcoll_comm_size(dup) == n, "dup size %d", gcoll_comm_size(dup));
    gcoll_comm_t stale = dup;
    CHECK_OK(gcoll_comm_free(&dup));
    CHECK(dup == NULL, "comm_free did not clear the handle");
    expect(gcoll_allreduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, stale), GCOLL_ERR_INVALID_ARG, "comm",
           "allreduce on freed comm");
    expect(gcoll_barrier(stale), GCOLL_ERR_INVALID_ARG, "not a live communicator", "barrier on freed comm");
    expect(gcoll_comm_free(&stale), GCOLL_ERR_INVALID_ARG, "comm", "double free");
    CHECK(gcoll_comm_rank(stale) == -1, "rank of a freed comm should be -1");

    /* a negative color joins no communicator */
    gcoll_comm_t none = world;
    CHECK_OK(gcoll_comm_split(world, -1, 0, &none));
    CHECK(none == NULL, "split with a negative color returned a communicator");

    /* the world still works after all of the above */
    int x = h_rank + 1, sum = 0;
    CHECK_OK(gcoll_allreduce(&x, &sum, 1, GCOLL_INT32, GCOLL_SUM, world));
    CHECK(sum == n * (n + 1) / 2, "allreduce after errors: got %d", sum);
    return h_finish("errors");
}
