/* The emulator's HAL table. */
#include "hal/emu/emu_internal.h"

const hal_ops emu_hal_ops = {
    .name = "emu",
    .host_mapped_mem = true,
    .device_count = emu_device_count,
    .device_open = emu_device_open,
    .device_close = emu_device_close,
    .device_info = emu_device_info,
    .device_sync = emu_device_sync,
    .link_class = emu_link_class,
    .current_device = emu_current_device,
    .set_current_device = emu_set_current_device,
    .mem_alloc = emu_mem_alloc,
    .mem_free = emu_mem_free,
    .mem_lookup = emu_mem_lookup,
    .mem_import = emu_mem_import,
    .mem_free_listen = emu_mem_free_listen,
    .mem_free_unlisten = emu_mem_free_unlisten,
    .vmm_granularity = emu_vmm_granularity,
    .vmm_reserve = emu_vmm_reserve,
    .vmm_release = emu_vmm_release,
    .vmm_phys_alloc = emu_vmm_phys_alloc,
    .vmm_phys_free = emu_vmm_phys_free,
    .vmm_map = emu_vmm_map,
    .vmm_unmap = emu_vmm_unmap,
    .stream_create = emu_stream_create,
    .stream_destroy = emu_stream_destroy,
    .stream_sync = emu_stream_sync,
    .stream_query = emu_stream_query,
    .stream_error_msg = emu_stream_error_msg,
    .stream_clear_error = emu_stream_clear_error,
    .stream_device = emu_stream_device,
    .stream_from_native = emu_stream_from_native,
    .dma_batch = emu_dma_batch,
    .memset_async = emu_memset_async,
    .task_async = emu_task_async,
    .host_func_async = emu_host_func_async,
    .prog_launch = emu_prog_launch,
    .event_create = emu_event_create,
    .event_destroy = emu_event_destroy,
    .event_record = emu_event_record,
    .event_reset = emu_event_reset,
    .stream_wait_event = emu_stream_wait_event,
    .event_sync = emu_event_sync,
    .event_query = emu_event_query,
    .event_recorded = emu_event_recorded,
    .event_elapsed_ms = emu_event_elapsed_ms,
    .notify_create = emu_notify_create,
    .notify_destroy = emu_notify_destroy,
    .notify_export = emu_notify_export,
    .notify_import = emu_notify_import,
    .notify_id = emu_notify_id,
    .notify_record = emu_notify_record,
    .notify_wait = emu_notify_wait,
    .notify_wait_reset = emu_notify_wait_reset,
    .ipc_mem_export = emu_ipc_mem_export,
    .ipc_notify_export = emu_ipc_notify_export,
    .ipc_set_pids = emu_ipc_set_pids,
    .ipc_mem_import = emu_ipc_mem_import,
    .ipc_notify_import = emu_ipc_notify_import,
    .ipc_close = emu_ipc_close,
    .notify_host_record = emu_notify_host_record,
};

/* The one entry point through which libhccl reaches this table (hal/hal.c). Everything else
 * libascendcl.so exports is CANN's ACL API (hal/emu/ascendcl.map). */
const hal_ops *aclExtGetEmuHal(uint32_t abiVersion);

const hal_ops *aclExtGetEmuHal(uint32_t abiVersion)
{
    return abiVersion == HAL_ABI_VERSION ? &emu_hal_ops : NULL;
}
