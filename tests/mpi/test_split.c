/* Sub-communicators: comm_split (even/odd and reversed keys), comm_dup and comm_from_mpi, with
 * collectives in flight on the children and the parent at once, from one thread and from two. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "gcoll_mpi.h"
#include "harness.h"

#define N 100003 /* a prime, large enough to take several rounds */

static gcoll_comm_t world;

/* The allreduce sum of (world rank + 1) * (i % 7 + 1) over the world ranks in `members`. */
static int check_sum(const int64_t *got, const int *members, int nmem, const char *what)
{
    int64_t base = 0;
    for (int m = 0; m < nmem; m++)
        base += members[m] + 1;
    for (size_t i = 0; i < N; i++)
        if (got[i] != base * (int64_t)(i % 7 + 1)) {
            CHECK(0, "%s: element %zu is %lld, want %lld", what, i, (long long)got[i],
                  (long long)(base * (int64_t)(i % 7 + 1)));
            return 0;
        }
    CHECK(1, "%s", what);
    return 1;
}

static int64_t *input(void)
{
    int64_t *v = malloc(N * sizeof(int64_t));
    for (size_t i = 0; i < N; i++)
        v[i] = (int64_t)(h_rank + 1) * (int64_t)(i % 7 + 1);
    return v;
}

typedef struct {
    gcoll_comm_t comm;
    int64_t *out;
    gcoll_status_t st;
} job_t;

static void *thread_allreduce(void *arg)
{
    job_t *j = arg;
    int64_t *in = input();
    for (int it = 0; it < 5 && j->st == GCOLL_SUCCESS; it++)
        j->st = gcoll_allreduce(in, j->out, N, GCOLL_INT64, GCOLL_SUM, j->comm);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    world = h_init(&argc, &argv);
    int n = h_size, r = h_rank;
    int *all = malloc(sizeof(int) * (size_t)n), *mine = malloc(sizeof(int) * (size_t)n), nmine = 0;
    for (int q = 0; q < n; q++) {
        all[q] = q;
        if (q % 2 == r % 2)
            mine[nmine++] = q;
    }

    /* even/odd split, ranks ordered backwards by key */
    gcoll_comm_t sub;
    CHECK_OK(gcoll_comm_split(world, r % 2, n - r, &sub));
    CHECK(gcoll_comm_size(sub) == nmine, "split size %d want %d", gcoll_comm_size(sub), nmine);
    int want_rank = 0;
    for (int m = 0; m < nmine; m++)
        want_rank += mine[m] > r;
    CHECK(gcoll_comm_rank(sub) == want_rank, "split rank %d want %d", gcoll_comm_rank(sub), want_rank);

    /* the child and the parent in flight together, waited in the opposite order */
    int64_t *in = input(), *o_sub = calloc(N, 8), *o_world = calloc(N, 8), *o_bc = calloc(N, 8);
    gcoll_request_t rs, rw, rb;
    gcoll_attr_t hi = GCOLL_ATTR_INIT;
    hi.priority = 5;
    CHECK_OK(gcoll_iallreduce(in, o_sub, N, GCOLL_INT64, GCOLL_SUM, sub, NULL, &rs));
    CHECK_OK(gcoll_iallreduce(in, o_world, N, GCOLL_INT64, GCOLL_SUM, world, &hi, &rw));
    memcpy(o_bc, in, N * 8);
    CHECK_OK(gcoll_ibcast(o_bc, N, GCOLL_INT64, 0, sub, NULL, &rb));
    CHECK_OK(gcoll_wait(&rw));
    CHECK_OK(gcoll_wait(&rb));
    CHECK_OK(gcoll_wait(&rs));
    check_sum(o_sub, mine, nmine, "sub-communicator allreduce beside the parent");
    check_sum(o_world, all, n, "parent allreduce beside the sub-communicator");
    int root_world = mine[nmine - 1]; /* sub rank 0 is the highest world rank of the group */
    CHECK(o_bc[5] == (int64_t)(root_world + 1) * 6, "sub bcast: got %lld want %lld", (long long)o_bc[5],
          (long long)(root_world + 1) * 6);

    /* two threads, each driving its own communicator */
    gcoll_comm_t dup;
    CHECK_OK(gcoll_comm_dup(world, &dup));
    job_t ja = {sub, calloc(N, 8), GCOLL_SUCCESS}, jb = {dup, calloc(N, 8), GCOLL_SUCCESS};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, thread_allreduce, &ja);
    pthread_create(&tb, NULL, thread_allreduce, &jb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(ja.st == GCOLL_SUCCESS && jb.st == GCOLL_SUCCESS, "threaded allreduce: %s / %s", gcoll_status_name(ja.st),
          gcoll_status_name(jb.st));
    check_sum(ja.out, mine, nmine, "thread on the sub-communicator");
    check_sum(jb.out, all, n, "thread on the duplicate");

    /* a communicator from an MPI communicator the application made; launched without MPI
     * (tests/boot.sh) there is none, and gcoll_comm_from_mpi says so */
    int mpi = 0;
    MPI_Initialized(&mpi);
    gcoll_comm_t from = NULL;
    if (mpi) {
        MPI_Comm mc;
        MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &mc);
        CHECK_OK(gcoll_comm_from_mpi(mc, &from));
        MPI_Comm_free(&mc); /* gcoll keeps its own duplicate */
        memset(o_sub, 0, N * 8);
        CHECK_OK(gcoll_allreduce(in, o_sub, N, GCOLL_INT64, GCOLL_SUM, from));
        check_sum(o_sub, mine, nmine, "communicator from MPI_Comm");
        CHECK_OK(gcoll_comm_free(&from));
    } else {
        gcoll_status_t st = gcoll_comm_from_mpi(MPI_COMM_WORLD, &from);
        CHECK(st == GCOLL_ERR_INVALID_USAGE && !from && strstr(gcoll_last_error(), "without MPI"),
              "gcoll_comm_from_mpi without MPI: %s: %s", gcoll_status_name(st), gcoll_last_error());
    }

    CHECK_OK(gcoll_comm_free(&dup));
    CHECK_OK(gcoll_comm_free(&sub));
    free(ja.out);
    free(jb.out);
    free(in);
    free(o_sub);
    free(o_world);
    free(o_bc);
    free(all);
    free(mine);
    return h_finish("split");
}
