/* ACL virtual memory management over the HAL vmm ops.
 *
 * The flow (hicann/runtime docs, aclrtReserveMemAddress.md & co.): reserve a VA range ->
 * allocate physical chunks -> map chunks into the range -> use it like aclrtMalloc memory ->
 * unmap -> free the chunks -> release the range. Sizes are multiples of the allocation
 * granularity (aclrtMemGetAllocationGranularity). Reservations, chunks and mappings are
 * registered so that a wrong handle or a double free is an error code. As in CANN
 * (docs/acl_semantics.md section 5), aclrtMapMem maps a whole chunk (offset 0, size = chunk size),
 * and aclrtFreePhysical on a chunk that is still mapped succeeds but the chunk is released only
 * at its last aclrtUnmapMem.
 */
#include "hal/emu/acl_internal.h"

/* The opened device a property names (location must be a device this process has set). */
static aclError prop_device(const char *func, const aclrtPhysicalMemProp *prop, hal_device **dev)
{
    if (prop->location.type != ACL_MEM_LOCATION_TYPE_DEVICE)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "prop->location.type %d is not ACL_MEM_LOCATION_TYPE_DEVICE",
                        (int)prop->location.type);
    *dev = acl_device_by_id((int32_t)prop->location.id);
    if (!*dev)
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, func, "prop->location.id %u is not a device set by this process",
                        prop->location.id);
    return ACL_SUCCESS;
}

aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop, aclrtMemGranularityOptions option,
                                          size_t *granularity)
{
    if (!prop || !granularity)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null pointer (prop %p granularity %p)", (void *)prop,
                        (void *)granularity);
    if (option != ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM && option != ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown option %d", (int)option);
    hal_device *dev;
    aclError err = prop_device(__func__, prop, &dev);
    if (err)
        return err;
    *granularity = emu_hal_ops.vmm_granularity(dev);
    return ACL_SUCCESS;
}

aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr, uint64_t flags)
{
    if (!virPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "virPtr is NULL");
    if (flags > 1) /* 0 normal pages, 1 huge pages: alike on the emulator */
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown flags 0x%llx", (unsigned long long)flags);
    hal_device *dev;
    aclError err = acl_current_device(__func__, &dev, NULL);
    if (err)
        return err;
    size_t gran = emu_hal_ops.vmm_granularity(dev);
    if (size == 0 || size % gran)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "size %zu is not a non-zero multiple of %zu", size, gran);
    if (alignment && (alignment & (alignment - 1)))
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "alignment %zu is not a power of two", alignment);
    /* expectPtr is a placement hint; the emulator's ranges are always granularity-aligned and the
     * hint is not honoured (CANN also falls back to another address). */
    (void)expectPtr;
    void *va = NULL;
    hal_result rc = emu_hal_ops.vmm_reserve(dev, size, &va);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "vmm_reserve");
    if (alignment > gran && ((uintptr_t)va % alignment)) {
        emu_hal_ops.vmm_release(dev, va);
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__, "alignment %zu above %zu is not supported",
                        alignment, gran);
    }
    if (acl_reg_add(ACL_H_VA, va, (uintptr_t)dev) != 0) {
        emu_hal_ops.vmm_release(dev, va);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "registering the range failed");
    }
    *virPtr = va;
    return ACL_SUCCESS;
}

aclError aclrtReleaseMemAddress(void *virPtr)
{
    uintptr_t dev;
    if (!virPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "virPtr is NULL");
    if (!acl_reg_find(ACL_H_VA, virPtr, &dev))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "virPtr %p is not a reserved range", virPtr);
    hal_result rc = emu_hal_ops.vmm_release((hal_device *)dev, virPtr);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "vmm_release (unmap the range first)");
    acl_reg_remove(ACL_H_VA, virPtr);
    return ACL_SUCCESS;
}

aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size, const aclrtPhysicalMemProp *prop,
                             uint64_t flags)
{
    if (!handle || !prop)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null pointer (handle %p prop %p)", (void *)handle,
                        (const void *)prop);
    if (flags != 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "flags must be 0, got 0x%llx", (unsigned long long)flags);
    if (prop->handleType != ACL_MEM_HANDLE_TYPE_NONE && prop->handleType != ACL_MEM_HANDLE_TYPE_POSIX)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown prop->handleType %d", (int)prop->handleType);
    if (prop->allocationType != ACL_MEM_ALLOCATION_TYPE_PINNED)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "prop->allocationType %d is not PINNED",
                        (int)prop->allocationType);
    if ((unsigned)prop->memAttr > ACL_MEM_P2P_HUGE1G)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown prop->memAttr %d", (int)prop->memAttr);
    hal_device *dev;
    aclError err = prop_device(__func__, prop, &dev);
    if (err)
        return err;
    size_t gran = emu_hal_ops.vmm_granularity(dev);
    if (size == 0 || size % gran)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "size %zu is not a non-zero multiple of %zu", size, gran);
    hal_phys_mem *pm = NULL;
    hal_result rc = emu_hal_ops.vmm_phys_alloc(dev, size, &pm);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "vmm_phys_alloc");
    if (acl_reg_add(ACL_H_PHYS, pm, size) != 0) {
        emu_hal_ops.vmm_phys_free(pm);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "registering the chunk failed");
    }
    *handle = pm;
    return ACL_SUCCESS;
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle)
{
    if (!handle)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "handle is NULL");
    if (!acl_reg_find(ACL_H_PHYS, handle, NULL))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "handle %p is not a live physical allocation", handle);
    if (acl_reg_count_value(ACL_H_MAPPING, (uintptr_t)handle) > 0) {
        /* Still mapped: the handle is gone for the program, the memory stays until unmapped. */
        acl_reg_remove(ACL_H_PHYS, handle);
        if (acl_reg_add(ACL_H_PHYS_FREED, handle, 0) != 0)
            OH_WARN(ACL_MOD, "aclrtFreePhysical: %p will not be released at unmap (out of memory)", handle);
        return ACL_SUCCESS;
    }
    hal_result rc = emu_hal_ops.vmm_phys_free((hal_phys_mem *)handle);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "vmm_phys_free");
    acl_reg_remove(ACL_H_PHYS, handle);
    return ACL_SUCCESS;
}

aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags)
{
    uintptr_t phys_size;
    if (!virPtr || !handle)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null pointer (virPtr %p handle %p)", virPtr, handle);
    if (flags != 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "flags must be 0, got 0x%llx", (unsigned long long)flags);
    if (!acl_reg_find(ACL_H_PHYS, handle, &phys_size))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "handle %p is not a live physical allocation", handle);
    if (offset != 0 || size != phys_size)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "map the whole chunk: offset %zu must be 0, size %zu must be %zu",
                        offset, size, (size_t)phys_size);
    hal_result rc = emu_hal_ops.vmm_map(virPtr, size, offset, (hal_phys_mem *)handle);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "vmm_map (virPtr must lie in a reserved, unmapped range)");
    if (acl_reg_add(ACL_H_MAPPING, virPtr, (uintptr_t)handle) != 0) {
        emu_hal_ops.vmm_unmap(virPtr);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "registering the mapping failed");
    }
    return ACL_SUCCESS;
}

aclError aclrtUnmapMem(void *virPtr)
{
    uintptr_t pm;
    if (!virPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "virPtr is NULL");
    if (!acl_reg_find(ACL_H_MAPPING, virPtr, &pm))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "virPtr %p is not the start of a mapping", virPtr);
    hal_result rc = emu_hal_ops.vmm_unmap(virPtr);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "vmm_unmap");
    acl_reg_remove(ACL_H_MAPPING, virPtr);
    /* A chunk the program already freed goes with its last mapping. */
    if (acl_reg_count_value(ACL_H_MAPPING, pm) == 0 && acl_reg_remove(ACL_H_PHYS_FREED, (void *)pm)) {
        rc = emu_hal_ops.vmm_phys_free((hal_phys_mem *)pm);
        if (rc != HAL_OK)
            return acl_fail_hal(rc, __func__, "vmm_phys_free of a chunk freed while mapped");
    }
    return ACL_SUCCESS;
}
