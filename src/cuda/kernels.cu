// Device kernels for libgcoll_cuda.so, which libgcoll loads with dlopen (src/cuda/loader.c):
// elementwise reduction (sum, prod, min, max) and the AVG division for fp32, fp64, fp16, bf16 and
// both fp8 formats, the many-buffer reduction of the CUDA IPC path (every dtype), Adasum's
// per-tensor dot/norms (accumulated in double) and scaled add, and compression's fp32 <->
// fp16/bf16 conversion. The entry points are C functions returning a cudaError_t.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <type_traits>

#include "gcoll.h"
#include "cuda/rt_abi.h"

static_assert(sizeof(gcoll__cuda_ptr_attr) >= sizeof(cudaPointerAttributes) &&
                  offsetof(gcoll__cuda_ptr_attr, type) == offsetof(cudaPointerAttributes, type) &&
                  offsetof(gcoll__cuda_ptr_attr, device) == offsetof(cudaPointerAttributes, device),
              "src/cuda/rt_abi.h no longer matches this toolkit's struct cudaPointerAttributes");
static_assert(sizeof(gcoll__cuda_ipc_handle_t) == sizeof(cudaIpcMemHandle_t),
              "src/cuda/rt_abi.h no longer matches this toolkit's cudaIpcMemHandle_t");

#define GCOLL_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

template <typename T> struct conv {
    __device__ static T in(T v)
    {
        return v;
    }
    __device__ static T out(T v)
    {
        return v;
    }
};
template <> struct conv<__half> {
    __device__ static float in(__half v)
    {
        return __half2float(v);
    }
    __device__ static __half out(float v)
    {
        return __float2half_rn(v);
    }
};
template <> struct conv<__nv_bfloat16> {
    __device__ static float in(__nv_bfloat16 v)
    {
        return __bfloat162float(v);
    }
    __device__ static __nv_bfloat16 out(float v)
    {
        return __float2bfloat16_rn(v);
    }
};
// fp8 elements as raw codes. They compute in fp32 and round once to nearest even as the host
// kernels do (src/base/fp8.h): E4M3 saturates at +-448 (SATFINITE), E5M2 overflows to infinity.
struct fp8_e4m3 {
    __nv_fp8_storage_t x;
};
struct fp8_e5m2 {
    __nv_fp8_storage_t x;
};
template <> struct conv<fp8_e4m3> {
    __device__ static float in(fp8_e4m3 v)
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(v.x, __NV_E4M3)));
    }
    __device__ static fp8_e4m3 out(float v)
    {
        return {__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3)};
    }
};
template <> struct conv<fp8_e5m2> {
    __device__ static float in(fp8_e5m2 v)
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(v.x, __NV_E5M2)));
    }
    __device__ static fp8_e5m2 out(float v)
    {
        return {__nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E5M2)};
    }
};
template <typename T> struct acc {
    typedef T type;
};
template <> struct acc<fp8_e4m3> {
    typedef float type;
};
template <> struct acc<fp8_e5m2> {
    typedef float type;
};
template <> struct acc<__half> {
    typedef float type;
};
template <> struct acc<__nv_bfloat16> {
    typedef float type;
};

// Float min/max as the host kernels do them: a NaN propagates, and min(-0,+0) is -0 and
// max(-0,+0) +0 in either order, so ranks that combine in different orders get the same bits.
__device__ static float same_bits(float x, float y, bool min)
{
    unsigned a = __float_as_uint(x), b = __float_as_uint(y);
    return __uint_as_float(min ? a | b : a & b);
}
__device__ static double same_bits(double x, double y, bool min)
{
    long long a = __double_as_longlong(x), b = __double_as_longlong(y);
    return __longlong_as_double(min ? a | b : a & b);
}

