/* aclrtReduceAsync: an SDMA inline reduce, dst[i] = dst[i] op src[i], as a stream task.
 *
 * Contract (hicann/runtime "aclrtReduceAsync" API doc):
 *   - count is the size of src in BYTES (not elements); we require a whole number of elements;
 *   - kinds ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM/MAX/MIN; EQUAL has no documented arithmetic and
 *     no HAL op, so it is reported as not supported;
 *   - dtypes on Atlas A2/A3: int8, int16, int32, fp16, fp32, bf16 -- the only ones accepted,
 *     so a program that works here also works on the hardware;
 *   - dst, src and the stream must be on the same device; reserve must be NULL.
 *
 * aclDataType numbers differently from hal_dtype (which follows HcclDataType): the mapping is
 * written out below, value by value, and nothing is ever cast between the two.
 */
#include "hal/emu/acl_internal.h"

/* aclDataType -> hal_dtype for every ACL type the HAL can represent; -1 otherwise. */
static int acl_to_hal_dtype(aclDataType t)
{
    switch (t) {
    case ACL_FLOAT:         return HAL_DT_FP32;
    case ACL_FLOAT16:       return HAL_DT_FP16;
    case ACL_INT8:          return HAL_DT_INT8;
    case ACL_INT32:         return HAL_DT_INT32;
    case ACL_UINT8:         return HAL_DT_UINT8;
    case ACL_INT16:         return HAL_DT_INT16;
    case ACL_UINT16:        return HAL_DT_UINT16;
    case ACL_UINT32:        return HAL_DT_UINT32;
    case ACL_INT64:         return HAL_DT_INT64;
    case ACL_UINT64:        return HAL_DT_UINT64;
    case ACL_DOUBLE:        return HAL_DT_FP64;
    case ACL_BF16:          return HAL_DT_BF16;
    case ACL_HIFLOAT8:      return HAL_DT_HIF8;
    case ACL_FLOAT8_E5M2:   return HAL_DT_FP8E5M2;
    case ACL_FLOAT8_E4M3FN: return HAL_DT_FP8E4M3;
    case ACL_FLOAT8_E8M0:   return HAL_DT_FP8E8M0;
    default:                return -1; /* bool, string, complex, int4, fp6/fp4, ... */
    }
}

/* The SDMA reduce dtypes documented for Atlas A2/A3. */
static int sdma_dtype_supported(aclDataType t)
{
    return t == ACL_INT8 || t == ACL_INT16 || t == ACL_INT32 || t == ACL_FLOAT16 || t == ACL_FLOAT ||
           t == ACL_BF16;
}

/* aclrtReduceKind -> hal_redop; 0 on success. */
static aclError map_kind(const char *func, aclrtReduceKind kind, hal_redop *op)
{
    switch (kind) {
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM:
        *op = HAL_OP_SUM;
        return ACL_SUCCESS;
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX:
        *op = HAL_OP_MAX;
        return ACL_SUCCESS;
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN:
        *op = HAL_OP_MIN;
        return ACL_SUCCESS;
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL:
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, func, "kind EQUAL(13) is not supported by the emulator");
    default:
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "unknown kind %d", (int)kind);
    }
}

static aclError map_dtype(const char *func, aclDataType type, hal_dtype *dt)
{
    int h = acl_to_hal_dtype(type);
    if (h < 0 && (type < ACL_FLOAT || type > ACL_FLOAT4_E1M2))
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "unknown aclDataType %d", (int)type);
    if (h < 0 || !sdma_dtype_supported(type))
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, func,
                        "aclDataType %d: SDMA reduce supports int8/int16/int32/fp16/fp32/bf16 only", (int)type);
    *dt = (hal_dtype)h;
    return ACL_SUCCESS;
}

/* dst and src must be device memory of the stream's device, holding bytes each. */
static aclError check_operand(const char *func, const char *name, const void *p, uint64_t bytes, int32_t dev_id)
{
    hal_device_handle owner;
    uint64_t after = 0;
    if (emu_hal_ops.mem_lookup(p, &owner, &after) != HAL_OK)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "%s %p is not device memory", name, p);
    if ((int32_t)owner.device_id != dev_id)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "%s %p is on device %u, the stream on device %d", name, p,
                        owner.device_id, dev_id);
    if (after < bytes)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "%s %p: %llu bytes run past its allocation", name, p,
                        (unsigned long long)bytes);
    return ACL_SUCCESS;
}

static aclError check_args(const char *func, void *dst, const void *src, uint64_t count, aclrtReduceKind kind,
                           aclDataType type, void *reserve, hal_dma_desc *d)
{
    if (!dst || !src)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "null pointer (dst %p src %p)", dst, (void *)src);
    if (reserve)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "reserve must be NULL");
    aclError err = map_kind(func, kind, &d->op);
    if (!err)
        err = map_dtype(func, type, &d->dtype);
    if (err)
        return err;
    size_t esize = hal_dtype_size(d->dtype);
    if (count % esize)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "count %llu bytes is not a multiple of the %zu-byte element",
                        (unsigned long long)count, esize);
    d->kind = HAL_DMA_REDUCE;
    d->dst = hal_ref_ptr(dst);
    d->src = hal_ref_ptr((void *)src);
    d->count = count / esize;
    return ACL_SUCCESS;
}

aclError aclrtReduceAsync(void *dst, const void *src, uint64_t count, aclrtReduceKind kind, aclDataType type,
                          aclrtStream stream, void *reserve)
{
    hal_dma_desc d = {0};
    aclError err = check_args(__func__, dst, src, count, kind, type, reserve, &d);
    hal_stream *s;
    if (err || (err = acl_stream(__func__, stream, &s)))
        return err;
    int32_t dev_id = acl_device_id(emu_hal_ops.stream_device(s));
    if (count && (err = check_operand(__func__, "dst", dst, count, dev_id)))
        return err;
    if (count && (err = check_operand(__func__, "src", src, count, dev_id)))
        return err;
    if (count == 0)
        return ACL_SUCCESS;
    if (!hal_reduce_supported(d.dtype, d.op))
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__, "%s %s reduce not implemented",
                        hal_dtype_name(d.dtype), hal_redop_name(d.op));
    hal_result rc = emu_hal_ops.dma_batch(s, &d, 1);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "enqueueing the reduce");
    return ACL_SUCCESS;
}
