/* gcoll_bench: OSU-style collective benchmarks, gcoll beside MPI's own collective in one run.
 *   mpirun -np N gcoll_bench COLLECTIVE|iallreduce|train [options]   (see -h)
 *   gcoll_bench membw                                                 (the memory ceiling)
 * Exits 0 when every row validated, 1 when one did not, 2 on a bad command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "baseline.h"
#include "compute.h"
#include "devbuf.h"
#include "membw.h"
#include "options.h"
#include "overlap.h"
#include "report.h"
#include "runner.h"
#include "train.h"

/* "vm" or "a, b" with the count of distinct hosts (from MPI's processor names). */
static int host_list(char *out, size_t len)
{
    int n, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char mine[MPI_MAX_PROCESSOR_NAME] = "";
    int l;
    MPI_Get_processor_name(mine, &l);
    char *all = calloc((size_t)n, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    int distinct = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *h = all + (size_t)i * MPI_MAX_PROCESSOR_NAME;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= strcmp(h, all + (size_t)j * MPI_MAX_PROCESSOR_NAME) == 0;
        if (seen)
            continue;
        if (distinct++)
            strncat(out, ", ", len - strlen(out) - 1);
        strncat(out, h, len - strlen(out) - 1);
    }
    free(all);
    return distinct;
}

/* The collective whose algorithms --algo names. */
static const char *algo_collective(const bench_opts_t *o)
{
    return o->subcmd == BENCH_IALLREDUCE ? "allreduce" : bench_coll_name((bench_coll_t)o->subcmd);
}

