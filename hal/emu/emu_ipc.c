/* Inter-process sharing by key (hal.h ipc_*; aclrtIpcMem*, aclrtNotify*Key).
 *
 * An export is an entry of a table in the owner device's control area, so every process of the
 * server that maps the owner's region (mem_import) can read it. The entry says what is shared
 * (memory offset + size, or notify index + generation), whether the pid whitelist applies, and
 * the whitelist itself. The key names the owner (server, device, pid) and the entry (slot and its
 * generation), so a key outlives nothing: closing an export bumps the slot's generation, and a
 * device reopened by another process has another owner pid.
 *
 * Who checks the whitelist: the importing process's emulator, before it hands out the pointer.
 * Processes of the same user can map device memory through mem_import anyway (that is how HCCL
 * shares buffers inside a server), so the whitelist is CANN's API contract, not a security
 * boundary; the uid check of emu_share.c remains the boundary. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"

enum { IPC_FREE = 0, IPC_WRITING = 1, IPC_LIVE = 2 };
enum { IPC_KIND_MEM = 'm', IPC_KIND_NOTIFY = 'n' };

typedef struct ipc_key {
    char kind;
    hal_device_handle owner;
    uint32_t slot, gen;
} ipc_key;

/* Imports of other processes' memory by this process, so that an importer's close is checked. */
typedef struct ipc_import {
    struct ipc_import *next;
    char key[HAL_IPC_KEY_LEN];
    int count;
} ipc_import;

static pthread_mutex_t g_ipc_mu = PTHREAD_MUTEX_INITIALIZER; /* owner-side slot claims, import list */
static ipc_import *g_imports;

static emu_ipc_entry *ipc_table(void *region_base)
{
    return (emu_ipc_entry *)((char *)region_base + EMU_IPC_OFFSET);
}

static void key_format(char *key, char kind, const hal_device_handle *owner, uint32_t slot, uint32_t gen)
{
    snprintf(key, HAL_IPC_KEY_LEN, "oh:%c:%016" PRIx64 ":%u:%u:%u:%u:%u", kind, owner->server_key,
             owner->server_index, owner->device_id, owner->pid, slot, gen);
}

static hal_result key_parse(const char *key, ipc_key *k)
{
    memset(k, 0, sizeof *k);
    char tail;
    if (!key || strnlen(key, HAL_IPC_KEY_LEN) == HAL_IPC_KEY_LEN ||
        sscanf(key, "oh:%c:%16" SCNx64 ":%u:%u:%u:%u:%u%c", &k->kind, &k->owner.server_key, &k->owner.server_index,
               &k->owner.device_id, &k->owner.pid, &k->slot, &k->gen, &tail) != 7 ||
        (k->kind != IPC_KIND_MEM && k->kind != IPC_KIND_NOTIFY) || k->slot >= EMU_IPC_ENTRIES ||
        k->owner.device_id >= EMU_MAX_DEVICES) {
        OH_ERR("emu", "IPC key \"%.64s\" is not a key this emulator made", key ? key : "(null)");
        return HAL_E_PARAM;
    }
    const emu_config *cfg = emu_cfg();
    if (k->owner.server_key != cfg->server_key || k->owner.server_index != cfg->server_index) {
        OH_ERR("emu", "IPC key \"%s\" belongs to server %u of another namespace or server (this is server %u, \"%s\")",
               key, k->owner.server_index, cfg->server_index, cfg->ns);
        return HAL_E_PARAM;
    }
    return HAL_OK;
}

