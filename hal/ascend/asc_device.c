/* Devices and memory over ACL: aclrtSetDevice/GetDevice/ResetDevice, aclrtMalloc/Free,
 * aclrtPointerGetAttributes. ACL has one "current device" per thread, as the HAL does; a hal_device
 * is an entry of a per-process table indexed by device id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/ascend/asc_internal.h"

pthread_mutex_t asc_lock = PTHREAD_MUTEX_INITIALIZER;
static hal_device g_devs[ASC_MAX_DEVICES];
static _Atomic uint64_t g_mem_total; /* HBM bytes of a device of this server, once one was opened */

/* The position of this process's server in the job: HCCL_EMU_SERVER_INDEX, which hcclrun --servers
 * sets when it emulates several servers on one host (the emulator's libascendcl reads it too, so both
 * agree on which devices share memory); 0 otherwise, where the host name tells servers apart. */
static uint32_t server_index(void)
{
    const char *v = getenv("HCCL_EMU_SERVER_INDEX");
    unsigned long i = v && *v ? strtoul(v, NULL, 10) : 0;
    return i > (1u << 20) ? 0 : (uint32_t)i;
}

/* Identifies this server: processes of one machine (and one emulated server) agree, other machines
 * differ (host name). */
static uint64_t server_key(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = host; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ server_index()) * 1099511628211ull;
    return h | 1; /* never 0: a zeroed handle is "no device" */
}

hal_device *asc_dev(int32_t id)
{
    hal_device *d = &g_devs[id];
    d->id = id;
    d->handle.server_key = server_key();
    d->handle.server_index = server_index();
    d->handle.device_id = (uint32_t)id;
    d->handle.pid = (uint32_t)getpid();
    return d;
}

uint32_t asc_exec_timeout_ms(void)
{
    const char *v = getenv("HCCL_EXEC_TIMEOUT"); /* seconds, as CANN's HCCL */
    long s = v && *v ? strtol(v, NULL, 10) : 1836;
    return s <= 0 || s > 4000000 ? 4000000000u : (uint32_t)s * 1000u;
}

_Thread_local int asc_thread_fresh;

hal_result asc_select(hal_device *dev)
{
    int32_t cur = -1;
    /* a fresh thread of ours has no device: asking ACL would log an error */
    if (!asc_thread_fresh && ACL(aclrtGetDevice)(&cur) == ACL_SUCCESS && cur == dev->id)
        return HAL_OK;
    hal_result rc = asc_from_acl(ACL(aclrtSetDevice)(dev->id));
    if (rc == HAL_OK)
        asc_thread_fresh = 0;
    return rc;
}

static hal_result device_count(uint32_t *count)
{
    return asc_from_acl(ACL(aclrtGetDeviceCount)(count));
}

static hal_result device_open(int32_t id, hal_device **out)
{
    uint32_t n = 0;
    if (!out || id < 0 || id >= ASC_MAX_DEVICES || device_count(&n) != HAL_OK || (uint32_t)id >= n)
        return HAL_E_INVALID_DEVICE;
    pthread_mutex_lock(&asc_lock);
    hal_device *d = asc_dev(id);
    hal_result rc = HAL_OK;
    /* aclrtSetDevice opens the device in this process (CANN counts its calls) and selects it. */
    if (d->refs == 0) {
        aclError e = ACL(aclrtSetDevice)(id);
        /* a device that cannot be set up here (e.g. held by another process) is not openable */
        rc = e == ACL_ERROR_RT_DEV_SETUP_ERROR ? HAL_E_INVALID_DEVICE : asc_from_acl(e);
    }
    if (rc == HAL_OK)
        d->refs++;
    pthread_mutex_unlock(&asc_lock);
    size_t fr = 0, tot = 0;
    if (rc == HAL_OK && ACL(aclrtGetMemInfo) && ACL(aclrtGetMemInfo)(ACL_HBM_MEM, &fr, &tot) == ACL_SUCCESS && tot)
        atomic_store(&g_mem_total, (uint64_t)tot);
    if (rc == HAL_OK)
        *out = d;
    else
        OH_ERR("hal", "ascend: aclrtSetDevice(%d) failed: %s", id, asc_errmsg());
    return rc;
}

static hal_result device_sync(hal_device *dev, int32_t timeout_ms)
{
    hal_result rc = asc_select(dev);
    return rc != HAL_OK ? rc : asc_from_acl(ACL(aclrtSynchronizeDeviceWithTimeout)(timeout_ms));
}

