/* test_interposer: a plain MPI program, knowing nothing of gcoll, that tests/interposer/run.sh
 * runs with LD_PRELOAD=lib/libgcoll_mpi.so. It makes every call the interposer takes over, with
 * every type and op it maps, in place or not, on several communicators, plus calls it must hand
 * to MPI (other types and ops, gapped types, an inter-communicator), and checks each result
 * against a closed form and each reduction's also against the real MPI's (PMPI_*). The vector and
 * rooted calls run with uneven counts, zeros and displacements in any order (some negative). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "check.h"

/* The interposer's calls, in its report's order */
enum {
    ALLREDUCE,
    IALLREDUCE,
    REDUCE_SCATTER_BLOCK,
    ALLGATHER,
    BCAST,
    REDUCE,
    BARRIER,
    IREDUCE_SCATTER_BLOCK,
    IALLGATHER,
    IBCAST,
    IREDUCE,
    IBARRIER,
    ALLGATHERV,
    IALLGATHERV,
    ALLTOALL,
    IALLTOALL,
    ALLTOALLV,
    IALLTOALLV,
    REDUCE_SCATTER,
    IREDUCE_SCATTER,
    GATHER,
    IGATHER,
    GATHERV,
    IGATHERV,
    SCATTER,
    ISCATTER,
    SCATTERV,
    ISCATTERV,
    NCALLS
};
static const char *const call_names[NCALLS] = {"allreduce",
                                               "iallreduce",
                                               "reduce_scatter_block",
                                               "allgather",
                                               "bcast",
                                               "reduce",
                                               "barrier",
                                               "ireduce_scatter_block",
                                               "iallgather",
                                               "ibcast",
                                               "ireduce",
                                               "ibarrier",
                                               "allgatherv",
                                               "iallgatherv",
                                               "alltoall",
                                               "ialltoall",
                                               "alltoallv",
                                               "ialltoallv",
                                               "reduce_scatter",
                                               "ireduce_scatter",
                                               "gather",
                                               "igather",
                                               "gatherv",
                                               "igatherv",
                                               "scatter",
                                               "iscatter",
                                               "scatterv",
                                               "iscatterv"};
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
        on[i] = !s || strcmp(s, "all") == 0;
        size_t n = strlen(call_names[i]);
        for (const char *p = s; p && !on[i]; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
            on[i] = strncmp(p, call_names[i], n) == 0 && (p[n] == ',' || p[n] == '\0');
    }
}

/* ---- typed elements ------------------------------------------------------------------- */

typedef struct {
    MPI_Datatype t;
    const char *name;
    char kind; /* f float, s signed, u unsigned */
    int size;
} type_t;

