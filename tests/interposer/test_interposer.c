/* test_interposer: a plain MPI program, knowing nothing of gcoll, that tests/interposer/run.sh
 * runs with LD_PRELOAD=lib/libgcoll_mpi.so. It makes every call the interposer takes over, with
 * every type and op it maps, in place or not, on several communicators, plus calls it must hand
 * to MPI (other types and ops, gapped types, an inter-communicator), and checks each result
 * against a closed form and each reduction's also against the real MPI's (PMPI_*). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "check.h"

enum { ALLREDUCE, IALLREDUCE, REDUCE_SCATTER_BLOCK, ALLGATHER, BCAST, REDUCE, BARRIER, NCALLS };
static const char *const call_names[NCALLS] = {"allreduce", "iallreduce", "reduce_scatter_block", "allgather", "bcast",
                                               "reduce",    "barrier"};
static int on[NCALLS];
static long taken[NCALLS], passed[NCALLS];
static int wrank;

/* A call the interposer should take over when GCOLL_MPI_COLLS allows it (takeable), else MPI's. */
static void tally(int call, int takeable)
{
    if (takeable && on[call])
        taken[call]++;
    else
        passed[call]++;
}

/* The test's own reading of GCOLL_MPI_COLLS (unset: all). */
static void read_colls(void)
{
    const char *s = getenv("GCOLL_MPI_COLLS");
    for (int i = 0; i < NCALLS; i++) {
        if (!s || strcmp(s, "all") == 0) {
            on[i] = 1;
            continue;
        }
        const char *p = strstr(s, call_names[i]);
        size_t n = strlen(call_names[i]);
        on[i] = p && (p == s || p[-1] == ',') && (p[n] == ',' || p[n] == '\0');
    }
}

/* ---- typed elements ------------------------------------------------------------------- */

typedef struct {
    MPI_Datatype t;
    const char *name;
    char kind; /* f float, s signed, u unsigned */
    int size;
} type_t;

static type_t types[16];
static int ntypes;

static void add_type(MPI_Datatype t, const char *name, char kind)
{
    int size;
    MPI_Type_size(t, &size);
    types[ntypes++] = (type_t){t, name, kind, size};
}

static void init_types(void)
{
    add_type(MPI_FLOAT, "MPI_FLOAT", 'f');
    add_type(MPI_DOUBLE, "MPI_DOUBLE", 'f');
    add_type(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 's');
    add_type(MPI_INT8_T, "MPI_INT8_T", 's');
    add_type(MPI_INT, "MPI_INT", 's');
    add_type(MPI_INT32_T, "MPI_INT32_T", 's');
    add_type(MPI_LONG, "MPI_LONG", 's');
    add_type(MPI_LONG_LONG, "MPI_LONG_LONG", 's');
    add_type(MPI_INT64_T, "MPI_INT64_T", 's');
    add_type(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 'u');
    add_type(MPI_UINT8_T, "MPI_UINT8_T", 'u');
    add_type(MPI_UNSIGNED, "MPI_UNSIGNED", 'u');
    add_type(MPI_UINT32_T, "MPI_UINT32_T", 'u');
    add_type(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", 'u');
    add_type(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", 'u');
    add_type(MPI_UINT64_T, "MPI_UINT64_T", 'u');
}

static void put(const type_t *ty, void *buf, size_t i, double v)
{
    char *p = (char *)buf + i * (size_t)ty->size;
    if (ty->kind == 'f' && ty->size == 4) {
        float x = (float)v;
        memcpy(p, &x, 4);
    } else if (ty->kind == 'f')
        memcpy(p, &v, 8);
    else if (ty->kind == 's' && ty->size == 1) {
        int8_t x = (int8_t)v;
        memcpy(p, &x, 1);
    } else if (ty->kind == 's' && ty->size == 4) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, 4);
    } else if (ty->kind == 's') {
        int64_t x = (int64_t)v;
        memcpy(p, &x, 8);
    } else if (ty->size == 1) {
        uint8_t x = (uint8_t)v;
        memcpy(p, &x, 1);
    } else if (ty->size == 4) {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
    } else {
        uint64_t x = (uint64_t)v;
        memcpy(p, &x, 8);
    }
}

