/* Collectives on real GPU memory: every collective x fp32/fp64/fp16/bf16 x op on cudaMalloc'd
 * buffers (allreduce also in place and with chunks small enough to pipeline), the stream
 * attribute, and the kernels of libgcoll_cuda.so (reduction, Adasum dot/norms, scaled add)
 * against host references. The CUDA runtime is loaded with dlopen, as libgcoll does, so this
 * builds where CUDA is absent. Ranks share GPUs round-robin. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reference.h"
#include "adasum_ref.h"

static gcoll_comm_t world;
static struct {
    int (*get_device_count)(int *);
    int (*set_device)(int);
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*memcpy_)(void *, const void *, size_t, int);
    int (*memcpy_async)(void *, const void *, size_t, int, void *);
    int (*sync)(void);
    int (*stream_create)(void **);
    int (*stream_sync)(void *);
    int (*stream_destroy)(void *);
    const char *(*error_string)(int);
} rt;
static int (*k_dots)(const void *, const void *, size_t, int, double *, void *);
static int (*k_scaled_add)(void *, double, const void *, double, const void *, size_t, int, void *);

/* NULL when the runtime and a GPU are there, else why not. */
static const char *load_cuda(void)
{
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++)
        h = dlopen(names[i], RTLD_NOW);
    if (!h)
        return "no CUDA runtime: libcudart not found";
    struct {
        void **slot;
        const char *sym;
    } syms[] = {{(void **)&rt.get_device_count, "cudaGetDeviceCount"},
                {(void **)&rt.set_device, "cudaSetDevice"},
                {(void **)&rt.malloc_, "cudaMalloc"},
                {(void **)&rt.free_, "cudaFree"},
                {(void **)&rt.memcpy_, "cudaMemcpy"},
                {(void **)&rt.memcpy_async, "cudaMemcpyAsync"},
                {(void **)&rt.sync, "cudaDeviceSynchronize"},
                {(void **)&rt.stream_create, "cudaStreamCreate"},
                {(void **)&rt.stream_sync, "cudaStreamSynchronize"},
                {(void **)&rt.stream_destroy, "cudaStreamDestroy"},
                {(void **)&rt.error_string, "cudaGetErrorString"}};
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].sym)))
            return "the CUDA runtime lacks a function this test needs";
    int n = 0, e = rt.get_device_count(&n);
    if (e)
        return rt.error_string(e);
    if (n <= 0)
        return "cudaGetDeviceCount found none";
    if ((e = rt.set_device(h_rank % n)) != 0)
        return rt.error_string(e);
    void *k = dlopen("libgcoll_cuda.so", RTLD_NOW); /* the test's rpath holds lib/ */
    if (k) {
        *(void **)&k_dots = dlsym(k, "gcoll_cuda_kernel_adasum_dots");
        *(void **)&k_scaled_add = dlsym(k, "gcoll_cuda_kernel_scaled_add");
    }
    return NULL;
}

static void *dmalloc(size_t bytes)
{
    void *p = NULL;
    int e = rt.malloc_(&p, bytes ? bytes : 1);
    if (e) {
        fprintf(stderr, "test: cudaMalloc(%zu): %s\n", bytes, rt.error_string(e));
        exit(2);
    }
    return p;
}

static void *hmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        exit(2);
    return p;
}

static void *dev_copy(const void *host, size_t bytes)
{
    void *d = dmalloc(bytes);
    CHECK(rt.memcpy_(d, host, bytes, 4) == 0, "cudaMemcpy to the device");
    return d;
}

static void check_dev(const void *dev, const void *expect, size_t bytes, const char *what)
{
    char *h = hmalloc(bytes);
    CHECK(rt.memcpy_(h, dev, bytes, 4) == 0, "%s: cudaMemcpy to the host", what);
    CHECK(memcmp(h, expect, bytes) == 0, "%s: differs from the reference", what);
    free(h);
}

static void reductions(gcoll_dtype_t d, gcoll_op_t op, size_t cnt)
{
    int n = h_size, r = h_rank;
    size_t es = gcoll_dtype_size(d), bytes = cnt * es;
    char what[128];
    snprintf(what, sizeof(what), "%s %s count %zu", gcoll_dtype_name(d), gcoll_op_name(op), cnt);
    char *in = hmalloc(bytes * (size_t)n), *exp = hmalloc(bytes * (size_t)n);
    ref_fill_values(in, cnt * (size_t)n, r, d, op);
    ref_fill_expected(exp, 0, cnt * (size_t)n, d, op, n);
    void *src = dev_copy(in, bytes), *dst = dmalloc(bytes * (size_t)n);
    CHECK_OK(gcoll_allreduce(src, dst, cnt, d, op, world));
    check_dev(dst, exp, bytes, what);
    CHECK_OK(gcoll_allreduce(src, src, cnt, d, op, world));
    check_dev(src, exp, bytes, what);
    rt.free_(src);
    src = dev_copy(in, bytes);
    CHECK_OK(gcoll_reduce(src, r == 0 ? dst : NULL, cnt, d, op, 0, world));
    if (r == 0)
        check_dev(dst, exp, bytes, what);
    rt.free_(src);
    src = dev_copy(in, bytes * (size_t)n);
    CHECK_OK(gcoll_reduce_scatter(src, dst, cnt, d, op, world));
    check_dev(dst, exp + (size_t)r * bytes, bytes, what);
    rt.free_(src);
    rt.free_(dst);
    free(in);
    free(exp);
}