static hal_result device_close(hal_device *dev)
{
    if (!dev || dev->refs <= 0)
        return HAL_E_PARAM;
    pthread_mutex_lock(&asc_lock);
    int last = --dev->refs == 0;
    pthread_mutex_unlock(&asc_lock);
    if (!last)
        return HAL_OK;
    device_sync(dev, -1);
    for (hal_stream *s = dev->streams; s; s = dev->streams) {
        dev->streams = s->next;
        s->next = NULL;
        asc_stream_destroy(s);
    }
    for (hal_stream *s = dev->retired; s; s = dev->retired) { /* nothing of the device runs now */
        dev->retired = s->next;
        free(s);
    }
    asc_host_record_close(dev);
    asc_keydir_close(dev);
    asc_alloc_forget_device(dev->id);
    if (dev->anchor)
        ACL(aclrtFree)(dev->anchor);
    dev->anchor = NULL;
    return asc_from_acl(ACL(aclrtResetDevice)(dev->id));
}

static hal_result device_info(hal_device *dev, hal_device_info *info)
{
    if (!info)
        return HAL_E_PARAM;
    memset(info, 0, sizeof *info);
    if (dev) {
        info->handle = dev->handle;
        asc_keydir_publish(dev); /* a handle given out may be imported: make the device importable */
    }
    size_t fr = 0, tot = 0;
    if (dev && ACL(aclrtGetMemInfo) && asc_select(dev) == HAL_OK && ACL(aclrtGetMemInfo)(ACL_HBM_MEM, &fr, &tot) == 0) {
        info->mem_total = tot;
        info->mem_free = fr;
    }
    /* ACL does not expose the SDMA engine count: one transfer per descriptor, the runtime splits. */
    info->dma_engines = 1;
    info->soc_name = ACL(aclrtGetSocName) ? ACL(aclrtGetSocName)() : "Ascend";
    return HAL_OK;
}

static hal_link_class link_class(hal_device *dev, const hal_device_handle *peer)
{
    if (peer->server_key != dev->handle.server_key || peer->server_index != dev->handle.server_index)
        return HAL_LINK_NET;
    return peer->device_id == dev->handle.device_id ? HAL_LINK_SELF : HAL_LINK_INTRA;
}

static hal_result current_device(hal_device **dev)
{
    int32_t id = -1;
    if (!dev)
        return HAL_E_PARAM;
    if (ACL(aclrtGetDevice)(&id) != ACL_SUCCESS || id < 0 || id >= ASC_MAX_DEVICES)
        return HAL_E_INVALID_DEVICE;
    pthread_mutex_lock(&asc_lock);
    *dev = asc_dev(id);
    pthread_mutex_unlock(&asc_lock);
    return HAL_OK;
}

static hal_result set_current_device(hal_device *dev)
{
    return dev ? asc_select(dev) : HAL_E_PARAM;
}