template <int OP, typename A> __device__ static A combine(A x, A y)
{
    if (OP == GCOLL_SUM)
        return x + y;
    if (OP == GCOLL_PROD)
        return x * y;
    A r = OP == GCOLL_MIN ? (x < y ? x : y) : (x > y ? x : y);
    if constexpr (std::is_floating_point<A>::value) {
        if (x != x || y != y)
            return x + y;
        if (x == y)
            return same_bits(x, y, OP == GCOLL_MIN);
    }
    return r;
}

template <typename T, int OP> __global__ void reduce_kernel(T *dst, const T *a, const T *b, size_t n)
{
    typedef typename acc<T>::type A;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        dst[i] = conv<T>::out(combine<OP, A>(conv<T>::in(a[i]), conv<T>::in(b[i])));
    }
}

template <typename T> __global__ void div_kernel(T *buf, size_t n, unsigned divisor)
{
    typedef typename acc<T>::type A;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = conv<T>::out(conv<T>::in(buf[i]) / (A)divisor);
}

// The CUDA IPC path's reduction: every dst[d][i] = op over s of src[s][i] (divided by divisor
// when above 1), the sources being this rank's and its peers' buffers mapped into this process.
// All of element i is read before any of it is written, so a destination may be a source.
struct multi_args {
    const void *src[GCOLL_CUDA_MULTI_MAX];
    void *dst[GCOLL_CUDA_MULTI_MAX];
    int nsrc, ndst;
};

// VEC: every pointer 16-byte aligned, so whole 16-byte words move, the tail element by element.
template <typename T, int OP, bool VEC> __global__ void multi_kernel(multi_args m, size_t n, unsigned divisor)
{
    typedef typename acc<T>::type A;
    const int V = 16 / sizeof(T);
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    size_t nv = VEC ? n / V : 0;
    for (size_t v = tid; v < nv; v += stride) {
        A r[V];
        uint4 w = ((const uint4 *)m.src[0])[v];
        for (int k = 0; k < V; k++)
            r[k] = conv<T>::in(((const T *)&w)[k]);
        for (int s = 1; s < m.nsrc; s++) {
            w = ((const uint4 *)m.src[s])[v];
            for (int k = 0; k < V; k++)
                r[k] = combine<OP, A>(r[k], conv<T>::in(((const T *)&w)[k]));
        }
        for (int k = 0; k < V; k++)
            ((T *)&w)[k] = conv<T>::out(divisor > 1 ? r[k] / (A)divisor : r[k]);
        for (int d = 0; d < m.ndst; d++)
            ((uint4 *)m.dst[d])[v] = w;
    }
    for (size_t i = nv * V + tid; i < n; i += stride) {
        A r = conv<T>::in(((const T *)m.src[0])[i]);
        for (int s = 1; s < m.nsrc; s++)
            r = combine<OP, A>(r, conv<T>::in(((const T *)m.src[s])[i]));
        T o = conv<T>::out(divisor > 1 ? r / (A)divisor : r);
        for (int d = 0; d < m.ndst; d++)
            ((T *)m.dst[d])[i] = o;
    }
}

// out[0] += a.b, out[1] += a.a, out[2] += b.b, in double.
template <typename T> __global__ void dots_kernel(const T *a, const T *b, size_t n, double *out)
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

template <typename T> __global__ void scaled_add_kernel(T *dst, double ca, const T *a, double cb, const T *b, size_t n)
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

