/* Virtual memory management (aclrtReserveMemAddress & co): not yet implemented. */
#include "hal/emu/emu_internal.h"

size_t emu_vmm_granularity(hal_device *dev)
{
    (void)dev;
    return 2u << 20;
}

hal_result emu_vmm_reserve(hal_device *dev, size_t size, void **va)
{
    (void)dev, (void)size, (void)va;
    return HAL_E_NOT_SUPPORTED;
}

hal_result emu_vmm_release(hal_device *dev, void *va)
{
    (void)dev, (void)va;
    return HAL_E_NOT_SUPPORTED;
}

hal_result emu_vmm_phys_alloc(hal_device *dev, size_t size, hal_phys_mem **pm)
{
    (void)dev, (void)size, (void)pm;
    return HAL_E_NOT_SUPPORTED;
}

hal_result emu_vmm_phys_free(hal_phys_mem *pm)
{
    (void)pm;
    return HAL_E_NOT_SUPPORTED;
}

hal_result emu_vmm_map(void *va, size_t size, size_t offset, hal_phys_mem *pm)
{
    (void)va, (void)size, (void)offset, (void)pm;
    return HAL_E_NOT_SUPPORTED;
}

hal_result emu_vmm_unmap(void *va)
{
    (void)va;
    return HAL_E_NOT_SUPPORTED;
}
