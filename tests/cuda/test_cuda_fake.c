/* Device buffers through the fake CUDA table (fake_cuda.c) on a machine with no GPU, over CUDA
 * IPC (one host) or the host-staged pipeline: every collective and the Adasum allreduce on
 * "device" buffers gcoll cannot touch from the host, in place and not, host and device buffers
 * mixed, the pipeline's slots cycled, several operations in flight, the stream attribute and the
 * gradient session; checked against reference/reference.c and reference/adasum_ref.c. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adasum_ref.h"
#include "fake_cuda.h"
#include "harness.h"
#include "reference.h"

static gcoll_comm_t world;
static size_t big; /* elements: several GCOLL_CUDA_STAGE_CHUNK chunks in every dtype */

static void *dev_copy(const void *host, size_t bytes)
{
    void *d = fake_malloc(bytes ? bytes : 1);
    fake_to_device(d, host, bytes);
    return d;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test: out of memory\n");
        exit(2);
    }
    return p;
}

/* Whether the device buffer holds exactly expect; names the first element that differs. */
static void check_dev(const void *dev, const void *expect, size_t n, size_t es, const char *what)
{
    char *h = xmalloc(n * es);
    fake_to_host(h, dev, n * es);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (memcmp(h + i * es, (const char *)expect + i * es, es) != 0)
            bad = i;
    CHECK(bad == n, "%s: element %zu of %zu differs from the reference", what, bad, n);
    free(h);
}

/* allreduce, reduce, reduce_scatter of dtype d with op at count elements. */
static void reductions(gcoll_dtype_t d, gcoll_op_t op, size_t cnt)
{
    int n = h_size, r = h_rank;
    size_t es = gcoll_dtype_size(d), bytes = cnt * es;
    char what[160];
    char *in = xmalloc(bytes * (size_t)n), *exp = xmalloc(bytes * (size_t)n);
    ref_fill_values(in, cnt * (size_t)n, r, d, op);
    ref_fill_expected(exp, 0, cnt * (size_t)n, d, op, n);
    fake_reset();
    /* allreduce: device to device, then in place */
    void *src = dev_copy(in, bytes), *dst = fake_malloc(bytes ? bytes : 1);
    snprintf(what, sizeof(what), "allreduce %s %s count %zu", gcoll_dtype_name(d), gcoll_op_name(op), cnt);
    CHECK_OK(gcoll_allreduce(src, dst, cnt, d, op, world));
    check_dev(dst, exp, cnt, es, what);
    check_dev(src, in, cnt, es, what); /* the input stays */
    CHECK_OK(gcoll_allreduce(src, src, cnt, d, op, world));
    check_dev(src, exp, cnt, es, what);
    /* reduce to the last rank; the others pass no receive buffer */
    src = dev_copy(in, bytes);
    dst = fake_malloc(bytes ? bytes : 1);
    CHECK_OK(gcoll_reduce(src, r == n - 1 ? dst : NULL, cnt, d, op, n - 1, world));
    if (r == n - 1)
        check_dev(dst, exp, cnt, es, "reduce");
    /* reduce_scatter: rank r gets block r of the reduction */
    src = dev_copy(in, bytes * (size_t)n);
    dst = fake_malloc(bytes ? bytes : 1);
    CHECK_OK(gcoll_reduce_scatter(src, dst, cnt, d, op, world));
    check_dev(dst, exp + (size_t)r * bytes, cnt, es, "reduce_scatter");
    CHECK_OK(gcoll_reduce_scatter(src, src, cnt, d, op, world)); /* in place: the result at the start */
    check_dev(src, exp + (size_t)r * bytes, cnt, es, "reduce_scatter in place");
    free(in);
    free(exp);
}

