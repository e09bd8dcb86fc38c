/* The CUDA runtime structures gcoll passes to libcudart without its headers (src/cuda/loader.c
 * builds with none), and the limit libgcoll and libgcoll_cuda.so share. kernels.cu, which nvcc
 * builds against the real headers, checks them, so a toolkit that changes a layout fails the
 * build instead of the runtime writing past the end of gcoll's copy (CUDA 13 added reserved[8]). */
#ifndef GCOLL_CUDA_RT_ABI_H
#define GCOLL_CUDA_RT_ABI_H

struct gcoll__cuda_ptr_attr {
    int type; /* cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed */
    int device;
    void *device_ptr, *host_ptr;
    long reserved[8]; /* CUDA 13; earlier runtimes leave it alone */
};

/* cudaIpcMemHandle_t: 64 opaque bytes. */
typedef struct {
    unsigned char bytes[64];
} gcoll__cuda_ipc_handle_t;

/* gcoll_cuda_kernel_reduce_multi's most sources, and most destinations. */
#define GCOLL_CUDA_MULTI_MAX 16

#endif
