/* Extents of the allocations made through the HAL (mem_alloc), for mem_lookup: ACL's public
 * aclrtPointerGetAttributes names a pointer's device but not its allocation, so hal/ascend keeps
 * the ones it made (the runtime's scratch, inboxes, control blocks, mirrors) in an address-sorted
 * table. Allocations made by the application with aclrtMalloc are not in it (asc_device.c bounds
 * them by the device's memory size). */
#include <stdlib.h>
#include <string.h>

#include "hal/ascend/asc_internal.h"

typedef struct asc_alloc {
    uintptr_t base;
    uint64_t size;
    int32_t dev;
} asc_alloc;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static asc_alloc *g_tab;
static size_t g_n, g_cap;

/* First entry whose base is > p. */
static size_t upper(uintptr_t p)
{
    size_t lo = 0, hi = g_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_tab[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

hal_result asc_alloc_add(int32_t dev, void *ptr, uint64_t size)
{
    pthread_mutex_lock(&g_lock);
    hal_result rc = HAL_OK;
    if (g_n == g_cap) {
        size_t c = g_cap ? 2 * g_cap : 256;
        asc_alloc *t = realloc(g_tab, c * sizeof *t);
        if (t) {
            g_tab = t;
            g_cap = c;
        } else {
            rc = HAL_E_NOMEM;
        }
    }
    if (rc == HAL_OK) {
        size_t i = upper((uintptr_t)ptr);
        memmove(&g_tab[i + 1], &g_tab[i], (g_n - i) * sizeof *g_tab);
        g_tab[i] = (asc_alloc){(uintptr_t)ptr, size, dev};
        g_n++;
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

void asc_alloc_del(void *ptr)
{
    pthread_mutex_lock(&g_lock);
    size_t i = upper((uintptr_t)ptr);
    if (i > 0 && g_tab[i - 1].base == (uintptr_t)ptr) {
        memmove(&g_tab[i - 1], &g_tab[i], (g_n - i) * sizeof *g_tab);
        g_n--;
    }
    pthread_mutex_unlock(&g_lock);
}

int asc_alloc_find(const void *ptr, uint64_t *bytes_after)
{
    uintptr_t p = (uintptr_t)ptr;
    pthread_mutex_lock(&g_lock);
    size_t i = upper(p);
    int found = i > 0 && p - g_tab[i - 1].base < g_tab[i - 1].size;
    if (found)
        *bytes_after = g_tab[i - 1].size - (p - g_tab[i - 1].base);
    pthread_mutex_unlock(&g_lock);
    return found;
}

/* The last device_close: ACL frees everything the device held. */
void asc_alloc_forget_device(int32_t dev)
{
    pthread_mutex_lock(&g_lock);
    size_t k = 0;
    for (size_t i = 0; i < g_n; i++)
        if (g_tab[i].dev != dev)
            g_tab[k++] = g_tab[i];
    g_n = k;
    pthread_mutex_unlock(&g_lock);
}
