/* Symmetric memory windows (HcclCommSymWinRegister / SymWinDeregister / SymWinGet): docs/runtime.md,
 * "Registered memory and symmetric windows".
 *
 * A window is a communicator's registration of [addr, addr + size) of VMM memory, at most
 * hcclSymWinMaxMemSizePerRank GB (HcclCommConfig, default 16). CANN lays every rank's window out
 * at the same offset of one symmetric address space so kernels address peers without an exchange.
 * Here every device address is valid in every process of the server already, so a window is
 * bookkeeping and validation: collectives on window memory bind it like any device buffer
 * (publication and all). The handle is an entry of a process-wide list, so a stale or made-up
 * handle is an error code, not a crash; a communicator's windows go with HcclCommDestroy. */
#include <stddef.h>
#include <stdlib.h>

#include "runtime/rt_internal.h"

#define MOD "symwin"
#define GIB (UINT64_C(1) << 30)

typedef struct rt_symwin {
    HcclComm comm;
    char *addr;
    uint64_t size;
    struct rt_symwin *next;
} rt_symwin;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_symwin *g_wins;

uint64_t rt_symwin_limit(const HcclCommConfig *config)
{
    uint64_t gb = HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE;
    /* Read the field only if the caller's config is new enough to have it. */
    const size_t end = offsetof(HcclCommConfig, hcclSymWinMaxMemSizePerRank) + sizeof(uint64_t);
    if (config && *(const size_t *)(const void *)config >= end && config->hcclSymWinMaxMemSizePerRank > 0)
        gb = config->hcclSymWinMaxMemSizePerRank;
    return gb > UINT64_MAX / GIB ? UINT64_MAX : gb * GIB;
}

HcclResult HcclCommSymWinRegister(HcclComm comm, void *addr, uint64_t size, HcclCommSymWindow *winHandle,
                                  uint32_t flag)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(addr && winHandle, HCCL_E_PTR, MOD, "%s: rank %u: null pointer (addr %p winHandle %p)", __func__,
              c->rank, addr, (void *)winHandle);
    CHECK_ARG(flag == 1, HCCL_E_PARA, MOD, "%s: rank %u: flag=%u (only 1, symmetric memory on, is supported)",
              __func__, c->rank, flag);
    CHECK_ARG(size > 0 && size <= c->symwin_max_bytes, HCCL_E_PARA, MOD,
              "%s: rank %u: size=%llu must be in (0, %llu] (hcclSymWinMaxMemSizePerRank)", __func__, c->rank,
              (unsigned long long)size, (unsigned long long)c->symwin_max_bytes);
    hal_device_handle owner;
    uint64_t after = 0;
    CHECK_ARG(c->hal->mem_lookup(addr, &owner, &after) == HAL_OK && owner.device_id == c->dev_handle.device_id &&
                  owner.server_key == c->dev_handle.server_key && after >= size,
              HCCL_E_PARA, MOD, "%s: rank %u: [%p, +%llu) is not memory of device %u", __func__, c->rank, addr,
              (unsigned long long)size, c->dev_handle.device_id);
    rt_symwin *w = calloc(1, sizeof *w);
    if (!w)
        return HCCL_E_MEMORY;
    *w = (rt_symwin){comm, addr, size, NULL};
    pthread_mutex_lock(&g_mu);
    for (rt_symwin *o = g_wins; o; o = o->next) {
        if (o->comm == comm && o->addr < w->addr + size && w->addr < o->addr + o->size) {
            pthread_mutex_unlock(&g_mu);
            free(w);
            OH_ERR(MOD, "%s: rank %u: [%p, +%llu) overlaps the window [%p, +%llu) of this communicator", __func__,
                   c->rank, addr, (unsigned long long)size, (void *)o->addr, (unsigned long long)o->size);
            return HCCL_E_PARA;
        }
    }
    w->next = g_wins;
    g_wins = w;
    pthread_mutex_unlock(&g_mu);
    *winHandle = w;
    return HCCL_SUCCESS;
}

HcclResult HcclCommSymWinDeregister(HcclCommSymWindow winHandle)
{
    CHECK_ARG(winHandle, HCCL_E_PTR, MOD, "%s: winHandle is NULL", __func__);
    pthread_mutex_lock(&g_mu);
    rt_symwin **pp = &g_wins;
    while (*pp && *pp != winHandle)
        pp = &(*pp)->next;
    rt_symwin *w = *pp;
    if (w)
        *pp = w->next;
    pthread_mutex_unlock(&g_mu);
    CHECK_ARG(w, HCCL_E_PARA, MOD, "%s: %p is not a registered window (deregistered already?)", __func__, winHandle);
    free(w);
    return HCCL_SUCCESS;
}

HcclResult HcclCommSymWinGet(HcclComm comm, void *ptr, size_t size, HcclCommSymWindow *winHandle, size_t *offset)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, __func__, &c));
    CHECK_ARG(ptr && winHandle && offset, HCCL_E_PTR, MOD, "%s: rank %u: null pointer (ptr %p winHandle %p offset %p)",
              __func__, c->rank, ptr, (void *)winHandle, (void *)offset);
    CHECK_ARG(size > 0, HCCL_E_PARA, MOD, "%s: rank %u: size is 0", __func__, c->rank);
    const char *p = ptr;
    rt_symwin *found = NULL;
    pthread_mutex_lock(&g_mu);
    for (rt_symwin *w = g_wins; w && !found; w = w->next)
        if (w->comm == comm && p >= w->addr && p < w->addr + w->size && size <= (uint64_t)(w->addr + w->size - p))
            found = w;
    if (found) {
        *winHandle = found;
        *offset = (size_t)(p - found->addr);
    }
    pthread_mutex_unlock(&g_mu);
    CHECK_ARG(found, HCCL_E_PARA, MOD, "%s: rank %u: [%p, +%zu) does not lie in a window of this communicator",
              __func__, c->rank, ptr, size);
    return HCCL_SUCCESS;
}

void rt_symwin_comm_destroyed(HcclComm comm)
{
    pthread_mutex_lock(&g_mu);
    for (rt_symwin **pp = &g_wins; *pp;) {
        rt_symwin *w = *pp;
        if (w->comm == comm) {
            *pp = w->next;
            free(w);
        } else {
            pp = &w->next;
        }
    }
    pthread_mutex_unlock(&g_mu);
}
