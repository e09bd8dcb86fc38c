/* Chooses the reduction kernel table for this CPU (GCOLL_REDUCE_ISA, or the best the CPU
 * supports) among the portable, AVX2 and AVX-512 tables. */
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "log.h"
#include "reduce.h"
#include "cuda/cuda.h"

const gcoll__kernels_t *gcoll__kernels = &gcoll__kernels_generic;

int gcoll__kernels_supported(const gcoll__kernels_t *k)
{
    __builtin_cpu_init();
    if (k == &gcoll__kernels_avx512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl");
    if (k == &gcoll__kernels_avx2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    return 1;
}

gcoll_status_t gcoll__kernels_select(int isa)
{
    static const gcoll__kernels_t *const by_isa[] = {NULL, &gcoll__kernels_generic, &gcoll__kernels_avx2,
                                                     &gcoll__kernels_avx512};
    if (isa) {
        if (!gcoll__kernels_supported(by_isa[isa]))
            return gcoll__error(GCOLL_ERR_UNSUPPORTED, "GCOLL_REDUCE_ISA=%s: this CPU lacks those instructions",
                                by_isa[isa]->name);
        gcoll__kernels = by_isa[isa];
    } else {
        gcoll__kernels = gcoll__kernels_supported(&gcoll__kernels_avx512) ? &gcoll__kernels_avx512
            : gcoll__kernels_supported(&gcoll__kernels_avx2)              ? &gcoll__kernels_avx2
                                                                          : &gcoll__kernels_generic;
    }
    GCOLL_LOG(GCOLL_LOG_INFO, "reduction kernels: %s", gcoll__kernels->name);
    return GCOLL_SUCCESS;
}

GCOLL_API gcoll_status_t gcoll_reduce_local(void *inout, const void *in, size_t count, gcoll_dtype_t dtype,
                                            gcoll_op_t op)
{
    if (!gcoll__dtype_valid(dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "dtype %d is not a gcoll_dtype_t", (int)dtype);
    if (!gcoll__op_valid(op) || op == GCOLL_AVG || op == GCOLL_ADASUM)
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "op %d: accepts GCOLL_SUM, PROD, MIN or MAX", (int)op);
    if (count && (!inout || !in))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "%s is NULL with count %zu", !inout ? "inout" : "in", count);
    if (count > SIZE_MAX / gcoll_dtype_size(dtype))
        return gcoll__error(GCOLL_ERR_INVALID_ARG, "count %zu is too large for %s: its bytes overflow", count,
                            gcoll_dtype_name(dtype));
    if (gcoll__cuda_is_device(inout) || gcoll__cuda_is_device(in))
        return gcoll__cuda_reduce_local(inout, in, count, dtype, op);
    gcoll__reduce(inout, inout, in, count, dtype, op);
    return GCOLL_SUCCESS;
}