static double get(const type_t *ty, const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * (size_t)ty->size;
    if (ty->kind == 'f' && ty->size == 4) {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    if (ty->kind == 'f') {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    if (ty->kind == 's' && ty->size == 1) {
        int8_t x;
        memcpy(&x, p, 1);
        return x;
    }
    if (ty->kind == 's' && ty->size == 4) {
        int32_t x;
        memcpy(&x, p, 4);
        return x;
    }
    if (ty->kind == 's') {
        int64_t x;
        memcpy(&x, p, 8);
        return (double)x;
    }
    if (ty->size == 1) {
        uint8_t x;
        memcpy(&x, p, 1);
        return x;
    }
    if (ty->size == 4) {
        uint32_t x;
        memcpy(&x, p, 4);
        return x;
    }
    uint64_t x;
    memcpy(&x, p, 8);
    return (double)x;
}

/* Element i of rank r: 1..3, negative at odd i for signed and float types. Sums, products (at
 * most 3^4 over 4 ranks) and extremes are exact in every type and any order. */
static double val(const type_t *ty, int r, size_t i)
{
    double v = 1 + (double)((r * 7 + i) % 3);
    return ty->kind != 'u' && (i & 1) ? -v : v;
}

static MPI_Op op_list[4];
static const char *const op_names[4] = {"MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX"};

static double fold(const type_t *ty, int o, int n, size_t i)
{
    double acc = val(ty, 0, i);
    for (int r = 1; r < n; r++) {
        double v = val(ty, r, i);
        acc = o == 0 ? acc + v : o == 1 ? acc * v : o == 2 ? fmin(acc, v) : fmax(acc, v);
    }
    return acc;
}

/* ---- the reductions --------------------------------------------------------------------- */

/* Each reduction's result is also compared with the real MPI's (PMPI_*, which the interposer
 * does not see) on a copy of the same input: both exact here, so byte for byte. */
static char *real_input(const void *input, size_t bytes)
{
    char *copy = malloc(bytes ? bytes : 1);
    memcpy(copy, input, bytes);
    return copy;
}

static void same_as_mpi(const void *got, char *real, size_t bytes, const char *label, const char *call,
                        const type_t *ty, int o)
{
    CHECK(memcmp(got, real, bytes) == 0, "%s %s %s %s: differs from the real MPI's result", label, call, ty->name,
          op_names[o]);
    free(real);
}

/* quick: a few types and ops at one count (the communicators made in a loop) */
static void test_allreduce(MPI_Comm c, const char *label, int quick)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    const size_t counts[] = {1, 7, 1000};
    for (int t = 0; t < ntypes; t += quick ? 5 : 1)
        for (int o = 0; o < 4; o += quick ? 3 : 1)
            for (int inplace = 0; inplace < 2; inplace++)
                for (size_t k = quick; k < (quick ? 2u : 3u); k++) {
                    const type_t *ty = &types[t];
                    size_t cnt = counts[k];
                    char *in = calloc(cnt, 8), *out = calloc(cnt, 8);
                    for (size_t i = 0; i < cnt; i++)
                        put(ty, inplace ? out : in, i, val(ty, rank, i));
                    char *real = real_input(inplace ? out : in, cnt * (size_t)ty->size);
                    int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, (int)cnt, ty->t, op_list[o], c);
                    tally(ALLREDUCE, 1);
                    size_t bad = cnt;
                    for (size_t i = cnt; i-- > 0;)
                        if (get(ty, out, i) != fold(ty, o, n, i))
                            bad = i;
                    CHECK(rc == MPI_SUCCESS && bad == cnt, "%s allreduce %s %s count %zu%s: rc %d, element %zu", label,
                          ty->name, op_names[o], cnt, inplace ? " in place" : "", rc, bad);
                    PMPI_Allreduce(MPI_IN_PLACE, real, (int)cnt, ty->t, op_list[o], c);
                    same_as_mpi(out, real, cnt * (size_t)ty->size, label, "allreduce", ty, o);
                    free(in);
                    free(out);
                }
}