/* Claims a free slot of the owner's table and publishes the entry; writes its key. */
static hal_result ipc_publish(void *base, const hal_device_handle *owner, char kind, uint32_t flags, uint64_t offset,
                              uint64_t size, char *key)
{
    emu_ipc_entry *table = ipc_table(base);
    pthread_mutex_lock(&g_ipc_mu);
    uint32_t slot = 0;
    while (slot < EMU_IPC_ENTRIES && atomic_load(&table[slot].state) != IPC_FREE)
        slot++;
    if (slot == EMU_IPC_ENTRIES) {
        pthread_mutex_unlock(&g_ipc_mu);
        OH_ERR("emu", "device %u: all %u IPC export slots are in use (close exports with aclrtIpcMemClose)",
               owner->device_id, EMU_IPC_ENTRIES);
        return HAL_E_NOMEM;
    }
    emu_ipc_entry *e = &table[slot];
    atomic_store(&e->state, IPC_WRITING);
    e->gen++;
    e->kind = (uint32_t)kind;
    e->flags = flags;
    e->offset = offset;
    e->size = size;
    atomic_store(&e->npids, 0);
    atomic_store_explicit(&e->state, IPC_LIVE, memory_order_release);
    key_format(key, kind, owner, slot, e->gen);
    pthread_mutex_unlock(&g_ipc_mu);
    return HAL_OK;
}

/* The owned region of this process for the key's device, or NULL (not the owner). */
static void *owned_base(const ipc_key *k)
{
    if (k->owner.pid != (uint32_t)getpid())
        return NULL;
    emu_regions_lock();
    emu_region *r = emu_region_find_locked(k->owner.device_id);
    void *base = r && r->owned ? r->base : NULL;
    emu_regions_unlock();
    return base;
}

hal_result emu_ipc_mem_export(hal_device *dev, void *ptr, size_t size, uint32_t flags, char *key)
{
    if (!key || !ptr || size == 0 || (flags & ~(uint32_t)HAL_IPC_NO_PID_CHECK) || !emu_device_live(dev))
        return HAL_E_PARAM;
    hal_device_handle owner;
    uint64_t after = 0;
    ipc_key k = {IPC_KIND_MEM, {0}, 0, 0};
    void *base = NULL;
    if (emu_mem_lookup(ptr, &owner, &after) == HAL_OK) {
        k.owner = owner;
        base = owned_base(&k); /* any device this process owns, not only dev */
    }
    if (!base || (char *)ptr < (char *)base + EMU_CTRL_SIZE || (char *)ptr >= (char *)base + EMU_REGION_SIZE) {
        OH_ERR("emu", "ipc_mem_export: %p is not device memory allocated by this process", ptr);
        return HAL_E_FOREIGN;
    }
    if (size > after) {
        OH_ERR("emu", "ipc_mem_export: %zu bytes at %p run past the end of its allocation (%" PRIu64 " bytes left)",
               size, ptr, after);
        return HAL_E_PARAM;
    }
    return ipc_publish(base, &owner, IPC_KIND_MEM, flags, (uint64_t)((char *)ptr - (char *)base), size, key);
}

hal_result emu_ipc_notify_export(hal_notify *n, uint32_t flags, char *key)
{
    hal_notify_handle h;
    if (!key || (flags & ~(uint32_t)HAL_IPC_NO_PID_CHECK) || emu_notify_export(n, &h) != HAL_OK)
        return HAL_E_PARAM;
    ipc_key k = {IPC_KIND_NOTIFY, h.owner, 0, 0};
    void *base = owned_base(&k);
    if (!base) {
        OH_ERR("emu", "ipc_notify_export: notify %u of device %u was not created by this process (pid %u)",
               (uint32_t)h.offset, h.owner.device_id, h.owner.pid);
        return HAL_E_PARAM;
    }
    emu_notify_mark_ipc(n); /* before the key exists: its destroy must close it */
    emu_ipc_entry *table = ipc_table(base);
    for (uint32_t slot = 0; slot < EMU_IPC_ENTRIES; slot++) { /* already exported: same key */
        emu_ipc_entry *e = &table[slot];
        if (atomic_load(&e->state) == IPC_LIVE && e->kind == IPC_KIND_NOTIFY && e->offset == h.offset) {
            key_format(key, IPC_KIND_NOTIFY, &h.owner, slot, e->gen);
            return HAL_OK;
        }
    }
    return ipc_publish(base, &h.owner, IPC_KIND_NOTIFY, flags, h.offset, 0, key);
}

/* The live entry a key names in a region, or NULL. */
static emu_ipc_entry *entry_of(void *base, const ipc_key *k)
{
    emu_ipc_entry *e = &ipc_table(base)[k->slot];
    if (atomic_load_explicit(&e->state, memory_order_acquire) != IPC_LIVE || e->gen != k->gen ||
        e->kind != (uint32_t)k->kind)
        return NULL;
    return e;
}

