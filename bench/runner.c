/* See runner.h. Inputs are prepared once per size (a pristine copy, and the expected output),
 * so validating every iteration costs a copy and a compare outside the timed region. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "adasum_ref.h"
#include "devbuf.h"
#include "reference.h"
#include "runner.h"

#define NBLOCKS 4                       /* the sides alternate in at least this many blocks per size */
#define MAX_SIDES (BENCH_MAX_ALGOS + 1) /* gcoll's algorithms, then the baseline */

typedef struct {
    const bench_opts_t *o;
    bench_coll_t coll;
    gcoll_comm_t comm;
    baseline_t *bl;
    int rank, n;
    int ip; /* in place on this rank (gather and scatter and their v forms: at the root only) */
    size_t count, es, in_bytes, out_bytes;
    size_t *cnt, *dsp; /* v collectives: every rank's count and packed displacement (alltoallv: what this rank sends) */
    size_t *rcnt, *rdsp; /* alltoallv: what this rank receives from each (the others: cnt and dsp again) */
    int *mpi;            /* the four arrays in MPI's ints, for v */
    baseline_v_t v;
    char *sbuf, *rbuf;  /* what the collectives use */
    char *pristine;     /* the input, to restore before a checked iteration */
    char *expect;       /* the output this rank must see */
    char *expect_dense; /* top-k: what the dense MPI side must see (expect is the sparse sum) */
    char *readback;     /* -d cuda: the output copied to the host for the check */
    char *in_at;        /* where the input lives: sbuf, or rbuf (+ offset) in place */
    char *check_at;     /* where the output is read */
    size_t check_bytes; /* 0: nothing to check on this rank */
    adasum_ref_t ada;   /* adasum: the reference of the gcoll side (the sum side checks expect) */
    int have_ada;
    int ng;                   /* gcoll's sides: side s < ng runs algorithm s of --algo; side ng the baseline */
    double *calls[MAX_SIDES]; /* each timed call's seconds per side, in call order (alike on every rank) */
    int ncalls[MAX_SIDES];
} ctx_t;

/* Rank q's input at element i, for the Adasum reference (ctx: the dtype). */
static double ada_value(int q, size_t i, void *ctx)
{
    return ref_value(q, i, *(const gcoll_dtype_t *)ctx, GCOLL_SUM);
}

static int rooted(bench_coll_t c)
{
    return c == B_GATHER || c == B_SCATTER || c == B_GATHERV || c == B_SCATTERV;
}

/* The v collectives' counts: the size's total, count * n elements, split as --skew says. Every
 * rank computes every rank's (alltoallv: the whole matrix, a row per sender), and MPI's side
 * gets the same. 0, -1 out of memory, -2 beyond MPI's int counts. */
static int plan_counts(ctx_t *x)
{
    size_t n = (size_t)x->n, total = x->count * n, so = 0, ro = 0;
    size_t *row = malloc(n * sizeof(size_t));
    x->cnt = calloc(4 * n, sizeof(size_t));
    x->mpi = calloc(4 * n, sizeof(int));
    if (!row || !x->cnt || !x->mpi) {
        free(row);
        return -1;
    }
    x->dsp = x->cnt + n;
    x->rcnt = x->cnt + 2 * n;
    x->rdsp = x->cnt + 3 * n;
    if (x->coll == B_ALLTOALLV) {
        for (size_t q = 0; q < n; q++) { /* stream q + 1: half sends half to the next rank */
            if (bench_skew_split(&x->o->skew, total, x->n, (unsigned)q + 1, row) != 0) {
                free(row);
                return -1;
            }
            if (q == (size_t)x->rank)
                memcpy(x->cnt, row, n * sizeof(size_t));
            x->rcnt[q] = row[x->rank];
        }
    } else {
        if (bench_skew_split(&x->o->skew, total, x->n, 0, x->cnt) != 0) {
            free(row);
            return -1;
        }
        memcpy(x->rcnt, x->cnt, n * sizeof(size_t));
    }
    free(row);
    for (size_t i = 0; i < n; i++) {
        x->dsp[i] = so;
        x->rdsp[i] = ro;
        so += x->cnt[i];
        ro += x->rcnt[i];
    }
    if (so > INT_MAX || ro > INT_MAX)
        return -2;
    for (size_t i = 0; i < 4 * n; i++)
        x->mpi[i] = (int)x->cnt[i];
    x->v = (baseline_v_t){.scount = x->mpi[x->rank],
                          .rcount = x->mpi[x->rank],
                          .scounts = x->mpi,
                          .sdispls = x->mpi + n,
                          .rcounts = x->mpi + 2 * n,
                          .rdispls = x->mpi + 3 * n};
    return 0;
}