static hal_result mem_alloc(hal_device *dev, size_t bytes, void **ptr)
{
    if (!bytes || !ptr)
        return HAL_E_PARAM;
    hal_result rc = asc_select(dev);
    if (rc != HAL_OK)
        return rc;
    rc = asc_from_acl(ACL(aclrtMalloc)(ptr, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    if (rc == HAL_OK && (rc = asc_alloc_add(dev->id, *ptr, bytes)) != HAL_OK)
        ACL(aclrtFree)(*ptr);
    return rc;
}

static hal_result mem_free(hal_device *dev, void *ptr)
{
    aclrtPtrAttributes a;
    if (!ptr || (ACL(aclrtPointerGetAttributes) && (ACL(aclrtPointerGetAttributes)(ptr, &a) != ACL_SUCCESS ||
                                                    a.location.type != ACL_MEM_LOCATION_TYPE_DEVICE ||
                                                    a.location.id != (uint32_t)dev->id)))
        return HAL_E_FOREIGN; /* aclrtFree would free another device's memory: the HAL refuses */
    asc_alloc_del(ptr); /* first: once freed, another thread's mem_alloc may get the address */
    return ACL(aclrtFree)(ptr) == ACL_SUCCESS ? HAL_OK : HAL_E_FOREIGN;
}

/* aclrtPointerGetAttributes names the owning device but not the allocation's extent: bytes_after
 * is exact for allocations made through mem_alloc (asc_alloc.c) and only bounded for the others
 * (the application's aclrtMalloc), by the device's memory size (no allocation is larger), or
 * UINT64_MAX when no device was opened yet. A bound, not the extent: size checks that rely on it
 * pass for buffers that overrun their allocation, and a network registration of
 * [ptr, ptr + bytes_after) covers more than the buffer (hal/net's TCP links only check that writes
 * land in registered ranges). */
static hal_result mem_lookup(const void *ptr, hal_device_handle *owner, uint64_t *bytes_after)
{
    aclrtPtrAttributes a;
    if (!ACL(aclrtPointerGetAttributes) || !ptr || ACL(aclrtPointerGetAttributes)(ptr, &a) != ACL_SUCCESS ||
        a.location.type != ACL_MEM_LOCATION_TYPE_DEVICE || a.location.id >= ASC_MAX_DEVICES)
        return HAL_E_FOREIGN;
    if (owner) {
        memset(owner, 0, sizeof *owner);
        owner->server_key = asc_dev(0)->handle.server_key;
        owner->server_index = asc_dev(0)->handle.server_index;
        owner->device_id = a.location.id;
        owner->pid = (uint32_t)getpid();
    }
    uint64_t total = atomic_load(&g_mem_total);
    if (bytes_after && !asc_alloc_find(ptr, bytes_after))
        *bytes_after = total ? total : UINT64_MAX;
    return HAL_OK;
}

/* Importing a peer device: open the anchor allocation its owner exported (asc_keydir.c). On CANN
 * this maps that allocation only; the emulator maps the whole device (see docs/ascend.md). */
static hal_result mem_import(hal_device *dev, const hal_device_handle *peer)
{
    const char *missing = asc_ipc_missing();
    if (missing) {
        OH_ERR("hal", "ascend: cannot map device %u of pid %u: the libascendcl.so in use lacks %s", peer->device_id,
               peer->pid, missing);
        return HAL_E_NOT_SUPPORTED;
    }
    char key[HAL_IPC_KEY_LEN];
    hal_result rc = asc_keydir_mem_key(peer, key);
    if (rc == HAL_OK)
        rc = asc_select(dev);
    void *p = NULL;
    if (rc == HAL_OK && (rc = asc_from_acl(ACL(aclrtIpcMemImportByKey)(&p, key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS))) != HAL_OK)
        OH_ERR("hal", "ascend: aclrtIpcMemImportByKey(device %u of pid %u) failed: %s", peer->device_id, peer->pid,
               asc_errmsg());
    return rc;
}

static size_t vmm_granularity(hal_device *dev)
{
    (void)dev;
    return 2u << 20;
}

/* VMM is the fidelity work's (aclrtReserveMemAddress & co are not needed by the runtime's plans). */
static hal_result vmm_reserve(hal_device *d, size_t s, void **va) { (void)d; (void)s; (void)va; return HAL_E_NOT_SUPPORTED; }
static hal_result vmm_release(hal_device *d, void *va) { (void)d; (void)va; return HAL_E_NOT_SUPPORTED; }
static hal_result vmm_phys_alloc(hal_device *d, size_t s, hal_phys_mem **pm) { (void)d; (void)s; (void)pm; return HAL_E_NOT_SUPPORTED; }
static hal_result vmm_phys_free(hal_phys_mem *pm) { (void)pm; return HAL_E_NOT_SUPPORTED; }
static hal_result vmm_map(void *va, size_t s, size_t o, hal_phys_mem *pm) { (void)va; (void)s; (void)o; (void)pm; return HAL_E_NOT_SUPPORTED; }
static hal_result vmm_unmap(void *va) { (void)va; return HAL_E_NOT_SUPPORTED; }

/* mem_free_listen stays NULL: the application's aclrtFree goes to CANN, not through this backend,
 * so it cannot tell when memory goes. runtime/net then relies on its extent check at registration
 * (docs/runtime.md, "Registrations of device memory"); mem_lookup cannot give the extent here
 * (aclrtPointerGetAttributes has no size), so user buffers are not registered with the links. */
const hal_ops asc_dev_ops = {
    .device_count = device_count, .device_open = device_open, .device_close = device_close,
    .device_info = device_info, .device_sync = device_sync, .link_class = link_class,
    .current_device = current_device, .set_current_device = set_current_device,
    .mem_alloc = mem_alloc, .mem_free = mem_free, .mem_lookup = mem_lookup, .mem_import = mem_import,
    .vmm_granularity = vmm_granularity, .vmm_reserve = vmm_reserve, .vmm_release = vmm_release,
    .vmm_phys_alloc = vmm_phys_alloc, .vmm_phys_free = vmm_phys_free, .vmm_map = vmm_map, .vmm_unmap = vmm_unmap,
};
