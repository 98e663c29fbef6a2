/* ACL memory: device and host allocation, copies, memsets, memory info.
 *
 * Device memory comes from the HAL (mem_alloc on the thread's current device). The emulator's
 * device memory is host-addressable in every process of its server (DESIGN.md, "Memory"), so the
 * synchronous aclrtMemcpy/aclrtMemset are done by the calling thread, after checking that every
 * device-side range lies inside one live allocation. The asynchronous variants are stream tasks
 * (a one-descriptor dma_batch COPY, memset_async) and return at once.
 *
 * Checks follow CANN (docs/acl_semantics.md section 6): null pointers are rejected by the ACL layer
 * (ACL_ERROR_INVALID_PARAM); the runtime's copy checks -- count 0, count > destMax, unknown kind,
 * a device-side pointer that is not device memory or a range past its allocation -- return
 * ACL_ERROR_RT_PARAM_INVALID. dst == src copies nothing and succeeds.
 */
#include <stdlib.h>
#include <string.h>

#include "hal/emu/acl_internal.h"

aclError acl_check_dev_range(const char *func, const char *name, const void *p, size_t n)
{
    hal_device_handle owner;
    uint64_t after = 0;
    hal_result rc = emu_hal_ops.mem_lookup(p, &owner, &after);
    if (rc != HAL_OK)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "%s %p is not device memory", name, p);
    if (after < n)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "%s %p: %zu bytes run past its allocation (%llu left)",
                        name, p, n, (unsigned long long)after);
    return acl_strict_check(func, name, p, n, &owner);
}

/* ---- device memory ------------------------------------------------------------------------ */

static int policy_valid(uint32_t policy)
{
    const uint32_t flags = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH |
                           ACL_MEM_ACCESS_USER_SPACE_READONLY;
    return (policy & 0xFFu) <= ACL_MEM_MALLOC_HUGE1G_ONLY_P2P && (policy & ~(flags | 0xFFu)) == 0;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    if (!devPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "devPtr is NULL");
    if (size == 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "size is 0");
    if (!policy_valid((uint32_t)policy))
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown policy 0x%x", (unsigned)policy);
    hal_device *dev;
    aclError err = acl_current_device(__func__, &dev, NULL);
    if (err)
        return err;
    /* Huge/normal pages and P2P make no difference here: every allocation is peer-visible. */
    hal_result rc = emu_hal_ops.mem_alloc(dev, size, devPtr);
    if (rc != HAL_OK)
        return acl_fail(acl_from_hal(rc), __func__, "allocating %zu bytes failed: %s", size, hal_result_name(rc));
    return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr)
{
    if (!devPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "devPtr is NULL");
    hal_device_handle owner;
    uint64_t after;
    if (emu_hal_ops.mem_lookup(devPtr, &owner, &after) != HAL_OK)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "devPtr %p is not device memory", devPtr);
    hal_device *dev = acl_device_by_id((int32_t)owner.device_id);
    if (!dev)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "devPtr %p belongs to device %u, not set in this process",
                        devPtr, owner.device_id);
    hal_result rc = emu_hal_ops.mem_free(dev, devPtr);
    if (rc != HAL_OK)
        return acl_fail(acl_from_hal(rc), __func__, "devPtr %p is not the start of a live allocation: %s", devPtr,
                        hal_result_name(rc));
    return ACL_SUCCESS;
}

/* ---- host memory -------------------------------------------------------------------------- */

aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    if (!hostPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "hostPtr is NULL");
    if (size == 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "size is 0");
    void *p = NULL;
    /* Page alignment, like pinned host memory. */
    if (posix_memalign(&p, 4096, size) != 0)
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "allocating %zu host bytes failed", size);
    if (acl_reg_add(ACL_H_HOST_MEM, p, size) != 0) {
        free(p);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "registering host buffer failed");
    }
    *hostPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr)
{
    if (!hostPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "hostPtr is NULL");
    if (!acl_reg_remove(ACL_H_HOST_MEM, hostPtr))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "hostPtr %p was not allocated by aclrtMallocHost",
                        hostPtr);
    free(hostPtr);
    return ACL_SUCCESS;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free_bytes, size_t *total)
{
    if (!free_bytes || !total)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null output pointer (free %p total %p)",
                        (void *)free_bytes, (void *)total);
    if ((unsigned)attr > ACL_MEM_P2P_HUGE1G)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown attr %d", (int)attr);
    hal_device *dev;
    aclError err = acl_current_device(__func__, &dev, NULL);
    if (err)
        return err;
    hal_device_info info;
    hal_result rc = emu_hal_ops.device_info(dev, &info);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "device_info");
    /* One kind of memory: every attribute (DDR/HBM, huge/normal, P2P) reports the device heap. */
    *free_bytes = (size_t)info.mem_free;
    *total = (size_t)info.mem_total;
    return ACL_SUCCESS;
}