static void test_reduce_scatter_block(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    const size_t counts[] = {1, 33};
    for (int t = 0; t < ntypes; t++)
        for (int o = 0; o < 4; o++)
            for (int inplace = 0; inplace < 2; inplace++)
                for (size_t k = 0; k < 2; k++) {
                    const type_t *ty = &types[t];
                    size_t rc_ = counts[k], all = rc_ * (size_t)n;
                    char *in = calloc(all, 8), *out = calloc(all, 8);
                    for (size_t i = 0; i < all; i++)
                        put(ty, inplace ? out : in, i, val(ty, rank, i));
                    char *real = real_input(inplace ? out : in, all * (size_t)ty->size);
                    int rc = MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : in, out, (int)rc_, ty->t, op_list[o], c);
                    tally(REDUCE_SCATTER_BLOCK, 1);
                    PMPI_Reduce_scatter_block(MPI_IN_PLACE, real, (int)rc_, ty->t, op_list[o], c);
                    same_as_mpi(out, real, rc_ * (size_t)ty->size, label, "reduce_scatter_block", ty, o);
                    size_t bad = rc_;
                    for (size_t i = rc_; i-- > 0;)
                        if (get(ty, out, i) != fold(ty, o, n, (size_t)rank * rc_ + i))
                            bad = i;
                    CHECK(rc == MPI_SUCCESS && bad == rc_,
                          "%s reduce_scatter_block %s %s recvcount %zu%s: rc %d, element %zu", label, ty->name,
                          op_names[o], rc_, inplace ? " in place" : "", rc, bad);
                    free(in);
                    free(out);
                }
}

static void test_reduce(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    const size_t counts[] = {1, 100};
    for (int t = 0; t < ntypes; t++)
        for (int o = 0; o < 4; o++)
            for (int root = 0; root<n; root += n> 1 ? n - 1 : 1)
                for (int inplace = 0; inplace < 2; inplace++)
                    for (size_t k = 0; k < 2; k++) {
                        const type_t *ty = &types[t];
                        size_t cnt = counts[k];
                        int me = rank == root, ip = inplace && me;
                        char *in = calloc(cnt, 8), *out = me ? calloc(cnt, 8) : NULL;
                        for (size_t i = 0; i < cnt; i++)
                            put(ty, ip ? out : in, i, val(ty, rank, i));
                        char *real = real_input(ip ? out : in, cnt * (size_t)ty->size);
                        int rc = MPI_Reduce(ip ? MPI_IN_PLACE : in, out, (int)cnt, ty->t, op_list[o], root, c);
                        tally(REDUCE, 1);
                        PMPI_Allreduce(MPI_IN_PLACE, real, (int)cnt, ty->t, op_list[o], c);
                        if (me)
                            same_as_mpi(out, real, cnt * (size_t)ty->size, label, "reduce", ty, o);
                        else
                            free(real);
                        size_t bad = cnt;
                        for (size_t i = cnt; me && i-- > 0;)
                            if (get(ty, out, i) != fold(ty, o, n, i))
                                bad = i;
                        CHECK(rc == MPI_SUCCESS && bad == cnt,
                              "%s reduce %s %s root %d count %zu%s: rc %d, element %zu", label, ty->name, op_names[o],
                              root, cnt, ip ? " in place" : "", rc, bad);
                        free(in);
                        free(out);
                    }
}

/* Iallreduce: several in flight at once beside MPI point-to-point requests, completed by each
 * of the completion calls in turn. */