static void movement(size_t bytes)
{
    int n = h_size, r = h_rank;
    size_t all = bytes * (size_t)n;
    char *in = hmalloc(all), *exp = hmalloc(all);
    ref_fill_bytes(in, bytes, r, 1);
    for (int q = 0; q < n; q++)
        ref_fill_bytes(exp + (size_t)q * bytes, bytes, q, 1);
    void *src = dev_copy(in, bytes), *dst = dmalloc(all);
    CHECK_OK(gcoll_allgather(src, dst, bytes, GCOLL_UINT8, world));
    check_dev(dst, exp, all, "allgather");
    rt.free_(src);
    for (int q = 0; q < n; q++) {
        ref_fill_bytes(in + (size_t)q * bytes, bytes, r, (uint32_t)q + 2);
        ref_fill_bytes(exp + (size_t)q * bytes, bytes, q, (uint32_t)r + 2);
    }
    src = dev_copy(in, all);
    CHECK_OK(gcoll_alltoall(src, dst, bytes, GCOLL_UINT8, world));
    check_dev(dst, exp, all, "alltoall");
    rt.free_(src);
    ref_fill_bytes(exp, bytes, n - 1, 9);
    if (r != n - 1)
        memset(exp + bytes, 0x5a, bytes);
    void *buf = dev_copy(r == n - 1 ? exp : exp + bytes, bytes);
    CHECK_OK(gcoll_bcast(buf, bytes, GCOLL_UINT8, n - 1, world));
    check_dev(buf, exp, bytes, "bcast");
    rt.free_(buf);
    rt.free_(dst);
    free(in);
    free(exp);
}

/* The input arrives by a copy queued on the caller's stream; the operation must see it. */
static void stream_order(size_t cnt)
{
    size_t bytes = cnt * 4;
    float *in = hmalloc(bytes), *exp = hmalloc(bytes);
    ref_fill_values(in, cnt, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_expected(exp, 0, cnt, GCOLL_FLOAT32, GCOLL_SUM, h_size);
    void *s = NULL, *buf = dmalloc(bytes);
    CHECK(rt.stream_create(&s) == 0, "cudaStreamCreate");
    CHECK(rt.memcpy_async(buf, in, bytes, 4, s) == 0, "cudaMemcpyAsync");
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.stream = s;
    gcoll_request_t req;
    CHECK_OK(gcoll_iallreduce(buf, buf, cnt, GCOLL_FLOAT32, GCOLL_SUM, world, &attr, &req));
    CHECK_OK(gcoll_wait(&req));
    rt.stream_sync(s);
    check_dev(buf, exp, bytes, "allreduce ordered on a stream");
    rt.stream_destroy(s);
    rt.free_(buf);
    free(in);
    free(exp);
}

/* The kernels library: Adasum's dot/norms and scaled add directly, the reduction through
 * gcoll_reduce_local. */
static void kernels(void)
{
    if (!k_dots || !k_scaled_add) {
        CHECK(0, "libgcoll_cuda.so (beside libgcoll.so) or its Adasum kernels not found");
        return;
    }
    size_t n = 100003;
    float *a = hmalloc(n * 4), *b = hmalloc(n * 4), *got = hmalloc(n * 4);
    double dot = 0, na = 0, nb = 0, dots[3];
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)((double)ref_hash(1, (uint32_t)i, 3) / 4294967296.0 - 0.5);
        b[i] = (float)((double)ref_hash(2, (uint32_t)i, 3) / 4294967296.0 - 0.5);
        dot += (double)a[i] * b[i], na += (double)a[i] * a[i], nb += (double)b[i] * b[i];
    }
    void *da = dev_copy(a, n * 4), *db = dev_copy(b, n * 4), *dd = dmalloc(3 * sizeof(double));
    CHECK(k_dots(da, db, n, GCOLL_FLOAT32, dd, NULL) == 0, "adasum dots kernel");
    rt.memcpy_(dots, dd, sizeof(dots), 4);
    CHECK(fabs(dots[0] - dot) <= 1e-9 * na && fabs(dots[1] - na) <= 1e-9 * na && fabs(dots[2] - nb) <= 1e-9 * nb,
          "adasum dots: %g %g %g, want %g %g %g", dots[0], dots[1], dots[2], dot, na, nb);
    CHECK(k_scaled_add(da, 0.75, da, 0.25, db, n, GCOLL_FLOAT32, NULL) == 0, "scaled add kernel");
    rt.memcpy_(got, da, n * 4, 4);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (got[i] != (float)(0.75 * a[i] + 0.25 * b[i]))
            bad = i;
    CHECK(bad == n, "scaled add: element %zu differs", bad);
    rt.memcpy_(da, a, n * 4, 4);
    CHECK_OK(gcoll_reduce_local(da, db, n, GCOLL_FLOAT32, GCOLL_MAX));
    rt.memcpy_(got, da, n * 4, 4);
    bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (got[i] != (a[i] > b[i] ? a[i] : b[i]))
            bad = i;
    CHECK(bad == n, "reduce_local max on the device: element %zu differs", bad);
    rt.free_(da);
    rt.free_(db);
    rt.free_(dd);
    free(a);
    free(b);
    free(got);
}

