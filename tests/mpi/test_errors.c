/* Bad input gets a status and a message naming the argument, never a crash: NULL buffers with
 * a count, invalid dtype, op and root, counts whose bytes overflow, NULL or freed communicators,
 * requests and sessions, unknown algorithms, attributes without their header, unknown or
 * truncated configuration reads, for every public function; and calls before
 * gcoll_init and after gcoll_finalize (this test starts MPI itself, so it outlives gcoll).
 * Count 0 with NULL buffers is legal. */
#include <stdint.h>
#include <stdlib.h>
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

/* Nothing works before gcoll_init but the local helpers; bogus is a handle never created. */
static void before_init(int *argc, char ***argv)
{
    float buf[4] = {1, 2, 3, 4};
    gcoll_comm_t bogus = (gcoll_comm_t)(void *)buf, c = NULL;
    gcoll_request_t req = NULL;
    gcoll_session_t sess = NULL;
    const char *name;
    expect(gcoll_comm_world(&c), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "comm_world before init");
    expect(gcoll_comm_from_mpi(MPI_COMM_WORLD, &c), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "from_mpi before init");
    expect(gcoll_allreduce(buf, buf, 4, GCOLL_FLOAT32, GCOLL_SUM, bogus), GCOLL_ERR_INVALID_USAGE, "gcoll_init",
           "allreduce before init");
    expect(gcoll_ibcast(buf, 4, GCOLL_FLOAT32, 0, bogus, NULL, &req), GCOLL_ERR_INVALID_USAGE, "gcoll_init",
           "ibcast before init");
    CHECK(req == NULL, "a failed start left a request");
    expect(gcoll_barrier(NULL), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "barrier before init");
    expect(gcoll_comm_dup(bogus, &c), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "dup before init");
    expect(gcoll_comm_split(bogus, 0, 0, &c), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "split before init");
    expect(gcoll_comm_free(&bogus), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "free before init");
    expect(gcoll_comm_abort(bogus), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "abort before init");
    expect(gcoll_comm_transport(bogus, &name), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "transport before init");
    expect(gcoll_comm_algorithm(bogus, "allreduce", 4, GCOLL_FLOAT32, &name), GCOLL_ERR_INVALID_USAGE, "gcoll_init",
           "algorithm before init");
    expect(gcoll_session_create(bogus, &sess), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "session before init");
    CHECK(gcoll_comm_rank(bogus) == -1 && gcoll_comm_size(bogus) == -1, "rank/size of a bogus handle");
    expect(gcoll_finalize(), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "finalize before init");
    expect(gcoll_init(argc, NULL), GCOLL_ERR_INVALID_ARG, "argv", "init with argc but no argv");
    /* the local helpers need no gcoll_init; the registry reads the environment */
    char value[64];
    const char *source = NULL, *env = getenv("GCOLL_TIMEOUT");
    CHECK_OK(gcoll_config_get("GCOLL_TIMEOUT", value, sizeof(value), &source));
    CHECK(strcmp(value, env ? env : "300") == 0 && source && strcmp(source, env ? "environment" : "default") == 0,
          "config_get before init: GCOLL_TIMEOUT '%s' (%s), the environment has %s", value, source ? source : "NULL",
          env ? env : "nothing");
    float other[4] = {1, 1, 1, 1};
    CHECK_OK(gcoll_reduce_local(buf, other, 4, GCOLL_FLOAT32, GCOLL_SUM));
    CHECK(buf[0] == 2 && buf[3] == 5, "reduce_local before init: %g %g", (double)buf[0], (double)buf[3]);
    (void)argv;
}

