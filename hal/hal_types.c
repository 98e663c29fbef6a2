/* Lookups over hal_dtype / hal_redop. The tables are indexed by the enum values, which follow
 * HcclDataType / HcclReduceOp, so a hole (13) stays a hole. */
#include "hal/hal_types.h"

static const char *const hal_dt_names[HAL_DT_COUNT] = {
    [HAL_DT_INT8] = "int8",       [HAL_DT_INT16] = "int16",     [HAL_DT_INT32] = "int32",
    [HAL_DT_FP16] = "fp16",       [HAL_DT_FP32] = "fp32",       [HAL_DT_INT64] = "int64",
    [HAL_DT_UINT64] = "uint64",   [HAL_DT_UINT8] = "uint8",     [HAL_DT_UINT16] = "uint16",
    [HAL_DT_UINT32] = "uint32",   [HAL_DT_FP64] = "fp64",       [HAL_DT_BF16] = "bf16",
    [HAL_DT_INT128] = "int128",   [HAL_DT_HIF8] = "hif8",       [HAL_DT_FP8E4M3] = "fp8e4m3",
    [HAL_DT_FP8E5M2] = "fp8e5m2", [HAL_DT_FP8E8M0] = "fp8e8m0",
};

static const char *const hal_op_names[HAL_OP_COUNT] = {
    [HAL_OP_SUM] = "sum", [HAL_OP_PROD] = "prod", [HAL_OP_MAX] = "max", [HAL_OP_MIN] = "min",
};

const char *hal_dtype_name(hal_dtype dt)
{
    if ((unsigned)dt >= HAL_DT_COUNT || !hal_dt_names[dt])
        return "unknown";
    return hal_dt_names[dt];
}

const char *hal_redop_name(hal_redop op)
{
    if ((unsigned)op >= HAL_OP_COUNT)
        return "unknown";
    return hal_op_names[op];
}

int hal_reduce_supported(hal_dtype dt, hal_redop op)
{
    if (hal_dtype_size(dt) == 0 || (unsigned)op >= HAL_OP_COUNT)
        return 0;
    switch (dt) {
    case HAL_DT_HIF8:
        /* HiFloat8's exact encoding is not pinned down publicly enough to round into it:
         * movement only. */
        return 0;
    case HAL_DT_FP8E8M0:
        /* Exponent-only: a product is exact (exponents add), max/min are orderings, but a sum
         * of two powers of two has no sensible rounding back into a power of two. */
        return op != HAL_OP_SUM;
    default:
        return 1;
    }
}