template <typename T> static int reduce_t(void *dst, const void *a, const void *b, size_t n, int op, cudaStream_t s)
{
    T *d = (T *)dst;
    const T *x = (const T *)a, *y = (const T *)b;
    switch (op) {
    case GCOLL_SUM:
    case GCOLL_AVG: reduce_kernel<T, GCOLL_SUM><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    case GCOLL_PROD: reduce_kernel<T, GCOLL_PROD><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    case GCOLL_MIN: reduce_kernel<T, GCOLL_MIN><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    case GCOLL_MAX: reduce_kernel<T, GCOLL_MAX><<<blocks(n), 256, 0, s>>>(d, x, y, n); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

// The dtype switch of the Adasum entry points: F(T) for the four floating types Adasum takes.
#define DISPATCH(dtype, F)                        \
    switch (dtype) {                              \
    case GCOLL_FLOAT32: return F(float);          \
    case GCOLL_FLOAT64: return F(double);         \
    case GCOLL_FLOAT16: return F(__half);         \
    case GCOLL_BFLOAT16: return F(__nv_bfloat16); \
    default: return cudaErrorInvalidValue;        \
    }
// The reductions' and the division's: every floating type, fp8 included.
#define DISPATCH_REDUCE(dtype, F)               \
    switch (dtype) {                            \
    case GCOLL_FLOAT8_E4M3: return F(fp8_e4m3); \
    case GCOLL_FLOAT8_E5M2: return F(fp8_e5m2); \
    default: DISPATCH(dtype, F)                 \
    }

// dst[i] = src[i] in another format, rounding to nearest even: fp32 to or from fp16 or bf16.
template <typename D, typename S> __global__ void convert_kernel(D *dst, const S *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = conv<D>::out(conv<S>::in(src[i]));
}

// Compression's wire formats: fp32 to fp16 or bf16 and back; any other pair is refused.
GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_convert(void *dst, int dst_dtype, const void *src, int src_dtype, size_t n,
                                                void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0)
        return cudaSuccess;
    if (src_dtype == GCOLL_FLOAT32 && dst_dtype == GCOLL_FLOAT16)
        convert_kernel<__half, float><<<blocks(n), 256, 0, s>>>((__half *)dst, (const float *)src, n);
    else if (src_dtype == GCOLL_FLOAT32 && dst_dtype == GCOLL_BFLOAT16)
        convert_kernel<__nv_bfloat16, float><<<blocks(n), 256, 0, s>>>((__nv_bfloat16 *)dst, (const float *)src, n);
    else if (src_dtype == GCOLL_FLOAT16 && dst_dtype == GCOLL_FLOAT32)
        convert_kernel<float, __half><<<blocks(n), 256, 0, s>>>((float *)dst, (const __half *)src, n);
    else if (src_dtype == GCOLL_BFLOAT16 && dst_dtype == GCOLL_FLOAT32)
        convert_kernel<float, __nv_bfloat16><<<blocks(n), 256, 0, s>>>((float *)dst, (const __nv_bfloat16 *)src, n);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op,
                                               void *stream){
#define F(T) reduce_t<T>(dst, a, b, n, op, (cudaStream_t)stream)
    DISPATCH_REDUCE(dtype, F)
#undef F
}

GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_div(void *buf, size_t n, unsigned divisor, int dtype, void *stream)
{
#define F(T) (div_kernel<T><<<blocks(n), 256, 0, (cudaStream_t)stream>>>((T *)buf, n, divisor), cudaGetLastError())
    DISPATCH_REDUCE(dtype, F)
#undef F
}

template <typename T, bool VEC>
static int multi_v(const multi_args &m, size_t n, int op, unsigned divisor, cudaStream_t s)
{
    size_t work = VEC ? n / (16 / sizeof(T)) + 1 : n;
    switch (op) {
    case GCOLL_SUM:
    case GCOLL_AVG: multi_kernel<T, GCOLL_SUM, VEC><<<blocks(work), 256, 0, s>>>(m, n, divisor); break;
    case GCOLL_PROD: multi_kernel<T, GCOLL_PROD, VEC><<<blocks(work), 256, 0, s>>>(m, n, divisor); break;
    case GCOLL_MIN: multi_kernel<T, GCOLL_MIN, VEC><<<blocks(work), 256, 0, s>>>(m, n, divisor); break;
    case GCOLL_MAX: multi_kernel<T, GCOLL_MAX, VEC><<<blocks(work), 256, 0, s>>>(m, n, divisor); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

template <typename T> static int multi_t(const multi_args &m, size_t n, int op, unsigned divisor, cudaStream_t s)
{
    uintptr_t bits = 0;
    for (int i = 0; i < m.nsrc; i++)
        bits |= (uintptr_t)m.src[i];
    for (int i = 0; i < m.ndst; i++)
        bits |= (uintptr_t)m.dst[i];
    return bits % 16 ? multi_v<T, false>(m, n, op, divisor, s) : multi_v<T, true>(m, n, op, divisor, s);
}

// divisor: GCOLL_AVG's (the number of ranks), else 1. At most GCOLL_CUDA_MULTI_MAX of each.
GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_reduce_multi(void *const *dst, int ndst, const void *const *src, int nsrc,
                                                     size_t n, int dtype, int op, unsigned divisor, void *stream)
{
    if (nsrc < 1 || ndst < 1 || nsrc > GCOLL_CUDA_MULTI_MAX || ndst > GCOLL_CUDA_MULTI_MAX)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    multi_args m = {};
    m.nsrc = nsrc;
    m.ndst = ndst;
    for (int i = 0; i < nsrc; i++)
        m.src[i] = src[i];
    for (int i = 0; i < ndst; i++)
        m.dst[i] = dst[i];
    cudaStream_t s = (cudaStream_t)stream;
    switch (dtype) {
    case GCOLL_INT8: return multi_t<int8_t>(m, n, op, divisor, s);
    case GCOLL_UINT8: return multi_t<uint8_t>(m, n, op, divisor, s);
    case GCOLL_INT16: return multi_t<int16_t>(m, n, op, divisor, s);
    case GCOLL_UINT16: return multi_t<uint16_t>(m, n, op, divisor, s);
    case GCOLL_INT32: return multi_t<int32_t>(m, n, op, divisor, s);
    case GCOLL_UINT32: return multi_t<uint32_t>(m, n, op, divisor, s);
    case GCOLL_INT64: return multi_t<int64_t>(m, n, op, divisor, s);
    case GCOLL_UINT64: return multi_t<uint64_t>(m, n, op, divisor, s);
    case GCOLL_FLOAT16: return multi_t<__half>(m, n, op, divisor, s);
    case GCOLL_BFLOAT16: return multi_t<__nv_bfloat16>(m, n, op, divisor, s);
    case GCOLL_FLOAT32: return multi_t<float>(m, n, op, divisor, s);
    case GCOLL_FLOAT64: return multi_t<double>(m, n, op, divisor, s);
    case GCOLL_FLOAT8_E4M3: return multi_t<fp8_e4m3>(m, n, op, divisor, s);
    case GCOLL_FLOAT8_E5M2: return multi_t<fp8_e5m2>(m, n, op, divisor, s);
    default: return cudaErrorInvalidValue;
    }
}

// out: three doubles in device memory, zeroed here before the sums.
GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_adasum_dots(const void *a, const void *b, size_t n, int dtype, double *out,
                                                    void *stream)
{
    cudaError_t e = cudaMemsetAsync(out, 0, 3 * sizeof(double), (cudaStream_t)stream);
    if (e != cudaSuccess)
        return e;
#define F(T)                                                                                          \
    (dots_kernel<T><<<blocks(n), 256, 0, (cudaStream_t)stream>>>((const T *)a, (const T *)b, n, out), \
     cudaGetLastError())
    DISPATCH(dtype, F)
#undef F
}

GCOLL_CUDA_EXPORT int gcoll_cuda_kernel_scaled_add(void *dst, double ca, const void *a, double cb, const void *b,
                                                   size_t n, int dtype, void *stream)
{
#define F(T)                                                                                         \
    (scaled_add_kernel<T>                                                                            \
     <<<blocks(n), 256, 0, (cudaStream_t)stream>>>((T *)dst, ca, (const T *)a, cb, (const T *)b, n), \
     cudaGetLastError())
    DISPATCH(dtype, F)
#undef F
}