/* Functions of no communicator: out-of-range codes, NULL outputs, overflowing counts. */
static void local_functions(void)
{
    float a[4] = {0}, b[4] = {0};
    CHECK(strcmp(gcoll_strerror((gcoll_status_t)999), "unknown status") == 0, "strerror(999)");
    CHECK(strcmp(gcoll_strerror((gcoll_status_t)-1), "unknown status") == 0, "strerror(-1)");
    CHECK(strcmp(gcoll_status_name((gcoll_status_t)999), "GCOLL_STATUS_UNKNOWN") == 0, "status_name(999)");
    CHECK(gcoll_dtype_size((gcoll_dtype_t)GCOLL_DTYPE_COUNT) == 0 && gcoll_dtype_size((gcoll_dtype_t)-1) == 0,
          "dtype_size of invalid types");
    CHECK(strcmp(gcoll_dtype_name((gcoll_dtype_t)99), "invalid") == 0, "dtype_name(99)");
    CHECK(strcmp(gcoll_op_name((gcoll_op_t)-7), "invalid") == 0, "op_name(-7)");
    CHECK(gcoll_version() && gcoll_version()[0], "version");
    gcoll_config_var_t v;
    expect(gcoll_config_var(gcoll_config_count(), &v), GCOLL_ERR_INVALID_ARG, "index", "config_var past the end");
    expect(gcoll_config_var(0, NULL), GCOLL_ERR_INVALID_ARG, "var", "config_var NULL");
    char value[8] = "x";
    const char *source;
    expect(gcoll_config_get(NULL, value, sizeof(value), &source), GCOLL_ERR_INVALID_ARG, "name",
           "config_get NULL name");
    expect(gcoll_config_get("GCOLL_TIMEOUT", NULL, 8, &source), GCOLL_ERR_INVALID_ARG, "buf", "config_get NULL buf");
    expect(gcoll_config_get("GCOLL_TIMEOUTS", value, sizeof(value), &source), GCOLL_ERR_INVALID_ARG, "GCOLL_TIMEOUTS",
           "config_get unknown name");
    expect(gcoll_config_get("", value, sizeof(value), NULL), GCOLL_ERR_INVALID_ARG, "name", "config_get empty name");
    expect(gcoll_config_get("GCOLL_TIMEOUT", value, 1, &source), GCOLL_ERR_INVALID_ARG, "len", "config_get len 1");
    CHECK(value[0] == '\0', "config_get left '%s' in a buffer too small", value);
    expect(gcoll_config_get("GCOLL_LOG_LEVEL", value, 0, NULL), GCOLL_ERR_INVALID_ARG, "len", "config_get len 0");
    const char *const *names;
    size_t n;
    expect(gcoll_algorithms(NULL, &names, &n), GCOLL_ERR_INVALID_ARG, "collective", "algorithms NULL");
    expect(gcoll_algorithms("allreduce", NULL, &n), GCOLL_ERR_INVALID_ARG, "names", "algorithms NULL names");
    expect(gcoll_algorithms("allreduce", &names, NULL), GCOLL_ERR_INVALID_ARG, "count", "algorithms NULL count");
    expect(gcoll_algorithms("allsmash", &names, &n), GCOLL_ERR_INVALID_ARG, "allsmash", "algorithms unknown");
    expect(gcoll_reduce_local(a, b, 4, (gcoll_dtype_t)42, GCOLL_SUM), GCOLL_ERR_INVALID_ARG, "dtype",
           "reduce_local bad dtype");
    expect(gcoll_reduce_local(a, b, 4, GCOLL_FLOAT32, GCOLL_AVG), GCOLL_ERR_INVALID_ARG, "op", "reduce_local AVG");
    expect(gcoll_reduce_local(a, b, 4, GCOLL_FLOAT32, (gcoll_op_t)9), GCOLL_ERR_INVALID_ARG, "op",
           "reduce_local bad op");
    expect(gcoll_reduce_local(NULL, b, 4, GCOLL_FLOAT32, GCOLL_SUM), GCOLL_ERR_INVALID_ARG, "inout",
           "reduce_local NULL inout");
    expect(gcoll_reduce_local(a, NULL, 4, GCOLL_FLOAT32, GCOLL_SUM), GCOLL_ERR_INVALID_ARG, "in",
           "reduce_local NULL in");
    expect(gcoll_reduce_local(a, b, SIZE_MAX / 2, GCOLL_FLOAT64, GCOLL_SUM), GCOLL_ERR_INVALID_ARG, "count",
           "reduce_local overflowing count");
}

