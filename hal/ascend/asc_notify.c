/* Notifies and inter-process sharing over ACL: aclrtCreateNotify, aclrtRecordNotify,
 * aclrtWaitAndResetNotify, aclrtGetNotifyId; aclrtNotifyGetExportKey / ImportByKey / SetImportPid;
 * aclrtIpcMemGetExportKey / ImportByKey / SetImportPid / Close.
 *
 * Counting vs reset: the HAL's notify counts (record += 1, wait -= 1); CANN's is a flag (record sets
 * it, aclrtWaitAndResetNotify waits for it and clears it), so two records before one wait would
 * count once (the ring plans do record a slot twice before its wait). A HAL notify is therefore
 * ASC_LANES CANN notifies used round robin: the k-th record (counted by the handle recording, in
 * enqueue order) sets lane k % ASC_LANES and the k-th wait waits on that lane, so up to ASC_LANES
 * records may be outstanding and each is consumed once. This holds when every record of a notify
 * goes through one handle (the runtime's: one sender per (peer, slot)); notify_wait_reset waits on
 * the next lane (it consumes one record, not all). Notifies shared by key (ipc_*) have one lane.
 * ACL's wait cannot poll notify_wait's abort flag: asc_abort.c watches it from a host thread and
 * releases and fails aborted waits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/ascend/asc_internal.h"

static hal_result need_ipc(const char *what)
{
    const char *missing = asc_ipc_missing();
    if (!missing)
        return HAL_OK;
    OH_ERR("hal", "ascend: %s needs CANN's IPC calls, and the libascendcl.so in use lacks %s", what, missing);
    return HAL_E_NOT_SUPPORTED;
}

static void forget_notify(hal_notify *n);

static hal_result notify_create(hal_device *dev, hal_notify **out)
{
    hal_notify *n = calloc(1, sizeof *n);
    hal_result rc = n ? asc_select(dev) : HAL_E_NOMEM;
    if (rc == HAL_OK)
        for (n->nlanes = 0; rc == HAL_OK && n->nlanes < ASC_LANES; n->nlanes++)
            rc = asc_from_acl(ACL(aclrtCreateNotify)(&n->lane[n->nlanes], ACL_NOTIFY_DEFAULT));
    if (rc != HAL_OK) {
        if (n)
            for (int i = 0; i + 1 < n->nlanes; i++)
                ACL(aclrtDestroyNotify)(n->lane[i]);
        free(n);
        return rc;
    }
    n->dev = dev;
    n->slot = -1;
    *out = n;
    return HAL_OK;
}

static hal_result notify_destroy(hal_notify *n)
{
    if (!n)
        return HAL_E_PARAM;
    if (n->slot >= 0)
        asc_keydir_drop(n->dev, n->slot);
    forget_notify(n);
    if (asc_abort_forget_notify(n) | atomic_load(&n->host_used))
        asc_host_record_drain(n->dev); /* host records still queued name this notify */
    aclError e = ACL_SUCCESS;
    for (int i = 0; i < n->nlanes; i++) {
        aclError r = ACL(aclrtDestroyNotify)(n->lane[i]);
        e = e ? e : r;
    }
    free(n);
    return asc_from_acl(e);
}

/* The key goes into this process's key directory; the handle names its slot (asc_keydir.c). */
static hal_result notify_export(hal_notify *n, hal_notify_handle *h)
{
    hal_result rc = need_ipc("sharing a notify with another process");
    if (rc != HAL_OK)
        return rc;
    if (n->imported)
        return HAL_E_PARAM;
    uint32_t gen = 0;
    if (n->slot < 0) {
        char keys[ASC_LANES][HAL_IPC_KEY_LEN];
        memset(keys, 0, sizeof keys);
        for (int i = 0; rc == HAL_OK && i < n->nlanes; i++)
            rc = asc_from_acl(ACL(aclrtNotifyGetExportKey)(n->lane[i], keys[i], HAL_IPC_KEY_LEN,
                                                            ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION));
        if (rc == HAL_OK)
            rc = asc_keydir_put(n->dev, keys, &n->slot, &gen);
        if (rc != HAL_OK) {
            OH_ERR("hal", "ascend: exporting a notify of device %d failed: %s", n->dev->id, asc_errmsg());
            return rc;
        }
    } else {
        gen = atomic_load(&n->dev->dir->slot[n->slot].gen);
    }
    memset(h, 0, sizeof *h);
    h->owner = n->dev->handle;
    h->offset = (uint64_t)gen << 32 | (uint32_t)n->slot;
    return HAL_OK;
}