/* ---- copies ------------------------------------------------------------------------------- */

/* Checks the arguments shared by aclrtMemcpy and aclrtMemcpyAsync. */
static aclError check_memcpy(const char *func, void *dst, size_t destMax, const void *src, size_t count,
                             aclrtMemcpyKind kind)
{
    if (!dst || !src)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "null pointer (dst %p src %p)", dst, src);
    if (count == 0 || count > destMax)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "count %zu must be in [1, destMax %zu]", count, destMax);
    int dst_dev = 0, src_dev = 0;
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST:
    case ACL_MEMCPY_DEFAULT: /* direction inferred from the addresses */
        break;
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
        dst_dev = 1;
        break;
    case ACL_MEMCPY_DEVICE_TO_HOST:
        src_dev = 1;
        break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
        dst_dev = src_dev = 1;
        break;
    default:
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "unknown kind %d", (int)kind);
    }
    aclError err = ACL_SUCCESS;
    if (dst_dev)
        err = acl_check_dev_range(func, "dst", dst, count);
    if (!err && src_dev)
        err = acl_check_dev_range(func, "src", src, count);
    return err;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    aclError err = check_memcpy(__func__, dst, destMax, src, count, kind);
    if (err)
        return err;
    if (dst != src)
        memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream)
{
    aclError err = check_memcpy(__func__, dst, destMax, src, count, kind);
    if (err)
        return err;
    /* CANN: an asynchronous host-to-host copy is not supported (EP mode). */
    if (kind == ACL_MEMCPY_HOST_TO_HOST)
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__, "HOST_TO_HOST cannot be asynchronous");
    hal_stream *s;
    err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    hal_dma_desc d = {0};
    d.kind = HAL_DMA_COPY;
    d.dst = hal_ref_ptr(dst);
    d.src = hal_ref_ptr((void *)src);
    d.bytes = count;
    hal_result rc = emu_hal_ops.dma_batch(s, &d, 1);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "enqueueing the copy");
    return ACL_SUCCESS;
}

/* ---- memsets ------------------------------------------------------------------------------ */

/* devPtr must be device memory or an aclrtMallocHost buffer covering count bytes. */
static aclError check_memset(const char *func, void *devPtr, size_t maxCount, size_t count)
{
    if (!devPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "devPtr is NULL");
    if (count > maxCount)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "count %zu > maxCount %zu", count, maxCount);
    uintptr_t host_size;
    if (acl_reg_find(ACL_H_HOST_MEM, devPtr, &host_size)) {
        if (count > host_size)
            return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "count %zu > host buffer size %zu", count,
                            (size_t)host_size);
        return ACL_SUCCESS;
    }
    return count ? acl_check_dev_range(func, "devPtr", devPtr, count) : ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    aclError err = check_memset(__func__, devPtr, maxCount, count);
    if (err)
        return err;
    memset(devPtr, (int)(value & 0xFF), count);
    return ACL_SUCCESS;
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream)
{
    aclError err = check_memset(__func__, devPtr, maxCount, count);
    if (err)
        return err;
    hal_stream *s;
    err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    if (count == 0)
        return ACL_SUCCESS;
    hal_result rc = emu_hal_ops.memset_async(s, devPtr, (int)(value & 0xFF), count);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "enqueueing the memset");
    return ACL_SUCCESS;
}

/* ---- pointer attributes ------------------------------------------------------------------- */

/* Device memory (any device of this server, opened here or imported) -> DEVICE with its device id;
 * the start of an aclrtMallocHost buffer -> HOST; anything else -> UNREGISTERED. pageSize is the
 * page the emulator backs memory with (its memfd and the host's malloc both use base pages). */
aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes)
{
    if (!ptr || !attributes)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null argument (ptr %p attributes %p)", ptr,
                        (void *)attributes);
    memset(attributes, 0, sizeof *attributes);
    hal_device_handle owner;
    uint64_t after = 0;
    if (emu_hal_ops.mem_lookup(ptr, &owner, &after) == HAL_OK) {
        attributes->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
        attributes->location.id = owner.device_id;
    } else {
        attributes->location.type =
            acl_reg_find(ACL_H_HOST_MEM, ptr, NULL) ? ACL_MEM_LOCATION_TYPE_HOST : ACL_MEM_LOCATION_TYPE_UNREGISTERED;
    }
    attributes->pageSize = 4096;
    return ACL_SUCCESS;
}
