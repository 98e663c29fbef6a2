/* Devices: open/close (reference counted), info, sync, link classes, the per-thread current
 * device. The device table is process-wide; a device being closed stays in it (closing) until
 * its resources are gone, and a concurrent open of the same id waits for that. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

static pthread_mutex_t g_dev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_dev_cv = PTHREAD_COND_INITIALIZER;
static hal_device *g_devs[EMU_MAX_DEVICES];
static uint64_t g_gen; /* open generation: stale per-thread selections are detected */
static __thread int32_t t_cur_id = -1;
static __thread uint64_t t_cur_gen;

bool emu_device_live(const hal_device *dev)
{
    if (!dev)
        return false;
    pthread_mutex_lock(&g_dev_mu);
    bool live = dev->id < EMU_MAX_DEVICES && g_devs[dev->id] == dev && !atomic_load(&dev->closing);
    pthread_mutex_unlock(&g_dev_mu);
    return live;
}

hal_device_handle emu_device_handle(const hal_device *dev)
{
    return dev->region->handle;
}

hal_result emu_device_count(uint32_t *count)
{
    if (!count)
        return HAL_E_PARAM;
    *count = emu_cfg()->ndev;
    return HAL_OK;
}

static void device_release(hal_device *dev);

/* Builds a device: claim, map, heap, engines, default stream. */
static hal_result device_build(uint32_t id, hal_device **out)
{
    hal_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return HAL_E_NOMEM;
    dev->id = id;
    dev->listener.fd = -1;
    pthread_mutex_init(&dev->mu, NULL);
    hal_result rc = emu_listener_claim(&dev->listener, id);
    if (rc == HAL_OK)
        rc = emu_region_create(id, &dev->region);
    if (rc == HAL_OK) {
        dev->region->dev = dev;
        emu_ctrl *c = dev->region->base;
        if (emu_heap_init(&dev->heap, (char *)c + c->heap_offset, c->heap_size) != 0)
            rc = HAL_E_NOMEM;
    }
    if (rc == HAL_OK && !(dev->notify_bitmap = calloc(EMU_MAX_NOTIFIES / 8, 1)))
        rc = HAL_E_NOMEM;
    if (rc == HAL_OK)
        rc = emu_dma_start(&dev->dma, emu_cfg()->dma_engines);
    if (rc == HAL_OK)
        rc = emu_listener_run(&dev->listener, dev->region);
    if (rc == HAL_OK)
        rc = emu_stream_new(dev, &dev->default_stream);
    if (rc != HAL_OK) {
        device_release(dev);
        return rc;
    }
    *out = dev;
    return HAL_OK;
}

/* Frees whatever device_build set up, after the streams are gone. */
static void device_release(hal_device *dev)
{
    for (;;) {
        pthread_mutex_lock(&dev->mu);
        hal_stream *s = dev->streams;
        pthread_mutex_unlock(&dev->mu);
        if (!s)
            break;
        emu_stream_free(s);
    }
    emu_events_free_all(dev);
    emu_notifies_free_all(dev);
    if (dev->dma.threads)
        emu_dma_stop(&dev->dma);
    emu_listener_stop(&dev->listener);
    for (uint32_t i = 0; i < EMU_MAX_DEVICES; i++)
        if (dev->imports[i])
            emu_region_release(dev->imports[i]);
    emu_vmm_forget_device(dev);
    if (dev->heap.blocks) {
        if (emu_heap_free_bytes(&dev->heap) < dev->heap.size) /* (a failed open allocated nothing) */
            emu_mem_freeing(dev->heap.base, dev->heap.size); /* every allocation goes with the device */
        emu_heap_fini(&dev->heap);
    }
    if (dev->region)
        emu_region_destroy(dev->region);
    free(dev->notify_bitmap);
    pthread_mutex_destroy(&dev->mu);
    free(dev);
}

hal_result emu_device_open(int32_t id, hal_device **out)
{
    const emu_config *cfg = emu_cfg();
    if (!out)
        return HAL_E_PARAM;
    if (id < 0 || (uint32_t)id >= cfg->ndev) {
        OH_ERR("emu", "device id %d is out of range: this emulated server has %u devices (HCCL_EMU_DEVICES)",
               id, cfg->ndev);
        return HAL_E_INVALID_DEVICE;
    }
    pthread_mutex_lock(&g_dev_mu);
    while (g_devs[id] && atomic_load(&g_devs[id]->closing))
        pthread_cond_wait(&g_dev_cv, &g_dev_mu);
    hal_result rc = HAL_OK;
    if (g_devs[id]) {
        g_devs[id]->refs++;
    } else if ((rc = device_build((uint32_t)id, &g_devs[id])) == HAL_OK) {
        g_devs[id]->refs = 1;
        g_devs[id]->gen = ++g_gen;
    }
    *out = rc == HAL_OK ? g_devs[id] : NULL;
    pthread_mutex_unlock(&g_dev_mu);
    return rc;
}