static hal_result import_keys(hal_device *dev, char keys[][HAL_IPC_KEY_LEN], int nkeys, hal_notify **out)
{
    hal_notify *n = calloc(1, sizeof *n);
    hal_result rc = n ? asc_select(dev) : HAL_E_NOMEM;
    if (rc == HAL_OK)
        for (n->nlanes = 0; rc == HAL_OK && n->nlanes < nkeys; n->nlanes++)
            rc = asc_from_acl(ACL(aclrtNotifyImportByKey)(&n->lane[n->nlanes], keys[n->nlanes],
                                                          ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS));
    if (rc != HAL_OK) {
        if (n)
            for (int i = 0; i + 1 < n->nlanes; i++)
                ACL(aclrtDestroyNotify)(n->lane[i]);
        free(n);
        return rc == HAL_E_PARAM ? HAL_E_PEER : rc;
    }
    n->dev = dev;
    n->imported = 1;
    n->slot = -1;
    *out = n;
    return HAL_OK;
}

static hal_result notify_import(hal_device *dev, const hal_notify_handle *h, hal_notify **out)
{
    hal_result rc = need_ipc("importing another process's notify");
    char keys[ASC_LANES][HAL_IPC_KEY_LEN];
    if (rc == HAL_OK)
        rc = asc_keydir_get(&h->owner, (int)(uint32_t)h->offset, (uint32_t)(h->offset >> 32), keys);
    return rc == HAL_OK ? import_keys(dev, keys, ASC_LANES, out) : rc;
}

static uint32_t notify_id(hal_notify *n)
{
    uint32_t id = 0;
    ACL(aclrtGetNotifyId)(n->lane[0], &id);
    return id;
}

static hal_result notify_record(hal_notify *n, hal_stream *s)
{
    uint32_t k = atomic_fetch_add(&n->records, 1) % (uint32_t)n->nlanes;
    return asc_from_acl(ACL(aclrtRecordNotify)(n->lane[k], s->acl));
}

/* Host records (a network link's receive path, runtime/net): ACL has no host-side record, so the
 * record is enqueued on a private stream of the notify's device. One stream per device and one lock
 * keep the lane order: the k-th host record of a notify is enqueued k-th and sets lane k % nlanes,
 * as a stream record through the same handle would. The runtime's one-sender rule holds: a notify
 * that a peer on another server signals is recorded only here, by that link's receive path.
 * The record lands when the stream runs it, after this returns: the data the link wrote before
 * is already in place, so a wait that sees the record sees the data. */
static pthread_mutex_t g_host_lock = PTHREAD_MUTEX_INITIALIZER;
/* The device this thread selected for host records: the links' receive threads select once, without
 * asking ACL (aclrtGetDevice on a thread that never set one logs an error). */
static _Thread_local hal_device *t_host_dev;

/* Enqueues a record of lane k of n on its device's host-record stream; g_host_lock held. */
static hal_result host_record_locked(hal_notify *n, int k)
{
    hal_device *dev = n->dev;
    hal_result rc = HAL_OK;
    if (t_host_dev != dev && (rc = asc_from_acl(ACL(aclrtSetDevice)(dev->id))) == HAL_OK)
        t_host_dev = dev;
    if (rc == HAL_OK && !dev->host_rec)
        rc = asc_from_acl(ACL(aclrtCreateStreamWithConfig)(&dev->host_rec, 0, ACL_STREAM_FAST_LAUNCH));
    if (rc == HAL_OK) {
        atomic_store(&n->host_used, 1);
        rc = asc_from_acl(ACL(aclrtRecordNotify)(n->lane[k], dev->host_rec));
    }
    if (rc != HAL_OK)
        OH_ERR("hal", "ascend: host record of a notify of device %d failed: %s", dev->id, asc_errmsg());
    return rc;
}

