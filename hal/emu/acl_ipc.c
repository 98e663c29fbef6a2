/* Inter-process sharing by key: aclrtIpcMem* (device memory) and aclrtNotify*Key (notifies), over
 * the HAL's ipc_* calls (hal.h; emu_ipc.c).
 *
 * CANN (hicann/runtime docs/zh/api_ref/11-07_IPC_memory_sharing.md, 08_notify_management.md,
 * include/external/acl/acl_rt.h): process A exports (aclrtIpcMemGetExportKey / aclrtNotifyGetExportKey,
 * a 65-byte key buffer); by default only processes A whitelists with aclrtIpcMemSetImportPid /
 * aclrtNotifySetImportPid (pids from aclrtDeviceGetBareTgid) may import; the export flag
 * ..._DISABLE_PID_VALIDATION (memory 0x1, notify 0x2) lifts the check. Process B imports
 * (aclrtIpcMemImportByKey -> a device pointer usable in B; aclrtNotifyImportByKey -> a notify B can
 * record or wait on) and later closes (memory: aclrtIpcMemClose in B first, then A; notify:
 * aclrtDestroyNotify in both).
 *
 * Codes: NULL arguments, a key buffer under 65 bytes, unknown flags -> ACL_ERROR_INVALID_PARAM (the
 * ACL layer's checks); a key that is malformed, of another server, or names a closed export ->
 * ACL_ERROR_RT_PARAM_INVALID; importing without a current device -> ACL_ERROR_RT_CONTEXT_NULL (the
 * runtime needs a context); a process not on the whitelist -> ACL_ERROR_RT_NO_PERMISSION (the
 * driver's refusal; CANN's public sources do not show the driver's exact code).
 */
#include <string.h>

#include "hal/emu/acl_internal.h"

static aclError from_ipc(hal_result rc, const char *func, const char *what)
{
    if (rc == HAL_E_DENIED)
        return acl_fail(ACL_ERROR_RT_NO_PERMISSION, func, "%s: this process is not on the exporter's whitelist", what);
    if (rc == HAL_E_PEER)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "%s: the export is closed or its owner is gone", what);
    return acl_fail_hal(rc, func, what);
}

static aclError check_key_out(const char *func, char *key, size_t len)
{
    if (!key)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "key is NULL");
    if (len < HAL_IPC_KEY_LEN)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "len %zu: the key buffer must hold %d bytes", len,
                        HAL_IPC_KEY_LEN);
    return ACL_SUCCESS;
}

static aclError check_pids(const char *func, const int32_t *pid, size_t num)
{
    if (!pid)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "pid is NULL");
    if (num == 0 || num > INT32_MAX)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "num %zu out of range (0, %d]", num, INT32_MAX);
    return ACL_SUCCESS;
}

/* ---- memory --------------------------------------------------------------------------------- */

aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len, uint64_t flags)
{
    if (!devPtr)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "devPtr is NULL");
    aclError err = check_key_out(__func__, key, len);
    if (err)
        return err;
    if (flags & ~(uint64_t)ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown flags 0x%llx", (unsigned long long)flags);
    if (size == 0)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "size is 0");
    hal_device *dev;
    if ((err = acl_current_device(__func__, &dev, NULL)))
        return err;
    uint32_t hflags = (flags & ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION) ? HAL_IPC_NO_PID_CHECK : 0;
    hal_result rc = emu_hal_ops.ipc_mem_export(dev, devPtr, size, hflags, key);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "ipc_mem_export (devPtr must be this device's aclrtMalloc memory)");
    return ACL_SUCCESS;
}

aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num)
{
    if (!key)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "key is NULL");
    aclError err = check_pids(__func__, pid, num);
    if (err)
        return err;
    hal_result rc = emu_hal_ops.ipc_set_pids(key, pid, num);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "ipc_set_pids (the key must be a live export of this process)");
    return ACL_SUCCESS;
}

aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags)
{
    if (!devPtr || !key)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null argument (devPtr %p key %p)", (void *)devPtr,
                        (const void *)key);
    if (flags > ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "flags %llu out of range [0, 1]",
                        (unsigned long long)flags);
    hal_device *dev;
    aclError err = acl_current_device(__func__, &dev, NULL);
    if (err)
        return err;
    /* Peer access needs no enabling on the emulator: the flag changes nothing. */
    hal_result rc = emu_hal_ops.ipc_mem_import(dev, key, devPtr);
    if (rc != HAL_OK)
        return from_ipc(rc, __func__, "ipc_mem_import");
    acl_strict_imported(dev, key, *devPtr);
    return ACL_SUCCESS;
}

aclError aclrtIpcMemClose(const char *key)
{
    if (!key)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "key is NULL");
    acl_strict_closed(key);
    hal_result rc = emu_hal_ops.ipc_close(key);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "ipc_close (not a key this process exported or imported)");
    return ACL_SUCCESS;
}

/* ---- notifies ------------------------------------------------------------------------------- */

static aclError live_notify(const char *func, aclrtNotify notify)
{
    if (!notify)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "notify is NULL");
    if (!acl_reg_find(ACL_H_NOTIFY, notify, NULL))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "notify %p is not a live notify", notify);
    return ACL_SUCCESS;
}

aclError aclrtNotifyGetExportKey(aclrtNotify notify, char *key, size_t len, uint64_t flags)
{
    aclError err = live_notify(__func__, notify);
    if (!err)
        err = check_key_out(__func__, key, len);
    if (err)
        return err;
    if (flags & ~(uint64_t)ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown flags 0x%llx", (unsigned long long)flags);
    uint32_t hflags = (flags & ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION) ? HAL_IPC_NO_PID_CHECK : 0;
    hal_result rc = emu_hal_ops.ipc_notify_export((hal_notify *)notify, hflags, key);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "ipc_notify_export (only the creating process may export a notify)");
    acl_reg_add(ACL_H_NOTIFY_EXPORTED, notify, 0); /* already there when exported twice */
    return ACL_SUCCESS;
}

aclError aclrtNotifySetImportPid(aclrtNotify notify, int32_t *pid, size_t num)
{
    aclError err = live_notify(__func__, notify);
    if (!err)
        err = check_pids(__func__, pid, num);
    if (err)
        return err;
    if (!acl_reg_find(ACL_H_NOTIFY_EXPORTED, notify, NULL))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "notify %p was not exported (aclrtNotifyGetExportKey)",
                        notify);
    char key[HAL_IPC_KEY_LEN];
    hal_result rc = emu_hal_ops.ipc_notify_export((hal_notify *)notify, 0, key); /* its existing key */
    if (rc == HAL_OK)
        rc = emu_hal_ops.ipc_set_pids(key, pid, num);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "ipc_set_pids");
    return ACL_SUCCESS;
}

aclError aclrtNotifyImportByKey(aclrtNotify *notify, const char *key, uint64_t flags)
{
    if (!notify || !key)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null argument (notify %p key %p)", (void *)notify,
                        (const void *)key);
    if (flags != ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT && flags != ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "flags 0x%llx is not DEFAULT(0) or ENABLE_PEER_ACCESS(2)",
                        (unsigned long long)flags);
    hal_device *dev;
    aclError err = acl_current_device(__func__, &dev, NULL);
    if (err)
        return err;
    hal_notify *n = NULL;
    hal_result rc = emu_hal_ops.ipc_notify_import(dev, key, &n);
    if (rc != HAL_OK)
        return from_ipc(rc, __func__, "ipc_notify_import");
    if (acl_reg_add(ACL_H_NOTIFY, n, 0) != 0) {
        emu_hal_ops.notify_destroy(n);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "registering the notify failed");
    }
    *notify = n;
    return ACL_SUCCESS;
}
