/* GCOLL_TIMEOUT: a collective that rank 0 never joins returns GCOLL_ERR_TIMEOUT on the others
 * instead of hanging, names itself and the silent ranks, and leaves its communicator failed;
 * gcoll_comm_set_timeout gives one communicator a timeout of its own.
 * Run with GCOLL_TIMEOUT=1 on 3 or more ranks. */
#include <string.h>

#include <mpi.h>

#include "harness.h"

int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv);
    gcoll_comm_t c1, c2;
    CHECK_OK(gcoll_comm_dup(world, &c1));
    CHECK_OK(gcoll_comm_dup(world, &c2));
    float v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = 1;

    if (h_rank != 0) {
        double t0 = h_now();
        gcoll_status_t st = gcoll_allreduce(v, v, 1000, GCOLL_FLOAT32, GCOLL_SUM, c1);
        double waited = h_now() - t0;
        CHECK(st == GCOLL_ERR_TIMEOUT, "blocking allreduce: got %s", gcoll_status_name(st));
        const char *msg = gcoll_last_error();
        CHECK(strstr(msg, "allreduce #0") && strstr(msg, "timed out") && strstr(msg, "no answer from rank"),
              "message lacks the collective, its sequence or the ranks: %s", msg);
        CHECK(waited > 0.5 && waited < 30, "returned after %.2f s with GCOLL_TIMEOUT=1", waited);
        /* the communicator is failed from now on */
        st = gcoll_barrier(c1);
        CHECK(st == GCOLL_ERR_ABORTED, "barrier on a failed comm: got %s", gcoll_status_name(st));
        CHECK(strstr(gcoll_last_error(), "failed earlier") != NULL, "message: %s", gcoll_last_error());

        /* nonblocking, polled with gcoll_test: the same bound */
        gcoll_request_t req;
        gcoll_attr_t attr = GCOLL_ATTR_INIT;
        attr.name = "grad.layer7";
        CHECK_OK(gcoll_ibcast(v, 1000, GCOLL_FLOAT32, 0, c2, &attr, &req));
        int done = 0;
        while ((st = gcoll_test(&req, &done)) == GCOLL_SUCCESS && !done)
            ;
        CHECK(st == GCOLL_ERR_TIMEOUT, "polled ibcast: got %s", gcoll_status_name(st));
        CHECK(strstr(gcoll_last_error(), "grad.layer7") != NULL, "message lacks the op's name: %s", gcoll_last_error());
        CHECK(req == NULL, "a finished request was not released");
    }
    /* a communicator's own timeout, longer than GCOLL_TIMEOUT=1, rules its operations */
    gcoll_comm_t c3;
    CHECK_OK(gcoll_comm_dup(world, &c3));
    CHECK(gcoll_comm_set_timeout(c3, 0) == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), "seconds"),
          "a timeout of 0 s: %s", gcoll_last_error());
    CHECK(gcoll_comm_set_timeout(NULL, 1) == GCOLL_ERR_INVALID_ARG && strstr(gcoll_last_error(), "comm"),
          "a NULL comm: %s", gcoll_last_error());
    CHECK_OK(gcoll_comm_set_timeout(c3, 2.5));
    if (h_rank != 0) {
        double t0 = h_now();
        gcoll_status_t st = gcoll_allreduce(v, v, 1000, GCOLL_FLOAT32, GCOLL_SUM, c3);
        double waited = h_now() - t0;
        CHECK(st == GCOLL_ERR_TIMEOUT && strstr(gcoll_last_error(), "gcoll_comm_set_timeout"),
              "allreduce on a comm with its own timeout: %s: %s", gcoll_status_name(st), gcoll_last_error());
        CHECK(waited >= 2.5, "returned after %.2f s with the communicator's timeout of 2.5 s", waited);
    }
    /* rank 0 keeps c3 until the others are done with it: over tcp a rank that freed it before
     * anyone connected to it would look crashed to them (GCOLL_TCP_CONNECT=lazy) */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(gcoll_comm_free(&c3) == GCOLL_SUCCESS, "free of c3: %s", gcoll_last_error());
    /* the failed communicators can still be freed; the world is unaffected */
    CHECK(gcoll_comm_free(&c1) == GCOLL_SUCCESS, "free of a failed comm: %s", gcoll_last_error());
    CHECK(gcoll_comm_free(&c2) == GCOLL_SUCCESS, "free of a failed comm: %s", gcoll_last_error());
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OK(gcoll_barrier(world));
    int one = 1, n = 0;
    CHECK_OK(gcoll_allreduce(&one, &n, 1, GCOLL_INT32, GCOLL_SUM, world));
    CHECK(n == h_size, "world allreduce after the timeout: %d", n);
    return h_finish("timeout");
}