static hal_result notify_host_record(hal_notify *n)
{
    if (!n)
        return HAL_E_PARAM;
    pthread_mutex_lock(&g_host_lock);
    hal_result rc = host_record_locked(n, (int)(atomic_fetch_add(&n->records, 1) % (uint32_t)n->nlanes));
    pthread_mutex_unlock(&g_host_lock);
    return rc;
}

hal_result asc_host_record_lane(hal_notify *n, int lane)
{
    pthread_mutex_lock(&g_host_lock);
    hal_result rc = host_record_locked(n, lane);
    pthread_mutex_unlock(&g_host_lock);
    return rc;
}

/* Records queued on the host-record stream name their notify: drained before it is destroyed. */
void asc_host_record_drain(hal_device *dev)
{
    pthread_mutex_lock(&g_host_lock);
    if (dev->host_rec)
        ACL(aclrtSynchronizeStreamWithTimeout)(dev->host_rec, -1);
    pthread_mutex_unlock(&g_host_lock);
}

void asc_host_record_close(hal_device *dev)
{
    pthread_mutex_lock(&g_host_lock);
    if (dev->host_rec && asc_select(dev) == HAL_OK) {
        ACL(aclrtSynchronizeStreamWithTimeout)(dev->host_rec, -1);
        ACL(aclrtDestroyStream)(dev->host_rec);
    }
    dev->host_rec = NULL;
    pthread_mutex_unlock(&g_host_lock);
}

static hal_result notify_wait_reset(hal_notify *n, hal_stream *s, uint32_t timeout_ms)
{
    uint32_t t = timeout_ms ? timeout_ms : asc_exec_timeout_ms();
    /* ACL's timeout is in whole seconds (0 = forever): a HAL timeout rounds up to the next second. */
    uint32_t k = atomic_fetch_add(&n->waits, 1) % (uint32_t)n->nlanes;
    return asc_from_acl(ACL(aclrtWaitAndResetNotify)(n->lane[k], s->acl, (t + 999) / 1000));
}

static hal_result notify_wait(hal_notify *n, hal_stream *s, uint32_t timeout_ms, const volatile uint32_t *abort_flag)
{
    asc_abort_watch(n, s, abort_flag); /* ACL's wait cannot poll it: asc_abort.c releases the wait */
    return notify_wait_reset(n, s, timeout_ms);
}

/* --- sharing by key: the HAL's ipc_* are ACL's calls one to one ------------------------------ */

#define ASC_MAX_NOTIFY_EXPORTS 1024
static struct {
    char key[HAL_IPC_KEY_LEN];
    hal_notify *n;
} g_nexp[ASC_MAX_NOTIFY_EXPORTS]; /* keys of exported notifies, for ipc_set_pids / ipc_close */

static hal_notify *exported_notify(const char *key, int forget)
{
    hal_notify *n = NULL;
    pthread_mutex_lock(&asc_lock);
    for (int i = 0; i < ASC_MAX_NOTIFY_EXPORTS && !n; i++)
        if (g_nexp[i].n && !strcmp(g_nexp[i].key, key)) {
            n = g_nexp[i].n;
            if (forget)
                g_nexp[i].n = NULL;
        }
    pthread_mutex_unlock(&asc_lock);
    return n;
}

static void forget_notify(hal_notify *n)
{
    pthread_mutex_lock(&asc_lock);
    for (int i = 0; i < ASC_MAX_NOTIFY_EXPORTS; i++)
        if (g_nexp[i].n == n)
            g_nexp[i].n = NULL;
    pthread_mutex_unlock(&asc_lock);
}

