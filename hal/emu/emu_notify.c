/* Notifies: counting semaphores whose counters live in the owner device's control area, so any
 * process of the server that imported the owner's memory can record them and wait on them.
 * record = atomic add + shared FUTEX_WAKE if someone waits; wait = shared futex wait in slices of
 * at most 200 ms, re-checking the abort flag, device close and the deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

#define NOTIFY_SLICE_NS 200000000ull

struct hal_notify {
    hal_device *dev;        /* owner (created) or importer */
    emu_notify_slot *slot;
    uint32_t index;
    bool imported;
    hal_device_handle owner;
    _Atomic int refs;
    bool destroyed;
    struct hal_notify *next, *prev;
};

static void notify_link(hal_device *dev, hal_notify *n)
{
    pthread_mutex_lock(&dev->mu);
    n->next = dev->notifies;
    if (dev->notifies)
        dev->notifies->prev = n;
    dev->notifies = n;
    pthread_mutex_unlock(&dev->mu);
}

void emu_notify_put(hal_notify *n)
{
    if (atomic_fetch_sub(&n->refs, 1) != 1)
        return;
    if (!n->imported) { /* give the slot back */
        hal_device *dev = n->dev;
        atomic_store(&n->slot->count, 0);
        pthread_mutex_lock(&dev->mu);
        dev->notify_bitmap[n->index / 8] &= (uint8_t) ~(1u << (n->index % 8));
        pthread_mutex_unlock(&dev->mu);
    }
    free(n);
}

void emu_notifies_free_all(hal_device *dev)
{
    for (;;) {
        pthread_mutex_lock(&dev->mu);
        hal_notify *n = dev->notifies;
        pthread_mutex_unlock(&dev->mu);
        if (!n)
            break;
        emu_notify_destroy(n);
    }
}

static hal_result notify_new(hal_device *dev, emu_notify_slot *slot, uint32_t index, bool imported,
                             const hal_device_handle *owner, hal_notify **out)
{
    hal_notify *n = calloc(1, sizeof *n);
    if (!n)
        return HAL_E_NOMEM;
    n->dev = dev;
    n->slot = slot;
    n->index = index;
    n->imported = imported;
    n->owner = *owner;
    atomic_init(&n->refs, 1);
    notify_link(dev, n);
    *out = n;
    return HAL_OK;
}

hal_result emu_notify_create(hal_device *dev, hal_notify **out)
{
    if (!out || !emu_device_live(dev))
        return HAL_E_PARAM;
    uint32_t idx = UINT32_MAX;
    pthread_mutex_lock(&dev->mu);
    for (uint32_t i = 0; i < EMU_MAX_NOTIFIES / 8 && idx == UINT32_MAX; i++)
        if (dev->notify_bitmap[i] != 0xff)
            for (uint32_t b = 0; b < 8; b++)
                if (!(dev->notify_bitmap[i] & (1u << b))) {
                    dev->notify_bitmap[i] |= (uint8_t)(1u << b);
                    idx = i * 8 + b;
                    break;
                }
    pthread_mutex_unlock(&dev->mu);
    if (idx == UINT32_MAX) {
        OH_ERR("emu", "device %u has no free notify (%u in use)", dev->id, EMU_MAX_NOTIFIES);
        return HAL_E_NOMEM;
    }
    emu_notify_slot *slot = &emu_notify_slots(dev->region->base)[idx];
    atomic_store(&slot->count, 0);
    hal_device_handle h = emu_device_handle(dev);
    hal_result rc = notify_new(dev, slot, idx, false, &h, out);
    if (rc != HAL_OK) {
        pthread_mutex_lock(&dev->mu);
        dev->notify_bitmap[idx / 8] &= (uint8_t) ~(1u << (idx % 8));
        pthread_mutex_unlock(&dev->mu);
    }
    return rc;
}

hal_result emu_notify_destroy(hal_notify *n)
{
    if (!n)
        return HAL_E_PARAM;
    hal_device *dev = n->dev;
    pthread_mutex_lock(&dev->mu);
    bool twice = n->destroyed;
    n->destroyed = true;
    if (!twice) {
        if (n->prev)
            n->prev->next = n->next;
        else if (dev->notifies == n)
            dev->notifies = n->next;
        if (n->next)
            n->next->prev = n->prev;
    }
    pthread_mutex_unlock(&dev->mu);
    if (twice)
        return HAL_E_PARAM;
    emu_notify_put(n);
    return HAL_OK;
}

hal_result emu_notify_export(hal_notify *n, hal_notify_handle *h)
{
    if (!n || !h)
        return HAL_E_PARAM;
    memset(h, 0, sizeof *h);
    h->owner = n->owner;
    h->offset = n->index;
    return HAL_OK;
}