static void test_iallreduce(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    enum { K = 4, CNT = 300 };
    for (int t = 0; t < ntypes; t++)
        for (int how = 0; how < 6; how++) {
            const type_t *ty = &types[t];
            int o = how % 4;
            char *in[K], *out[K];
            MPI_Request req[K + 3];
            for (int k = 0; k < K; k++) {
                in[k] = calloc(CNT, 8);
                out[k] = calloc(CNT, 8);
                for (size_t i = 0; i < CNT; i++)
                    put(ty, k & 1 ? out[k] : in[k], i, val(ty, rank, i));
                MPI_Iallreduce(k & 1 ? MPI_IN_PLACE : in[k], out[k], CNT - k, ty->t, op_list[o], c, &req[k]);
                tally(IALLREDUCE, 1);
            }
            /* MPI's own requests in the same array: a ring message, and an iallreduce on a type
             * the interposer leaves to MPI */
            int sendv = rank * 10 + how, recvv = -1;
            short sh = (short)(rank + 1), shsum = 0;
            MPI_Irecv(&recvv, 1, MPI_INT, (rank + n - 1) % n, 77, c, &req[K]);
            MPI_Isend(&sendv, 1, MPI_INT, (rank + 1) % n, 77, c, &req[K + 1]);
            MPI_Iallreduce(&sh, &shsum, 1, MPI_SHORT, MPI_SUM, c, &req[K + 2]);
            tally(IALLREDUCE, 0);
            int left = K + 3, flag = 0, idx, outc, idxs[K + 3];
            switch (how) {
            case 0: MPI_Waitall(K + 3, req, MPI_STATUSES_IGNORE); break;
            case 1:
                for (int k = 0; k < K + 3; k++)
                    MPI_Wait(&req[k], MPI_STATUS_IGNORE);
                break;
            case 2:
                for (int k = 0; k < K + 3; k++)
                    for (flag = 0; !flag;)
                        MPI_Test(&req[k], &flag, MPI_STATUS_IGNORE);
                break;
            case 3:
                while (left--)
                    MPI_Waitany(K + 3, req, &idx, MPI_STATUS_IGNORE);
                break;
            case 4:
                for (; left > 0; left -= outc)
                    MPI_Waitsome(K + 3, req, &outc, idxs, MPI_STATUSES_IGNORE);
                break;
            default:
                for (flag = 0; !flag;)
                    MPI_Testall(K + 3, req, &flag, MPI_STATUSES_IGNORE);
                break;
            }
            int nulls = 0;
            for (int k = 0; k < K + 3; k++)
                nulls += req[k] == MPI_REQUEST_NULL;
            CHECK(nulls == K + 3, "%s iallreduce %s completion %d: %d of %d requests released", label, ty->name, how,
                  nulls, K + 3);
            CHECK(recvv == ((rank + n - 1) % n) * 10 + how && shsum == n * (n + 1) / 2,
                  "%s iallreduce completion %d: MPI's requests beside them: got %d and %d", label, how, recvv, shsum);
            for (int k = 0; k < K; k++) {
                size_t bad = CNT - k;
                for (size_t i = CNT - k; i-- > 0;)
                    if (get(ty, out[k], i) != fold(ty, o, n, i))
                        bad = i;
                CHECK(bad == (size_t)(CNT - k), "%s iallreduce %s %s #%d (completion %d): element %zu", label, ty->name,
                      op_names[o], k, how, bad);
                free(in[k]);
                free(out[k]);
            }
        }
}

/* Types and ops the interposer leaves to MPI: 16-bit integers, logical and pair ops. */
static void test_passed_reductions(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    short s = (short)(rank + 1), ssum = 0;
    int rc = MPI_Allreduce(&s, &ssum, 1, MPI_SHORT, MPI_SUM, c);
    tally(ALLREDUCE, 0);
    CHECK(rc == MPI_SUCCESS && ssum == n * (n + 1) / 2, "%s allreduce MPI_SHORT: %d", label, ssum);
    int bits = 1 << rank % 30 | 1 << 30, band = 0;
    rc = MPI_Allreduce(&bits, &band, 1, MPI_INT, MPI_BAND, c);
    tally(ALLREDUCE, 0);
    CHECK(rc == MPI_SUCCESS && band == (n == 1 ? bits : 1 << 30), "%s allreduce MPI_BAND: %x", label, band);
    struct {
        double v;
        int i;
    } mine = {(double)(rank % 3), rank}, best = {0, -1};
    rc = MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, c);
    tally(ALLREDUCE, 0);
    CHECK(rc == MPI_SUCCESS && best.v == (n > 2 ? 2 : n - 1) && best.i == (n > 2 ? 2 : n - 1),
          "%s allreduce MPI_MAXLOC: %g at %d", label, best.v, best.i);
}

