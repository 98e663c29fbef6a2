/* Virtual memory management (aclrtReserveMemAddress & co), process-local.
 *
 * A reservation is a granularity-aligned range of the device heap; a physical chunk is another
 * (page-aligned) heap allocation. Mapping a chunk into a reservation remaps the device memfd at
 * the chunk's file offset onto the reserved addresses (MAP_FIXED), so the range aliases the
 * chunk's pages in this process: contents live in the chunk and survive remapping elsewhere;
 * unmap restores the range's own pages. Other processes of the server that imported the device
 * apply the same mappings to their view before they run DMA (emu_vmm_share.c), so VMM memory is
 * zero-copy shareable across processes as across devices of one process. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"

#define VMM_GRAN (2u << 20)

struct hal_phys_mem {
    hal_device *dev;
    char *alloc;  /* heap allocation */
    char *chunk;  /* page-aligned start inside it */
    size_t size;
    int maps;
    struct hal_phys_mem *next;
};

typedef struct vmm_range {
    hal_device *dev;
    char *alloc, *va;
    size_t size;
    struct vmm_range *next;
} vmm_range;

typedef struct vmm_mapping {
    char *va;
    size_t size;
    hal_phys_mem *pm;
    vmm_range *range;
    struct vmm_mapping *next;
} vmm_mapping;

static pthread_mutex_t g_vmm_mu = PTHREAD_MUTEX_INITIALIZER;
static vmm_range *g_ranges;
static vmm_mapping *g_maps;
static hal_phys_mem *g_phys;

size_t emu_vmm_granularity(hal_device *dev)
{
    (void)dev;
    return VMM_GRAN;
}

static char *align_up(char *p, size_t a)
{
    return (char *)(((uintptr_t)p + a - 1) & ~(uintptr_t)(a - 1));
}

hal_result emu_vmm_reserve(hal_device *dev, size_t size, void **va)
{
    if (!va || !size || size % VMM_GRAN || !emu_device_live(dev))
        return HAL_E_PARAM;
    vmm_range *r = calloc(1, sizeof *r);
    char *a = r ? emu_heap_alloc(&dev->heap, size + VMM_GRAN) : NULL;
    if (!a) {
        free(r);
        return HAL_E_NOMEM;
    }
    *r = (vmm_range){dev, a, align_up(a, VMM_GRAN), size, NULL};
    pthread_mutex_lock(&g_vmm_mu);
    r->next = g_ranges;
    g_ranges = r;
    pthread_mutex_unlock(&g_vmm_mu);
    *va = r->va;
    return HAL_OK;
}

/* The free listeners hear of a change with g_vmm_mu not held (hal_ops.mem_free_listen): each path
 * below first finds what goes away under the lock, tells them, then does it (checking again). */
hal_result emu_vmm_release(hal_device *dev, void *va)
{
    hal_result rc = HAL_E_PARAM;
    char *alloc = NULL;
    size_t bytes = 0;
    pthread_mutex_lock(&g_vmm_mu);
    for (vmm_range *r = g_ranges; r && !alloc; r = r->next)
        if (r->va == va && r->dev == dev) {
            alloc = r->alloc;
            bytes = r->size + VMM_GRAN;
        }
    pthread_mutex_unlock(&g_vmm_mu);
    emu_mem_freeing(alloc, bytes); /* the reservation's whole heap block */
    pthread_mutex_lock(&g_vmm_mu);
    for (vmm_range **pp = &g_ranges; *pp; pp = &(*pp)->next) {
        vmm_range *r = *pp;
        if (r->va != va || r->dev != dev)
            continue;
        bool mapped = false;
        for (vmm_mapping *m = g_maps; m; m = m->next)
            mapped |= m->range == r;
        if (mapped) {
            OH_ERR("emu", "vmm_release: range %p still has mappings", va);
            break;
        }
        *pp = r->next;
        emu_heap_free(&dev->heap, r->alloc);
        free(r);
        rc = HAL_OK;
        break;
    }
    pthread_mutex_unlock(&g_vmm_mu);
    return rc;
}

hal_result emu_vmm_phys_alloc(hal_device *dev, size_t size, hal_phys_mem **pm)
{
    if (!pm || !size || size % VMM_GRAN || !emu_device_live(dev))
        return HAL_E_PARAM;
    hal_phys_mem *p = calloc(1, sizeof *p);
    char *a = p ? emu_heap_alloc(&dev->heap, size + 4096) : NULL;
    if (!a) {
        free(p);
        return HAL_E_NOMEM;
    }
    p->dev = dev;
    p->alloc = a;
    p->chunk = align_up(a, 4096);
    p->size = size;
    pthread_mutex_lock(&g_vmm_mu);
    p->next = g_phys;
    g_phys = p;
    pthread_mutex_unlock(&g_vmm_mu);
    *pm = p;
    return HAL_OK;
}