hal_result emu_notify_import(hal_device *dev, const hal_notify_handle *h, hal_notify **out)
{
    if (!h || !out || !emu_device_live(dev) || h->offset >= EMU_MAX_NOTIFIES)
        return HAL_E_PARAM;
    const emu_config *cfg = emu_cfg();
    if (h->owner.server_key != cfg->server_key || h->owner.server_index != cfg->server_index ||
        h->owner.device_id >= EMU_MAX_DEVICES) {
        OH_ERR("emu", "notify_import: the notify's device %u is on another server", h->owner.device_id);
        return HAL_E_PARAM;
    }
    emu_regions_lock();
    emu_region *r = emu_region_find_locked(h->owner.device_id);
    void *base = r ? r->base : NULL;
    emu_regions_unlock();
    if (!base) {
        OH_ERR("emu", "notify_import: device %u's memory is not mapped here; mem_import it first",
               h->owner.device_id);
        return HAL_E_PARAM;
    }
    return notify_new(dev, &emu_notify_slots(base)[h->offset], (uint32_t)h->offset, true, &h->owner, out);
}

uint32_t emu_notify_id(hal_notify *n)
{
    return n ? n->index : UINT32_MAX;
}

static hal_result notify_enqueue(hal_notify *n, hal_stream *s, emu_task_kind kind, uint32_t timeout_ms,
                                 const volatile uint32_t *abort_flag, bool reset)
{
    if (!n || !s)
        return HAL_E_PARAM;
    emu_task *t = emu_task_new(kind);
    if (!t)
        return HAL_E_NOMEM;
    atomic_fetch_add(&n->refs, 1);
    t->u.nt.n = n;
    t->u.nt.timeout_ms = timeout_ms ? timeout_ms : emu_cfg()->exec_timeout_ms;
    t->u.nt.abort = abort_flag;
    t->u.nt.reset = reset;
    return emu_stream_push(s, t);
}

hal_result emu_notify_record(hal_notify *n, hal_stream *s)
{
    return notify_enqueue(n, s, EMU_T_NOTIFY_RECORD, 0, NULL, false);
}

hal_result emu_notify_wait(hal_notify *n, hal_stream *s, uint32_t timeout_ms, const volatile uint32_t *abort_flag)
{
    return notify_enqueue(n, s, EMU_T_NOTIFY_WAIT, timeout_ms, abort_flag, false);
}

hal_result emu_notify_wait_reset(hal_notify *n, hal_stream *s, uint32_t timeout_ms)
{
    return notify_enqueue(n, s, EMU_T_NOTIFY_WAIT, timeout_ms, NULL, true);
}

/* Takes the count if positive (decrement, or clear for wait_reset). */
static bool notify_take(emu_notify_slot *slot, bool reset)
{
    uint32_t c = atomic_load(&slot->count);
    while (c > 0)
        if (atomic_compare_exchange_weak(&slot->count, &c, reset ? 0 : c - 1))
            return true;
    return false;
}

static void notify_run_wait(hal_stream *s, emu_task *t)
{
    hal_notify *n = t->u.nt.n;
    emu_notify_slot *slot = n->slot;
    uint64_t start = emu_now_ns(), spin_end = start + emu_cfg()->spin_ns;
    for (unsigned i = 1; emu_cfg()->spin_ns; i++) { /* brief poll before sleeping: low latency */
        if (notify_take(slot, t->u.nt.reset))
            return;
        emu_cpu_relax();
        if (i % 64 == 0 && emu_now_ns() >= spin_end)
            break;
    }
    uint64_t deadline = t->u.nt.timeout_ms ? start + t->u.nt.timeout_ms * 1000000ull : 0;
    for (;;) {
        if (notify_take(slot, t->u.nt.reset))
            return;
        if (t->u.nt.abort && *t->u.nt.abort) {
            emu_stream_fail(s, HAL_E_ABORTED, "wait on notify %u (device %u) aborted", n->index, n->owner.device_id);
            return;
        }
        if (atomic_load(&s->dev->closing)) {
            emu_stream_fail(s, HAL_E_ABORTED, "wait on notify %u (device %u) aborted: device %u is closing",
                            n->index, n->owner.device_id, s->dev->id);
            return;
        }
        uint64_t now = emu_now_ns(), slice = NOTIFY_SLICE_NS;
        if (deadline && now >= deadline) {
            emu_stream_fail(s, HAL_E_TIMEOUT, "wait on notify %u of device %u timed out after %.3f s "
                            "(HCCL_EXEC_TIMEOUT or the wait's timeout)", n->index, n->owner.device_id,
                            (double)(now - start) / 1e9);
            return;
        }
        if (deadline && deadline - now < slice)
            slice = deadline - now;
        atomic_fetch_add(&slot->waiters, 1);
        if (atomic_load(&slot->count) == 0)
            emu_futex_wait(&slot->count, 0, slice, true);
        atomic_fetch_sub(&slot->waiters, 1);
    }
}

void emu_notify_run(hal_stream *s, emu_task *t)
{
    if (t->kind == EMU_T_NOTIFY_WAIT) {
        notify_run_wait(s, t);
        return;
    }
    emu_notify_slot *slot = t->u.nt.n->slot;
    atomic_fetch_add(&slot->count, 1);
    if (atomic_load(&slot->waiters) > 0)
        emu_futex_wake_all(&slot->count, true);
}
