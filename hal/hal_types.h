/* Plain types shared by the HAL and everything above it: result codes, data types and
 * reduce ops. hal_dtype uses HcclDataType's numbering on purpose (identity mapping at the HCCL
 * API); ACL's aclDataType numbers differently and is mapped explicitly in the ACL front. */
#ifndef HAL_TYPES_H
#define HAL_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef enum hal_result {
    HAL_OK = 0,
    HAL_E_PARAM = 1,          /* bad argument (null, out of range, unknown handle) */
    HAL_E_NOMEM = 2,          /* allocation failed */
    HAL_E_TIMEOUT = 3,        /* a wait passed its deadline */
    HAL_E_NOT_SUPPORTED = 4,  /* valid request this backend / dtype / op cannot do */
    HAL_E_SYSCALL = 5,        /* an OS call failed (errno logged) */
    HAL_E_INVALID_DEVICE = 6, /* device id out of range or device not opened */
    HAL_E_NOT_READY = 7,      /* query: work still pending */
    HAL_E_ABORTED = 8,        /* the stream failed earlier (sticky) or was aborted */
    HAL_E_PEER = 9,           /* a peer device is gone or unreachable */
    HAL_E_FOREIGN = 10,       /* pointer not owned by this device / not a device pointer */
    HAL_E_INTERNAL = 11,
    HAL_E_DENIED = 12,        /* the caller is not allowed (IPC import by a process not granted) */
} hal_result;

/* Same values as HcclDataType (there is no 13). */
typedef enum hal_dtype {
    HAL_DT_INT8 = 0,
    HAL_DT_INT16 = 1,
    HAL_DT_INT32 = 2,
    HAL_DT_FP16 = 3,
    HAL_DT_FP32 = 4,
    HAL_DT_INT64 = 5,
    HAL_DT_UINT64 = 6,
    HAL_DT_UINT8 = 7,
    HAL_DT_UINT16 = 8,
    HAL_DT_UINT32 = 9,
    HAL_DT_FP64 = 10,
    HAL_DT_BF16 = 11,
    HAL_DT_INT128 = 12,
    HAL_DT_HIF8 = 14,
    HAL_DT_FP8E4M3 = 15,
    HAL_DT_FP8E5M2 = 16,
    HAL_DT_FP8E8M0 = 17,
    HAL_DT_COUNT = 18, /* array bound, not a type */
} hal_dtype;

/* Same values as HcclReduceOp. */
typedef enum hal_redop {
    HAL_OP_SUM = 0,
    HAL_OP_PROD = 1,
    HAL_OP_MAX = 2,
    HAL_OP_MIN = 3,
    HAL_OP_COUNT = 4,
} hal_redop;

/* Element size in bytes, 0 for an unknown dtype. Inline: a call into the other library per use
 * showed in small calls' samples (p2p asks it for every item several times a call). Compared as
 * unsigned so a negative value read from the wire is rejected too. */
static inline size_t hal_dtype_size(hal_dtype dt)
{
    static const uint8_t sizes[HAL_DT_COUNT] = {
        [HAL_DT_INT8] = 1,    [HAL_DT_INT16] = 2,   [HAL_DT_INT32] = 4,   [HAL_DT_FP16] = 2,
        [HAL_DT_FP32] = 4,    [HAL_DT_INT64] = 8,   [HAL_DT_UINT64] = 8,  [HAL_DT_UINT8] = 1,
        [HAL_DT_UINT16] = 2,  [HAL_DT_UINT32] = 4,  [HAL_DT_FP64] = 8,    [HAL_DT_BF16] = 2,
        [HAL_DT_INT128] = 16, [HAL_DT_HIF8] = 1,    [HAL_DT_FP8E4M3] = 1, [HAL_DT_FP8E5M2] = 1,
        [HAL_DT_FP8E8M0] = 1,
    };
    return (unsigned)dt < HAL_DT_COUNT ? sizes[dt] : 0;
}
/* Short name ("fp32", "bf16", ...) or "unknown". */
const char *hal_dtype_name(hal_dtype dt);
/* "sum", "prod", "max", "min" or "unknown". */
const char *hal_redop_name(hal_redop op);
/* 1 if a reduction of this dtype with this op is implemented, else 0. */
int hal_reduce_supported(hal_dtype dt, hal_redop op);

#endif
