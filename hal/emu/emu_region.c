/* Device regions: one memfd per device, mapped MAP_SHARED at the same fixed address in every
 * process of the emulated server, so device pointers are valid everywhere once imported.
 * Hot-path readers (mem_lookup, the VMM check before each DMA batch) take no lock: they announce
 * themselves (emu_readers.c) and read the table's atomic pointers; a writer unlinks a region under
 * the lock, then waits for the readers to leave before it unmaps and frees it. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"

static pthread_mutex_t g_regions_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(emu_region *) g_regions[EMU_MAX_DEVICES]; /* by device id, this process's server */
static _Atomic uint32_t g_mapped;  /* slots of g_regions in use: devices this process works with */

void emu_regions_lock(void) { pthread_mutex_lock(&g_regions_mu); }
void emu_regions_unlock(void) { pthread_mutex_unlock(&g_regions_mu); }

emu_region *emu_region_find_locked(uint32_t id)
{
    return id < EMU_MAX_DEVICES ? atomic_load_explicit(&g_regions[id], memory_order_relaxed) : NULL;
}

emu_region *emu_region_peek(uint32_t id)
{
    return id < EMU_MAX_DEVICES ? atomic_load(&g_regions[id]) : NULL;
}

static void set_slot(uint32_t id, emu_region *r)
{
    emu_region *old = atomic_exchange(&g_regions[id], r);
    emu_vmm_slot_changed(id);
    if (!old != !r)
        atomic_fetch_add_explicit(&g_mapped, r ? 1u : (uint32_t)-1, memory_order_relaxed);
}

uint32_t emu_regions_mapped(void)
{
    return atomic_load_explicit(&g_mapped, memory_order_relaxed);
}

bool emu_devices_fit_cpus(void)
{
    return emu_regions_mapped() <= emu_cfg()->ncpus;
}

/* Maps fd at the device's fixed address; never replaces an existing mapping. */
static hal_result region_map(uint32_t id, int fd, uint64_t size, void **out)
{
    void *want = emu_region_base(emu_cfg()->server_index, id);
    void *p = mmap(want, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (p == MAP_FAILED || p != want) {
        int e = errno;
        if (p != MAP_FAILED)
            munmap(p, size);
        OH_ERR("emu", "cannot map device %u memory at its fixed address %p (%s): the address range "
               "is taken in this process", id, want, strerror(e));
        return HAL_E_SYSCALL;
    }
    *out = p;
    return HAL_OK;
}

hal_result emu_region_create(uint32_t id, emu_region **out)
{
    const emu_config *cfg = emu_cfg();
    char name[64];
    snprintf(name, sizeof name, "openhccl-emu-dev%u", id);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        OH_ERR("emu", "memfd_create for device %u: %s", id, strerror(errno));
        return HAL_E_SYSCALL;
    }
    if (ftruncate(fd, (off_t)EMU_REGION_SIZE) != 0) {
        OH_ERR("emu", "ftruncate device %u memory to %llu bytes: %s", id,
               (unsigned long long)EMU_REGION_SIZE, strerror(errno));
        close(fd);
        return HAL_E_SYSCALL;
    }
    emu_region *r = calloc(1, sizeof *r);
    if (!r) {
        close(fd);
        return HAL_E_NOMEM;
    }
    emu_regions_lock();
    emu_region *stale = emu_region_find_locked(id);
    if (stale && !stale->owned) { /* an import of a previous owner that is gone: drop it */
        set_slot(id, NULL);
        emu_regions_wait_readers();
        munmap(stale->base, stale->size);
        close(stale->fd);
        emu_vmm_mirror_free(stale);
        free(stale);
    }
    hal_result rc = emu_region_find_locked(id) ? HAL_E_INTERNAL : region_map(id, fd, EMU_REGION_SIZE, &r->base);
    if (rc != HAL_OK) {
        emu_regions_unlock();
        close(fd);
        free(r);
        return rc;
    }
    r->size = EMU_REGION_SIZE;
    r->fd = fd;
    r->refs = 1;
    r->owned = true;
    r->handle = (hal_device_handle){cfg->server_key, cfg->server_index, id, (uint32_t)getpid(), {0}};
    emu_ctrl *c = r->base;
    c->owner_pid = (uint32_t)getpid();
    c->device_id = id;
    c->heap_offset = EMU_CTRL_SIZE;
    c->heap_size = EMU_REGION_SIZE - EMU_CTRL_SIZE;
    c->magic = EMU_MAGIC;
    set_slot(id, r);
    emu_regions_unlock();
    *out = r;
    return HAL_OK;
}

void emu_region_destroy(emu_region *r)
{
    emu_regions_lock();
    uint32_t id = r->handle.device_id;
    if (id < EMU_MAX_DEVICES && emu_region_find_locked(id) == r)
        set_slot(id, NULL);
    emu_regions_unlock();
    emu_regions_wait_readers();
    munmap(r->base, r->size);
    close(r->fd);
    emu_vmm_mirror_free(r);
    free(r);
}

hal_result emu_region_import(const hal_device_handle *peer, int fd, uint64_t size, emu_region **out)
{
    uint32_t id = peer->device_id;
    emu_regions_lock();
    emu_region *r = emu_region_find_locked(id);
    if (r) { /* raced with another import, or already mapped */
        r->refs++;
        emu_regions_unlock();
        close(fd);
        *out = r;
        return HAL_OK;
    }
    r = calloc(1, sizeof *r);
    hal_result rc = r ? region_map(id, fd, size, &r->base) : HAL_E_NOMEM;
    if (rc == HAL_OK && ((emu_ctrl *)r->base)->magic != EMU_MAGIC) {
        OH_ERR("emu", "device %u memory received from pid %u has no emulator header", id, peer->pid);
        munmap(r->base, size);
        rc = HAL_E_PEER;
    }
    if (rc != HAL_OK) {
        emu_regions_unlock();
        close(fd);
        free(r);
        return rc;
    }
    r->size = size;
    r->fd = fd;
    r->refs = 1;
    r->owned = false;
    r->handle = *peer;
    set_slot(id, r);
    emu_regions_unlock();
    *out = r;
    return HAL_OK;
}

void emu_region_release(emu_region *r)
{
    emu_regions_lock();
    bool last = --r->refs == 0;
    if (last && emu_region_find_locked(r->handle.device_id) == r)
        set_slot(r->handle.device_id, NULL);
    emu_regions_unlock();
    if (last) {
        emu_regions_wait_readers();
        munmap(r->base, r->size);
        close(r->fd);
        emu_vmm_mirror_free(r);
        free(r);
    }
}