static int algo_known(const bench_opts_t *o, const char *name)
{
    const char *const *names;
    size_t n;
    if (strcmp(name, "auto") == 0)
        return bench_algo_by_table(o);
    if (gcoll_algorithms(algo_collective(o), &names, &n) != GCOLL_SUCCESS)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static int usage_error(int rank, const char *prog, const char *msg)
{
    if (rank == 0) {
        fprintf(stderr, "gcoll_bench: %s\n", msg);
        bench_usage(stderr, prog);
    }
    gcoll_finalize();
    return 2;
}

int main(int argc, char **argv)
{
    if (gcoll_init(&argc, &argv) != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_bench: gcoll_init: %s\n", gcoll_last_error());
        return 1;
    }
    gcoll_comm_t world;
    gcoll_comm_world(&world);
    int rank = gcoll_comm_rank(world), n = gcoll_comm_size(world);
    bench_opts_t o;
    char err[256];
    int pr = bench_parse(argc, argv, &o, err, sizeof(err));
    if (pr == 1) {
        if (rank == 0)
            bench_usage(stdout, argv[0]);
        gcoll_finalize();
        return 0;
    }
    if (pr < 0)
        return usage_error(rank, argv[0], err);
    if (o.root >= n) {
        snprintf(err, sizeof(err), "-r %d: the root must be below the rank count %d", o.root, n);
        return usage_error(rank, argv[0], err);
    }
    for (int a = 0; a < o.nalgos && o.subcmd != BENCH_MEMBW; a++)
        if (!algo_known(&o, o.algos[a])) {
            snprintf(err, sizeof(err), "--algo %s: not a %s algorithm of gcoll", o.algos[a], algo_collective(&o));
            return usage_error(rank, argv[0], err);
        }
    if (o.device && devbuf_cuda_open(rank, err, sizeof(err)) != 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "-d cuda: %s", err);
        return usage_error(rank, argv[0], msg);
    }
    if (o.subcmd == BENCH_MEMBW) {
        if (rank == 0)
            membw_report();
        gcoll_finalize();
        return 0;
    }

    char hosts[512], mpiver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(mpiver, &len);
    mpiver[strcspn(mpiver, ",\n")] = '\0';
    bench_env_t env = {.gcoll_version = gcoll_version(), .mpi_version = mpiver, .nranks = n, .hosts = hosts};
    env.nhosts = host_list(hosts, sizeof(hosts));
    gcoll_comm_transport(world, &env.transport);
    if (rank == 0) /* the others wait, so the measurement has the core to itself */
        env.memcpy_gbps = membw_measure(-1, (size_t)64 << 20, 1, 5);
    MPI_Bcast(&env.memcpy_gbps, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0 && o.device) {
        devbuf_pinned_gbps((size_t)64 << 20, 5, &env.h2d_gbps, &env.d2h_gbps);
        env.dev_gbps = devbuf_device_gbps((size_t)256 << 20, 10);
    }

    bench_compute_t cmp;
    int overlap = o.subcmd == BENCH_IALLREDUCE;
    if (overlap || o.subcmd == BENCH_TRAIN)
        bench_compute_init(&cmp, o.compute);
    if (o.subcmd == BENCH_TRAIN) {
        int trc = train_run(&o, world, &env, &cmp);
        gcoll_finalize();
        return trc;
    }

    baseline_t bl;
    int mpi_side = o.baseline_on && o.subcmd != B_ADASUM; /* adasum's other side is gcoll's sum */
    char nccl_why[256];
    if (mpi_side && o.baseline_nccl) {
        if (baseline_init_nccl(&bl, (bench_coll_t)o.subcmd, o.dtype, o.op, o.inplace, nccl_why, sizeof(nccl_why))) {
            if (o.baseline_nccl == 1) { /* asked for */
                if (rank == 0)
                    fprintf(stderr, "gcoll_bench: --baseline nccl: %s\n", nccl_why);
                gcoll_finalize();
                return 2;
            }
            env.nccl_off = nccl_why;
            o.baseline_on = o.baseline_nccl = mpi_side = 0;
        }
    } else if (mpi_side && baseline_init(&bl, o.dtype, o.op) != MPI_SUCCESS) {
        fprintf(stderr, "gcoll_bench: the MPI baseline could not be set up\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0 && overlap)
        overlap_header(&o, &env, &cmp);
    else if (rank == 0)
        report_header(&o, &env);
    bench_coll_t coll = overlap ? B_ALLREDUCE : (bench_coll_t)o.subcmd;
    int all_valid = 1;
    size_t es = gcoll_dtype_size(o.dtype), last = (size_t)-1;
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;
         bytes = bytes ? (bytes > o.max_bytes / o.factor ? o.max_bytes + 1 : bytes * o.factor) : 1) {
        size_t count = bench_count_for(coll, bytes, es, n);
        if ((count == 0 && coll != B_BARRIER) || count == last)
            continue; /* too small for one element per rank, or the same count again */
        last = count;
        if (overlap) {
            overlap_row_t orow;
            if (overlap_run_size(&o, world, o.baseline_on ? &bl : NULL, &cmp, count, &orow) != 0)
                MPI_Abort(MPI_COMM_WORLD, 1);
            if (rank == 0)
                overlap_report_row(&o, &orow);
            all_valid &= orow.g_valid && (!o.baseline_on || orow.m_valid);
            continue;
        }
        bench_row_t rows[BENCH_MAX_ALGOS] = {{0}};
        int nrows = bench_run_size(&o, world, mpi_side ? &bl : NULL, count, rows);
        if (nrows < 0)
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (int i = 0; i < nrows; i++) {
            if (rank == 0)
                report_row(&o, &env, &rows[i]);
            all_valid &= rows[i].g_valid && (!o.baseline_on || rows[i].m_valid);
        }
        if (o.subcmd == B_BARRIER)
            break; /* one row: a barrier has no size */
    }
    int rc = 0;
    if (rank == 0 && (overlap ? overlap_finish(&o, &env) : report_finish(&o, &env)) != 0)
        rc = 1;
    if (mpi_side)
        baseline_free(&bl);
    gcoll_finalize();
    return rc ? rc : all_valid ? 0 : 1;
}