static type_t types[24];
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
    add_type(MPI_SHORT, "MPI_SHORT", 's');
    add_type(MPI_INT16_T, "MPI_INT16_T", 's');
    add_type(MPI_INT, "MPI_INT", 's');
    add_type(MPI_INT32_T, "MPI_INT32_T", 's');
    add_type(MPI_LONG, "MPI_LONG", 's');
    add_type(MPI_LONG_LONG, "MPI_LONG_LONG", 's');
    add_type(MPI_INT64_T, "MPI_INT64_T", 's');
    add_type(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 'u');
    add_type(MPI_UINT8_T, "MPI_UINT8_T", 'u');
    add_type(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", 'u');
    add_type(MPI_UINT16_T, "MPI_UINT16_T", 'u');
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
    } else if (ty->kind == 's' && ty->size == 2) {
        int16_t x = (int16_t)v;
        memcpy(p, &x, 2);
    } else if (ty->kind == 's' && ty->size == 4) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, 4);
    } else if (ty->kind == 's') {
        int64_t x = (int64_t)v;
        memcpy(p, &x, 8);
    } else if (ty->size == 1) {
        uint8_t x = (uint8_t)v;
        memcpy(p, &x, 1);
    } else if (ty->size == 2) {
        uint16_t x = (uint16_t)v;
        memcpy(p, &x, 2);
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
    if (ty->kind == 's' && ty->size == 2) {
        int16_t x;
        memcpy(&x, p, 2);
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
    if (ty->size == 2) {
        uint16_t x;
        memcpy(&x, p, 2);
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
            long double ld = rank + 1, ldsum = 0;
            MPI_Irecv(&recvv, 1, MPI_INT, (rank + n - 1) % n, 77, c, &req[K]);
            MPI_Isend(&sendv, 1, MPI_INT, (rank + 1) % n, 77, c, &req[K + 1]);
            MPI_Iallreduce(&ld, &ldsum, 1, MPI_LONG_DOUBLE, MPI_SUM, c, &req[K + 2]);
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
            CHECK(recvv == ((rank + n - 1) % n) * 10 + how && ldsum == n * (n + 1) / 2,
                  "%s iallreduce completion %d: MPI's requests beside them: got %d and %Lg", label, how, recvv, ldsum);
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

/* Types and ops the interposer leaves to MPI: long double, logical and pair ops. */
static void test_passed_reductions(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    long double s = rank + 1, ssum = 0;
    int rc = MPI_Allreduce(&s, &ssum, 1, MPI_LONG_DOUBLE, MPI_SUM, c);
    tally(ALLREDUCE, 0);
    CHECK(rc == MPI_SUCCESS && ssum == n * (n + 1) / 2, "%s allreduce MPI_LONG_DOUBLE: %Lg", label, ssum);
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

/* ---- the nonblocking forms of the calls above ---------------------------------------------- */

/* Ireduce_scatter_block, Ireduce, Iallgather, Ibcast, Ibarrier in flight together, completed by
 * one MPI_Waitall. */
static void test_nonblocking(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    for (int t = 0; t < ntypes; t += 3)
        for (int inplace = 0; inplace < 2; inplace++) {
            const type_t *ty = &types[t];
            int o = (t + inplace) % 4, root = (t + 1) % n;
            enum { CNT = 29 };
            size_t all = CNT * (size_t)n;
            char *rsb_in = calloc(all, 8), *rsb_out = calloc(all, 8), *red_in = calloc(CNT, 8),
                 *red_out = calloc(CNT, 8);
            int *ag = calloc(all, sizeof(int)), bc[CNT];
            for (size_t i = 0; i < all; i++)
                put(ty, inplace ? rsb_out : rsb_in, i, val(ty, rank, i));
            for (size_t i = 0; i < CNT; i++) {
                char *red_from = red_in;
                if (inplace && rank == root)
                    red_from = red_out;
                put(ty, red_from, i, val(ty, rank, i));
                ag[(size_t)rank * CNT + i] = rank * 1000 + (int)i;
                bc[i] = rank == root ? root * 7 + (int)i : -1;
            }
            MPI_Request req[5];
            MPI_Ireduce_scatter_block(inplace ? MPI_IN_PLACE : rsb_in, rsb_out, CNT, ty->t, op_list[o], c, &req[0]);
            tally(IREDUCE_SCATTER_BLOCK, 1);
            MPI_Ireduce(inplace && rank == root ? MPI_IN_PLACE : red_in, red_out, CNT, ty->t, op_list[o], root, c,
                        &req[1]);
            tally(IREDUCE, 1);
            MPI_Iallgather(inplace ? MPI_IN_PLACE : ag + (size_t)rank * CNT, CNT, MPI_INT, ag, CNT, MPI_INT, c,
                           &req[2]);
            tally(IALLGATHER, 1);
            MPI_Ibcast(bc, CNT, MPI_INT, root, c, &req[3]);
            tally(IBCAST, 1);
            MPI_Ibarrier(c, &req[4]);
            tally(IBARRIER, 1);
            int rc = MPI_Waitall(5, req, MPI_STATUSES_IGNORE);
            int bad = -1;
            for (size_t i = 0; i < CNT && bad < 0; i++) {
                if (get(ty, rsb_out, i) != fold(ty, o, n, (size_t)rank * CNT + i))
                    bad = 0;
                else if (rank == root && get(ty, red_out, i) != fold(ty, o, n, i))
                    bad = 1;
                else if (bc[i] != root * 7 + (int)i)
                    bad = 3;
                for (int r = 0; r < n && bad < 0; r++)
                    if (ag[(size_t)r * CNT + i] != r * 1000 + (int)i)
                        bad = 2;
            }
            CHECK(rc == MPI_SUCCESS && bad < 0,
                  "%s nonblocking %s %s%s: rc %d, wrong result of call %d (0 ireduce_scatter_block, 1 ireduce, 2 "
                  "iallgather, 3 ibcast)",
                  label, ty->name, op_names[o], inplace ? " in place" : "", rc, bad);
            free(rsb_in);
            free(rsb_out);
            free(red_in);
            free(red_out);
            free(ag);
        }
}

/* ---- the vector and rooted movers ------------------------------------------------------------
 * Blocks of ints, in one of three element types: MPI_INT, a pair of ints (dense: gcoll takes it)
 * and two ints of three (gapped: MPI keeps the call). The expected receive buffer is built here:
 * sentinels everywhere, the blocks at their displacements, so a write outside them shows. */

typedef struct {
    MPI_Datatype t;
    const char *name;
    int ext, ncov, cov[2]; /* ints per element, and which of them the type covers */
    int dense;
} form_t;
static form_t forms[3];
enum { SENT = -7 };

static void init_forms(void)
{
    MPI_Datatype pair, gapped;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_vector(2, 1, 2, MPI_INT, &gapped);
    MPI_Type_commit(&pair);
    MPI_Type_commit(&gapped);
    forms[0] = (form_t){MPI_INT, "MPI_INT", 1, 1, {0, 0}, 1};
    forms[1] = (form_t){pair, "pair", 2, 2, {0, 1}, 1};
    forms[2] = (form_t){gapped, "gapped", 3, 2, {0, 2}, 0};
}

static void free_forms(void)
{
    MPI_Type_free(&forms[1].t);
    MPI_Type_free(&forms[2].t);
}

/* The value of int i of what rank from sends to rank to. */
static int V(int from, int to, int i)
{
    return from * 1000000 + to * 10000 + i;
}

/* Writes the block from -> to of count elements at element displacement displ. */
static void put_block(int *buf, int displ, int count, const form_t *f, int from, int to)
{
    for (int e = 0; e < count; e++)
        for (int j = 0; j < f->ncov; j++)
            buf[(displ + e) * f->ext + f->cov[j]] = V(from, to, e * f->ncov + j);
}

static int *sentinels(int elems, const form_t *f)
{
    size_t ints = (size_t)(elems > 0 ? elems : 1) * (size_t)f->ext;
    int *b = malloc(ints * sizeof(int));
    for (size_t i = 0; i < ints; i++)
        b[i] = SENT;
    return b;
}

/* The index of the first int where got and want differ, -1 where none does. */
static long first_diff(const int *got, const int *want, int elems, const form_t *f)
{
    for (long i = 0; i < (long)elems * f->ext; i++)
        if (got[i] != want[i])
            return i;
    return -1;
}

/* Uneven counts with zeros: pattern 0 mixed small, 1 a single non-zero peer, 2 all zero, 3 up to
 * a few hundred. pattern_count(r, p) is what r sends to p; sym makes it symmetric (in-place alltoallv). */
static int pattern_count(int pattern, int r, int p, int n, int sym)
{
    if (sym && r > p) {
        int t = r;
        r = p, p = t;
    }
    switch (pattern) {
    case 0: return (r * 3 + p * 5 + 1) % 7 == 3 ? 0 : (r * 3 + p * 5 + 1) % 7;
    case 1: return p == (r + 1) % n ? 50 : 0;
    case 2: return 0;
    default: return (r + 1) * (p + 2) * 37 % 300;
    }
}
enum { NPATTERNS = 4 };

/* Displacements of n blocks: in reverse rank order with a gap of 2 elements after each, shifted
 * by -shift (negative displacements, from a buffer pointer inside the buffer). Returns the
 * elements the buffer needs. */
static int layout(const int *counts, int n, int shift, int *displs)
{
    int at = 0;
    for (int p = n - 1; p >= 0; p--) {
        displs[p] = at - shift;
        at += counts[p] + 2;
    }
    return at;
}

/* How a v-call is made: blocking, or nonblocking completed by MPI_Wait; displacements from the
 * buffer's start or partly negative. */
typedef struct {
    int nb, neg;
} how_t;
static const how_t hows[] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};

static int finish(int rc, MPI_Request *req, int nb)
{
    return nb && rc == MPI_SUCCESS ? MPI_Wait(req, MPI_STATUS_IGNORE) : rc;
}

static void test_allgatherv(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    int *counts = malloc((size_t)n * sizeof(int)), *displs = malloc((size_t)n * sizeof(int));
    for (int fi = 0; fi < 3; fi++)
        for (int pat = 0; pat < NPATTERNS; pat++)
            for (size_t h = 0; h < sizeof(hows) / sizeof(hows[0]); h++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    const form_t *f = &forms[fi];
                    how_t w = hows[h];
                    for (int r = 0; r < n; r++)
                        counts[r] = pattern_count(pat, r, 0, n, 0);
                    int elems = layout(counts, n, 0, displs), shift = w.neg ? elems / 2 : 0;
                    layout(counts, n, shift, displs);
                    int *recv = sentinels(elems, f), *want = sentinels(elems, f), *send = sentinels(counts[rank], f);
                    put_block(send, 0, counts[rank], f, rank, 99);
                    for (int r = 0; r < n; r++)
                        put_block(want, displs[r] + shift, counts[r], f, r, 99);
                    int *rbuf = recv + (size_t)shift * (size_t)f->ext;
                    if (inplace)
                        put_block(rbuf, displs[rank], counts[rank], f, rank, 99);
                    MPI_Request req;
                    int rc = w.nb ? MPI_Iallgatherv(inplace ? MPI_IN_PLACE : send, counts[rank], f->t, rbuf, counts,
                                                    displs, f->t, c, &req)
                                  : MPI_Allgatherv(inplace ? MPI_IN_PLACE : send, counts[rank], f->t, rbuf, counts,
                                                   displs, f->t, c);
                    rc = finish(rc, &req, w.nb);
                    tally(w.nb ? IALLGATHERV : ALLGATHERV, f->dense);
                    long bad = first_diff(recv, want, elems, f);
                    CHECK(rc == MPI_SUCCESS && bad < 0, "%s %sallgatherv %s counts %d%s%s: rc %d, int %ld", label,
                          w.nb ? "i" : "", f->name, pat, inplace ? " in place" : "", w.neg ? " negative displs" : "",
                          rc, bad);
                    free(recv);
                    free(want);
                    free(send);
                }
    free(counts);
    free(displs);
}

static void test_alltoallv(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    size_t nn = (size_t)n * sizeof(int);
    int *sc = malloc(nn), *sd = malloc(nn), *rc_ = malloc(nn), *rd = malloc(nn);
    for (int fi = 0; fi < 3; fi++)
        for (int pat = 0; pat < NPATTERNS; pat++)
            for (size_t h = 0; h < sizeof(hows) / sizeof(hows[0]); h++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    const form_t *f = &forms[fi];
                    how_t w = hows[h];
                    for (int p = 0; p < n; p++) {
                        sc[p] = pattern_count(pat, rank, p, n, inplace);
                        rc_[p] = pattern_count(pat, p, rank, n, inplace);
                    }
                    int selems = layout(sc, n, 0, sd), relems = layout(rc_, n, 0, rd);
                    int sshift = w.neg ? selems / 3 : 0, rshift = w.neg ? relems / 2 : 0;
                    /* the send side's blocks in rank order (the receive side's reversed) */
                    for (int p = 0, at = 0; p < n; p++) {
                        sd[p] = at - sshift;
                        at += sc[p] + 1;
                    }
                    layout(rc_, n, rshift, rd);
                    int *send = sentinels(selems, f), *recv = sentinels(relems, f), *want = sentinels(relems, f);
                    int *sbuf = send + (size_t)sshift * (size_t)f->ext, *rbuf = recv + (size_t)rshift * (size_t)f->ext;
                    for (int p = 0; p < n; p++) {
                        put_block(inplace ? rbuf : sbuf, inplace ? rd[p] : sd[p], sc[p], f, rank, p);
                        put_block(want, rd[p] + rshift, rc_[p], f, p, rank);
                    }
                    MPI_Request req;
                    int rc = w.nb
                        ? MPI_Ialltoallv(inplace ? MPI_IN_PLACE : sbuf, sc, sd, f->t, rbuf, rc_, rd, f->t, c, &req)
                        : MPI_Alltoallv(inplace ? MPI_IN_PLACE : sbuf, sc, sd, f->t, rbuf, rc_, rd, f->t, c);
                    rc = finish(rc, &req, w.nb);
                    tally(w.nb ? IALLTOALLV : ALLTOALLV, f->dense);
                    long bad = first_diff(recv, want, relems, f);
                    CHECK(rc == MPI_SUCCESS && bad < 0, "%s %salltoallv %s counts %d%s%s: rc %d, int %ld", label,
                          w.nb ? "i" : "", f->name, pat, inplace ? " in place" : "", w.neg ? " negative displs" : "",
                          rc, bad);
                    free(send);
                    free(recv);
                    free(want);
                }
    free(sc);
    free(sd);
    free(rc_);
    free(rd);
}

/* Alltoall, blocking and not: count 0, 1 and 100 per peer, in place or not. */
static void test_alltoall(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    const int counts[] = {0, 1, 100};
    for (int fi = 0; fi < 3; fi++)
        for (int k = 0; k < 3; k++)
            for (int nb = 0; nb < 2; nb++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    const form_t *f = &forms[fi];
                    int cn = counts[k], elems = cn * n;
                    int *send = sentinels(elems, f), *recv = sentinels(elems, f), *want = sentinels(elems, f);
                    for (int p = 0; p < n; p++) {
                        put_block(inplace ? recv : send, p * cn, cn, f, rank, p);
                        put_block(want, p * cn, cn, f, p, rank);
                    }
                    MPI_Request req;
                    const void *in = inplace ? MPI_IN_PLACE : send;
                    int rc = nb ? MPI_Ialltoall(in, cn, f->t, recv, cn, f->t, c, &req)
                                : MPI_Alltoall(in, cn, f->t, recv, cn, f->t, c);
                    rc = finish(rc, &req, nb);
                    tally(nb ? IALLTOALL : ALLTOALL, f->dense);
                    long bad = first_diff(recv, want, elems, f);
                    CHECK(rc == MPI_SUCCESS && bad < 0, "%s %salltoall %s count %d%s: rc %d, int %ld", label,
                          nb ? "i" : "", f->name, cn, inplace ? " in place" : "", rc, bad);
                    free(send);
                    free(recv);
                    free(want);
                }
}

/* Gather and scatter, blocking and not, every root: count 0, 1 and 37 per rank; in place at the
 * root. */
static void test_gather_scatter(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    const int counts[] = {0, 1, 37};
    for (int fi = 0; fi < 3; fi++)
        for (int root = 0; root < n; root++)
            for (int k = 0; k < 3; k++)
                for (int nb = 0; nb < 2; nb++)
                    for (int inplace = 0; inplace < 2; inplace++) {
                        const form_t *f = &forms[fi];
                        int cn = counts[k], elems = cn * n, me = rank == root, ip = inplace && me;
                        MPI_Request req;
                        /* gather: rank r's block r */
                        int *send = sentinels(cn, f), *all = sentinels(elems, f), *want = sentinels(elems, f);
                        put_block(ip ? all : send, ip ? rank * cn : 0, cn, f, rank, root);
                        for (int r = 0; r < n; r++)
                            put_block(want, r * cn, cn, f, r, root);
                        const void *in = ip ? MPI_IN_PLACE : send;
                        int rc = nb ? MPI_Igather(in, cn, f->t, me ? all : NULL, cn, f->t, root, c, &req)
                                    : MPI_Gather(in, cn, f->t, me ? all : NULL, cn, f->t, root, c);
                        rc = finish(rc, &req, nb);
                        tally(nb ? IGATHER : GATHER, f->dense);
                        long bad = me ? first_diff(all, want, elems, f) : -1;
                        CHECK(rc == MPI_SUCCESS && bad < 0, "%s %sgather %s root %d count %d%s: rc %d, int %ld", label,
                              nb ? "i" : "", f->name, root, cn, ip ? " in place" : "", rc, bad);
                        free(send);
                        free(all);
                        free(want);
                        /* scatter: the root's block r to rank r */
                        int *from = sentinels(elems, f), *mine = sentinels(cn, f), *mine_want = sentinels(cn, f);
                        for (int r = 0; me && r < n; r++)
                            put_block(from, r * cn, cn, f, root, r);
                        put_block(mine_want, 0, cn, f, root, rank);
                        void *out = ip ? MPI_IN_PLACE : mine;
                        rc = nb ? MPI_Iscatter(me ? from : NULL, cn, f->t, out, cn, f->t, root, c, &req)
                                : MPI_Scatter(me ? from : NULL, cn, f->t, out, cn, f->t, root, c);
                        rc = finish(rc, &req, nb);
                        tally(nb ? ISCATTER : SCATTER, f->dense);
                        bad = ip ? -1 : first_diff(mine, mine_want, cn, f);
                        CHECK(rc == MPI_SUCCESS && bad < 0, "%s %sscatter %s root %d count %d%s: rc %d, int %ld", label,
                              nb ? "i" : "", f->name, root, cn, ip ? " in place" : "", rc, bad);
                        free(from);
                        free(mine);
                        free(mine_want);
                    }
}

/* Gatherv and scatterv, blocking and not, every root, uneven counts, displacements reversed and
 * partly negative; in place at the root. Only the root passes counts and displacements. */
static void test_gatherv_scatterv(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    int *counts = malloc((size_t)n * sizeof(int)), *displs = malloc((size_t)n * sizeof(int));
    for (int fi = 0; fi < 3; fi++)
        for (int root = 0; root < n; root++)
            for (int pat = 0; pat < NPATTERNS; pat++)
                for (size_t h = 0; h < sizeof(hows) / sizeof(hows[0]); h++)
                    for (int inplace = 0; inplace < 2; inplace++) {
                        const form_t *f = &forms[fi];
                        how_t w = hows[h];
                        int me = rank == root, ip = inplace && me;
                        MPI_Request req;
                        /* gatherv: rank r sends pattern_count(r, root) */
                        for (int r = 0; r < n; r++)
                            counts[r] = pattern_count(pat, r, root, n, 0);
                        int elems = layout(counts, n, 0, displs), shift = w.neg ? elems / 2 : 0;
                        layout(counts, n, shift, displs);
                        int *send = sentinels(counts[rank], f), *all = sentinels(elems, f), *want = sentinels(elems, f);
                        int *abuf = all + (size_t)shift * (size_t)f->ext;
                        put_block(ip ? abuf : send, ip ? displs[rank] : 0, counts[rank], f, rank, root);
                        for (int r = 0; r < n; r++)
                            put_block(want, displs[r] + shift, counts[r], f, r, root);
                        const void *in = ip ? MPI_IN_PLACE : send;
                        int rc = w.nb ? MPI_Igatherv(in, counts[rank], f->t, me ? abuf : NULL, me ? counts : NULL,
                                                     me ? displs : NULL, f->t, root, c, &req)
                                      : MPI_Gatherv(in, counts[rank], f->t, me ? abuf : NULL, me ? counts : NULL,
                                                    me ? displs : NULL, f->t, root, c);
                        rc = finish(rc, &req, w.nb);
                        tally(w.nb ? IGATHERV : GATHERV, f->dense);
                        long bad = me ? first_diff(all, want, elems, f) : -1;
                        CHECK(rc == MPI_SUCCESS && bad < 0, "%s %sgatherv %s root %d counts %d%s%s: rc %d, int %ld",
                              label, w.nb ? "i" : "", f->name, root, pat, ip ? " in place" : "",
                              w.neg ? " negative displs" : "", rc, bad);
                        free(send);
                        free(all);
                        free(want);
                        /* scatterv: the root sends pattern_count(root, r) to rank r */
                        for (int r = 0; r < n; r++)
                            counts[r] = pattern_count(pat, root, r, n, 0);
                        elems = layout(counts, n, 0, displs), shift = w.neg ? elems / 2 : 0;
                        layout(counts, n, shift, displs);
                        int *from = sentinels(elems, f), *mine = sentinels(counts[rank], f),
                            *mine_want = sentinels(counts[rank], f);
                        int *fbuf = from + (size_t)shift * (size_t)f->ext;
                        for (int r = 0; me && r < n; r++)
                            put_block(fbuf, displs[r], counts[r], f, root, r);
                        put_block(mine_want, 0, counts[rank], f, root, rank);
                        void *out = ip ? MPI_IN_PLACE : mine;
                        rc = w.nb ? MPI_Iscatterv(me ? fbuf : NULL, me ? counts : NULL, me ? displs : NULL, f->t, out,
                                                  counts[rank], f->t, root, c, &req)
                                  : MPI_Scatterv(me ? fbuf : NULL, me ? counts : NULL, me ? displs : NULL, f->t, out,
                                                 counts[rank], f->t, root, c);
                        rc = finish(rc, &req, w.nb);
                        tally(w.nb ? ISCATTERV : SCATTERV, f->dense);
                        bad = ip ? -1 : first_diff(mine, mine_want, counts[rank], f);
                        CHECK(rc == MPI_SUCCESS && bad < 0, "%s %sscatterv %s root %d counts %d%s%s: rc %d, int %ld",
                              label, w.nb ? "i" : "", f->name, root, pat, ip ? " in place" : "",
                              w.neg ? " negative displs" : "", rc, bad);
                        free(from);
                        free(mine);
                        free(mine_want);
                    }
    free(counts);
    free(displs);
}

/* Reduce_scatter, blocking and not, every type and op, uneven counts with zeros, in place (the
 * whole input in recvbuf); a type and an op it leaves to MPI. */
static void test_reduce_scatter(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    int *counts = malloc((size_t)n * sizeof(int));
    for (int t = 0; t < ntypes; t++)
        for (int o = 0; o < 4; o++)
            for (int pat = 0; pat < NPATTERNS; pat++)
                for (int nb = 0; nb < 2; nb++)
                    for (int inplace = 0; inplace < 2; inplace++) {
                        const type_t *ty = &types[t];
                        size_t all = 0, before = 0;
                        for (int p = 0; p < n; p++) {
                            counts[p] = pattern_count(pat, 0, p, n, 0);
                            before += p < rank ? (size_t)counts[p] : 0;
                            all += (size_t)counts[p];
                        }
                        char *in = calloc(all + 1, 8), *out = calloc(all + 1, 8);
                        for (size_t i = 0; i < all; i++)
                            put(ty, inplace ? out : in, i, val(ty, rank, i));
                        MPI_Request req;
                        const void *src = inplace ? MPI_IN_PLACE : in;
                        int rc = nb ? MPI_Ireduce_scatter(src, out, counts, ty->t, op_list[o], c, &req)
                                    : MPI_Reduce_scatter(src, out, counts, ty->t, op_list[o], c);
                        rc = finish(rc, &req, nb);
                        tally(nb ? IREDUCE_SCATTER : REDUCE_SCATTER, 1);
                        size_t mine = (size_t)counts[rank], bad = mine;
                        for (size_t i = mine; i-- > 0;)
                            if (get(ty, out, i) != fold(ty, o, n, before + i))
                                bad = i;
                        CHECK(rc == MPI_SUCCESS && bad == mine,
                              "%s %sreduce_scatter %s %s counts %d%s: rc %d, element %zu", label, nb ? "i" : "",
                              ty->name, op_names[o], pat, inplace ? " in place" : "", rc, bad);
                        free(in);
                        free(out);
                    }
    /* MPI's: long double, and MPI_BOR */
    long double *ld = malloc((size_t)n * sizeof(long double)), ldr = 0;
    int *bits = malloc((size_t)n * sizeof(int)), bor = 0;
    for (int p = 0; p < n; p++) {
        counts[p] = 1;
        ld[p] = rank + p;
        bits[p] = 1 << (rank % 30);
    }
    int rc = MPI_Reduce_scatter(ld, &ldr, counts, MPI_LONG_DOUBLE, MPI_SUM, c);
    tally(REDUCE_SCATTER, 0);
    int rc2 = MPI_Reduce_scatter(bits, &bor, counts, MPI_INT, MPI_BOR, c);
    tally(REDUCE_SCATTER, 0);
    int want_bor = 0;
    for (int r = 0; r < n; r++)
        want_bor |= 1 << (r % 30);
    CHECK(rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && ldr == n * (n - 1) / 2 + (long double)n * rank && bor == want_bor,
          "%s reduce_scatter handed to MPI: %Lg, %x", label, ldr, bor);
    free(ld);
    free(bits);
    free(counts);
}

/* An Ialltoallv and an Iallgatherv in flight together beside MPI's own requests, completed by
 * MPI_Waitall: each keeps its own scratch. */
static void test_v_in_flight(MPI_Comm c, const char *label)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    size_t nn = (size_t)n * sizeof(int);
    int *sc = malloc(nn), *sd = malloc(nn), *rc_ = malloc(nn), *rd = malloc(nn), *gc = malloc(nn), *gd = malloc(nn);
    for (int p = 0; p < n; p++) {
        sc[p] = pattern_count(3, rank, p, n, 0);
        rc_[p] = pattern_count(3, p, rank, n, 0);
        gc[p] = pattern_count(0, p, 1, n, 0);
    }
    const form_t *f = &forms[0];
    int se = layout(sc, n, 0, sd), re = layout(rc_, n, 0, rd), ge = layout(gc, n, 0, gd);
    int *send = sentinels(se, f), *recv = sentinels(re, f), *want = sentinels(re, f);
    int *gsend = sentinels(gc[rank], f), *grecv = sentinels(ge, f), *gwant = sentinels(ge, f);
    for (int p = 0; p < n; p++) {
        put_block(send, sd[p], sc[p], f, rank, p);
        put_block(want, rd[p], rc_[p], f, p, rank);
        put_block(gwant, gd[p], gc[p], f, p, 99);
    }
    put_block(gsend, 0, gc[rank], f, rank, 99);
    int ring = -1, mine = rank;
    MPI_Request req[4];
    MPI_Ialltoallv(send, sc, sd, MPI_INT, recv, rc_, rd, MPI_INT, c, &req[0]);
    tally(IALLTOALLV, 1);
    MPI_Irecv(&ring, 1, MPI_INT, (rank + n - 1) % n, 78, c, &req[1]);
    MPI_Iallgatherv(gsend, gc[rank], MPI_INT, grecv, gc, gd, MPI_INT, c, &req[2]);
    tally(IALLGATHERV, 1);
    MPI_Isend(&mine, 1, MPI_INT, (rank + 1) % n, 78, c, &req[3]);
    /* the program may change its count arrays once the calls have returned */
    for (int p = 0; p < n; p++)
        sc[p] = rc_[p] = gc[p] = sd[p] = rd[p] = gd[p] = -1;
    int rc = MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    long bad = first_diff(recv, want, re, f), gbad = first_diff(grecv, gwant, ge, f);
    CHECK(rc == MPI_SUCCESS && bad < 0 && gbad < 0 && ring == (rank + n - 1) % n,
          "%s ialltoallv and iallgatherv in flight: rc %d, int %ld and %ld, ring %d", label, rc, bad, gbad, ring);
    free(send);
    free(recv);
    free(want);
    free(gsend);
    free(grecv);
    free(gwant);
    free(sc);
    free(sd);
    free(rc_);
    free(rd);
    free(gc);
    free(gd);
}

/* MPI_Request_free on a running iallreduce is erroneous: refused, as Open MPI refuses its own,
 * with the request left to wait for (the interposer's generalized request must not release the
 * operation under gcoll). */
static void test_request_free(MPI_Comm c, const char *label)
{
    if (!on[IALLREDUCE]) /* MPI's own answer to the erroneous call differs between communicators */
        return;
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    enum { CNT = 1 << 20 };
    int *in = malloc(CNT * sizeof(int)), *out = calloc(CNT, sizeof(int));
    for (int i = 0; i < CNT; i++)
        in[i] = rank + i % 1000;
    /* the request's communicator hears of it */
    MPI_Errhandler was;
    MPI_Comm_get_errhandler(c, &was);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Request r;
    MPI_Iallreduce(in, out, CNT, MPI_INT, MPI_SUM, c, &r);
    tally(IALLREDUCE, 1);
    int freed = MPI_Request_free(&r), cls = MPI_SUCCESS;
    MPI_Error_class(freed, &cls);
    int kept = r != MPI_REQUEST_NULL, rc = kept ? MPI_Wait(&r, MPI_STATUS_IGNORE) : MPI_ERR_REQUEST;
    MPI_Comm_set_errhandler(c, was);
    MPI_Errhandler_free(&was);
    long bad = -1;
    for (int i = CNT; i-- > 0;)
        if (out[i] != n * (n - 1) / 2 + n * (i % 1000))
            bad = i;
    CHECK(cls == MPI_ERR_REQUEST && kept && rc == MPI_SUCCESS && bad < 0,
          "%s MPI_Request_free on a running iallreduce: error class %d (want MPI_ERR_REQUEST %d), request %s, "
          "wait %d, first wrong element %ld",
          label, cls, MPI_ERR_REQUEST, kept ? "kept" : "released", rc, bad);
    free(in);
    free(out);
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
    test_nonblocking(c, label);
    test_alltoall(c, label);
    test_allgatherv(c, label);
    test_alltoallv(c, label);
    test_gather_scatter(c, label);
    test_gatherv_scatterv(c, label);
    test_reduce_scatter(c, label);
    test_v_in_flight(c, label);
    test_request_free(c, label);
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
    init_forms();
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

    char report[2048];
    int len = 0;
    for (int i = 0; i < NCALLS; i++)
        len += snprintf(report + len, sizeof(report) - (size_t)len, "%s%s=%ld/%ld", i ? " " : "", call_names[i],
                        taken[i], passed[i]);
    printf("EXPECT rank=%d %s\n", wrank, report);
    fflush(stdout);
    free_forms();
    MPI_Finalize(); /* dup is left for MPI_Finalize to release */
    int end = gcoll_segments();
    CHECK(end == 0, "after MPI_Finalize: %d gcoll segments still mapped (%d before)", end, during);
    return check_summary_rank("interposer", 0);
}
