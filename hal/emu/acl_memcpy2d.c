/* aclrtMemcpy2d / aclrtMemcpy2dAsync: `height` rows of `width` bytes, rows `spitch` bytes apart in
 * the source and `dpitch` bytes apart in the destination.
 *
 * Checks as CANN's ACL layer makes them (hicann/runtime src/acl/aclrt_impl/memory.cpp,
 * CheckMemcpy2dParam): width or height 0 copies nothing and succeeds; then NULL dst/src, width
 * greater than spitch or dpitch, and a kind other than HOST_TO_DEVICE, DEVICE_TO_HOST,
 * DEVICE_TO_DEVICE or DEFAULT are ACL_ERROR_INVALID_PARAM. The emulator adds the runtime-level
 * range check of aclrtMemcpy: every device-side span ((height - 1) * pitch + width bytes) must lie
 * in one allocation (ACL_ERROR_RT_PARAM_INVALID).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hal/emu/acl_internal.h"

static aclError check_2d(const char *func, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, aclrtMemcpyKind kind)
{
    if (!dst || !src)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "null pointer (dst %p src %p)", dst, (void *)src);
    if (width > spitch || width > dpitch)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "width %zu must not exceed spitch %zu and dpitch %zu", width,
                        spitch, dpitch);
    int dst_dev = 0, src_dev = 0;
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_DEVICE: dst_dev = 1; break;
    case ACL_MEMCPY_DEVICE_TO_HOST: src_dev = 1; break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE: dst_dev = src_dev = 1; break;
    case ACL_MEMCPY_DEFAULT: break;
    default:
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "kind %d: 2D copies take HOST_TO_DEVICE, DEVICE_TO_HOST, "
                        "DEVICE_TO_DEVICE or DEFAULT", (int)kind);
    }
    if ((height - 1) > (SIZE_MAX - width) / (dpitch > spitch ? dpitch : spitch))
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "height %zu x pitch overflows", height);
    aclError err = ACL_SUCCESS;
    if (dst_dev)
        err = acl_check_dev_range(func, "dst", dst, (height - 1) * dpitch + width);
    if (!err && src_dev)
        err = acl_check_dev_range(func, "src", src, (height - 1) * spitch + width);
    return err;
}

aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                       aclrtMemcpyKind kind)
{
    if (width == 0 || height == 0)
        return ACL_SUCCESS;
    aclError err = check_2d(__func__, dst, dpitch, src, spitch, width, height, kind);
    if (err)
        return err;
    for (size_t r = 0; r < height; r++)
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                            aclrtMemcpyKind kind, aclrtStream stream)
{
    if (width == 0 || height == 0)
        return ACL_SUCCESS;
    aclError err = check_2d(__func__, dst, dpitch, src, spitch, width, height, kind);
    hal_stream *s;
    if (err || (err = acl_stream(__func__, stream, &s)))
        return err;
    if (height > UINT32_MAX)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "height %zu: at most %u rows per copy", height, UINT32_MAX);
    /* One descriptor per row, enqueued as one task: the rows complete together, in stream order. */
    hal_dma_desc *d = calloc(height, sizeof *d);
    if (!d)
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory for %zu rows", height);
    for (size_t r = 0; r < height; r++) {
        d[r].kind = HAL_DMA_COPY;
        d[r].dst = hal_ref_ptr((char *)dst + r * dpitch);
        d[r].src = hal_ref_ptr((char *)src + r * spitch);
        d[r].bytes = width;
    }
    hal_result rc = emu_hal_ops.dma_batch(s, d, (uint32_t)height);
    free(d);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "enqueueing the copy");
    return ACL_SUCCESS;
}