static hal_result ipc_mem_export(hal_device *dev, void *ptr, size_t size, uint32_t flags, char *key)
{
    hal_result rc = need_ipc("ipc_mem_export");
    if (rc == HAL_OK)
        rc = asc_select(dev);
    uint64_t f = (flags & HAL_IPC_NO_PID_CHECK) ? ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION : 0;
    return rc != HAL_OK ? rc : asc_from_acl(ACL(aclrtIpcMemGetExportKey)(ptr, size, key, HAL_IPC_KEY_LEN, f));
}

static hal_result ipc_notify_export(hal_notify *n, uint32_t flags, char *key)
{
    hal_result rc = need_ipc("ipc_notify_export");
    uint64_t f = (flags & HAL_IPC_NO_PID_CHECK) ? ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION : 0;
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtNotifyGetExportKey)(n->lane[0], key, HAL_IPC_KEY_LEN, f));
    /* shared by key: one CANN notify, one lane (the importer sees only lane 0) */
    while (rc == HAL_OK && n->slot < 0 && n->nlanes > 1)
        ACL(aclrtDestroyNotify)(n->lane[--n->nlanes]);
    if (rc != HAL_OK || exported_notify(key, 0))
        return rc;
    pthread_mutex_lock(&asc_lock);
    int i = 0;
    while (i < ASC_MAX_NOTIFY_EXPORTS && g_nexp[i].n)
        i++;
    if (i < ASC_MAX_NOTIFY_EXPORTS) {
        snprintf(g_nexp[i].key, sizeof g_nexp[i].key, "%s", key);
        g_nexp[i].n = n;
    }
    pthread_mutex_unlock(&asc_lock);
    return i < ASC_MAX_NOTIFY_EXPORTS ? HAL_OK : HAL_E_NOMEM;
}

static hal_result ipc_set_pids(const char *key, const int32_t *pids, size_t n)
{
    hal_result rc = need_ipc("ipc_set_pids");
    if (rc != HAL_OK)
        return rc;
    hal_notify *nt = exported_notify(key, 0);
    if (nt)
        return asc_from_acl(ACL(aclrtNotifySetImportPid)(nt->lane[0], (int32_t *)pids, n));
    return asc_from_acl(ACL(aclrtIpcMemSetImportPid)(key, (int32_t *)pids, n));
}

static hal_result ipc_mem_import(hal_device *dev, const char *key, void **ptr)
{
    hal_result rc = need_ipc("ipc_mem_import");
    if (rc == HAL_OK)
        rc = asc_select(dev);
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtIpcMemImportByKey)(ptr, key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS));
    return rc == HAL_E_PARAM ? HAL_E_PEER : rc;
}

static hal_result ipc_notify_import(hal_device *dev, const char *key, hal_notify **n)
{
    hal_result rc = need_ipc("ipc_notify_import");
    char keys[1][HAL_IPC_KEY_LEN];
    snprintf(keys[0], sizeof keys[0], "%s", key);
    return rc != HAL_OK ? rc : import_keys(dev, keys, 1, n);
}

/* A notify export has no ACL close (it ends with aclrtDestroyNotify): only forgotten here. */
static hal_result ipc_close(const char *key)
{
    hal_result rc = need_ipc("ipc_close");
    if (rc != HAL_OK || exported_notify(key, 1))
        return rc;
    return asc_from_acl(ACL(aclrtIpcMemClose)(key));
}

const hal_ops asc_notify_ops = {
    .notify_create = notify_create, .notify_destroy = notify_destroy, .notify_export = notify_export,
    .notify_import = notify_import, .notify_id = notify_id, .notify_record = notify_record,
    .notify_wait = notify_wait, .notify_wait_reset = notify_wait_reset, .notify_host_record = notify_host_record,
    .ipc_mem_export = ipc_mem_export, .ipc_notify_export = ipc_notify_export, .ipc_set_pids = ipc_set_pids,
    .ipc_mem_import = ipc_mem_import, .ipc_notify_import = ipc_notify_import, .ipc_close = ipc_close,
};
