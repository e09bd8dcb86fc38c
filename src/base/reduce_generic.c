/* Portable reduction kernels: the template (reduce_kernels.inc) with scalar fp16 conversion; the
 * table every CPU can run. */
#define KERNELS_NAME gcoll__kernels_generic
#define KERNELS_LABEL "generic"
#define CVT_H2F_16(s, d) cvt_h2f_tail((s), (d), 16)
#define CVT_F2H_16(s, d) cvt_f2h_tail((s), (d), 16)
#include "base/reduce_kernels.inc"