/* Sizes of input and output, where they live, and the reference output. */
static int prepare(ctx_t *x)
{
    const bench_opts_t *o = x->o;
    size_t blk = x->count * x->es, all = blk * (size_t)x->n, es = x->es;
    int ip = x->ip, r = x->rank, root = r == o->root;
    uint32_t salt = (uint32_t)(x->count * 31 + o->dtype);
    if (bench_skewed(x->coll) && plan_counts(x) != 0)
        return -1;
    size_t mine = x->cnt ? x->cnt[r] * es : 0, recv_all = 0;
    for (int q = 0; x->cnt && q < x->n; q++)
        recv_all += x->rcnt[q] * es;
    switch (x->coll) {
    case B_REDUCE_SCATTER:
        x->in_bytes = all;
        x->out_bytes = blk;
        break;
    case B_ALLGATHER:
        x->in_bytes = blk;
        x->out_bytes = all;
        break;
    case B_ALLTOALL:
        x->in_bytes = all;
        x->out_bytes = all;
        break;
    case B_BARRIER: x->in_bytes = x->out_bytes = 0; break;
    case B_ALLGATHERV:
        x->in_bytes = mine;
        x->out_bytes = all;
        break;
    case B_REDUCE_SCATTERV:
        x->in_bytes = all;
        x->out_bytes = mine;
        break;
    case B_ALLTOALLV:
        x->in_bytes = all;
        x->out_bytes = recv_all;
        break;
    case B_GATHER:
        x->in_bytes = blk;
        x->out_bytes = root ? all : 0;
        break;
    case B_SCATTER:
        x->in_bytes = root ? all : 0;
        x->out_bytes = blk;
        break;
    case B_GATHERV:
        x->in_bytes = mine;
        x->out_bytes = root ? all : 0;
        break;
    case B_SCATTERV:
        x->in_bytes = root ? all : 0;
        x->out_bytes = mine;
        break;
    case B_GROUP: x->in_bytes = x->out_bytes = blk * (size_t)o->batch; break;
    default: x->in_bytes = x->out_bytes = blk; break;
    }
    size_t cap = (x->in_bytes > x->out_bytes ? x->in_bytes : x->out_bytes) + 1;
    x->sbuf = devbuf_alloc(o->device, cap);
    x->rbuf = devbuf_alloc(o->device, cap);
    x->pristine = malloc(x->in_bytes + 1);
    x->expect = calloc(1, cap);
    x->readback = o->device ? malloc(cap) : NULL;
    if (!x->sbuf || !x->rbuf || !x->pristine || !x->expect || (o->device && !x->readback))
        return -1;
    devbuf_put(o->device, x->rbuf, x->expect, cap); /* zeros */
    x->in_at = !ip                                        ? x->sbuf
        : x->coll == B_ALLGATHER || x->coll == B_GATHER   ? x->rbuf + (size_t)r * blk
        : x->coll == B_ALLGATHERV || x->coll == B_GATHERV ? x->rbuf + x->dsp[r] * es
                                                          : x->rbuf;
    if (x->coll == B_BCAST)
        x->in_at = x->rbuf;
    x->check_at = x->rbuf;
    if (ip && x->coll == B_SCATTER) /* the root's block stays where it is in sendbuf */
        x->check_at = x->rbuf + (size_t)r * blk;
    if (ip && x->coll == B_SCATTERV)
        x->check_at = x->rbuf + x->dsp[r] * es;
    x->check_bytes = x->out_bytes;

    switch (x->coll) {
    case B_ADASUM: /* both sides reduce the sum's inputs */
        ref_fill_values(x->pristine, x->count, r, o->dtype, GCOLL_SUM);
        ref_fill_expected(x->expect, 0, x->count, o->dtype, GCOLL_SUM, x->n);
        {
            double *eye = calloc((size_t)x->n * (size_t)x->n, sizeof(double));
            if (!eye)
                return -1;
            for (int q = 0; q < x->n; q++)
                eye[(size_t)q * (size_t)x->n + (size_t)q] = 1;
            int rc = adasum_ref_init(&x->ada, x->n, x->n, eye, x->count, NULL, 0, ada_value, (void *)&o->dtype);
            free(eye);
            if (rc != 0)
                return -1;
            x->have_ada = 1;
        }
        break;
    case B_ALLREDUCE:
    case B_REDUCE:
        ref_fill_values(x->pristine, x->count, r, o->dtype, o->op);
        ref_fill_expected(x->expect, 0, x->count, o->dtype, o->op, x->n);
        if (o->compress == GCOLL_COMPRESS_TOPK) { /* fp16/bf16 carry the reference's values exactly */
            if (!(x->expect_dense = malloc(cap)))
                return -1;
            memcpy(x->expect_dense, x->expect, x->out_bytes);
            // cppcheck-suppress invalidPointerCast ; the bytes are float32 values (topk is float32 only)
            ref_topk_expected((float *)x->expect, x->count, o->density, o->op, x->n);
        }
        if (x->coll == B_REDUCE && r != o->root)
            x->check_bytes = 0;
        break;
    case B_REDUCE_SCATTER:
        ref_fill_values(x->pristine, x->count * (size_t)x->n, r, o->dtype, o->op);
        ref_fill_expected(x->expect, (size_t)r * x->count, x->count, o->dtype, o->op, x->n);
        break;
    case B_ALLGATHER:
        ref_fill_bytes(x->pristine, blk, r, salt);
        for (int q = 0; q < x->n; q++)
            ref_fill_bytes(x->expect + (size_t)q * blk, blk, q, salt);
        break;
    case B_BCAST:
        ref_fill_bytes(x->pristine, blk, o->root, salt);
        memcpy(x->expect, x->pristine, blk);
        if (r != o->root) /* what a non-root starts from: anything but the answer */
            memset(x->pristine, 0x5a, blk);
        break;
    case B_ALLTOALL:
        for (int q = 0; q < x->n; q++) {
            ref_fill_bytes(x->pristine + (size_t)q * blk, blk, r * 64 + q, salt);
            ref_fill_bytes(x->expect + (size_t)q * blk, blk, q * 64 + r, salt);
        }
        break;
    case B_GROUP: /* the batch's allreduces are slices of one vector */
        ref_fill_values(x->pristine, x->count * (size_t)o->batch, r, o->dtype, o->op);
        ref_fill_expected(x->expect, 0, x->count * (size_t)o->batch, o->dtype, o->op, x->n);
        break;
    case B_REDUCE_SCATTERV:
        ref_fill_values(x->pristine, x->count * (size_t)x->n, r, o->dtype, o->op);
        ref_fill_expected(x->expect, x->dsp[r], x->cnt[r], o->dtype, o->op, x->n);
        break;
    case B_ALLTOALLV:
        for (int q = 0; q < x->n; q++) {
            ref_fill_bytes(x->pristine + x->dsp[q] * es, x->cnt[q] * es, r * 64 + q, salt);
            ref_fill_bytes(x->expect + x->rdsp[q] * es, x->rcnt[q] * es, q * 64 + r, salt);
        }
        break;
    case B_SENDRECV:
        ref_fill_bytes(x->pristine, blk, r, salt);
        ref_fill_bytes(x->expect, blk, (r + x->n - 1) % x->n, salt);
        break;
    case B_ALLGATHERV:
    case B_GATHER:
    case B_GATHERV: /* block q from rank q, at the root (allgatherv: everywhere) */
        ref_fill_bytes(x->pristine, x->in_bytes, r, salt);
        for (int q = 0; q < x->n && x->out_bytes; q++)
            ref_fill_bytes(x->expect + (x->cnt ? x->dsp[q] * es : (size_t)q * blk), x->cnt ? x->cnt[q] * es : blk, q,
                           salt);
        break;
    case B_SCATTER:
    case B_SCATTERV: /* the root's block q to rank q */
        for (int q = 0; q < x->n && x->in_bytes; q++)
            ref_fill_bytes(x->pristine + (x->cnt ? x->dsp[q] * es : (size_t)q * blk), x->cnt ? x->cnt[q] * es : blk, q,
                           salt);
        ref_fill_bytes(x->expect, x->out_bytes, r, salt);
        break;
    default: break;
    }
    devbuf_put(o->device, x->in_at, x->pristine, x->in_bytes);
    return 0;
}

