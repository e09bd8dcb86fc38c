/* Chooses the reduction kernel table for this CPU (GCOLL_REDUCE_ISA, or the best the CPU
 * supports) among the portable, AVX2 and AVX-512 tables. */
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
    for (size_t i = 0; i < count; i++) {
        if (dtype == GCOLL_FLOAT64) {
            double v;
            memcpy(&v, (const char *)src + 8 * i, 8);
            v *= factor;
            memcpy((char *)dst + 8 * i, &v, 8);
        } else if (dtype == GCOLL_FLOAT32) {
            float v;
            memcpy(&v, (const char *)src + 4 * i, 4);
            v = (float)(v * factor);
            memcpy((char *)dst + 4 * i, &v, 4);
        } else if (dtype == GCOLL_FLOAT16 || dtype == GCOLL_BFLOAT16) {
            uint16_t h;
            memcpy(&h, (const char *)src + 2 * i, 2);
            float v = dtype == GCOLL_FLOAT16 ? gcoll__f16_to_f32(h) : gcoll__bf16_to_f32(h);
            v = (float)(v * factor);
            h = dtype == GCOLL_FLOAT16 ? gcoll__f32_to_f16(v) : gcoll__f32_to_bf16(v);
            memcpy((char *)dst + 2 * i, &h, 2);
        }
    }
}
