/* Chooses the reduction kernel table for this CPU (GCOLL_REDUCE_ISA, or the best the CPU
 * supports) among the portable, AVX2 and AVX-512 tables, and scales through the chosen one. */
#include <stdint.h>

#include "base/dtype.h"
#include "base/error.h"
#include "base/log.h"
#include "base/reduce.h"

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

void gcoll__scale(void *dst, const void *src, size_t count, gcoll_dtype_t dtype, double factor)
{
    gcoll__kernels->scale[dtype](dst, src, count, factor);
}