/* sendrecv: to the right, from the left, in a group so that neither waits for the other. */
static gcoll_status_t ring_exchange(ctx_t *x, const void *sb, void *rb)
{
    gcoll_status_t st = gcoll_group_start(), end;
    if (st != GCOLL_SUCCESS)
        return st;
    st = gcoll_send(sb, x->count, x->o->dtype, (x->rank + 1) % x->n, x->comm);
    if (st == GCOLL_SUCCESS)
        st = gcoll_recv(rb, x->count, x->o->dtype, (x->rank + x->n - 1) % x->n, x->comm);
    end = gcoll_group_end();
    return st != GCOLL_SUCCESS ? st : end;
}

/* group: side 0 posts the batch in one group, side 1 calls each allreduce on its own. */
static gcoll_status_t batch(ctx_t *x, const void *sb, void *rb, int grouped)
{
    size_t blk = x->count * x->es;
    gcoll_status_t st = grouped ? gcoll_group_start() : GCOLL_SUCCESS;
    for (int k = 0; k < x->o->batch && st == GCOLL_SUCCESS; k++)
        st = gcoll_allreduce((const char *)sb + (size_t)k * blk, (char *)rb + (size_t)k * blk, x->count, x->o->dtype,
                             x->o->op, x->comm);
    if (grouped) {
        gcoll_status_t end = gcoll_group_end();
        st = st != GCOLL_SUCCESS ? st : end;
    }
    return st;
}