/* ---- the data movers ------------------------------------------------------------------------ */

static void test_allgather(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    MPI_Datatype triple, gapped;
    MPI_Type_contiguous(3, MPI_INT, &triple);
    MPI_Type_vector(2, 1, 2, MPI_INT, &gapped); /* ints 0 and 2 of 3 */
    MPI_Type_commit(&triple);
    MPI_Type_commit(&gapped);
    const int counts[] = {1, 100};
    for (int k = 0; k < 2; k++)
        for (int inplace = 0; inplace < 2; inplace++)
            for (int form = 0; form < 4; form++) { /* int, double, triples of ints (3 ints each), gapped */
                int cnt = counts[k];
                int per = form == 2 ? 3 * cnt : form == 3 ? 3 * cnt - 1 : cnt; /* ints (or doubles) per block */
                MPI_Datatype t = form == 0 ? MPI_INT : form == 1 ? MPI_DOUBLE : form == 2 ? triple : gapped;
                /* a gapped block is cnt vectors spaced by the type's extent (3 ints) */
                size_t esz = form == 1 ? 8 : 4, stride = form == 3 ? (size_t)cnt * 3 : (size_t)per;
                char *send = calloc(stride, esz), *recv = calloc(stride * (size_t)n, esz);
                char *mine = inplace ? recv + (size_t)rank * stride * esz : send;
                for (int i = 0; i < per; i++) {
                    double v = rank * 1000 + i;
                    if (form == 1)
                        memcpy(mine + (size_t)i * 8, &v, 8);
                    else {
                        int x = (int)v;
                        memcpy(mine + (size_t)i * 4, &x, 4);
                    }
                }
                int rc = MPI_Allgather(inplace ? MPI_IN_PLACE : send, cnt, t, recv, cnt, t, c);
                tally(ALLGATHER, form != 3);
                int bad = -1;
                for (int r = 0; r < n && bad < 0; r++)
                    for (int i = 0; i < per && bad < 0; i++) {
                        const char *p = recv + ((size_t)r * stride + (size_t)i) * esz;
                        double got;
                        if (form == 1)
                            memcpy(&got, p, 8);
                        else {
                            int x;
                            memcpy(&x, p, 4);
                            got = x;
                        }
                        int in_type = form != 3 || i % 3 != 1; /* a gapped type skips every middle int */
                        if (in_type && got != r * 1000 + i)
                            bad = r * 100000 + i;
                    }
                CHECK(rc == MPI_SUCCESS && bad < 0, "%s allgather form %d count %d%s: rc %d, rank*100000+element %d",
                      label, form, cnt, inplace ? " in place" : "", rc, bad);
                free(send);
                free(recv);
            }
    MPI_Type_free(&triple);
    MPI_Type_free(&gapped);
}

static void test_bcast(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    MPI_Datatype triple, gapped;
    MPI_Type_contiguous(3, MPI_DOUBLE, &triple);
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &gapped);
    MPI_Type_commit(&triple);
    MPI_Type_commit(&gapped);
    const int counts[] = {1, 1000, 20000};
    for (int root = 0; root < n; root++)
        for (int k = 0; k < 3; k++)
            for (int form = 0; form < 4; form++) { /* MPI_DOUBLE, MPI_BYTE, triples, gapped */
                int cnt = counts[k];
                MPI_Datatype t = form == 0 ? MPI_DOUBLE : form == 1 ? MPI_BYTE : form == 2 ? triple : gapped;
                size_t nd = form == 2 || form == 3 ? 3 * (size_t)cnt : (size_t)cnt; /* doubles covered */
                size_t nbytes = form == 1 ? (size_t)cnt : nd * 8;
                unsigned char *buf = malloc(nbytes);
                for (size_t i = 0; i < nbytes; i++)
                    buf[i] = (unsigned char)(rank == root ? (i * 31 + (size_t)root) % 251 : 0xee);
                int rc = MPI_Bcast(buf, cnt, t, root, c);
                tally(BCAST, form != 3);
                size_t bad = nbytes;
                for (size_t i = nbytes; i-- > 0;) {
                    int in_type = form != 3 || (i / 8) % 3 != 1;
                    unsigned want = in_type || rank == root ? (unsigned)((i * 31 + (size_t)root) % 251) : 0xee;
                    if (buf[i] != want)
                        bad = i;
                }
                CHECK(rc == MPI_SUCCESS && bad == nbytes, "%s bcast form %d count %d root %d: rc %d, byte %zu", label,
                      form, cnt, root, rc, bad);
                free(buf);
            }
    MPI_Type_free(&triple);
    MPI_Type_free(&gapped);
}