/* allgather, alltoall, bcast: byte patterns of (rank, salt). */
static void movement(size_t bytes)
{
    int n = h_size, r = h_rank;
    size_t all = bytes * (size_t)n;
    char *in = xmalloc(all), *exp = xmalloc(all);
    fake_reset();
    ref_fill_bytes(in, bytes, r, 1);
    for (int q = 0; q < n; q++)
        ref_fill_bytes(exp + (size_t)q * bytes, bytes, q, 1);
    void *src = dev_copy(in, bytes), *dst = fake_malloc(all ? all : 1);
    CHECK_OK(gcoll_allgather(src, dst, bytes, GCOLL_UINT8, world));
    check_dev(dst, exp, all, 1, "allgather");
    char *mine = xmalloc(all); /* in place: this rank's block already at its offset */
    memset(mine, 0x33, all);
    memcpy(mine + (size_t)r * bytes, in, bytes);
    void *ip = dev_copy(mine, all);
    CHECK_OK(gcoll_allgather(ip, ip, bytes, GCOLL_UINT8, world));
    check_dev(ip, exp, all, 1, "allgather in place");
    free(mine);
    for (int q = 0; q < n; q++) { /* block q goes to rank q */
        ref_fill_bytes(in + (size_t)q * bytes, bytes, r, (uint32_t)q + 2);
        ref_fill_bytes(exp + (size_t)q * bytes, bytes, q, (uint32_t)r + 2);
    }
    src = dev_copy(in, all);
    CHECK_OK(gcoll_alltoall(src, dst, bytes, GCOLL_UINT8, world));
    check_dev(dst, exp, all, 1, "alltoall");
    CHECK_OK(gcoll_alltoall(src, src, bytes, GCOLL_UINT8, world));
    check_dev(src, exp, all, 1, "alltoall in place");
    for (int root = 0; root<n; root += n> 1 ? n - 1 : 1) {
        ref_fill_bytes(exp, bytes, root, 9);
        if (r == root)
            memcpy(in, exp, bytes);
        else
            memset(in, 0x5a, bytes);
        void *buf = dev_copy(in, bytes);
        CHECK_OK(gcoll_bcast(buf, bytes, GCOLL_UINT8, root, world));
        check_dev(buf, exp, bytes, 1, "bcast");
    }
    free(in);
    free(exp);
}

/* Host send buffer with a device receive buffer and the reverse; with GCOLL_CUDA_IPC=on, which
 * admits no staging, both are refused saying why. */