/* Unlinks pm from the list (lock held); false if it is not live. */
static bool phys_unlink_locked(hal_phys_mem *pm)
{
    for (hal_phys_mem **pp = &g_phys; *pp; pp = &(*pp)->next)
        if (*pp == pm) {
            *pp = pm->next;
            return true;
        }
    return false;
}

static bool phys_live_locked(const hal_phys_mem *pm)
{
    for (const hal_phys_mem *p = g_phys; p; p = p->next)
        if (p == pm)
            return true;
    return false;
}

hal_result emu_vmm_phys_free(hal_phys_mem *pm)
{
    char *alloc = NULL;
    size_t bytes = 0;
    pthread_mutex_lock(&g_vmm_mu);
    if (pm && pm->maps == 0 && phys_live_locked(pm)) {
        alloc = pm->alloc;
        bytes = pm->size + 4096;
    }
    pthread_mutex_unlock(&g_vmm_mu);
    emu_mem_freeing(alloc, bytes);
    pthread_mutex_lock(&g_vmm_mu);
    hal_result rc = HAL_E_PARAM;
    if (pm && pm->maps == 0 && phys_unlink_locked(pm)) {
        emu_heap_free(&pm->dev->heap, pm->alloc);
        free(pm);
        rc = HAL_OK;
    }
    pthread_mutex_unlock(&g_vmm_mu);
    return rc;
}

/* Maps `size` bytes of the device memfd at file offset `off` onto va. */
static hal_result remap(hal_device *dev, char *va, size_t size, uint64_t off)
{
    void *p = mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, dev->region->fd, (off_t)off);
    return p == va ? HAL_OK : HAL_E_SYSCALL;
}

hal_result emu_vmm_map(void *va, size_t size, size_t offset, hal_phys_mem *pm)
{
    char *v = va;
    if (!va || !pm || !size || (uintptr_t)v % 4096 || size % 4096 || offset % 4096)
        return HAL_E_PARAM;
    emu_mem_freeing(va, size); /* the range's own pages give way to the chunk's */
    pthread_mutex_lock(&g_vmm_mu);
    hal_result rc = HAL_E_PARAM;
    vmm_range *r = g_ranges;
    while (r && !(v >= r->va && v + size <= r->va + r->size))
        r = r->next;
    bool live = phys_live_locked(pm), overlap = false;
    for (vmm_mapping *m = g_maps; m; m = m->next)
        overlap |= v < m->va + m->size && m->va < v + size;
    vmm_mapping *m = r && live && !overlap && r->dev == pm->dev && offset + size <= pm->size ? malloc(sizeof *m) : NULL;
    if (m) {
        char *base = pm->dev->region->base;
        rc = remap(pm->dev, v, size, (uint64_t)(pm->chunk - base) + offset);
        if (rc == HAL_OK) {
            emu_vmm_share_add(pm->dev->region, v, size, (uint64_t)(pm->chunk - base) + offset);
            *m = (vmm_mapping){v, size, pm, r, g_maps};
            g_maps = m;
            pm->maps++;
        } else {
            free(m);
        }
    }
    pthread_mutex_unlock(&g_vmm_mu);
    return rc;
}

hal_result emu_vmm_unmap(void *va)
{
    hal_result rc = HAL_E_PARAM;
    size_t bytes = 0;
    pthread_mutex_lock(&g_vmm_mu);
    for (vmm_mapping *m = g_maps; m && !bytes; m = m->next)
        if (m->va == va)
            bytes = m->size;
    pthread_mutex_unlock(&g_vmm_mu);
    emu_mem_freeing(va, bytes); /* the chunk's pages leave these addresses */
    pthread_mutex_lock(&g_vmm_mu);
    for (vmm_mapping **pp = &g_maps; *pp; pp = &(*pp)->next) {
        vmm_mapping *m = *pp;
        if (m->va != va)
            continue;
        hal_device *dev = m->pm->dev;
        rc = remap(dev, m->va, m->size, (uint64_t)(m->va - (char *)dev->region->base)); /* own pages back */
        emu_vmm_share_remove(dev->region, m->va);
        *pp = m->next;
        m->pm->maps--;
        free(m);
        break;
    }
    pthread_mutex_unlock(&g_vmm_mu);
    return rc;
}

void emu_vmm_forget_device(hal_device *dev)
{
    pthread_mutex_lock(&g_vmm_mu);
    for (vmm_mapping **pp = &g_maps; *pp;) {
        vmm_mapping *m = *pp;
        if (m->pm->dev == dev) {
            *pp = m->next;
            free(m);
        } else {
            pp = &m->next;
        }
    }
    for (vmm_range **pp = &g_ranges; *pp;) {
        vmm_range *r = *pp;
        if (r->dev == dev) {
            *pp = r->next;
            free(r);
        } else {
            pp = &r->next;
        }
    }
    for (hal_phys_mem **pp = &g_phys; *pp;) {
        hal_phys_mem *p = *pp;
        if (p->dev == dev) {
            *pp = p->next;
            free(p);
        } else {
            pp = &p->next;
        }
    }
    pthread_mutex_unlock(&g_vmm_mu);
}
