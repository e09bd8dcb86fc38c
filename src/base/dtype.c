/* Public datatype and op introspection: gcoll_dtype_size, gcoll_dtype_name and gcoll_op_name
 * over the tables of dtype.h. */
#include "base/dtype.h"

static const size_t sizes[GCOLL_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 2, 2, 1, 1};
static const char *const dtype_names[GCOLL_DTYPE_COUNT] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                                           "uint64", "float16", "bfloat16", "float32", "float64", "int16", "uint16", "float8_e4m3", "float8_e5m2"};
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
