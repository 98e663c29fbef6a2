/* Test-only strictness of the ACL front (HCCL_EMU_ACL_STRICT_IPC=1): the emulator maps every peer
 * device of the server whole, CANN's aclrtIpcMemImportByKey maps only the allocation exported.
 * With the switch set, a copy that names memory of a device another process owns is refused
 * unless that memory lies in an allocation this process imported by key, as a real NPU would
 * fault on it. Tests use it to prove that a backend reaches peers only through what they exported
 * (docs/ascend.md, staging). Off by default: nothing changes for anyone else. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/emu/acl_internal.h"
#include "hal/emu/emu_internal.h"

#define STRICT_MAX 1024

typedef struct strict_range {
    char key[HAL_IPC_KEY_LEN];
    uintptr_t lo, hi;
} strict_range;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static strict_range g_ranges[STRICT_MAX];
static uint32_t g_n;

static bool strict_on(void)
{
    static _Atomic int on = -1; /* racing first reads compute the same value */
    if (on < 0) {
        const char *e = getenv("HCCL_EMU_ACL_STRICT_IPC");
        on = e && *e && strcmp(e, "0") != 0;
    }
    return on;
}

void acl_strict_imported(hal_device *dev, const char *key, const void *ptr)
{
    uint64_t after = 0;
    if (!strict_on() || emu_ipc_mem_size(dev, key, &after) != HAL_OK)
        return;
    /* The range before the lock: read after it, gcc 12 -O3 takes `after` for a dangling pointer. */
    const strict_range got = {.lo = (uintptr_t)ptr, .hi = (uintptr_t)ptr + after};
    pthread_mutex_lock(&g_mu);
    if (g_n < STRICT_MAX) { /* what was exported, as CANN maps it */
        strict_range *r = &g_ranges[g_n++];
        *r = got;
        snprintf(r->key, sizeof r->key, "%s", key);
    }
    pthread_mutex_unlock(&g_mu);
}

void acl_strict_closed(const char *key)
{
    if (!strict_on())
        return;
    pthread_mutex_lock(&g_mu);
    for (uint32_t i = 0; i < g_n; i++)
        if (!strcmp(g_ranges[i].key, key)) {
            g_ranges[i] = g_ranges[--g_n];
            break;
        }
    pthread_mutex_unlock(&g_mu);
}

aclError acl_strict_check(const char *func, const char *name, const void *p, size_t n, const hal_device_handle *owner)
{
    if (!strict_on() || owner->pid == (uint32_t)getpid())
        return ACL_SUCCESS;
    bool ok = false;
    pthread_mutex_lock(&g_mu);
    for (uint32_t i = 0; i < g_n && !ok; i++)
        ok = (uintptr_t)p >= g_ranges[i].lo && (uintptr_t)p + n <= g_ranges[i].hi;
    pthread_mutex_unlock(&g_mu);
    if (ok)
        return ACL_SUCCESS;
    return acl_fail(ACL_ERROR_RT_NO_PERMISSION, func,
                    "%s %p (%zu bytes) is memory of device %u of process %u that this process did not import by key "
                    "(HCCL_EMU_ACL_STRICT_IPC: CANN maps only exported allocations)", name, p, n, owner->device_id,
                    owner->pid);
}
