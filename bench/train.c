/* See train.h. The gradients live in one flat buffer, as frameworks keep them, and every mode
 * reduces in place there; each mode's first step is checked against the reference reduction.
 * Each mode also reports the CPU a rank spent per step and how busy rank 0's machine was: with a
 * busy-looping computation, a machine with every core busy cannot hide gcoll's own CPU work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <mpi.h>

#include "metrics.h"
#include "models.h"
#include "reference.h"
#include "train.h"

enum { M_AFTER, M_AFTER_FUSED, M_PER_TENSOR, M_SESSION, M_COUNT };
static const char *const mode_names[M_COUNT] = {"after", "after-fused", "per-tensor", "session"};

enum { F_STEP, F_COMPUTE, F_EXPOSED, F_LAYER0, F_COUNT }; /* the figures of one step, in ms */

typedef struct {
    const bench_opts_t *o;
    gcoll_comm_t comm;
    const bench_compute_t *cmp;
    const bench_model_t *model;
    int rank, n;
    size_t nt, total;     /* tensors, and elements in all */
    size_t *count, *off;  /* per tensor, scaled */
    double *share_ns;     /* each tensor's backprop compute */
    float *grad;          /* the flat gradient buffer */
    gcoll_request_t *req; /* per-tensor mode */
    gcoll_session_t session;
    size_t *sid; /* session set of each tensor */
    size_t nbuckets;
    double fit;     /* how fit_compute scaled the calibrated compute */
    double forward; /* the forward pass's part of each tensor's compute share */
    int inflight;   /* per-tensor and session: the last step's exchange may still run */
    double bp_end;  /* when the last step's backprop ended */
} tctx_t;

typedef struct {
    double fig[F_COUNT]; /* the slowest rank's means over the timed steps */
    double cpu;          /* ms of CPU per step of a rank's process, mean over the steps and the ranks */
    double busy;         /* % of rank 0's machine's CPU time not idle during the timed steps, or -1 */
    int valid;
} mode_result_t;

