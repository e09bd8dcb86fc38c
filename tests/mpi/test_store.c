/* gcoll_init_store and gcoll_comm_create_store over a key-value store kept in a shared directory
 * (one file a key, written whole then renamed into place): the world, its split and dup, a
 * communicator of a subset made from a second key space, a store whose set fails, nesting, and
 * bad arguments named. MPI here only starts the processes and sums the counts. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"

typedef struct {
    const char *dir;
    const char *prefix; /* the key space of one communicator */
    int sets, gets;
} dirstore_t;

static void path_of(const dirstore_t *d, const char *key, char *path, size_t len)
{
    int n = snprintf(path, len, "%s/%s", d->dir, d->prefix);
    for (const char *k = key; *k && (size_t)n + 1 < len; k++) /* one flat file name a key */
        path[n++] = *k == '/' ? '%' : *k;
    path[n] = '\0';
}

static gcoll_status_t dir_set(void *ctx, const char *key, const void *value, size_t len, char *why, size_t whylen)
{
    dirstore_t *d = ctx;
    char path[512], tmp[600];
    path_of(d, key, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(value, 1, len, f) != len || fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(why, whylen, "%s: %s", tmp, strerror(errno));
        return GCOLL_ERR_SYSTEM;
    }
    d->sets++;
    return GCOLL_SUCCESS;
}

