/* Device memory ops: allocation in the device heap, lookup of any device pointer mapped in this
 * process (own devices and imported peers), import of a peer's memory. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"

#ifdef MADV_POPULATE_WRITE
#define EMU_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define EMU_MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

hal_result emu_mem_alloc(hal_device *dev, size_t bytes, void **ptr)
{
    if (!ptr || !emu_device_live(dev))
        return HAL_E_PARAM;
    if (bytes == 0) {
        OH_ERR("emu", "mem_alloc: size 0 on device %u", dev->id);
        return HAL_E_PARAM;
    }
    void *p = emu_heap_alloc(&dev->heap, bytes);
    if (!p) {
        OH_ERR("emu", "device %u: out of device memory for %zu bytes (%llu of %llu free, possibly fragmented)",
               dev->id, bytes, (unsigned long long)emu_heap_free_bytes(&dev->heap),
               (unsigned long long)dev->heap.size);
        return HAL_E_NOMEM;
    }
    *ptr = p;
    return HAL_OK;
}

hal_result emu_mem_free(hal_device *dev, void *ptr)
{
    if (!emu_device_live(dev))
        return HAL_E_PARAM;
    uint64_t size;
    if (ptr && emu_heap_extent(&dev->heap, ptr, &size) == 0)
        emu_mem_freeing(ptr, size); /* before the block can be reused */
    if (!ptr || emu_heap_free(&dev->heap, ptr) != 0) {
        OH_ERR("emu", "mem_free: %p is not the start of a live allocation of device %u", ptr, dev->id);
        return HAL_E_FOREIGN;
    }
    return HAL_OK;
}

/* Looks ptr up in region r (held by the caller: lock or read section). */
static hal_result lookup_in(emu_region *r, const void *ptr, hal_device_handle *owner, uint64_t *bytes_after)
{
    const char *p = ptr, *heap = (const char *)r->base + EMU_CTRL_SIZE;
    if (p < heap)
        return HAL_E_FOREIGN; /* control area: not allocatable memory */
    uint64_t after = (uint64_t)((const char *)r->base + r->size - p);
    if (r->owned && emu_heap_lookup(&r->dev->heap, ptr, &after) != 0)
        return HAL_E_FOREIGN;
    if (owner)
        *owner = r->handle;
    if (bytes_after)
        *bytes_after = after;
    return HAL_OK;
}

hal_result emu_mem_lookup(const void *ptr, hal_device_handle *owner, uint64_t *bytes_after)
{
    uint32_t id = emu_region_id_of(ptr); /* O(1): regions sit at fixed addresses */
    if (id == UINT32_MAX)
        return HAL_E_FOREIGN;
    hal_result rc = HAL_E_FOREIGN;
    emu_regions_read_begin();
    emu_region *r = emu_region_peek(id);
    if (r && (const char *)ptr >= (const char *)r->base && (const char *)ptr < (const char *)r->base + r->size)
        rc = lookup_in(r, ptr, owner, bytes_after);
    emu_regions_read_end();
    return rc;
}

/* A first write to a page of a region costs a fault (~10-60 us on a VM, more when 8 ranks fault
 * at once); MADV_POPULATE_WRITE maps a range in one call at ~2 us a page. Kernels before 5.14 do
 * not know it: the pages then fault on first use, as without it. */
hal_result emu_mem_prefault(void *ptr, size_t bytes)
{
    hal_device_handle owner;
    uint64_t after = 0;
    if (!bytes || emu_mem_lookup(ptr, &owner, &after) != HAL_OK || bytes > after)
        return HAL_E_PARAM;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)ptr & ~(page - 1), hi = ((uintptr_t)ptr + bytes + page - 1) & ~(page - 1);
    (void)madvise((void *)lo, hi - lo, EMU_MADV_POPULATE_WRITE);
    return HAL_OK;
}

/* Takes a reference on an already mapped region for dev; 1 if done, 0 if it must be fetched. */
static int import_existing(hal_device *dev, const hal_device_handle *peer, hal_result *rc)
{
    emu_regions_lock();
    emu_region *r = emu_region_find_locked(peer->device_id);
    int done = 1;
    if (!r) {
        done = 0;
    } else if (r->owned) {
        *rc = HAL_OK; /* a device of this process: nothing to map */
    } else if (r->handle.pid != peer->pid) {
        OH_ERR("emu", "device %u: mapped from pid %u, but the handle names pid %u (device reopened?)",
               peer->device_id, r->handle.pid, peer->pid);
        *rc = HAL_E_PEER;
    } else {
        r->refs++;
        dev->imports[peer->device_id] = r;
        *rc = HAL_OK;
    }
    emu_regions_unlock();
    return done;
}

hal_result emu_mem_import(hal_device *dev, const hal_device_handle *peer)
{
    const emu_config *cfg = emu_cfg();
    if (!peer || !emu_device_live(dev))
        return HAL_E_PARAM;
    if (peer->server_key != cfg->server_key || peer->server_index != cfg->server_index ||
        peer->device_id >= EMU_MAX_DEVICES) {
        OH_ERR("emu", "mem_import: device %u of server %u is not on this emulated server (%u, \"%s\")",
               peer->device_id, peer->server_index, cfg->server_index, cfg->ns);
        return HAL_E_PARAM;
    }
    pthread_mutex_lock(&dev->mu); /* serializes imports of this device */
    hal_result rc = HAL_OK;
    if (!dev->imports[peer->device_id] && !import_existing(dev, peer, &rc)) {
        int fd;
        uint64_t size;
        uint32_t pid;
        rc = emu_share_fetch(peer, &fd, &size, &pid);
        hal_device_handle h = *peer;
        h.pid = pid;
        emu_region *r = NULL;
        if (rc == HAL_OK)
            rc = emu_region_import(&h, fd, size, &r);
        if (rc == HAL_OK)
            dev->imports[peer->device_id] = r;
    }
    pthread_mutex_unlock(&dev->mu);
    return rc;
}