static void die(const tctx_t *x, const char *what, gcoll_status_t st)
{
    fprintf(stderr, "gcoll_bench [rank %d]: train: %s: %s: %s\n", x->rank, what, gcoll_status_name(st),
            gcoll_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(x, call)               \
    do {                             \
        gcoll_status_t st_ = (call); \
        if (st_ != GCOLL_SUCCESS)    \
            die((x), #call, st_);    \
    } while (0)

/* Runs fraction `part` of tensor t's compute share. */
static void compute_share(const tctx_t *x, size_t t, double part, double *compute_s)
{
    double c0 = MPI_Wtime();
    bench_compute_run(x->cmp, x->share_ns[t] * part);
    *compute_s += MPI_Wtime() - c0;
}

static double cpu_ms(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return 0;
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
        (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

/* The machine's busy and total jiffies so far (/proc/stat's cpu line), or -1 where unreadable. */
static int machine_jiffies(double *busy, double *total)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                       &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    if (n < 5)
        return -1;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += (double)v[i];
    *busy = *total - (double)v[3] - (double)v[4]; /* less idle and iowait */
    return 0;
}

/* The next forward pass needs tensor t's reduced gradient of the step before: waits for it
 * where it is still in flight. Layer 0's wait also dates the previous step's layer0 figure. */
static void await_tensor(tctx_t *x, int m, size_t t, double *prev)
{
    if (m == M_PER_TENSOR)
        CHECK(x, gcoll_wait(&x->req[t]));
    else
        CHECK(x, gcoll_session_wait(x->session, x->sid[t]));
    if (t == 0 && prev)
        prev[F_LAYER0] = (MPI_Wtime() - x->bp_end) * 1e3;
}

/* Waits for whatever the last step left in flight (the end of a run, where no forward pass
 * follows); prev: that step's figures, or NULL. */
static void drain(tctx_t *x, int m, double *prev)
{
    if (!x->inflight)
        return;
    if (m == M_PER_TENSOR) {
        for (size_t t = 0; t < x->nt; t++)
            await_tensor(x, m, t, prev);
    } else {
        await_tensor(x, m, 0, prev);
        CHECK(x, gcoll_session_wait_all(x->session));
    }
    x->inflight = 0;
}

/* One training step in mode m: the forward pass in layer order, each layer first waiting for its
 * gradient of the step before where that is still in flight (per-tensor and session: the
 * exchange overlaps this pass too, and priorities decide what arrives first), then backprop in
 * reverse, starting each gradient's exchange as it is ready (after and after-fused: exchanged at
 * the end, blocking). fig gets this step's compute and, for the blocking modes, layer0; the
 * overlapping modes date layer0 in the next step's forward pass (or in drain), through prev. */
static void step(tctx_t *x, int m, double fig[F_COUNT], double *prev)
{
    const bench_opts_t *o = x->o;
    double compute = 0, l0 = 0;
    for (size_t t = 0; t < x->nt; t++) {
        if (x->inflight)
            await_tensor(x, m, t, prev);
        compute_share(x, t, x->forward, &compute);
    }
    x->inflight = 0;
    for (size_t t = x->nt; t-- > 0;) {
        compute_share(x, t, 1 - x->forward, &compute);
        if (m == M_PER_TENSOR) {
            gcoll_attr_t attr = GCOLL_ATTR_INIT;
            attr.priority = -(int)t;
            attr.name = x->model->tensors[t].name;
            CHECK(x,
                  gcoll_iallreduce(x->grad + x->off[t], x->grad + x->off[t], x->count[t], GCOLL_FLOAT32, o->op, x->comm,
                                   &attr, &x->req[t]));
        } else if (m == M_SESSION) {
            CHECK(x, gcoll_session_start(x->session, x->sid[t], x->grad + x->off[t]));
        }
    }
    x->bp_end = MPI_Wtime();
    switch (m) {
    case M_AFTER:
        for (size_t t = x->nt; t-- > 0;)
            CHECK(
                x,
                gcoll_allreduce(x->grad + x->off[t], x->grad + x->off[t], x->count[t], GCOLL_FLOAT32, o->op, x->comm));
        l0 = MPI_Wtime();
        break;
    case M_AFTER_FUSED:
        CHECK(x, gcoll_allreduce(x->grad, x->grad, x->total, GCOLL_FLOAT32, o->op, x->comm));
        l0 = MPI_Wtime();
        break;
    default: x->inflight = 1; break;
    }
    fig[F_COMPUTE] = compute * 1e3;
    if (!x->inflight)
        fig[F_LAYER0] = (l0 - x->bp_end) * 1e3;
}

/* Compares the flat buffer with the reference reduction, a slice at a time. */
static int gradients_match(const tctx_t *x)
{
    enum { SLICE = 1 << 16 };
    float *want = malloc(SLICE * sizeof(float));
    int ok = want != NULL;
    for (size_t i = 0; ok && i < x->total; i += SLICE) {
        size_t k = x->total - i < SLICE ? x->total - i : SLICE;
        ref_fill_expected(want, i, k, GCOLL_FLOAT32, x->o->op, x->n);
        ok = memcmp(want, x->grad + i, k * sizeof(float)) == 0;
    }
    free(want);
    return ok;
}

static void session_open(tctx_t *x)
{
    CHECK(x, gcoll_session_create(x->comm, &x->session));
    for (size_t t = 0; t < x->nt; t++)
        CHECK(
            x,
            gcoll_session_add(x->session, x->model->tensors[t].name, x->count[t], GCOLL_FLOAT32, x->o->op, &x->sid[t]));
    CHECK(x, gcoll_session_commit(x->session));
    CHECK(x, gcoll_session_buckets(x->session, &x->nbuckets));
}

/* One validated step, warm-up steps, the timed steps and one more of mode m, back to back as in
 * training (what an overlapping mode leaves in flight is paid where the next forward pass
 * waits). A rank's step is the time from the first timed step's start to the start of the step
 * after the last, over their number: the ranks' step boundaries jitter against each other, so
 * one step's time is not a rank's throughput, and the slower of two ranks' times of each step
 * would overstate it. Every figure is a rank's mean over the timed steps, then the slowest
 * rank's; cpu is the mean of the ranks. */
static void run_mode(tctx_t *x, int m, int iters, int warmup, mode_result_t *res)
{
    double *all = calloc((size_t)F_COUNT * (size_t)iters, sizeof(double)), spare[F_COUNT] = {0};
    if (!all) {
        fprintf(stderr, "gcoll_bench [rank %d]: train: out of memory\n", x->rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (m == M_SESSION)
        session_open(x);
    ref_fill_values(x->grad, x->total, x->rank, GCOLL_FLOAT32, x->o->op);
    MPI_Barrier(MPI_COMM_WORLD);
    step(x, m, spare, NULL);
    drain(x, m, NULL);
    int valid = gradients_match(x), all_valid = 0;
    MPI_Allreduce(&valid, &all_valid, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    double b[2] = {0}, j[2] = {0}, t[2] = {0}, c[2] = {0}, *prev = NULL;
    int have_j = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i <= warmup + iters; i++) {
        double *fig = spare;
        if (i == warmup || i == warmup + iters) { /* the timed steps' start, then their end */
            int e = i > warmup;
            have_j &= machine_jiffies(&b[e], &j[e]) == 0;
            t[e] = MPI_Wtime();
            c[e] = cpu_ms();
        }
        if (i >= warmup && i < warmup + iters)
            fig = all + (size_t)(i - warmup) * F_COUNT;
        step(x, m, fig, prev);
        prev = fig;
    }
    drain(x, m, NULL);
    double mine[F_COUNT] = {[F_STEP] = (t[1] - t[0]) * 1e3 / iters}, cpu = (c[1] - c[0]) / iters;
    res->busy = have_j && j[1] > j[0] ? 100 * (b[1] - b[0]) / (j[1] - j[0]) : -1;
    for (int k = 0; k < iters; k++) {
        mine[F_COMPUTE] += all[(size_t)k * F_COUNT + F_COMPUTE] / iters;
        mine[F_LAYER0] += all[(size_t)k * F_COUNT + F_LAYER0] / iters;
    }
    mine[F_EXPOSED] = mine[F_STEP] - mine[F_COMPUTE];
    MPI_Allreduce(mine, res->fig, F_COUNT, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&cpu, &res->cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    res->cpu /= x->n;
    if (m == M_SESSION)
        CHECK(x, gcoll_session_free(&x->session));
    res->valid = all_valid;
    free(all);
}

/* Spin's rate comes from the fastest of short runs, and nanosleep overshoots each share by
 * the timer slack: a whole step on a shared machine takes longer than asked. Two passes of a
 * step's computation alone (nothing in flight) scale the shares until it takes compute_ms. */
static void fit_compute(tctx_t *x, double compute_ms)
{
    x->fit = 1;
    for (int pass = 0; pass < 2 && compute_ms > 0; pass++) {
        double took = 0;
        for (size_t t = 0; t < x->nt; t++)
            compute_share(x, t, x->forward, &took);
        for (size_t t = x->nt; t-- > 0;)
            compute_share(x, t, 1 - x->forward, &took);
        double k = compute_ms / (took * 1e3);
        x->fit *= k;
        for (size_t t = 0; t < x->nt; t++)
            x->share_ns[t] *= k;
    }
}

/* The time of one blocking allreduce of every gradient: the slowest rank's, median of 3. */
static double measure_comm_ms(tctx_t *x)
{
    double t[3];
    CHECK(x, gcoll_allreduce(x->grad, x->grad, x->total, GCOLL_FLOAT32, x->o->op, x->comm)); /* warm-up */
    for (int i = 0; i < 3; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        CHECK(x, gcoll_allreduce(x->grad, x->grad, x->total, GCOLL_FLOAT32, x->o->op, x->comm));
        double mine = (MPI_Wtime() - t0) * 1e3;
        MPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    return bench_median(t, 3);
}

static int setup(tctx_t *x)
{
    const bench_model_t *m = x->model;
    x->nt = m->ntensors;
    x->count = calloc(x->nt, sizeof(size_t));
    x->off = calloc(x->nt, sizeof(size_t));
    x->share_ns = calloc(x->nt, sizeof(double));
    x->req = calloc(x->nt, sizeof(gcoll_request_t));
    x->sid = calloc(x->nt, sizeof(size_t));
    if (!x->count || !x->off || !x->share_ns || !x->req || !x->sid)
        return -1;
    for (size_t t = 0; t < x->nt; t++) {
        long long c = llround((double)bench_tensor_numel(&m->tensors[t]) * x->o->scale);
        x->count[t] = c < 1 ? 1 : (size_t)c;
        x->off[t] = x->total;
        x->total += x->count[t];
    }
    x->grad = malloc(x->total * sizeof(float));
    return x->grad ? 0 : -1;
}

/* What the session's step is held to: the longer of the computation alone, as after-fused
 * measured it while nothing was in flight, and the communication. A computation slowed down
 * by the session's own traffic counts against the session. */
static double bound_ms(const mode_result_t *res, double comm_ms)
{
    return fmax(res[M_AFTER_FUSED].fig[F_COMPUTE], comm_ms);
}

static void print_table(const tctx_t *x, const bench_env_t *env, int iters, int warmup, double comm_ms,
                        double compute_ms, const mode_result_t *res)
{
    const bench_opts_t *o = x->o;
    char w[64];
    printf("# gcoll_bench train: gcoll %s, model %s (%s): %zu tensors, %zu parameters (%.1f MB float32), "
           "scale %g\n",
           env->gcoll_version, x->model->name, x->model->source, x->nt, x->total, (double)x->total * 4 / 1e6, o->scale);
    printf("# %d ranks on %d host%s (%s), transport %s, op %s, GCOLL_WORKER_COUNT %s\n", env->nranks, env->nhosts,
           env->nhosts == 1 ? "" : "s", env->hosts, env->transport, gcoll_op_name(o->op),
           report_config("GCOLL_WORKER_COUNT", w, sizeof(w)));
    printf("# communication: one allreduce of all gradients takes %.2f ms (slowest rank, median of 3)\n", comm_ms);
    printf("# compute: %s, %.2f ms per step (%s), spread over the tensors by size, %.3f of it in the forward "
           "pass;\n# rank 0 scaled its calibrated compute by %.3f so that a step's computation alone takes that long\n",
           bench_compute_name(o->compute), compute_ms,
           o->compute_ms < 0 ? "equal to the communication" : "--compute-ms", x->forward, x->fit);
    printf("# session: %zu fusion buckets\n", x->nbuckets);
    printf("# per mode, %d timed steps run back to back (after 1 validated and %d warm-up steps; one more follows),"
           "\n# each figure the slowest rank's mean over them, in ms: step = from a forward pass's start to the next "
           "one's\n# (per-tensor and session wait for each layer's gradient in the next forward pass; after and "
           "after-fused\n# reduce after backprop); compute = the computation inside it; exposed = step - compute; "
           "layer0 = from\n# the end of backprop until layer 0's gradient is reduced; cpu = CPU time of a rank's "
           "process per step\n# (all threads, user + system; mean of the ranks); busy = %% of rank 0's machine's CPU "
           "time (all its\n# cores) not idle during the timed steps\n",
           iters, warmup);
    printf("%-12s %11s %11s %11s %11s %11s %6s %s\n", "mode", "step", "compute", "exposed", "layer0", "cpu", "busy",
           "valid");
    for (int m = 0; m < M_COUNT; m++) {
        char busy[16] = "-";
        if (res[m].busy >= 0)
            snprintf(busy, sizeof(busy), "%.1f", res[m].busy);
        printf("%-12s %11.2f %11.2f %11.2f %11.2f %11.2f %6s %s\n", mode_names[m], res[m].fig[F_STEP],
               res[m].fig[F_COMPUTE], res[m].fig[F_EXPOSED], res[m].fig[F_LAYER0], res[m].cpu, busy,
               res[m].valid ? "ok" : "FAIL");
    }
    double s = res[M_SESSION].fig[F_STEP];
    printf("# session step / max(compute alone, communication) = %.3f (compute alone: after-fused's, where "
           "nothing is in flight)\n",
           s / bound_ms(res, comm_ms));
    printf("# session step / max(its own compute, communication) = %.3f\n",
           s / fmax(res[M_SESSION].fig[F_COMPUTE], comm_ms));
    printf("# after / session = %.3f, after-fused / session = %.3f, per-tensor / session = %.3f\n",
           res[M_AFTER].fig[F_STEP] / s, res[M_AFTER_FUSED].fig[F_STEP] / s, res[M_PER_TENSOR].fig[F_STEP] / s);
    fflush(stdout);
}

static int write_files(const tctx_t *x, const bench_env_t *env, int iters, double comm_ms, double compute_ms,
                       const mode_result_t *res)
{
    const bench_opts_t *o = x->o;
    int rc = 0;
    FILE *f;
    if (o->csv) {
        if ((f = fopen(o->csv, "w")) != NULL) {
            fprintf(f,
                    "model,scale,parameters,ranks,op,compute_mode,steps,comm_ms,mode,step_ms,compute_ms,"
                    "exposed_ms,layer0_ms,cpu_ms,busy_pct,valid,forward\n");
            for (int m = 0; m < M_COUNT; m++)
                fprintf(f, "%s,%g,%zu,%d,%s,%s,%d,%.3f,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%s,%.3f\n", x->model->name,
                        o->scale, x->total, env->nranks, gcoll_op_name(o->op), bench_compute_name(o->compute), iters,
                        comm_ms, mode_names[m], res[m].fig[F_STEP], res[m].fig[F_COMPUTE], res[m].fig[F_EXPOSED],
                        res[m].fig[F_LAYER0], res[m].cpu, res[m].busy, res[m].valid ? "ok" : "FAIL", x->forward);
        }
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "gcoll_bench: cannot write %s\n", o->csv);
            rc = -1;
        }
    }
    if (o->json) {
        if ((f = fopen(o->json, "w")) != NULL) {
            double s = res[M_SESSION].fig[F_STEP];
            fprintf(f,
                    "{\n  \"benchmark\": \"train\", \"gcoll_version\": \"%s\", \"model\": \"%s\", \"scale\": %g,\n"
                    "  \"tensors\": %zu, \"parameters\": %zu, \"ranks\": %d, \"hosts\": %d, \"transport\": \"%s\",\n"
                    "  \"op\": \"%s\", \"compute\": \"%s\", \"steps\": %d, \"comm_ms\": %.3f, \"compute_ms\": %.3f,\n"
                    "  \"forward\": %.3f,\n"
                    "  \"session_buckets\": %zu,\n  \"modes\": [",
                    env->gcoll_version, x->model->name, o->scale, x->nt, x->total, env->nranks, env->nhosts,
                    env->transport, gcoll_op_name(o->op), bench_compute_name(o->compute), iters, comm_ms, compute_ms,
                    x->forward, x->nbuckets);
            for (int m = 0; m < M_COUNT; m++)
                fprintf(f,
                        "%s\n    {\"mode\": \"%s\", \"step_ms\": %.3f, \"compute_ms\": %.3f, \"exposed_ms\": %.3f, "
                        "\"layer0_ms\": %.3f, \"cpu_ms\": %.3f, \"busy_pct\": %.1f, \"valid\": \"%s\"}",
                        m ? "," : "", mode_names[m], res[m].fig[F_STEP], res[m].fig[F_COMPUTE], res[m].fig[F_EXPOSED],
                        res[m].fig[F_LAYER0], res[m].cpu, res[m].busy, res[m].valid ? "ok" : "FAIL");
            fprintf(f,
                    "\n  ],\n  \"session_over_bound\": %.4f, \"session_over_own_compute_bound\": %.4f, "
                    "\"after_over_session\": %.4f, \"after_fused_over_session\": %.4f\n}\n",
                    s / bound_ms(res, comm_ms), s / fmax(res[M_SESSION].fig[F_COMPUTE], comm_ms),
                    res[M_AFTER].fig[F_STEP] / s, res[M_AFTER_FUSED].fig[F_STEP] / s);
        }
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "gcoll_bench: cannot write %s\n", o->json);
            rc = -1;
        }
    }
    return rc;
}

int train_run(const bench_opts_t *o, gcoll_comm_t comm, const bench_env_t *env, const bench_compute_t *c)
{
    tctx_t x = {.o = o,
                .comm = comm,
                .cmp = c,
                .model = bench_model_find(o->model),
                .rank = gcoll_comm_rank(comm),
                .n = gcoll_comm_size(comm),
                .forward = o->forward};
    if (setup(&x) != 0) {
        fprintf(stderr, "gcoll_bench [rank %d]: train: out of memory for %s at scale %g\n", x.rank, o->model, o->scale);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int iters = o->iters ? o->iters : 10, warmup = o->warmup >= 0 ? o->warmup : 1;
    ref_fill_values(x.grad, x.total, x.rank, GCOLL_FLOAT32, o->op);
    double comm_ms = measure_comm_ms(&x), compute_ms = o->compute_ms >= 0 ? o->compute_ms : comm_ms;
    for (size_t t = 0; t < x.nt; t++)
        x.share_ns[t] = compute_ms * 1e6 * (double)x.count[t] / (double)x.total;
    fit_compute(&x, compute_ms);
    mode_result_t res[M_COUNT];
    int all_valid = 1;
    for (int m = 0; m < M_COUNT; m++) {
        run_mode(&x, m, iters, warmup, &res[m]);
        all_valid &= res[m].valid;
    }
    int rc = 0;
    if (x.rank == 0) {
        print_table(&x, env, iters, warmup, comm_ms, compute_ms, res);
        rc = write_files(&x, env, iters, comm_ms, compute_ms, res);
    }
    free(x.count);
    free(x.off);
    free(x.share_ns);
    free(x.req);
    free(x.sid);
    free(x.grad);
    return rc || !all_valid ? 1 : 0;
}