/* fp16/bf16 compression on device buffers, of inputs whose sums are exact in either format, so
 * the result is the reference's bits on every path (IPC: exact; staged: the 16-bit wire,
 * converted on the GPU where the chunks reduce there). */
static void compressed(size_t cnt)
{
    size_t bytes = cnt * 4;
    float *in = hmalloc(bytes), *exp = hmalloc(bytes);
    ref_fill_values(in, cnt, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_expected(exp, 0, cnt, GCOLL_FLOAT32, GCOLL_SUM, h_size);
    void *src = dev_copy(in, bytes), *dst = dmalloc(bytes);
    for (int k = 0; k < 2; k++) {
        gcoll_attr_t attr = GCOLL_ATTR_INIT;
        attr.compress = k ? GCOLL_COMPRESS_BF16 : GCOLL_COMPRESS_FP16;
        gcoll_request_t req;
        CHECK_OK(gcoll_iallreduce(src, dst, cnt, GCOLL_FLOAT32, GCOLL_SUM, world, &attr, &req));
        CHECK_OK(gcoll_wait(&req));
        check_dev(dst, exp, bytes, k ? "bf16-compressed allreduce" : "fp16-compressed allreduce");
    }
    rt.free_(src);
    rt.free_(dst);
    free(in);
    free(exp);
}

static double adasum_value(int q, size_t i, void *ctx)
{
    return adasum_ref_input(*(gcoll_dtype_t *)ctx, q, i, 91);
}

/* Adasum on device buffers (over CUDA IPC on one host: the tree on the GPU), tensors straddling
 * the ranks' slices, against the independent reference. */
static void adasum_dev(gcoll_dtype_t d, size_t cnt, int inplace)
{
    int n = h_size;
    size_t es = gcoll_dtype_size(d), tc[3] = {cnt / 2, 13, cnt - cnt / 2 - 13};
    char *in = hmalloc(cnt * es), *res = hmalloc(cnt * es);
    for (size_t i = 0; i < cnt; i++)
        ref_encode(d, adasum_value(h_rank, i, &d), in + i * es);
    void *send = dev_copy(in, cnt * es), *recv = inplace ? send : dmalloc(cnt * es);
    CHECK_OK(gcoll_adasum(send, recv, cnt, d, tc, 3, world));
    CHECK(rt.memcpy_(res, recv, cnt * es, 4) == 0, "cudaMemcpy to the host");
    double *init = calloc((size_t)n * (size_t)n, sizeof(double));
    for (int q = 0; q < n; q++)
        init[(size_t)q * (size_t)n + (size_t)q] = 1;
    adasum_ref_t ref;
    if (!init || adasum_ref_init(&ref, n, n, init, cnt, tc, 3, adasum_value, &d) != 0) {
        CHECK(0, "adasum %s: the reference is out of memory", gcoll_dtype_name(d));
    } else {
        size_t worst = 0;
        double err = adasum_ref_error(&ref, res, d, &worst), tol = adasum_ref_tolerance(d);
        CHECK(err <= tol, "adasum %s of %zu on the GPU: tensor %zu is %g off the reference, over %g",
              gcoll_dtype_name(d), cnt, worst, err, tol);
        adasum_ref_free(&ref);
    }
    if (!inplace)
        rt.free_(recv);
    rt.free_(send);
    free(init);
    free(in);
    free(res);
}

int main(int argc, char **argv)
{
    world = h_init(&argc, &argv);
    /* With no GPU visible: "SKIP: no GPU visible (why)" and nothing checked (tests/run.sh counts it
     * as skipped). */
    const char *why = load_cuda();
    if (why) {
        if (h_rank == 0)
            printf("SKIP: no GPU visible (%s)\n", why);
        return h_finish("cuda");
    }
    if (getenv("TEST_PROBE")) /* tests/run.sh: only whether a GPU is visible */
        return h_finish("cuda");
    static const gcoll_dtype_t dts[] = {GCOLL_FLOAT32, GCOLL_FLOAT64, GCOLL_FLOAT16, GCOLL_BFLOAT16};
    static const gcoll_op_t ops[] = {GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG};
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 5; j++)
            reductions(dts[i], ops[j], j == 0 ? (size_t)3 << 20 : 100003); /* 3 Mi: several 4M chunks */
    reductions(GCOLL_FLOAT32, GCOLL_SUM, 1);
    movement(1000003);
    stream_order(1 << 20);
    kernels();
    compressed((size_t)3 << 20);
    adasum_dev(GCOLL_FLOAT32, 1000003, 0);
    adasum_dev(GCOLL_FLOAT16, 100003, 1);
    adasum_dev(GCOLL_FLOAT64, 4099, 0);
    return h_finish("cuda");
}
