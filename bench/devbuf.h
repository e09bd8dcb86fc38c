/* gcoll_bench's buffers in host or GPU memory (-d cuda). The CUDA runtime is loaded with dlopen,
 * as libgcoll does, so the benchmark builds and runs where there is no CUDA. */
#ifndef GCOLL_BENCH_DEVBUF_H
#define GCOLL_BENCH_DEVBUF_H

#include <stddef.h>

/* Loads the runtime and picks GPU (rank modulo the GPU count). 0, or -1 with why in err. */
int devbuf_cuda_open(int rank, char *err, size_t errlen);
/* device 0: host memory (malloc), 1: GPU memory. NULL when out of memory. */
void *devbuf_alloc(int device, size_t bytes);
void devbuf_free(int device, void *p);
void devbuf_put(int device, void *dst, const void *src, size_t bytes); /* from host memory */
void devbuf_get(int device, void *dst, const void *src, size_t bytes); /* to host memory */
/* Pinned host <-> device copy bandwidth in GB/s over bytes, best of reps: the ceiling of the
 * staged pipeline. 0 on failure. */
void devbuf_pinned_gbps(size_t bytes, int reps, double *h2d, double *d2h);
/* Waits for the work queued on the GPU (cudaDeviceSynchronize): 0, or -1 when it failed. */
int devbuf_sync(void);
/* Device memory bandwidth in GB/s, bytes read plus bytes written, of a copy of bytes within
 * the GPU, best of reps: the ceiling of collectives whose ranks share one GPU. 0 on failure. */
double devbuf_device_gbps(size_t bytes, int reps);

#endif
