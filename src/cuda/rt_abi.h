/* The one CUDA runtime structure gcoll passes to libcudart without its headers (src/cuda/loader.c
 * builds with none). kernels.cu, which nvcc builds against the real headers, checks it against
 * struct cudaPointerAttributes, so a toolkit that changes the layout fails the build instead of
 * the runtime writing past the end of gcoll's copy (CUDA 13 added reserved[8]). */
#ifndef GCOLL_CUDA_RT_ABI_H
#define GCOLL_CUDA_RT_ABI_H

struct gcoll__cuda_ptr_attr {
    int type;   /* cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed */
    int device;
    void *device_ptr, *host_ptr;
    long reserved[8]; /* CUDA 13; earlier runtimes leave it alone */
};

#endif
