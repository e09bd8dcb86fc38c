// Device kernels for libgcoll_cuda.so, which libgcoll loads with dlopen (src/cuda/loader.c):
// elementwise reduction (sum, prod, min, max) and the AVG division for fp32, fp64, fp16 and bf16,
// and Adasum's per-tensor dot/norms (accumulated in double) and scaled add. One template per
// kernel keeps nvcc's time modest. The entry points are C functions returning a cudaError_t.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>

#include "gcoll.h"
#include "cuda/rt_abi.h"

static_assert(sizeof(gcoll__cuda_ptr_attr) >= sizeof(cudaPointerAttributes) &&
                  offsetof(gcoll__cuda_ptr_attr, type) == offsetof(cudaPointerAttributes, type) &&
                  offsetof(gcoll__cuda_ptr_attr, device) == offsetof(cudaPointerAttributes, device),
              "src/cuda/rt_abi.h no longer matches this toolkit's struct cudaPointerAttributes");

#define GCOLL_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

template <typename T> struct conv;
template <> struct conv<float> {
    __device__ static float in(float v) { return v; }
    __device__ static float out(float v) { return v; }
};
template <> struct conv<double> {
    __device__ static double in(double v) { return v; }
    __device__ static double out(double v) { return v; }
};
template <> struct conv<__half> {
    __device__ static float in(__half v) { return __half2float(v); }
    __device__ static __half out(float v) { return __float2half_rn(v); }
};
template <> struct conv<__nv_bfloat16> {
    __device__ static float in(__nv_bfloat16 v) { return __bfloat162float(v); }
    __device__ static __nv_bfloat16 out(float v) { return __float2bfloat16_rn(v); }
};
template <typename T> struct acc { typedef float type; };
template <> struct acc<double> { typedef double type; };

template <typename T, int OP>
__global__ void reduce_kernel(T *dst, const T *a, const T *b, size_t n)
{
    typedef typename acc<T>::type A;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        A x = conv<T>::in(a[i]), y = conv<T>::in(b[i]), r;
        if (OP == GCOLL_SUM)
            r = x + y;
        else if (OP == GCOLL_PROD)
            r = x * y;
        else if (OP == GCOLL_MIN)
            r = x < y ? x : y;
        else
            r = x > y ? x : y;
        dst[i] = conv<T>::out(r);
    }
}

template <typename T>
__global__ void div_kernel(T *buf, size_t n, unsigned divisor)
{
    typedef typename acc<T>::type A;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = conv<T>::out(conv<T>::in(buf[i]) / (A)divisor);
}

// out[0] += a.b, out[1] += a.a, out[2] += b.b, in double.
template <typename T>
__global__ void dots_kernel(const T *a, const T *b, size_t n, double *out)
{
    double d = 0, na = 0, nb = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double x = conv<T>::in(a[i]), y = conv<T>::in(b[i]);
        d += x * y;
        na += x * x;
        nb += y * y;
    }
    for (int off = 16; off; off >>= 1) {
        d += __shfl_down_sync(0xffffffffu, d, off);
        na += __shfl_down_sync(0xffffffffu, na, off);
        nb += __shfl_down_sync(0xffffffffu, nb, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(out, d);
        atomicAdd(out + 1, na);
        atomicAdd(out + 2, nb);
    }
}

template <typename T>
__global__ void scaled_add_kernel(T *dst, double ca, const T *a, double cb, const T *b, size_t n)
{
    typedef typename acc<T>::type A;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = conv<T>::out((A)(ca * conv<T>::in(a[i]) + cb * conv<T>::in(b[i])));
}

static unsigned blocks(size_t n)
{
    size_t b = (n + 255) / 256;
    return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

template <typename T>
static int reduce_t(void *dst, const void *a, const void *b, size_t n, int op, cudaStream_t s)
{
    T *d = (T *)dst;
    const T *x = (const T *)a, *y = (const T *)b;
    switch (op) {
    case GCOLL_SUM: case GCOLL_AVG: reduce_kernel<T, GCOLL_SUM><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    case GCOLL_PROD: reduce_kernel<T, GCOLL_PROD><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    case GCOLL_MIN: reduce_kernel<T, GCOLL_MIN><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    case GCOLL_MAX: reduce_kernel<T, GCOLL_MAX><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

// The dtype switch every entry point shares: F(T) for the four floating types.
#define DISPATCH(dtype, F)                                  \
    switch (dtype) {                                        \
    case GCOLL_FLOAT32: return F(float);                    \
    case GCOLL_FLOAT64: return F(double);                   \
    case GCOLL_FLOAT16: return F(__half);                   \
    case GCOLL_BFLOAT16: return F(__nv_bfloat16);           \
    default: return cudaErrorInvalidValue;                  \
    }

GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op,
                                               void *stream)
{
#define F(T) reduce_t<T>(dst, a, b, n, op, (cudaStream_t)stream)
    DISPATCH(dtype, F)
#undef F
}

GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_div(void *buf, size_t n, unsigned divisor, int dtype, void *stream)
{
#define F(T) (div_kernel<T><<<blocks(n), 256, 0, (cudaStream_t)stream>>>((T *)buf, n, divisor), cudaGetLastError())
    DISPATCH(dtype, F)
#undef F
}

// out: three doubles in device memory, zeroed here before the sums.
GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_adasum_dots(const void *a, const void *b, size_t n, int dtype, double *out,
                                                    void *stream)
{
    cudaError_t e = cudaMemsetAsync(out, 0, 3 * sizeof(double), (cudaStream_t)stream);
    if (e != cudaSuccess)
        return e;
#define F(T) (dots_kernel<T><<<blocks(n), 256, 0, (cudaStream_t)stream>>>((const T *)a, (const T *)b, n, out), \
              cudaGetLastError())
    DISPATCH(dtype, F)
#undef F
}

GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_scaled_add(void *dst, double ca, const void *a, double cb, const void *b,
                                                   size_t n, int dtype, void *stream)
{
#define F(T) (scaled_add_kernel<T><<<blocks(n), 256, 0, (cudaStream_t)stream>>>((T *)dst, ca, (const T *)a, cb, \
              (const T *)b, n), cudaGetLastError())
    DISPATCH(dtype, F)
#undef F
}