hal_result emu_ipc_set_pids(const char *key, const int32_t *pids, size_t n)
{
    ipc_key k;
    hal_result rc = key_parse(key, &k);
    if (rc != HAL_OK)
        return rc;
    if (!pids || n == 0)
        return HAL_E_PARAM;
    void *base = owned_base(&k);
    pthread_mutex_lock(&g_ipc_mu);
    emu_ipc_entry *e = base ? entry_of(base, &k) : NULL;
    uint32_t have = e ? atomic_load(&e->npids) : 0;
    if (e && have + n > EMU_IPC_MAX_PIDS)
        rc = HAL_E_NOMEM;
    else if (e) {
        for (size_t i = 0; i < n; i++)
            e->pids[have + i] = pids[i];
        atomic_store_explicit(&e->npids, have + (uint32_t)n, memory_order_release); /* readers see whole pids */
    }
    pthread_mutex_unlock(&g_ipc_mu);
    if (!e) {
        OH_ERR("emu", "ipc_set_pids: key \"%s\" is not a live export of this process", key);
        return HAL_E_PARAM;
    }
    if (rc != HAL_OK)
        OH_ERR("emu", "ipc_set_pids: key \"%s\" would whitelist %zu pids (at most %u)", key, have + n,
               EMU_IPC_MAX_PIDS);
    return rc;
}

static bool pid_granted(const emu_ipc_entry *e, int32_t pid)
{
    if (e->flags & HAL_IPC_NO_PID_CHECK)
        return true;
    uint32_t n = atomic_load_explicit(&((emu_ipc_entry *)e)->npids, memory_order_acquire);
    for (uint32_t i = 0; i < n && i < EMU_IPC_MAX_PIDS; i++)
        if (e->pids[i] == pid)
            return true;
    return false;
}

/* Maps the owner's region for dev and finds the key's live entry, checking this process may use it. */
static hal_result ipc_open(hal_device *dev, const char *key, char kind, void **base_out, emu_ipc_entry **out)
{
    ipc_key k;
    hal_result rc = key_parse(key, &k);
    if (rc == HAL_OK && k.kind != kind) {
        OH_ERR("emu", "IPC key \"%s\" names a %s, not a %s", key, k.kind == IPC_KIND_MEM ? "memory export" : "notify",
               kind == IPC_KIND_MEM ? "memory export" : "notify");
        rc = HAL_E_PARAM;
    }
    if (rc == HAL_OK && !emu_device_live(dev))
        rc = HAL_E_PARAM;
    if (rc == HAL_OK)
        rc = emu_mem_import(dev, &k.owner); /* no-op when this process owns the device */
    if (rc != HAL_OK)
        return rc;
    emu_regions_lock();
    emu_region *r = emu_region_find_locked(k.owner.device_id);
    void *base = r ? r->base : NULL;
    emu_regions_unlock();
    emu_ctrl *c = base;
    emu_ipc_entry *e = c && c->owner_pid == k.owner.pid ? entry_of(base, &k) : NULL;
    if (!e) {
        OH_ERR("emu", "IPC key \"%s\": the export is closed or its owner (pid %u) is gone", key, k.owner.pid);
        return HAL_E_PEER;
    }
    int32_t me = (int32_t)getpid();
    if (k.owner.pid != (uint32_t)me && !pid_granted(e, me)) {
        OH_ERR("emu", "IPC key \"%s\": pid %d is not on the whitelist of the exporting process (pid %u); it must call "
               "the SetImportPid call for this pid, or export with the DISABLE_PID_VALIDATION flag", key, me,
               k.owner.pid);
        return HAL_E_DENIED;
    }
    *base_out = base;
    *out = e;
    return HAL_OK;
}

