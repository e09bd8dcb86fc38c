/* Many nonblocking operations at once: mixed priorities, sizes, collectives and dtypes on
 * several communicators, issued in the same order on every rank but with priorities that make
 * each rank's engine run them in a different order, and waited in yet another order. Every
 * result is checked against the independent reference. */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "harness.h"
#include "reference.h"

#define NCOMMS 3
#define NOPS 48

typedef struct {
    int kind; /* 0 allreduce, 1 bcast, 2 allgather, 3 reduce_scatter */
    gcoll_dtype_t dtype;
    gcoll_op_t op;
    size_t count;
    void *in, *out, *want;
    gcoll_request_t req;
} op_t;

static const size_t sizes[] = {0, 1, 7, 61, 1000, 4099, 65537, 300001};

/* The progress threads, found by their names in /proc, sleep under the scheduling policy that
 * GCOLL_WORKER_POLICY names (auto and batch: SCHED_BATCH; normal: the default one), and there
 * are GCOLL_WORKER_COUNT of them. */
static void check_workers(void)
{
    const char *count = getenv("GCOLL_WORKER_COUNT"), *policy = getenv("GCOLL_WORKER_POLICY");
    int want = count ? atoi(count) : 1, found = 0;
    int want_policy = policy && strcmp(policy, "normal") == 0 ? SCHED_OTHER : SCHED_BATCH;
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL, "cannot list /proc/self/task");
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[300], name[32] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int named = fgets(name, sizeof(name), f) != NULL && strncmp(name, "gcoll-wk", 8) == 0;
        fclose(f);
        if (!named)
            continue;
        found++;
        int got = sched_getscheduler(atoi(e->d_name));
        CHECK(got == want_policy, "progress thread %s runs under policy %d, not %d", e->d_name, got, want_policy);
    }
    closedir(d);
    CHECK(found == want, "%d progress threads, not %d", found, want);
}

/* tests/run.sh sets the progress threads (GCOLL_WORKER_COUNT) and the budget of bytes in flight
 * (GCOLL_INFLIGHT_BYTES). */
int main(int argc, char **argv)
{
    gcoll_comm_t world = h_init(&argc, &argv), comms[NCOMMS];
    comms[0] = world;
    for (int c = 1; c < NCOMMS; c++)
        CHECK_OK(gcoll_comm_dup(world, &comms[c]));
    static const gcoll_dtype_t dts[] = {GCOLL_FLOAT32, GCOLL_FLOAT16, GCOLL_BFLOAT16, GCOLL_INT32, GCOLL_FLOAT64};
    static const gcoll_op_t ops[] = {GCOLL_SUM, GCOLL_MAX, GCOLL_AVG, GCOLL_MIN};
    int quick = getenv("TEST_QUICK") != NULL;
    for (int round = 0; round < 3; round++) {
        op_t o[NOPS];
        for (int k = 0; k < NOPS; k++) {
            op_t *x = &o[k];
            x->kind = (k + round) % 4;
            x->dtype = dts[(k / 4 + round) % 5];
            x->op = ops[(k / 3) % 4];
            x->count = sizes[(k * 5 + round) % (quick ? 6 : 8)];
            size_t es = gcoll_dtype_size(x->dtype), n = (size_t)h_size;
            size_t in_n = x->kind == 3 ? x->count * n : x->count, out_n = x->kind == 2 ? x->count * n : x->count;
            x->in = malloc(in_n * es + 1);
            x->out = malloc(out_n * es + 1);
            x->want = malloc(out_n * es + 1);
            gcoll_attr_t attr = GCOLL_ATTR_INIT;
            attr.priority = (k * 7 + h_rank * 3) % 5; /* each rank orders them differently */
            gcoll_comm_t c = comms[k % NCOMMS];
            switch (x->kind) {
            case 0:
                ref_fill_values(x->in, in_n, h_rank, x->dtype, x->op);
                ref_fill_expected(x->want, 0, out_n, x->dtype, x->op, h_size);
                CHECK_OK(gcoll_iallreduce(x->in, x->out, x->count, x->dtype, x->op, c, &attr, &x->req));
                break;
            case 1: {
                int root = k % h_size;
                ref_fill_bytes(x->want, out_n * es, root, (uint32_t)k);
                if (h_rank == root)
                    memcpy(x->out, x->want, out_n * es);
                CHECK_OK(gcoll_ibcast(x->out, x->count, x->dtype, root, c, &attr, &x->req));
                break;
            }
            case 2:
                ref_fill_bytes(x->in, in_n * es, h_rank, (uint32_t)k);
                for (int r = 0; r < h_size; r++)
                    ref_fill_bytes((char *)x->want + (size_t)r * x->count * es, x->count * es, r, (uint32_t)k);
                CHECK_OK(gcoll_iallgather(x->in, x->out, x->count, x->dtype, c, &attr, &x->req));
                break;
            default:
                ref_fill_values(x->in, in_n, h_rank, x->dtype, x->op);
                ref_fill_expected(x->want, (size_t)h_rank * x->count, out_n, x->dtype, x->op, h_size);
                CHECK_OK(gcoll_ireduce_scatter(x->in, x->out, x->count, x->dtype, x->op, c, &attr, &x->req));
                break;
            }
        }
        /* wait from the middle outwards, testing the others meanwhile */
        for (int j = 0; j < NOPS; j++) {
            int k = (j * 17 + NOPS / 2) % NOPS;
            int done = 0;
            for (int t = 0; t < NOPS; t++)
                if (o[t].req)
                    CHECK_OK(gcoll_test(&o[t].req, &done));
            if (o[k].req)
                CHECK_OK(gcoll_wait(&o[k].req));
        }
        for (int k = 0; k < NOPS; k++) {
            op_t *x = &o[k];
            size_t out_n = x->kind == 2 ? x->count * (size_t)h_size : x->count;
            CHECK(memcmp(x->out, x->want, out_n * gcoll_dtype_size(x->dtype)) == 0,
                  "round %d op %d (kind %d, %s, %s, count %zu): wrong result", round, k, x->kind,
                  gcoll_dtype_name(x->dtype), gcoll_op_name(x->op), x->count);
            free(x->in);
            free(x->out);
            free(x->want);
        }
    }
    /* with nothing in flight the progress threads sleep: the process takes no CPU while the
     * application does not */
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    nanosleep(&(struct timespec){0, 400 * 1000 * 1000}, NULL);
    getrusage(RUSAGE_SELF, &r1);
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
        (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    CHECK(cpu < 0.04, "idle for 0.4 s, the process used %.3f s of CPU", cpu);
    check_workers();
    for (int c = 1; c < NCOMMS; c++)
        CHECK_OK(gcoll_comm_free(&comms[c]));
    return h_finish("overlap");
}