/* Every collective's nonblocking form with each kind of bad argument, and byte sizes that
 * overflow (count * element size, or * ranks, past SIZE_MAX). */
static void collectives(gcoll_comm_t world, int n)
{
    float buf[64] = {0};
    gcoll_request_t req = NULL;
    const size_t huge = SIZE_MAX / 4 + 1; /* * 8 bytes overflows */
    expect(gcoll_iallreduce(buf, buf, huge, GCOLL_FLOAT64, GCOLL_SUM, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "count", "iallreduce overflow");
    expect(gcoll_ireduce_scatter(buf, buf, huge, GCOLL_INT64, GCOLL_SUM, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "count", "ireduce_scatter overflow");
    expect(gcoll_iallgather(buf, buf, huge, GCOLL_UINT64, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "count",
           "iallgather overflow");
    expect(gcoll_ibcast(buf, huge, GCOLL_FLOAT64, 0, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "count",
           "ibcast overflow");
    expect(gcoll_ireduce(buf, buf, huge, GCOLL_FLOAT64, GCOLL_MIN, 0, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "count", "ireduce overflow");
    expect(gcoll_ialltoall(buf, buf, huge, GCOLL_INT64, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "count",
           "ialltoall overflow");
    if (n > 1) /* count * ranks overflows though count * size does not */
        expect(gcoll_allgather(buf, buf, SIZE_MAX / (size_t)n + 1, GCOLL_UINT8, world), GCOLL_ERR_INVALID_ARG, "count",
               "allgather count * ranks overflow");
    expect(gcoll_ireduce_scatter(buf, buf, 4, (gcoll_dtype_t)-1, GCOLL_SUM, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "dtype", "ireduce_scatter bad dtype");
    expect(gcoll_ireduce_scatter(buf, buf, 4, GCOLL_FLOAT32, GCOLL_OP_COUNT, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "op", "ireduce_scatter bad op");
    expect(gcoll_ireduce_scatter(buf, NULL, 4, GCOLL_FLOAT32, GCOLL_SUM, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "recvbuf", "ireduce_scatter NULL recvbuf");
    expect(gcoll_ireduce_scatter(buf, buf, 4, GCOLL_FLOAT32, GCOLL_SUM, NULL, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "comm", "ireduce_scatter NULL comm");
    expect(gcoll_ireduce_scatter(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, world, NULL, NULL), GCOLL_ERR_INVALID_ARG,
           "req", "ireduce_scatter NULL req");
    expect(gcoll_iallgather(NULL, buf, 1, GCOLL_FLOAT32, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "sendbuf",
           "iallgather NULL sendbuf");
    expect(gcoll_iallgather(buf, buf, 1, GCOLL_DTYPE_COUNT, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "dtype",
           "iallgather bad dtype");
    expect(gcoll_iallgather(buf, buf, 1, GCOLL_FLOAT32, world, NULL, NULL), GCOLL_ERR_INVALID_ARG, "req",
           "iallgather NULL req");
    expect(gcoll_ibcast(NULL, 1, GCOLL_FLOAT32, 0, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "buf", "ibcast NULL buf");
    expect(gcoll_ibcast(buf, 1, GCOLL_FLOAT32, n, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "root",
           "ibcast root == size");
    expect(gcoll_ibcast(buf, 1, (gcoll_dtype_t)77, 0, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "dtype",
           "ibcast bad dtype");
    expect(gcoll_ibcast(buf, 1, GCOLL_FLOAT32, 0, world, NULL, NULL), GCOLL_ERR_INVALID_ARG, "req", "ibcast NULL req");
    expect(gcoll_ireduce(NULL, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, 0, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "sendbuf", "ireduce NULL sendbuf");
    expect(gcoll_ireduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, -2, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "root",
           "ireduce root -2");
    expect(gcoll_ireduce(buf, buf, 1, GCOLL_FLOAT32, (gcoll_op_t)-1, 0, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "op",
           "ireduce bad op");
    expect(gcoll_ireduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, 0, world, NULL, NULL), GCOLL_ERR_INVALID_ARG, "req",
           "ireduce NULL req");
    expect(gcoll_ialltoall(buf, NULL, 1, GCOLL_FLOAT32, world, NULL, &req), GCOLL_ERR_INVALID_ARG, "recvbuf",
           "ialltoall NULL recvbuf");
    expect(gcoll_ialltoall(buf, buf, 1, (gcoll_dtype_t)GCOLL_DTYPE_COUNT, world, NULL, &req), GCOLL_ERR_INVALID_ARG,
           "dtype", "ialltoall bad dtype");
    expect(gcoll_ialltoall(buf, buf, 1, GCOLL_FLOAT32, NULL, NULL, &req), GCOLL_ERR_INVALID_ARG, "comm",
           "ialltoall NULL comm");
    expect(gcoll_ialltoall(buf, buf, 1, GCOLL_FLOAT32, world, NULL, NULL), GCOLL_ERR_INVALID_ARG, "req",
           "ialltoall NULL req");
    expect(gcoll_ibarrier(NULL, NULL, &req), GCOLL_ERR_INVALID_ARG, "comm", "ibarrier NULL comm");
    expect(gcoll_barrier(NULL), GCOLL_ERR_INVALID_ARG, "comm", "barrier NULL comm");
    expect(gcoll_iallreduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, NULL, NULL, &req), GCOLL_ERR_INVALID_ARG, "comm",
           "iallreduce NULL comm");
    CHECK(req == NULL, "a failed start left a request");
    /* attributes that did not start from GCOLL_ATTR_INIT: refused by every call that takes them */
    gcoll_attr_t junk, zero = {0}, shrunk = GCOLL_ATTR_INIT, old = GCOLL_ATTR_INIT;
    memset(&junk, 0xa5, sizeof(junk));
    shrunk.size = sizeof(size_t); /* shorter than the header */
    old.version = 100;            /* 0.1.0 had no header */
    const gcoll_attr_t *bad[] = {&junk, &zero, &shrunk, &old};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const gcoll_attr_t *a = bad[i];
        size_t ct[1] = {1};
        req = (gcoll_request_t)(void *)buf; /* a failed start clears it */
        expect(gcoll_iallreduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, world, a, &req), GCOLL_ERR_INVALID_ARG,
               "GCOLL_ATTR_INIT", "iallreduce attr without a header");
        CHECK(req == NULL, "a start refused for its attr left a request");
        expect(gcoll_ireduce_scatter(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, world, a, &req), GCOLL_ERR_INVALID_ARG,
               "attr", "ireduce_scatter attr without a header");
        expect(gcoll_iallgather(buf, buf, 1, GCOLL_FLOAT32, world, a, &req), GCOLL_ERR_INVALID_ARG, "attr",
               "iallgather attr without a header");
        expect(gcoll_ibcast(buf, 1, GCOLL_FLOAT32, 0, world, a, &req), GCOLL_ERR_INVALID_ARG, "attr",
               "ibcast attr without a header");
        expect(gcoll_ireduce(buf, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, 0, world, a, &req), GCOLL_ERR_INVALID_ARG, "attr",
               "ireduce attr without a header");
        expect(gcoll_ialltoall(buf, buf, 1, GCOLL_FLOAT32, world, a, &req), GCOLL_ERR_INVALID_ARG, "attr",
               "ialltoall attr without a header");
        expect(gcoll_ibarrier(world, a, &req), GCOLL_ERR_INVALID_ARG, "GCOLL_ATTR_INIT",
               "ibarrier attr without a header");
        expect(gcoll_iadasum(buf, buf, 1, GCOLL_FLOAT32, ct, 1, world, a, &req), GCOLL_ERR_INVALID_ARG, "attr",
               "iadasum attr without a header");
    }
    expect(gcoll_ibarrier(world, &junk, &req), GCOLL_ERR_INVALID_ARG, "attr->magic", "ibarrier uninitialized attr");
    expect(gcoll_ibarrier(world, &shrunk, &req), GCOLL_ERR_INVALID_ARG, "attr->size", "ibarrier attr too short");
    expect(gcoll_ibarrier(world, &old, &req), GCOLL_ERR_INVALID_ARG, "attr->version", "ibarrier attr of 0.1.0");
    /* test: NULL done; a finished request's handle is cleared */
    int done = 0;
    CHECK_OK(gcoll_ibarrier(world, NULL, &req));
    expect(gcoll_test(&req, NULL), GCOLL_ERR_INVALID_ARG, "done", "test NULL done");
    CHECK_OK(gcoll_wait(&req));
    CHECK(req == NULL, "wait did not clear the request");
    expect(gcoll_test(NULL, &done), GCOLL_ERR_INVALID_ARG, "req", "test NULL req");
    /* introspection on a communicator */
    const char *name;
    expect(gcoll_comm_transport(world, NULL), GCOLL_ERR_INVALID_ARG, "name", "transport NULL name");
    expect(gcoll_comm_transport(NULL, &name), GCOLL_ERR_INVALID_ARG, "comm", "transport NULL comm");
    expect(gcoll_comm_algorithm(world, NULL, 4, GCOLL_FLOAT32, &name), GCOLL_ERR_INVALID_ARG, "collective",
           "algorithm NULL collective");
    expect(gcoll_comm_algorithm(world, "allreduce", 4, GCOLL_FLOAT32, NULL), GCOLL_ERR_INVALID_ARG, "algorithm",
           "algorithm NULL out");
    expect(gcoll_comm_algorithm(world, "allsmash", 4, GCOLL_FLOAT32, &name), GCOLL_ERR_INVALID_ARG, "allsmash",
           "algorithm unknown collective");
    expect(gcoll_comm_algorithm(world, "allreduce", 4, (gcoll_dtype_t)(GCOLL_DTYPE_COUNT + 1), &name),
           GCOLL_ERR_INVALID_ARG, "dtype", "algorithm bad dtype");
    expect(gcoll_comm_algorithm(world, "allreduce", huge, GCOLL_FLOAT64, &name), GCOLL_ERR_INVALID_ARG, "count",
           "algorithm overflow");
    expect(gcoll_comm_algorithm(NULL, "allreduce", 4, GCOLL_FLOAT32, &name), GCOLL_ERR_INVALID_ARG, "comm",
           "algorithm NULL comm");
    expect(gcoll_comm_abort(NULL), GCOLL_ERR_INVALID_ARG, "comm", "abort NULL");
    gcoll_comm_t c;
    expect(gcoll_comm_dup(world, NULL), GCOLL_ERR_INVALID_ARG, "newcomm", "dup NULL newcomm");
    expect(gcoll_comm_dup(NULL, &c), GCOLL_ERR_INVALID_ARG, "comm", "dup NULL comm");
    CHECK(c == NULL, "a failed dup left a handle");
    expect(gcoll_comm_split(NULL, 0, 0, &c), GCOLL_ERR_INVALID_ARG, "comm", "split NULL comm");
    expect(gcoll_comm_world(NULL), GCOLL_ERR_INVALID_ARG, "comm", "world NULL");
    expect(gcoll_comm_from_mpi(MPI_COMM_WORLD, NULL), GCOLL_ERR_INVALID_ARG, "comm", "from_mpi NULL out");
    CHECK(gcoll_comm_rank(NULL) == -1 && gcoll_comm_size(NULL) == -1, "rank/size of NULL");
}

/* The gradient session: NULL handles and outputs, bad sets, calls out of order. Collective
 * (commit), so every rank runs it alike. */
static void session(gcoll_comm_t world)
{
    gcoll_session_t s = NULL, none = NULL;
    size_t id = 0, nb = 0;
    int done;
    float g[16] = {0};
    expect(gcoll_session_create(world, NULL), GCOLL_ERR_INVALID_ARG, "session", "session_create NULL out");
    expect(gcoll_session_create(NULL, &s), GCOLL_ERR_INVALID_ARG, "comm", "session_create NULL comm");
    expect(gcoll_session_add(NULL, "w", 4, GCOLL_FLOAT32, GCOLL_SUM, &id), GCOLL_ERR_INVALID_ARG, "s",
           "session_add NULL");
    expect(gcoll_session_commit(NULL), GCOLL_ERR_INVALID_ARG, "s", "session_commit NULL");
    expect(gcoll_session_start(NULL, 0, g), GCOLL_ERR_INVALID_ARG, "s", "session_start NULL");
    expect(gcoll_session_wait(NULL, 0), GCOLL_ERR_INVALID_ARG, "s", "session_wait NULL");
    expect(gcoll_session_wait_all(NULL), GCOLL_ERR_INVALID_ARG, "s", "session_wait_all NULL");
    expect(gcoll_session_test(NULL, 0, &done), GCOLL_ERR_INVALID_ARG, "s", "session_test NULL");
    expect(gcoll_session_buckets(NULL, &nb), GCOLL_ERR_INVALID_ARG, "s", "session_buckets NULL");
    expect(gcoll_session_bucket_of(NULL, 0, &nb), GCOLL_ERR_INVALID_ARG, "s", "session_bucket_of NULL");
    expect(gcoll_session_free(NULL), GCOLL_ERR_INVALID_ARG, "session", "session_free NULL");
    expect(gcoll_session_free(&none), GCOLL_ERR_INVALID_ARG, "*session", "session_free *NULL");
    CHECK_OK(gcoll_session_create(world, &s));
    expect(gcoll_session_add(s, "w", 0, GCOLL_FLOAT32, GCOLL_SUM, &id), GCOLL_ERR_INVALID_ARG, "count",
           "session_add count 0");
    expect(gcoll_session_add(s, "w", SIZE_MAX / 2, GCOLL_FLOAT32, GCOLL_SUM, &id), GCOLL_ERR_INVALID_ARG, "count",
           "session_add overflow");
    expect(gcoll_session_add(s, "w", 4, (gcoll_dtype_t)(GCOLL_DTYPE_COUNT + 2), GCOLL_SUM, &id), GCOLL_ERR_INVALID_ARG,
           "dtype", "session_add bad dtype");
    expect(gcoll_session_add(s, "w", 4, GCOLL_FLOAT32, GCOLL_MAX, &id), GCOLL_ERR_INVALID_ARG, "op", "session_add MAX");
    expect(gcoll_session_add(s, "w", 4, GCOLL_FLOAT32, GCOLL_SUM, NULL), GCOLL_ERR_INVALID_ARG, "id",
           "session_add NULL id");
    expect(gcoll_session_start(s, 0, g), GCOLL_ERR_INVALID_USAGE, "commit", "session_start before commit");
    CHECK_OK(gcoll_session_add(s, "w", 16, GCOLL_FLOAT32, GCOLL_SUM, &id));
    CHECK_OK(gcoll_session_commit(s));
    expect(gcoll_session_add(s, "late", 4, GCOLL_FLOAT32, GCOLL_SUM, &id), GCOLL_ERR_INVALID_USAGE, "committed",
           "session_add after commit");
    expect(gcoll_session_start(s, 7, g), GCOLL_ERR_INVALID_ARG, "id", "session_start bad id");
    expect(gcoll_session_start(s, 0, NULL), GCOLL_ERR_INVALID_ARG, "buf", "session_start NULL buf");
    expect(gcoll_session_wait(s, 0), GCOLL_ERR_INVALID_USAGE, "not started", "session_wait unstarted");
    expect(gcoll_session_test(s, 0, NULL), GCOLL_ERR_INVALID_ARG, "done", "session_test NULL done");
    expect(gcoll_session_buckets(s, NULL), GCOLL_ERR_INVALID_ARG, "nbuckets", "session_buckets NULL out");
    expect(gcoll_session_bucket_of(s, 3, &nb), GCOLL_ERR_INVALID_ARG, "id", "session_bucket_of bad id");
    expect(gcoll_session_bucket_of(s, 0, NULL), GCOLL_ERR_INVALID_ARG, "bucket", "session_bucket_of NULL out");
    CHECK_OK(gcoll_session_free(&s));
    CHECK(s == NULL, "session_free did not clear the handle");
}

/* After gcoll_finalize every handle is stale and every call says gcoll is not running. */
static void after_finalize(gcoll_comm_t world)
{
    float buf[4] = {0};
    gcoll_comm_t c = NULL;
    gcoll_request_t req = NULL;
    expect(gcoll_comm_world(&c), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "comm_world after finalize");
    expect(gcoll_allreduce(buf, buf, 4, GCOLL_FLOAT32, GCOLL_SUM, world), GCOLL_ERR_INVALID_USAGE, "gcoll_init",
           "allreduce after finalize");
    expect(gcoll_iallgather(buf, buf, 1, GCOLL_FLOAT32, world, NULL, &req), GCOLL_ERR_INVALID_USAGE, "gcoll_init",
           "iallgather after finalize");
    expect(gcoll_comm_dup(world, &c), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "dup after finalize");
    expect(gcoll_comm_abort(world), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "abort after finalize");
    expect(gcoll_comm_free(&world), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "free after finalize");
    CHECK(gcoll_comm_rank(world) == -1, "rank of the world after finalize");
    expect(gcoll_wait(&req), GCOLL_ERR_INVALID_ARG, "*req", "wait after finalize");
    expect(gcoll_finalize(), GCOLL_ERR_INVALID_USAGE, "gcoll_init", "second finalize");
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    before_init(&argc, &argv);
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
    expect(gcoll_allreduce(buf, buf, (size_t)-1 / 2, GCOLL_FLOAT64, GCOLL_SUM, world), GCOLL_ERR_INVALID_ARG, "count",
           "allreduce huge count");
    expect(gcoll_reduce_scatter(NULL, buf, 1, GCOLL_FLOAT32, GCOLL_SUM, world), GCOLL_ERR_INVALID_ARG, "sendbuf",
           "reduce_scatter NULL sendbuf");
    expect(gcoll_allgather(buf, NULL, 1, GCOLL_FLOAT32, world), GCOLL_ERR_INVALID_ARG, "recvbuf",
           "allgather NULL recvbuf");
    expect(gcoll_alltoall(NULL, buf, 1, GCOLL_INT32, world), GCOLL_ERR_INVALID_ARG, "sendbuf", "alltoall NULL sendbuf");
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

    local_functions();
    collectives(world, n);
    session(world);
    CHECK_OK(gcoll_allreduce(&x, &sum, 1, GCOLL_INT32, GCOLL_SUM, world));
    CHECK(sum == n * (n + 1) / 2, "allreduce after the second round of errors: got %d", sum);

    CHECK_OK(gcoll_finalize()); /* MPI stays up: this program started it */
    after_finalize(world);
    int rc = check_summary("errors", CHECK_NP); /* plain MPI, past gcoll_finalize */
    MPI_Finalize();
    return rc;
}