/* The last rank enters late; nobody may leave before it entered (one host: one monotonic clock). */
static void test_barrier(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    double entered = 0;
    if (rank == n - 1) {
        struct timespec d = {0, 20 * 1000 * 1000};
        nanosleep(&d, NULL);
        entered = check_now();
    }
    int rc = MPI_Barrier(c);
    tally(BARRIER, 1);
    double left = check_now();
    int rc2 = MPI_Bcast(&entered, 1, MPI_DOUBLE, n - 1, c);
    tally(BCAST, 1);
    CHECK(rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && left >= entered,
          "%s barrier: left %.6f before the last rank entered %.6f", label, left, entered);
}

static void test_all(MPI_Comm c, const char *label, int quick)
{
    test_allreduce(c, label, quick);
    test_barrier(c, label);
    if (quick)
        return;
    test_iallreduce(c, label);
    test_reduce_scatter_block(c, label);
    test_reduce(c, label);
    test_allgather(c, label);
    test_bcast(c, label);
    test_passed_reductions(c, label);
}

/* Lines of this process's mappings that are gcoll shared-memory segments: a communicator that
 * was not released keeps its segment mapped. */
static int gcoll_segments(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int count = 0;
    while (f && fgets(line, sizeof(line), f))
        count += strstr(line, "/gcoll-") != NULL;
    if (f)
        fclose(f);
    return count;
}

/* An inter-communicator between the two halves: its calls go to MPI. */
static void test_intercomm(int size)
{
    if (size < 2)
        return;
    MPI_Comm half, inter;
    int low = wrank < size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, low, wrank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 5, &inter);
    int mine = wrank + 1, got = 0, rsize;
    MPI_Comm_remote_size(inter, &rsize);
    int rc = MPI_Allreduce(&mine, &got, 1, MPI_INT, MPI_SUM, inter); /* the other group's sum */
    tally(ALLREDUCE, 0);
    int lo_sum = (size / 2) * (size / 2 + 1) / 2, all = size * (size + 1) / 2;
    CHECK(rc == MPI_SUCCESS && got == (low ? all - lo_sum : lo_sum), "intercomm allreduce: %d", got);
    rc = MPI_Barrier(inter);
    tally(BARRIER, 0);
    CHECK(rc == MPI_SUCCESS, "intercomm barrier: rc %d", rc);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

/* --threads: two threads at once, each on its own communicator (MPI_THREAD_MULTIPLE); each keeps
 * its calls' counts and each iteration's outcome, checked after the join (CHECK is one thread's). */
enum { THREAD_ITERS = 40 };
typedef struct {
    MPI_Comm comm;
    char good[THREAD_ITERS];
    long allreduces, iallreduces;
} thread_arg_t;

