/* Public datatype and op introspection: gcoll_dtype_size, gcoll_dtype_name and gcoll_op_name
 * over the tables of dtype.h. */
#include "base/dtype.h"

static const size_t sizes[GCOLL_DTYPE_COUNT] = {
    [GCOLL_INT8] = 1,    [GCOLL_UINT8] = 1,    [GCOLL_INT16] = 2,   [GCOLL_UINT16] = 2,      [GCOLL_INT32] = 4,
    [GCOLL_UINT32] = 4,  [GCOLL_INT64] = 8,    [GCOLL_UINT64] = 8,  [GCOLL_FLOAT8_E4M3] = 1, [GCOLL_FLOAT8_E5M2] = 1,
    [GCOLL_FLOAT16] = 2, [GCOLL_BFLOAT16] = 2, [GCOLL_FLOAT32] = 4, [GCOLL_FLOAT64] = 8,
};
static const char *const dtype_names[GCOLL_DTYPE_COUNT] = {
    [GCOLL_INT8] = "int8",
    [GCOLL_UINT8] = "uint8",
    [GCOLL_INT16] = "int16",
    [GCOLL_UINT16] = "uint16",
    [GCOLL_INT32] = "int32",
    [GCOLL_UINT32] = "uint32",
    [GCOLL_INT64] = "int64",
    [GCOLL_UINT64] = "uint64",
    [GCOLL_FLOAT8_E4M3] = "float8_e4m3",
    [GCOLL_FLOAT8_E5M2] = "float8_e5m2",
    [GCOLL_FLOAT16] = "float16",
    [GCOLL_BFLOAT16] = "bfloat16",
    [GCOLL_FLOAT32] = "float32",
    [GCOLL_FLOAT64] = "float64",
};
static const char *const op_names[GCOLL_OP_COUNT] = {"sum", "prod", "min", "max", "avg", "adasum", "premul_sum"};

GCOLL_API size_t gcoll_dtype_size(gcoll_dtype_t dtype)
{
    return gcoll__dtype_valid(dtype) ? sizes[dtype] : 0;
}

GCOLL_API const char *gcoll_dtype_name(gcoll_dtype_t dtype)
{
    return gcoll__dtype_valid(dtype) ? dtype_names[dtype] : "invalid";
}

GCOLL_API const char *gcoll_op_name(gcoll_op_t op)
{
    return gcoll__op_valid(op) ? op_names[op] : "invalid";
}