/* Blocking calls, as OSU measures MPI's; the nonblocking form only to force an algorithm. */
static gcoll_status_t run_blocking(ctx_t *x, const void *sb, void *rb, int side)
{
    const bench_opts_t *o = x->o;
    const size_t *c = x->cnt, *d = x->dsp;
    int r = x->rank;
    switch (x->coll) {
    case B_ALLGATHERV: return gcoll_allgatherv(sb, c[r], rb, c, d, o->dtype, x->comm);
    case B_REDUCE_SCATTERV: return gcoll_reduce_scatterv(sb, rb, c, o->dtype, o->op, x->comm);
    case B_ALLTOALLV: return gcoll_alltoallv(sb, c, d, rb, x->rcnt, x->rdsp, o->dtype, x->comm);
    case B_GATHER: return gcoll_gather(sb, rb, x->count, o->dtype, o->root, x->comm);
    case B_SCATTER: return gcoll_scatter(sb, rb, x->count, o->dtype, o->root, x->comm);
    case B_GATHERV: return gcoll_gatherv(sb, c[r], rb, c, d, o->dtype, o->root, x->comm);
    case B_SCATTERV: return gcoll_scatterv(sb, c, d, rb, c[r], o->dtype, o->root, x->comm);
    case B_SENDRECV: return ring_exchange(x, sb, rb);
    case B_GROUP: return batch(x, sb, rb, side == 0);
    case B_ALLREDUCE: return gcoll_allreduce(sb, rb, x->count, o->dtype, o->op, x->comm);
    case B_REDUCE_SCATTER: return gcoll_reduce_scatter(sb, rb, x->count, o->dtype, o->op, x->comm);
    case B_ALLGATHER: return gcoll_allgather(sb, rb, x->count, o->dtype, x->comm);
    case B_BCAST: return gcoll_bcast(rb, x->count, o->dtype, o->root, x->comm);
    case B_REDUCE: return gcoll_reduce(sb, rb, x->count, o->dtype, o->op, o->root, x->comm);
    case B_ALLTOALL: return gcoll_alltoall(sb, rb, x->count, o->dtype, x->comm);
    case B_ADASUM: return gcoll_adasum(sb, rb, x->count, o->dtype, NULL, 0, x->comm);
    default: return gcoll_barrier(x->comm);
    }
}