static void mixed(void)
{
    size_t es = 4, bytes = big * es;
    float *in = xmalloc(bytes), *exp = xmalloc(bytes), *host = xmalloc(bytes);
    ref_fill_values(in, big, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_expected(exp, 0, big, GCOLL_FLOAT32, GCOLL_SUM, h_size);
    fake_reset();
    void *dst = fake_malloc(bytes);
    const char *ipc = getenv("GCOLL_CUDA_IPC");
    if (ipc && strcmp(ipc, "on") == 0) {
        gcoll_status_t st = gcoll_allreduce(in, dst, big, GCOLL_FLOAT32, GCOLL_SUM, world);
        CHECK(st == GCOLL_ERR_UNSUPPORTED && strstr(gcoll_last_error(), "host memory"),
              "GCOLL_CUDA_IPC=on, host send buffer: %s: %s", gcoll_status_name(st), gcoll_last_error());
        free(in);
        free(exp);
        free(host);
        return;
    }
    CHECK_OK(gcoll_allreduce(in, dst, big, GCOLL_FLOAT32, GCOLL_SUM, world));
    check_dev(dst, exp, big, es, "allreduce host to device");
    void *src = dev_copy(in, bytes);
    CHECK_OK(gcoll_allreduce(src, host, big, GCOLL_FLOAT32, GCOLL_SUM, world));
    CHECK(memcmp(host, exp, bytes) == 0, "allreduce device to host: differs from the reference");
    free(in);
    free(exp);
    free(host);
}

/* Three operations in flight, two on device buffers, waited for in reverse order. */
static void overlapped(void)
{
    size_t bytes = big * 4;
    float *in = xmalloc(bytes), *exp = xmalloc(bytes), *host = xmalloc(bytes);
    ref_fill_values(in, big, h_rank, GCOLL_FLOAT32, GCOLL_MAX);
    ref_fill_expected(exp, 0, big, GCOLL_FLOAT32, GCOLL_MAX, h_size);
    fake_reset();
    void *a = dev_copy(in, bytes), *b = dev_copy(in, bytes);
    gcoll_request_t req[3];
    CHECK_OK(gcoll_iallreduce(a, a, big, GCOLL_FLOAT32, GCOLL_MAX, world, NULL, &req[0]));
    CHECK_OK(gcoll_iallreduce(in, host, big, GCOLL_FLOAT32, GCOLL_MAX, world, NULL, &req[1]));
    CHECK_OK(gcoll_iallreduce(b, b, big, GCOLL_FLOAT32, GCOLL_MAX, world, NULL, &req[2]));
    for (int i = 2; i >= 0; i--)
        CHECK_OK(gcoll_wait(&req[i]));
    check_dev(a, exp, big, 4, "overlapped device allreduce 1");
    check_dev(b, exp, big, 4, "overlapped device allreduce 2");
    CHECK(memcmp(host, exp, bytes) == 0, "overlapped host allreduce: differs from the reference");
    free(in);
    free(exp);
    free(host);
}

/* The stream attribute: the input reaches the device by a copy queued on the caller's stream,
 * which the fake runs only when something waits for it; an operation that did not start after
 * the stream's work would reduce the zeros that were there before. */
static void stream_order(void)
{
    size_t bytes = big * 4;
    float *in = xmalloc(bytes), *exp = xmalloc(bytes), *zeros = calloc(big, 4);
    ref_fill_values(in, big, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_expected(exp, 0, big, GCOLL_FLOAT32, GCOLL_SUM, h_size);
    fake_reset();
    void *s = fake_stream(), *buf = dev_copy(zeros, bytes);
    CHECK(fake_cuda_ops.memcpy_async(buf, in, bytes, s) == 0, "queue the input copy");
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.stream = s;
    gcoll_request_t req;
    CHECK_OK(gcoll_iallreduce(buf, buf, big, GCOLL_FLOAT32, GCOLL_SUM, world, &attr, &req));
    CHECK_OK(gcoll_wait(&req));
    check_dev(buf, exp, big, 4, "allreduce ordered on a stream");
    /* without the attribute, after the copies queued on the default stream before the call (a
     * real cudaMemcpy from pageable memory can return before its bytes reach the device) */
    fake_to_device(buf, zeros, bytes);
    CHECK(fake_cuda_ops.memcpy_async(buf, in, bytes, NULL) == 0, "queue the input copy on the default stream");
    CHECK_OK(gcoll_allreduce(buf, buf, big, GCOLL_FLOAT32, GCOLL_SUM, world));
    check_dev(buf, exp, big, 4, "allreduce ordered after the default stream");
    /* top-k is refused on device buffers, saying so, and nothing starts */
    attr.stream = NULL;
    attr.compress = GCOLL_COMPRESS_TOPK;
    attr.topk_density = 0.1;
    req = NULL;
    CHECK(gcoll_iallreduce(buf, buf, big, GCOLL_FLOAT32, GCOLL_SUM, world, &attr, &req) == GCOLL_ERR_UNSUPPORTED &&
              strstr(gcoll_last_error(), "attr->compress") && !req,
          "top-k on a device buffer: %s", gcoll_last_error());
    fake_cuda_ops.stream_destroy(s);
    free(in);
    free(exp);
    free(zeros);
}

static double adasum_value(int q, size_t i, void *ctx)
{
    return adasum_ref_input(*(gcoll_dtype_t *)ctx, q, i, 77);
}

/* Whether an allreduce (or Adasum) of this many bytes of device memory reduces its staged data on
 * the GPU (IPC off, the ranks apart over TCP; more than two ranks from GCOLL_CUDA_REDUCE_MIN). */
static int gpu_reduces(size_t bytes)
{
    const char *ipc = getenv("GCOLL_CUDA_IPC"), *intra = getenv("GCOLL_TRANSPORT_INTRA"),
               *min = getenv("GCOLL_CUDA_REDUCE_MIN");
    return ipc && !strcmp(ipc, "off") && intra && !strcmp(intra, "inter") && h_size > 1 &&
        (h_size == 2 || bytes >= (min ? strtoull(min, NULL, 10) : (size_t)4 << 20));
}

/* fp16/bf16 compression of device buffers: over CUDA IPC nothing crosses a wire and the sum is
 * exact; staged, the chunks cross in the 16-bit format (converted on the GPU where it reduces). The inputs'
 * sums are exact in either format, so the result is the reference's bits. */
static void compressed(void)
{
    size_t cnt = big, bytes = cnt * 4;
    float *in = xmalloc(bytes), *exp = xmalloc(bytes);
    ref_fill_values(in, cnt, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_expected(exp, 0, cnt, GCOLL_FLOAT32, GCOLL_SUM, h_size);
    fake_reset();
    void *src = dev_copy(in, bytes), *dst = fake_malloc(bytes);
    static const gcoll_compress_t cs[] = {GCOLL_COMPRESS_FP16, GCOLL_COMPRESS_BF16};
    for (int k = 0; k < 2; k++) {
        gcoll_attr_t attr = GCOLL_ATTR_INIT;
        attr.compress = cs[k];
        gcoll_request_t req;
        unsigned long long b0 = 0, b1 = 0;
        long conv = fake_converts_run();
        CHECK_OK(gcoll_comm_bytes_sent(world, &b0));
        CHECK_OK(gcoll_iallreduce(k ? dst : src, dst, cnt, GCOLL_FLOAT32, GCOLL_SUM, world, &attr, &req));
        CHECK_OK(gcoll_wait(&req));
        CHECK_OK(gcoll_comm_bytes_sent(world, &b1));
        if (gpu_reduces(cnt * 4))
            CHECK(fake_converts_run() > conv, "compressed allreduce reducing on the GPU converted nothing there");
        check_dev(dst, exp, cnt, 4, k ? "bf16-compressed allreduce in place" : "fp16-compressed allreduce");
        /* a ring or Rabenseifner allreduce sends 2 (n - 1) / n of the elements, here 2 bytes each;
         * Rabenseifner's ranks past a power of two first send the whole vector */
        size_t n = (size_t)h_size, wire = ((n & (n - 1)) ? 3 * cnt * 2 : 2 * (n - 1) * cnt * 2 / n) + 64 * n;
        CHECK(b1 - b0 <= wire, "compressed allreduce of %zu elements sent %llu bytes, over %zu", cnt, b1 - b0, wire);
        if (k == 0)
            fake_to_device(dst, in, bytes);
    }
    free(in);
    free(exp);
}

/* Adasum with a host algorithm stages the whole buffer (norms span each tensor); halving is flat
 * over the ranks, so the reference is the tree over ranks. */
static void adasum(gcoll_dtype_t d)
{
    int n = h_size;
    size_t es = gcoll_dtype_size(d), tc[3] = {1000, 7, 2993}, cnt = 4000;
    char *in = xmalloc(cnt * es), *res = xmalloc(cnt * es);
    for (size_t i = 0; i < cnt; i++)
        ref_encode(d, adasum_value(h_rank, i, &d), in + i * es);
    fake_reset();
    void *buf = dev_copy(in, cnt * es);
    gcoll_attr_t attr = GCOLL_ATTR_INIT;
    attr.algorithm = "halving";
    gcoll_request_t req;
    const char *ipc = getenv("GCOLL_CUDA_IPC");
    if (ipc && strcmp(ipc, "on") == 0) { /* which admits no staging */
        gcoll_status_t st = gcoll_iadasum(buf, buf, cnt, d, tc, 3, world, &attr, &req);
        CHECK(st == GCOLL_ERR_UNSUPPORTED && strstr(gcoll_last_error(), "attr->algorithm"),
              "GCOLL_CUDA_IPC=on, adasum with a host algorithm: %s: %s", gcoll_status_name(st), gcoll_last_error());
        free(in);
        free(res);
        return;
    }
    CHECK_OK(gcoll_iadasum(buf, buf, cnt, d, tc, 3, world, &attr, &req));
    CHECK_OK(gcoll_wait(&req));
    fake_to_host(res, buf, cnt * es);
    double *init = calloc((size_t)n * (size_t)n, sizeof(double));
    for (int q = 0; q < n; q++)
        init[(size_t)q * (size_t)n + (size_t)q] = 1;
    adasum_ref_t ref;
    if (adasum_ref_init(&ref, n, n, init, cnt, tc, 3, adasum_value, &d) != 0) {
        CHECK(0, "adasum %s: the reference is out of memory", gcoll_dtype_name(d));
    } else {
        size_t worst;
        double err = adasum_ref_error(&ref, res, d, &worst), tol = adasum_ref_tolerance(d);
        CHECK(err <= tol, "adasum %s on the device: tensor %zu is %g off the reference, over %g", gcoll_dtype_name(d),
              worst, err, tol);
        adasum_ref_free(&ref);
    }
    free(init);
    free(in);
    free(res);
}

/* Adasum with the selection's choice: each rank's slice of the tree computed with the (fake) GPU
 * kernels over CUDA IPC on one host, or staged between ranks apart (over TCP, as between hosts);
 * the host's Adasum on the staged buffer elsewhere with GCOLL_CUDA_IPC=off. Tensors that straddle
 * the ranks' slices, one tensor, 1 and 0 elements, every floating dtype, in place and not. */
static void adasum_gpu(gcoll_dtype_t d, size_t cnt, const size_t *tc, size_t nt, int inplace)
{
    int n = h_size;
    size_t es = gcoll_dtype_size(d);
    char *in = xmalloc(cnt * es + 1), *res = xmalloc(cnt * es + 1);
    for (size_t i = 0; i < cnt; i++)
        ref_encode(d, adasum_value(h_rank, i, &d), in + i * es);
    fake_reset();
    void *send = dev_copy(in, cnt * es), *recv = inplace ? send : fake_malloc(cnt * es + 1);
    long dots = fake_dots_run();
    gcoll_request_t req;
    CHECK_OK(gcoll_iadasum(send, recv, cnt, d, tc, nt, world, NULL, &req));
    CHECK_OK(gcoll_wait(&req));
    const char *ipc = getenv("GCOLL_CUDA_IPC");
    int gpu = !(ipc && strcmp(ipc, "off") == 0) || gpu_reduces(cnt * es); /* IPC, or staged between hosts */
    if (gpu && h_rank == 0 && n > 1 && cnt > 0)                           /* rank 0 always has a slice */
        CHECK(fake_dots_run() > dots, "adasum %s of %zu on device buffers ran no GPU dot-product kernel",
              gcoll_dtype_name(d), cnt);
    fake_to_host(res, recv, cnt * es);
    double *init = calloc((size_t)n * (size_t)n, sizeof(double));
    for (int q = 0; q < n; q++)
        init[(size_t)q * (size_t)n + (size_t)q] = 1;
    adasum_ref_t ref;
    if (adasum_ref_init(&ref, n, n, init, cnt, tc, nt, adasum_value, &d) != 0) {
        CHECK(0, "adasum %s: the reference is out of memory", gcoll_dtype_name(d));
    } else {
        size_t worst = 0;
        double err = cnt ? adasum_ref_error(&ref, res, d, &worst) : 0, tol = adasum_ref_tolerance(d);
        CHECK(err <= tol, "adasum %s of %zu (%s) on the device: tensor %zu is %g off the reference, over %g",
              gcoll_dtype_name(d), cnt, inplace ? "in place" : "apart", worst, err, tol);
        adasum_ref_free(&ref);
    }
    free(init);
    free(in);
    free(res);
}

static void adasum_gpu_cases(void)
{
    static const size_t tc[3] = {1000, 7, 2993};
    adasum_gpu(GCOLL_FLOAT32, 4000, tc, 3, 1);
    adasum_gpu(GCOLL_FLOAT16, 4000, tc, 3, 0);
    adasum_gpu(GCOLL_FLOAT64, 100003, NULL, 0, 0);
    adasum_gpu(GCOLL_BFLOAT16, 1, NULL, 1, 1);
    adasum_gpu(GCOLL_FLOAT32, 0, NULL, 0, 0);
}

/* The gradient session with its sets' gradients in device memory, two iterations. */
static void session(void)
{
    size_t c[2] = {100003, 77};
    gcoll_op_t op[2] = {GCOLL_SUM, GCOLL_AVG};
    float *in[2], *exp[2];
    gcoll_session_t s;
    size_t id[2];
    CHECK_OK(gcoll_session_create(world, &s));
    for (int k = 0; k < 2; k++) {
        in[k] = xmalloc(c[k] * 4);
        exp[k] = xmalloc(c[k] * 4);
        ref_fill_values(in[k], c[k], h_rank, GCOLL_FLOAT32, op[k]);
        ref_fill_expected(exp[k], 0, c[k], GCOLL_FLOAT32, op[k], h_size);
        CHECK_OK(gcoll_session_add(s, k ? "bias" : "weight", c[k], GCOLL_FLOAT32, op[k], &id[k]));
    }
    CHECK_OK(gcoll_session_commit(s));
    for (int iter = 0; iter < 2; iter++) {
        fake_reset();
        void *d[2] = {dev_copy(in[0], c[0] * 4), dev_copy(in[1], c[1] * 4)};
        CHECK_OK(gcoll_session_start(s, id[1], d[1]));
        CHECK_OK(gcoll_session_start(s, id[0], d[0]));
        CHECK_OK(gcoll_session_wait_all(s));
        check_dev(d[0], exp[0], c[0], 4, "session set 0 on the device");
        check_dev(d[1], exp[1], c[1], 4, "session set 1 on the device");
    }
    CHECK_OK(gcoll_session_free(&s));
    for (int k = 0; k < 2; k++) {
        free(in[k]);
        free(exp[k]);
    }
}

/* gcoll_reduce_local on device buffers runs the device "kernel"; mixed buffers are refused. */
static void reduce_local(void)
{
    size_t cnt = 1001;
    float *a = xmalloc(cnt * 4), *b = xmalloc(cnt * 4), *exp = xmalloc(cnt * 4);
    ref_fill_values(a, cnt, 0, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_values(b, cnt, 1, GCOLL_FLOAT32, GCOLL_SUM);
    ref_fill_expected(exp, 0, cnt, GCOLL_FLOAT32, GCOLL_SUM, 2);
    fake_reset();
    void *da = dev_copy(a, cnt * 4), *db = dev_copy(b, cnt * 4);
    CHECK_OK(gcoll_reduce_local(da, db, cnt, GCOLL_FLOAT32, GCOLL_SUM));
    check_dev(da, exp, cnt, 4, "reduce_local on the device");
    CHECK(gcoll_reduce_local(da, b, cnt, GCOLL_FLOAT32, GCOLL_SUM) == GCOLL_ERR_INVALID_ARG &&
              strstr(gcoll_last_error(), "inout is device memory"),
          "reduce_local with one device buffer: %s", gcoll_last_error());
    free(a);
    free(b);
    free(exp);
}

/* A staged allreduce that rank 0 never joins: the others time out (GCOLL_TIMEOUT) naming a rank
 * they wait on, and the chunks' requests, events and streams are all released. */
static void staged_timeout(void)
{
    size_t bytes = big * 4;
    float *in = xmalloc(bytes);
    ref_fill_values(in, big, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    void *buf = dev_copy(in, bytes);
    if (h_rank != 0) {
        gcoll_status_t st = gcoll_allreduce(buf, buf, big, GCOLL_FLOAT32, GCOLL_SUM, world);
        CHECK(st == GCOLL_ERR_TIMEOUT && strstr(gcoll_last_error(), "no answer from rank"),
              "allreduce without rank 0: %s: %s", gcoll_status_name(st), gcoll_last_error());
    }
    free(in);
}

/* CUDA IPC refused between the processes (FAKE_CUDA_IPC_REFUSED): every rank's allreduce fails,
 * none hangs; a rank that could not map says what to do, the others name it. Buffers that cannot
 * be exported (FAKE_CUDA_EXPORT_REFUSED): every rank names the exporter and what to do. */
static void ipc_refused(void)
{
    size_t bytes = big * 4;
    float *in = xmalloc(bytes);
    ref_fill_values(in, big, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    void *buf = dev_copy(in, bytes);
    gcoll_status_t st = gcoll_allreduce(buf, buf, big, GCOLL_FLOAT32, GCOLL_SUM, world);
    const char *msg = gcoll_last_error();
    if (getenv("FAKE_CUDA_EXPORT_REFUSED"))
        CHECK(st == GCOLL_ERR_SYSTEM && strstr(msg, "could not export") && strstr(msg, "GCOLL_CUDA_IPC=off"),
              "allreduce with no IPC handle: %s: %s", gcoll_status_name(st), msg);
    else
        CHECK((st == GCOLL_ERR_SYSTEM && strstr(msg, "cudaIpcOpenMemHandle") && strstr(msg, "GCOLL_CUDA_IPC=off")) ||
                  (st == GCOLL_ERR_REMOTE && strstr(msg, "failed on rank")),
              "allreduce with IPC refused: %s: %s", gcoll_status_name(st), msg);
    free(in);
}

/* TEST_PLACEMENT=1: rank 0 passes device memory, the others host memory, for one allreduce;
 * 2: rank 0 a host receive buffer (it stages), the others device memory (IPC where it is on).
 * Every rank fails with GCOLL_ERR_INVALID_USAGE naming both sides, none hangs. */
static void placement(int mode)
{
    size_t cnt = 1000, bytes = cnt * 4;
    float *in = xmalloc(bytes), *out = xmalloc(bytes);
    ref_fill_values(in, cnt, h_rank, GCOLL_FLOAT32, GCOLL_SUM);
    int dev_send = mode == 1 ? h_rank == 0 : 1, dev_recv = mode == 1 ? h_rank == 0 : h_rank != 0;
    void *send = dev_send ? dev_copy(in, bytes) : in, *recv = dev_recv ? fake_malloc(bytes) : (void *)out;
    /* The last rank comes late: the others have failed and left gcoll for the job's barrier, and
     * (connections made on demand) must still answer its dials and owe it the failure's notice. */
    if (mode == 1 && h_size > 2 && h_rank == h_size - 1)
        usleep(300000);
    gcoll_status_t st = gcoll_allreduce(send, recv, cnt, GCOLL_FLOAT32, GCOLL_SUM, world);
    const char *msg = gcoll_last_error();
    const char *ipc = getenv("GCOLL_CUDA_IPC");
    int staged = ipc && !strcmp(ipc, "off");
    if (mode == 1)
        CHECK(st == GCOLL_ERR_INVALID_USAGE && strstr(msg, "device memory") && strstr(msg, "host memory"),
              "device buffers on rank 0 only: %s: %s", gcoll_status_name(st), msg);
    else /* the others map each other's buffers, or without IPC reduce their staged chunks on the GPU */
        CHECK(st == GCOLL_ERR_INVALID_USAGE && strstr(msg, staged ? "reduces on the GPU" : "over CUDA IPC") &&
                  strstr(msg, "stages it"),
              "a host buffer on rank 0 only: %s: %s", gcoll_status_name(st), msg);
    /* Adasum too, whose device paths (IPC, or staged with the tree on the GPU) differ from the host's */
    st = gcoll_adasum(send, recv, cnt, GCOLL_FLOAT32, NULL, 0, world);
    msg = gcoll_last_error();
    CHECK(
        st == GCOLL_ERR_INVALID_USAGE &&
            (mode == 1 ? strstr(msg, "device memory") && strstr(msg, "host memory") : strstr(msg, "stages it") != NULL),
        "adasum, %s: %s: %s", mode == 1 ? "device buffers on rank 0 only" : "a host buffer on rank 0 only",
        gcoll_status_name(st), msg);
    free(in);
    free(out);
}

static void all_cases(void)
{
    static const gcoll_dtype_t dts[] = {GCOLL_FLOAT32,     GCOLL_FLOAT16,     GCOLL_BFLOAT16, GCOLL_FLOAT64,
                                        GCOLL_FLOAT8_E4M3, GCOLL_FLOAT8_E5M2, GCOLL_INT32,    GCOLL_INT16};
    static const gcoll_op_t ops[] = {GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG};
    for (size_t i = 0; i < sizeof(dts) / sizeof(dts[0]); i++) {
        /* the reference's fp8 inputs keep every partial result exact over at most 8 ranks */
        if ((dts[i] == GCOLL_FLOAT8_E4M3 || dts[i] == GCOLL_FLOAT8_E5M2) && h_size > 8)
            continue;
        for (size_t j = 0; j < sizeof(ops) / sizeof(ops[0]); j++)
            if (!((dts[i] == GCOLL_INT32 || dts[i] == GCOLL_INT16) && ops[j] == GCOLL_AVG))
                reductions(dts[i], ops[j], j == 0 ? big : 3001);
    }
    reductions(GCOLL_FLOAT32, GCOLL_SUM, 1);
    reductions(GCOLL_FLOAT32, GCOLL_SUM, 0);
    movement(100003);
    movement(5);
    mixed();
    overlapped();
    stream_order();
    adasum(GCOLL_FLOAT32);
    adasum(GCOLL_BFLOAT16);
    adasum_gpu_cases();
    compressed();
    reduce_local();
    session();
}

/* The path: CUDA IPC (GCOLL_CUDA_IPC, FAKE_CUDA_GPUS) or the host-staged pipeline (GCOLL_CUDA_IPC=off).
 * Links the static library: installing the fake is an internal call, no public switch. */
int main(int argc, char **argv)
{
    fake_init((size_t)256 << 20);
    gcoll__cuda_set_ops(&fake_cuda_ops);
    world = h_init(&argc, &argv);
    big = getenv("TEST_QUICK") ? 40003 : 170003; /* 6+ chunks of 64K even in fp16 (the full run) */
    if (getenv("TEST_STAGED_TIMEOUT"))
        staged_timeout();
    else if (getenv("FAKE_CUDA_IPC_REFUSED") || getenv("FAKE_CUDA_EXPORT_REFUSED"))
        ipc_refused();
    else if (getenv("TEST_PLACEMENT"))
        placement(atoi(getenv("TEST_PLACEMENT")));
    else
        all_cases();
    CHECK(fake_live_events() == 0 && fake_live_streams() == 0, "CUDA events (%ld) or streams (%ld) left behind",
          fake_live_events(), fake_live_streams());
    int rc = h_finish("cuda_fake");
    if (fake_live_pinned() != 0 || fake_live_device() != 0 ||
        fake_live_mapped() != 0) { /* the caches go at gcoll_finalize */
        fprintf(
            stderr,
            "FAIL: %ld pinned blocks, %ld device allocations and %ld peer mappings were not freed by gcoll_finalize\n",
            fake_live_pinned(), fake_live_device(), fake_live_mapped());
        return 1;
    }
    return rc;
}