hal_result emu_device_close(hal_device *dev)
{
    pthread_mutex_lock(&g_dev_mu);
    if (!dev || dev->id >= EMU_MAX_DEVICES || g_devs[dev->id] != dev || atomic_load(&dev->closing)) {
        pthread_mutex_unlock(&g_dev_mu);
        return HAL_E_INVALID_DEVICE;
    }
    if (--dev->refs > 0) {
        pthread_mutex_unlock(&g_dev_mu);
        return HAL_OK;
    }
    atomic_store(&dev->closing, true); /* blocked notify/event waits give up */
    pthread_mutex_unlock(&g_dev_mu);
    uint32_t id = dev->id;
    if (t_cur_id == (int32_t)id)
        t_cur_id = -1;
    device_release(dev); /* drains every stream first */
    pthread_mutex_lock(&g_dev_mu);
    g_devs[id] = NULL;
    pthread_cond_broadcast(&g_dev_cv);
    pthread_mutex_unlock(&g_dev_mu);
    return HAL_OK;
}

#define EMU_SOC_NAME "Ascend910B1"

hal_result emu_device_info(hal_device *dev, hal_device_info *info)
{
    if (info && !dev) { /* common to every device: nothing is opened or claimed */
        memset(info, 0, sizeof *info);
        info->mem_total = EMU_REGION_SIZE - EMU_CTRL_SIZE;
        info->mem_free = info->mem_total;
        info->dma_engines = emu_cfg()->dma_engines ? emu_cfg()->dma_engines : 1;
        info->soc_name = EMU_SOC_NAME;
        return HAL_OK;
    }
    if (!info || !emu_device_live(dev))
        return HAL_E_PARAM;
    memset(info, 0, sizeof *info);
    info->handle = emu_device_handle(dev);
    info->mem_total = dev->heap.size;
    info->mem_free = emu_heap_free_bytes(&dev->heap);
    info->dma_engines = dev->dma.nthreads ? dev->dma.nthreads : 1;
    info->soc_name = EMU_SOC_NAME;
    return HAL_OK;
}

hal_result emu_device_sync(hal_device *dev, int32_t timeout_ms)
{
    if (!emu_device_live(dev))
        return HAL_E_INVALID_DEVICE;
    uint64_t deadline = emu_deadline_ms(timeout_ms);
    hal_result first = HAL_OK;
    pthread_mutex_lock(&dev->mu);
    size_t n = 0;
    for (hal_stream *s = dev->streams; s; s = s->next)
        n++;
    hal_stream **list = malloc((n ? n : 1) * sizeof *list);
    n = 0;
    for (hal_stream *s = list ? dev->streams : NULL; s; s = s->next)
        list[n++] = s;
    pthread_mutex_unlock(&dev->mu);
    if (!list)
        return HAL_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        int32_t left = -1;
        if (deadline) {
            uint64_t now = emu_now_ns();
            left = now >= deadline ? 0 : (int32_t)((deadline - now) / 1000000ull);
        }
        hal_result rc = emu_stream_sync_impl(list[i], left);
        if (rc != HAL_OK && first == HAL_OK)
            first = rc;
    }
    free(list);
    return first;
}

hal_link_class emu_link_class(hal_device *dev, const hal_device_handle *peer)
{
    const emu_config *cfg = emu_cfg();
    if (!dev || !peer || peer->server_key != cfg->server_key || peer->server_index != cfg->server_index)
        return HAL_LINK_NET;
    return peer->device_id == dev->id ? HAL_LINK_SELF : HAL_LINK_INTRA;
}

hal_result emu_current_device(hal_device **dev)
{
    if (!dev)
        return HAL_E_PARAM;
    pthread_mutex_lock(&g_dev_mu);
    hal_device *d = t_cur_id >= 0 ? g_devs[t_cur_id] : NULL;
    if (d && (d->gen != t_cur_gen || atomic_load(&d->closing)))
        d = NULL;
    pthread_mutex_unlock(&g_dev_mu);
    *dev = d;
    return d ? HAL_OK : HAL_E_INVALID_DEVICE;
}

hal_result emu_set_current_device(hal_device *dev)
{
    if (!emu_device_live(dev))
        return HAL_E_INVALID_DEVICE;
    t_cur_id = (int32_t)dev->id;
    t_cur_gen = dev->gen;
    return HAL_OK;
}