static gcoll_status_t run_forced(ctx_t *x, const void *sb, void *rb)
{
    const bench_opts_t *o = x->o;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.algorithm = o->algo;
    attr.compress = o->compress;
    attr.topk_density = o->density;
    gcoll_request_t req;
    gcoll_status_t st;
    switch (x->coll) {
    case B_ALLREDUCE: st = gcoll_iallreduce(sb, rb, x->count, o->dtype, o->op, x->comm, &attr, &req); break;
    case B_REDUCE_SCATTER: st = gcoll_ireduce_scatter(sb, rb, x->count, o->dtype, o->op, x->comm, &attr, &req); break;
    case B_ALLGATHER: st = gcoll_iallgather(sb, rb, x->count, o->dtype, x->comm, &attr, &req); break;
    case B_BCAST: st = gcoll_ibcast(rb, x->count, o->dtype, o->root, x->comm, &attr, &req); break;
    case B_REDUCE: st = gcoll_ireduce(sb, rb, x->count, o->dtype, o->op, o->root, x->comm, &attr, &req); break;
    case B_ALLTOALL: st = gcoll_ialltoall(sb, rb, x->count, o->dtype, x->comm, &attr, &req); break;
    case B_ADASUM: st = gcoll_iadasum(sb, rb, x->count, o->dtype, NULL, 0, x->comm, &attr, &req); break;
    default: st = gcoll_ibarrier(x->comm, &attr, &req); break;
    }
    return st == GCOLL_SUCCESS ? gcoll_wait(&req) : st;
}

/* Side s of gcoll: its --algo name in the communicator's table ("auto": none), so that the
 * blocking call runs it; every rank sets the same before the same call. */
static int use_side(const ctx_t *x, int s)
{
    if (s >= x->ng || !x->o->nalgos || !bench_algo_by_table(x->o))
        return 0;
    const char *name = x->o->algos[s];
    gcoll_status_t st =
        gcoll_comm_set_algorithm(x->comm, bench_coll_name(x->coll), strcmp(name, "auto") == 0 ? NULL : name);
    if (st != GCOLL_SUCCESS)
        fprintf(stderr, "gcoll_bench [rank %d]: --algo %s: %s\n", x->rank, name, gcoll_last_error());
    return st == GCOLL_SUCCESS ? 0 : -1;
}

static int run_gcoll(ctx_t *x, int side)
{
    /* in place is sendbuf == recvbuf for every collective, wherever the input sits inside it */
    const void *sb = x->ip ? x->rbuf : x->sbuf;
    int forced = (x->o->algo && !bench_algo_by_table(x->o)) || x->o->compress;
    gcoll_status_t st = forced ? run_forced(x, sb, x->rbuf) : run_blocking(x, sb, x->rbuf, side);
    if (st != GCOLL_SUCCESS)
        fprintf(stderr, "gcoll_bench [rank %d]: %s: %s\n", x->rank, gcoll_status_name(st), gcoll_last_error());
    return st == GCOLL_SUCCESS ? 0 : -1;
}

static int run_mpi(ctx_t *x)
{
    /* MPI's in place for allgather is MPI_IN_PLACE with the block already in recvbuf */
    const void *sb = x->ip ? x->rbuf : x->sbuf;
    if (x->coll == B_ADASUM) { /* the other side of adasum is gcoll's own sum */
        gcoll_status_t st = gcoll_allreduce(sb, x->rbuf, x->count, x->o->dtype, GCOLL_SUM, x->comm);
        if (st != GCOLL_SUCCESS)
            fprintf(stderr, "gcoll_bench [rank %d]: sum allreduce: %s: %s\n", x->rank, gcoll_status_name(st),
                    gcoll_last_error());
        return st == GCOLL_SUCCESS ? 0 : -1;
    }
    const bench_opts_t *o = x->o;
    int rc = x->coll == B_GROUP ? baseline_batch(x->bl, sb, x->rbuf, x->count, x->es, o->batch, o->dtype, o->op)
        : bench_skewed(x->coll) ? baseline_runv(x->bl, x->coll, sb, x->rbuf, &x->v, o->dtype, o->op, o->root)
                                : baseline_run(x->bl, x->coll, sb, x->rbuf, x->count, o->dtype, o->op, o->root);
    if (rc != MPI_SUCCESS)
        fprintf(stderr, "gcoll_bench [rank %d]: %s baseline failed (%d)\n", x->rank, x->bl->nccl ? "NCCL" : "MPI", rc);
    return rc == MPI_SUCCESS ? 0 : -1;
}

/* side ng is the baseline (for adasum, the sum allreduce); the others are gcoll's. */
static int check(const ctx_t *x, int side)
{
    int baseline = side == x->ng;
    const char *got = x->check_at;
    if (x->o->device) {
        devbuf_get(1, x->readback, x->check_at, x->check_bytes);
        got = x->readback;
    }
    if (x->coll == B_ADASUM && !baseline) {
        size_t worst;
        return adasum_ref_error(&x->ada, got, x->o->dtype, &worst) <= adasum_ref_tolerance(x->o->dtype);
    }
    return memcmp(got, baseline && x->expect_dense ? x->expect_dense : x->expect, x->check_bytes) == 0;
}

