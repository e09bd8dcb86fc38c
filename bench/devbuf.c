/* See devbuf.h: the benchmark's host or GPU buffers through a dlopen'd CUDA runtime, and the
 * pinned-copy and device-memory bandwidths the report prints. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devbuf.h"

static struct {
    int (*get_device_count)(int *);
    int (*set_device)(int);
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*memcpy_)(void *, const void *, size_t, int);
    int (*host_alloc)(void **, size_t, unsigned);
    int (*free_host)(void *);
    int (*sync)(void);
    const char *(*error_string)(int);
} rt;

int devbuf_cuda_open(int rank, char *err, size_t errlen)
{
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++)
        h = dlopen(names[i], RTLD_NOW);
    if (!h) {
        snprintf(err, errlen, "no CUDA runtime (libcudart) found");
        return -1;
    }
    struct {
        void **slot;
        const char *sym;
    } syms[] = {{(void **)&rt.get_device_count, "cudaGetDeviceCount"},
                {(void **)&rt.set_device, "cudaSetDevice"},
                {(void **)&rt.malloc_, "cudaMalloc"},
                {(void **)&rt.free_, "cudaFree"},
                {(void **)&rt.memcpy_, "cudaMemcpy"},
                {(void **)&rt.host_alloc, "cudaHostAlloc"},
                {(void **)&rt.free_host, "cudaFreeHost"},
                {(void **)&rt.sync, "cudaDeviceSynchronize"},
                {(void **)&rt.error_string, "cudaGetErrorString"}};
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].sym))) {
            snprintf(err, errlen, "the CUDA runtime lacks %s", syms[i].sym);
            return -1;
        }
    int n = 0, e = rt.get_device_count(&n);
    if (e || n <= 0) {
        snprintf(err, errlen, "no GPU visible (%s)", e ? rt.error_string(e) : "cudaGetDeviceCount found none");
        return -1;
    }
    if ((e = rt.set_device(rank % n)) != 0) {
        snprintf(err, errlen, "cudaSetDevice(%d): %s", rank % n, rt.error_string(e));
        return -1;
    }
    return 0;
}

void *devbuf_alloc(int device, size_t bytes)
{
    void *p = NULL;
    if (!device)
        return malloc(bytes);
    return rt.malloc_(&p, bytes) == 0 ? p : NULL;
}

void devbuf_free(int device, void *p)
{
    if (!device)
        free(p);
    else if (p)
        rt.free_(p);
}

void devbuf_put(int device, void *dst, const void *src, size_t bytes)
{
    if (!device)
        memcpy(dst, src, bytes);
    else if (bytes && rt.memcpy_(dst, src, bytes, 4 /* cudaMemcpyDefault */) != 0)
        fprintf(stderr, "gcoll_bench: cudaMemcpy to the device failed\n");
}

void devbuf_get(int device, void *dst, const void *src, size_t bytes)
{
    devbuf_put(device, dst, src, bytes);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void devbuf_pinned_gbps(size_t bytes, int reps, double *h2d, double *d2h)
{
    void *host = NULL, *dev = NULL;
    *h2d = *d2h = 0;
    if (rt.host_alloc(&host, bytes, 0) != 0 || rt.malloc_(&dev, bytes) != 0)
        goto out;
    memset(host, 1, bytes);
    for (int i = 0; i < reps; i++) { /* cudaMemcpy from pinned memory returns once the copy is done */
        double t0 = now_s();
        rt.memcpy_(dev, host, bytes, 4);
        double t1 = now_s();
        rt.memcpy_(host, dev, bytes, 4);
        double t2 = now_s();
        if ((double)bytes / (t1 - t0) / 1e9 > *h2d)
            *h2d = (double)bytes / (t1 - t0) / 1e9;
        if ((double)bytes / (t2 - t1) / 1e9 > *d2h)
            *d2h = (double)bytes / (t2 - t1) / 1e9;
    }
out:
    if (host)
        rt.free_host(host);
    if (dev)
        rt.free_(dev);
}

int devbuf_sync(void)
{
    return rt.sync() == 0 ? 0 : -1;
}

double devbuf_device_gbps(size_t bytes, int reps)
{
    void *a = NULL, *b = NULL;
    double best = 0;
    if (rt.malloc_(&a, bytes) == 0 && rt.malloc_(&b, bytes) == 0) {
        rt.memcpy_(b, a, bytes, 4); /* warm-up */
        rt.sync();
        for (int i = 0; i < reps; i++) { /* a copy on the device returns before it is done */
            double t0 = now_s();
            rt.memcpy_(b, a, bytes, 4);
            rt.sync();
            double gbps = 2.0 * (double)bytes / (now_s() - t0) / 1e9;
            best = gbps > best ? gbps : best;
        }
    }
    if (a)
        rt.free_(a);
    if (b)
        rt.free_(b);
    return best;
}