static gcoll_status_t dir_get(void *ctx, const char *key, void *value, size_t cap, size_t *len, char *why,
                              size_t whylen)
{
    dirstore_t *d = ctx;
    char path[512];
    path_of(d, key, path, sizeof(path));
    double deadline = h_now() + 60;
    FILE *f;
    while (!(f = fopen(path, "rb"))) {
        if (h_now() > deadline) {
            snprintf(why, whylen, "no %s after 60 s", path);
            return GCOLL_ERR_TIMEOUT;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    size_t want = *len < cap ? *len : cap;
    size_t got = fread(value, 1, want, f);
    fclose(f);
    d->gets++;
    return got == want ? GCOLL_SUCCESS : GCOLL_ERR_SYSTEM;
}

static gcoll_status_t broken_set(void *ctx, const char *key, const void *value, size_t len, char *why, size_t whylen)
{
    (void)ctx, (void)key, (void)value, (void)len;
    snprintf(why, whylen, "the store's disk is gone");
    return GCOLL_ERR_SYSTEM;
}

static gcoll_store_t store_of(dirstore_t *d)
{
    gcoll_store_t s = GCOLL_STORE_INIT;
    s.ctx = d;
    s.set = dir_set;
    s.get = dir_get;
    return s;
}

/* The status and a message naming what; for the calls made before gcoll is initialized too. */
static void expect(gcoll_status_t st, gcoll_status_t want, const char *what, const char *call)
{
    CHECK(st == want, "%s: got %s, expected %s", call, gcoll_status_name(st), gcoll_status_name(want));
    CHECK(strstr(gcoll_last_error(), what) != NULL, "%s: the message does not name %s: %s", call, what,
          gcoll_last_error());
}

static void bad_arguments(dirstore_t *d)
{
    gcoll_store_t s = store_of(d), raw;
    gcoll_comm_t c;
    expect(gcoll_init_store(0, 1, NULL), GCOLL_ERR_INVALID_ARG, "store", "init_store(NULL)");
    memset(&raw, 0, sizeof(raw));
    expect(gcoll_init_store(0, 1, &raw), GCOLL_ERR_INVALID_ARG, "GCOLL_STORE_INIT", "init_store(zeroed)");
    gcoll_store_t noset = s;
    noset.set = NULL;
    expect(gcoll_init_store(0, 1, &noset), GCOLL_ERR_INVALID_ARG, "store->set", "init_store(set NULL)");
    expect(gcoll_init_store(3, 3, &s), GCOLL_ERR_INVALID_ARG, "rank 3", "init_store(rank == size)");
    expect(gcoll_init_store(-1, 3, &s), GCOLL_ERR_INVALID_ARG, "rank -1", "init_store(rank -1)");
    expect(gcoll_init_store(0, 0, &s), GCOLL_ERR_INVALID_ARG, "size 0", "init_store(size 0)");
    expect(gcoll_comm_create_store(0, 1, &s, &c), GCOLL_ERR_INVALID_USAGE, "not initialized",
           "comm_create_store before init");
    CHECK(d->sets == 0 && d->gets == 0, "a refused call used the store (%d sets, %d gets)", d->sets, d->gets);
}

/* An allreduce of rank + 1 and an allgather of the ranks on c, against their closed forms. */
static void exercise(gcoll_comm_t c, int size, const char *what)
{
    int rank = gcoll_comm_rank(c);
    CHECK(gcoll_comm_size(c) == size && rank >= 0 && rank < size, "%s: rank %d of %d, expected a size of %d", what,
          rank, gcoll_comm_size(c), size);
    if (gcoll_comm_size(c) != size)
        return;
    long long mine[3] = {rank + 1, rank + 1, rank + 1}, sum[3];
    CHECK_OK(gcoll_allreduce(mine, sum, 3, GCOLL_INT64, GCOLL_SUM, c));
    for (int i = 0; i < 3; i++)
        CHECK(sum[i] == (long long)size * (size + 1) / 2, "%s: allreduce gave %lld", what, sum[i]);
    int *all = malloc(sizeof(int) * (size_t)size);
    CHECK_OK(gcoll_allgather(&rank, all, 1, GCOLL_INT32, c));
    for (int r = 0; r < size; r++)
        CHECK(all[r] == r, "%s: allgather element %d is %d", what, r, all[r]);
    free(all);
    const char *tp = "";
    CHECK_OK(gcoll_comm_transport(c, &tp));
    CHECK(strstr(tp, "mpi") == NULL, "%s: a store communicator runs over %s", what, tp);
}

static void remove_dir(const char *dir)
{
    DIR *dd = opendir(dir);
    struct dirent *e;
    char path[600];
    while (dd && (e = readdir(dd)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (dd)
        closedir(dd);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_set_rank(rank, size);
    char dir[64] = "/tmp/gcoll-store-XXXXXX";
    if (rank == 0 && !mkdtemp(dir))
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);

    dirstore_t d = {dir, "", 0, 0};
    bad_arguments(&d);

    gcoll_store_t s = store_of(&d);
    gcoll_comm_t world, c;
    CHECK_OK(gcoll_init_store(rank, size, &s));
    CHECK_OK(gcoll_comm_world(&world));
    CHECK(d.sets > 0 && (size == 1 || d.gets > 0), "the world met without the store (%d sets, %d gets)", d.sets,
          d.gets);
    exercise(world, size, "world");
    expect(gcoll_init_store(rank, size, NULL), GCOLL_ERR_INVALID_ARG, "store", "init_store(NULL) when initialized");
    CHECK_OK(gcoll_init_store(rank, size, &s)); /* nests: counts only */

    /* a split and a dup go through the world's store group */
    CHECK_OK(gcoll_comm_split(world, rank % 2, -rank, &c));
    exercise(c, (size + 1 - rank % 2) / 2, "split by parity");
    CHECK(gcoll_comm_rank(c) == (size - 1 - rank) / 2, "split: rank %d became %d, not %d: keys order backwards", rank,
          gcoll_comm_rank(c), (size - 1 - rank) / 2);
    CHECK_OK(gcoll_comm_free(&c));
    CHECK_OK(gcoll_comm_dup(world, &c));
    exercise(c, size, "dup");
    CHECK_OK(gcoll_comm_free(&c));

    /* a subset meets in a key space of its own, the other ranks elsewhere */
    dirstore_t sub = {dir, rank % 3 == 0 ? "thirds" : "others", 0, 0};
    gcoll_store_t ss = store_of(&sub);
    int nsub = rank % 3 == 0 ? (size + 2) / 3 : size - (size + 2) / 3;
    int rsub = rank % 3 == 0 ? rank / 3 : rank - rank / 3 - 1;
    CHECK_OK(gcoll_comm_create_store(rsub, nsub, &ss, &c));
    exercise(c, nsub, rank % 3 == 0 ? "every third rank" : "the other ranks");
    CHECK_OK(gcoll_comm_free(&c));

    /* a store that fails: every rank is told why, nothing hangs */
    gcoll_store_t broken = s;
    broken.set = broken_set;
    expect(gcoll_comm_create_store(rank, size, &broken, &c), GCOLL_ERR_SYSTEM, "disk is gone",
           "comm_create_store on a broken store");
    CHECK(c == NULL && strstr(gcoll_last_error(), "gcoll/") != NULL, "the message names no key: %s",
          gcoll_last_error());
    expect(gcoll_comm_create_store(rank, size, &ss, NULL), GCOLL_ERR_INVALID_ARG, "comm", "comm_create_store(NULL)");

    CHECK_OK(gcoll_barrier(world));
    CHECK_OK(gcoll_finalize());
    CHECK_OK(gcoll_finalize());
    int mpi_used_by_gcoll = 0;
    MPI_Finalized(&mpi_used_by_gcoll);
    CHECK(!mpi_used_by_gcoll, "gcoll_finalize of a store job finalized MPI");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        remove_dir(dir);
    int rc = check_summary("store", CHECK_NP);
    MPI_Finalize();
    return rc;
}