hal_result emu_ipc_mem_import(hal_device *dev, const char *key, void **ptr)
{
    if (!ptr)
        return HAL_E_PARAM;
    void *base;
    emu_ipc_entry *e;
    hal_result rc = ipc_open(dev, key, IPC_KIND_MEM, &base, &e);
    if (rc != HAL_OK)
        return rc;
    void *p = (char *)base + e->offset;
    if (((emu_ctrl *)base)->owner_pid != (uint32_t)getpid()) { /* the owner's own import needs no record */
        pthread_mutex_lock(&g_ipc_mu);
        ipc_import *im = g_imports;
        while (im && strcmp(im->key, key) != 0)
            im = im->next;
        if (!im && (im = calloc(1, sizeof *im)) != NULL) {
            snprintf(im->key, sizeof im->key, "%s", key);
            im->next = g_imports;
            g_imports = im;
        }
        if (im)
            im->count++;
        pthread_mutex_unlock(&g_ipc_mu);
        if (!im)
            return HAL_E_NOMEM;
    }
    *ptr = p;
    return HAL_OK;
}

hal_result emu_ipc_mem_size(hal_device *dev, const char *key, uint64_t *size)
{
    void *base;
    emu_ipc_entry *e;
    hal_result rc = ipc_open(dev, key, IPC_KIND_MEM, &base, &e);
    if (rc == HAL_OK)
        *size = e->size;
    return rc;
}

hal_result emu_ipc_notify_import(hal_device *dev, const char *key, hal_notify **n)
{
    if (!n)
        return HAL_E_PARAM;
    void *base;
    emu_ipc_entry *e;
    hal_result rc = ipc_open(dev, key, IPC_KIND_NOTIFY, &base, &e);
    if (rc != HAL_OK)
        return rc;
    ipc_key k;
    key_parse(key, &k);
    hal_notify_handle h = {k.owner, e->offset};
    return emu_notify_import(dev, &h, n);
}

/* Importer side: drops one import of the key; HAL_E_PARAM if this process has none. */
static hal_result import_forget(const char *key)
{
    pthread_mutex_lock(&g_ipc_mu);
    ipc_import **link = &g_imports;
    while (*link && strcmp((*link)->key, key) != 0)
        link = &(*link)->next;
    ipc_import *im = *link;
    if (im && --im->count == 0) {
        *link = im->next;
        free(im);
    }
    pthread_mutex_unlock(&g_ipc_mu);
    if (!im) {
        OH_ERR("emu", "ipc_close: key \"%s\" was neither exported nor imported by this process", key);
        return HAL_E_PARAM;
    }
    return HAL_OK;
}

hal_result emu_ipc_close(const char *key)
{
    ipc_key k;
    hal_result rc = key_parse(key, &k);
    if (rc != HAL_OK)
        return rc;
    void *base = owned_base(&k);
    if (!base)
        return import_forget(key);
    pthread_mutex_lock(&g_ipc_mu);
    emu_ipc_entry *e = entry_of(base, &k);
    if (e)
        atomic_store(&e->state, IPC_FREE);
    pthread_mutex_unlock(&g_ipc_mu);
    if (!e) {
        OH_ERR("emu", "ipc_close: key \"%s\" is not a live export of this process", key);
        return HAL_E_PARAM;
    }
    return HAL_OK;
}

void emu_ipc_forget_notify(void *region_base, uint64_t notify_offset)
{
    emu_ipc_entry *table = ipc_table(region_base);
    pthread_mutex_lock(&g_ipc_mu);
    for (uint32_t slot = 0; slot < EMU_IPC_ENTRIES; slot++)
        if (atomic_load(&table[slot].state) == IPC_LIVE && table[slot].kind == IPC_KIND_NOTIFY &&
            table[slot].offset == notify_offset)
            atomic_store(&table[slot].state, IPC_FREE);
    pthread_mutex_unlock(&g_ipc_mu);
}

_Static_assert(EMU_IPC_OFFSET >= EMU_NOTIFY_OFFSET + (uint64_t)EMU_MAX_NOTIFIES * sizeof(emu_notify_slot),
               "the IPC table must not overlap the notify slots");
_Static_assert(EMU_IPC_OFFSET + (uint64_t)EMU_IPC_ENTRIES * sizeof(emu_ipc_entry) <= EMU_CTRL_SIZE,
               "the IPC table must fit in the control area");