/* Runs k iterations of one side; adds their time (seconds) to *t, keeps each call's time when
 * timed (not in warmup), and clears *valid on a wrong result when checking each. Restoring the
 * input is outside the timed region. */
static int iterate(ctx_t *x, int side, int k, double *t, int *valid, int timed)
{
    int mpi = side == x->ng;
    if (k > 0 && use_side(x, side) != 0)
        return -1;
    for (int i = 0; i < k; i++) {
        if (x->o->check_each)
            devbuf_put(x->o->device, x->in_at, x->pristine, x->in_bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if ((mpi ? run_mpi(x) : run_gcoll(x, side)) != 0)
            return -1;
        double dt = MPI_Wtime() - t0;
        *t += dt;
        if (timed && x->calls[side])
            x->calls[side][x->ncalls[side]++] = dt;
        if (x->o->check_each && !check(x, side))
            *valid = 0;
    }
    return 0;
}

static bench_lat_t gather_latency(const ctx_t *x, double my_avg_us)
{
    double *all = malloc(sizeof(double) * (size_t)x->n);
    MPI_Gather(&my_avg_us, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    bench_lat_t s = x->rank == 0 ? bench_summarize(all, x->n) : (bench_lat_t){0, 0, 0};
    free(all);
    return s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median call of one side in microseconds, a call taking as long as its slowest rank: robust
 * where a loaded machine deschedules a rank now and then and a few calls take milliseconds,
 * which the average carries. 0 without the samples (no memory). */
static double median_call(const ctx_t *x, int side)
{
    int n = x->ncalls[side], have = x->calls[side] != NULL, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all || n == 0)
        return 0;
    double *slowest = x->rank == 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
    MPI_Reduce(x->calls[side], slowest, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (!slowest)
        return 0;
    qsort(slowest, (size_t)n, sizeof(double), cmp_double);
    double med = (n % 2 ? slowest[n / 2] : (slowest[n / 2 - 1] + slowest[n / 2]) / 2) * 1e6;
    free(slowest);
    return med;
}

static int all_true(int v)
{
    int r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return r;
}

/* The row's algorithm: the name forced, or the selection's pick ("auto:PICK" when --algo
 * asked for auto beside forced ones). */
static void name_row(const ctx_t *x, int side, bench_row_t *row)
{
    const bench_opts_t *o = x->o;
    const char *name = o->nalgos ? o->algos[side] : NULL, *pick = NULL;
    if (x->coll == B_GROUP) {
        snprintf(row->algo, sizeof(row->algo), "%s x%d", side == 0 ? "group" : "separate", o->batch);
        return;
    }
    if (x->coll == B_SENDRECV) {
        snprintf(row->algo, sizeof(row->algo), "ring(p2p)");
        return;
    }
    if (name && strcmp(name, "auto") != 0) {
        snprintf(row->algo, sizeof(row->algo), "%s", name);
        return;
    }
    if (o->compress) { /* the selection table's answer is for uncompressed calls */
        snprintf(row->algo, sizeof(row->algo), "%s", o->compress == GCOLL_COMPRESS_TOPK ? "topk" : "auto(16-bit wire)");
        return;
    }
    if (use_side(x, side) != 0 || gcoll_comm_algorithm(x->comm, bench_coll_name(x->coll), x->count, o->dtype, &pick))
        pick = "?";
    snprintf(row->algo, sizeof(row->algo), "%s%s", name ? "auto:" : "", pick);
}

int bench_run_size(const bench_opts_t *o, gcoll_comm_t comm, baseline_t *bl, size_t count, bench_row_t *rows)
{
    ctx_t x = {.o = o,
               .coll = (bench_coll_t)o->subcmd,
               .comm = comm,
               .bl = bl,
               .count = count,
               .es = gcoll_dtype_size(o->dtype),
               .rank = gcoll_comm_rank(comm),
               .n = gcoll_comm_size(comm),
               .ng = o->subcmd == B_GROUP ? 2
                   : o->nalgos > 1        ? o->nalgos
                                          : 1};
    x.ip = o->inplace && (!rooted(x.coll) || x.rank == o->root);
    ref_set_ranks(x.n);
    int rc = -1, sides = x.ng + (o->baseline_on ? 1 : 0);
    if (prepare(&x) != 0) {
        fprintf(stderr, "gcoll_bench [rank %d]: out of memory at %zu elements%s\n", x.rank, count,
                x.mpi ? ", or counts beyond MPI's int" : "");
        goto out;
    }
    size_t bytes = bench_bytes_for(x.coll, count, x.es, x.n);
    int iters = o->iters ? o->iters : bench_default_iters(bytes);
    int warmup = o->warmup >= 0 ? o->warmup : bench_default_warmup(iters);

    for (int s = 0; s < sides; s++)
        x.calls[s] = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    /* validate once, up front, unless every iteration is checked */
    int valid[MAX_SIDES];
    double t[MAX_SIDES] = {0}, ignored = 0;
    for (int s = 0; s < sides; s++) {
        devbuf_put(o->device, x.in_at, x.pristine, x.in_bytes);
        if (use_side(&x, s) != 0 || (s == x.ng ? run_mpi(&x) : run_gcoll(&x, s)) != 0)
            goto out;
        valid[s] = check(&x, s);
        devbuf_put(o->device, x.in_at, x.pristine, x.in_bytes);
        if (iterate(&x, s, warmup, &ignored, &valid[s], 0) != 0)
            goto out;
    }
    /* Timed blocks, each side once per block. Two sides alternate which goes first; more go in
     * an order drawn anew for each block (the same on every rank), since a call can be faster or
     * slower after a given other one (a drained token bucket, connections another algorithm
     * left warm), and a fixed order would give each side the same predecessor throughout. */
    unsigned long long wire[MAX_SIDES] = {0};
    int nblocks = sides > NBLOCKS ? sides : NBLOCKS, order[MAX_SIDES];
    unsigned rng = (unsigned)time(NULL) ^ (unsigned)(count * 2654435761u);
    if (sides > 2)
        MPI_Bcast(&rng, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
    for (int b = 0; b < nblocks; b++) {
        int k = iters / nblocks + (b < iters % nblocks);
        for (int j = 0; j < sides; j++)
            order[j] = (b + j) % sides;
        for (int j = sides - 1; j > 0 && sides > 2; j--) { /* Fisher-Yates, xorshift32 */
            rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
            int r = (int)(rng % (unsigned)(j + 1)), held = order[j];
            order[j] = order[r];
            order[r] = held;
        }
        for (int j = 0; j < sides; j++) {
            int s = order[j];
            unsigned long long b0 = 0, b1 = 0;
            gcoll_comm_bytes_sent(comm, &b0);
            if (iterate(&x, s, k, &t[s], &valid[s], 1) != 0)
                goto out;
            gcoll_comm_bytes_sent(comm, &b1);
            wire[s] += b1 - b0;
        }
    }
    bench_lat_t m = {0, 0, 0};
    double m_med = 0;
    int m_valid = 1;
    if (o->baseline_on) {
        m = gather_latency(&x, t[x.ng] * 1e6 / iters);
        m_med = median_call(&x, x.ng);
        m_valid = all_true(valid[x.ng]);
    }
    for (int s = 0; s < x.ng; s++) {
        bench_row_t *r = &rows[s];
        *r = (bench_row_t){.bytes = bytes, .count = count, .iters = iters, .m = m, .m_med = m_med, .m_valid = m_valid};
        name_row(&x, s, r);
        double mine = (double)wire[s] / iters;
        MPI_Allreduce(&mine, &r->wire_bytes, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        r->wire_bytes /= x.n;
        r->g = gather_latency(&x, t[s] * 1e6 / iters);
        r->g_med = median_call(&x, s);
        r->g_valid = all_true(valid[s]);
    }
    rc = x.ng;
out:
    if (o->nalgos && bench_algo_by_table(o)) /* leave the communicator as the run found it */
        gcoll_comm_set_algorithm(comm, bench_coll_name(x.coll), NULL);
    if (x.have_ada)
        adasum_ref_free(&x.ada);
    for (int s = 0; s < MAX_SIDES; s++)
        free(x.calls[s]);
    devbuf_free(o->device, x.sbuf);
    devbuf_free(o->device, x.rbuf);
    free(x.pristine);
    free(x.expect);
    free(x.expect_dense);
    free(x.readback);
    free(x.cnt);
    free(x.mpi);
    return rc;
}