static void *thread_body(void *p)
{
    thread_arg_t *a = p;
    int rank, n;
    MPI_Comm_rank(a->comm, &rank);
    MPI_Comm_size(a->comm, &n);
    for (int it = 0; it < THREAD_ITERS; it++) {
        int v[64], w[64];
        for (int i = 0; i < 64; i++)
            v[i] = rank + it + i;
        int rc = MPI_Allreduce(v, w, 64, MPI_INT, MPI_SUM, a->comm);
        a->allreduces++;
        int good = rc == MPI_SUCCESS;
        for (int i = 0; i < 64; i++)
            good &= w[i] == n * (n - 1) / 2 + n * (it + i);
        double d[100];
        for (int i = 0; i < 100; i++)
            d[i] = rank * 0.5 + i;
        MPI_Request r;
        rc = MPI_Iallreduce(MPI_IN_PLACE, d, 100, MPI_DOUBLE, MPI_MAX, a->comm, &r);
        a->iallreduces++;
        good &= rc == MPI_SUCCESS && MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS;
        for (int i = 0; i < 100; i++)
            good &= d[i] == (n - 1) * 0.5 + i;
        a->good[it] = (char)good;
    }
    return NULL;
}

static void test_threads(void)
{
    thread_arg_t a[2] = {{0}, {0}};
    pthread_t t[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &a[0].comm);
    MPI_Comm_split(MPI_COMM_WORLD, 0, -wrank, &a[1].comm);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, thread_body, &a[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        for (int it = 0; it < THREAD_ITERS; it++)
            CHECK(a[i].good[it], "thread %d: allreduce/iallreduce iteration %d", i, it);
        for (long k = 0; k < a[i].allreduces; k++)
            tally(ALLREDUCE, 1);
        for (long k = 0; k < a[i].iallreduces; k++)
            tally(IALLREDUCE, 1);
        MPI_Comm_free(&a[i].comm);
    }
}

/* --threads: also two threads at once on communicators of their own. Each rank prints
 * "EXPECT <report>" in the interposer's report format (the calls GCOLL_MPI_COLLS lets it take
 * over, and the others), then after MPI_Finalize its RESULT line. */
int main(int argc, char **argv)
{
    int threads = argc > 1 && strcmp(argv[1], "--threads") == 0;
    int provided, size;
    MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_set_rank(wrank, size);
    read_colls();
    init_types();
    op_list[0] = MPI_SUM, op_list[1] = MPI_PROD, op_list[2] = MPI_MIN, op_list[3] = MPI_MAX;

    test_all(MPI_COMM_WORLD, "world", 0);
    MPI_Comm dup, split;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, size - wrank, &split); /* reversed order */
    test_all(dup, "dup", 0);
    test_all(split, "split", 0);
    test_all(MPI_COMM_SELF, "self", 1);
    test_intercomm(size);
    if (threads) {
        CHECK(provided == MPI_THREAD_MULTIPLE, "--threads: MPI provides thread level %d", provided);
        test_threads();
    }

    /* communicators made and freed in a loop: each mapping goes with its communicator */
    MPI_Barrier(MPI_COMM_WORLD);
    tally(BARRIER, 1);
    int before = gcoll_segments();
    for (int it = 0; it < 12; it++) {
        MPI_Comm a, b;
        MPI_Comm_split(it % 2 ? MPI_COMM_WORLD : dup, it % 3 ? 0 : wrank % 2, wrank, &a);
        MPI_Comm_dup(a, &b);
        test_all(a, "loop", 1);
        test_all(b, "loop dup", 1);
        MPI_Comm_free(&b);
        MPI_Comm_free(&a);
    }
    int after = gcoll_segments();
    CHECK(after == before, "split/dup/free loop: %d gcoll segments mapped before, %d after", before, after);
    MPI_Comm_free(&split);
    int during = gcoll_segments();

    char report[1024];
    int len = 0;
    for (int i = 0; i < NCALLS; i++)
        len += snprintf(report + len, sizeof(report) - (size_t)len, "%s%s=%ld/%ld", i ? " " : "", call_names[i],
                        taken[i], passed[i]);
    printf("EXPECT rank=%d %s\n", wrank, report);
    fflush(stdout);
    MPI_Finalize(); /* dup is left for MPI_Finalize to release */
    int end = gcoll_segments();
    CHECK(end == 0, "after MPI_Finalize: %d gcoll segments still mapped (%d before)", end, during);
    return check_summary_rank("interposer", 0);
}
