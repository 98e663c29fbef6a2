/* ACL notifies over HAL notifies: an aclrtNotify IS the hal_notify pointer, registered at
 * creation so a stale or foreign handle is an error code.
 *
 * Semantics (hicann/runtime docs/api_docs/aclrtCreateNotify.md, aclrtRecordNotify.md,
 * aclrtWaitAndResetNotify.md): a notify is a device-side flag. aclrtRecordNotify enqueues "set";
 * aclrtWaitAndResetNotify enqueues "block this stream until set, then clear". The wait timeout
 * is in SECONDS, 0 = wait forever. A wait that times out fails its stream: the error surfaces at
 * the next aclrtSynchronizeStream / aclrtStreamQuery (acl_from_hal(HAL_E_TIMEOUT)).
 * Streams of any device of the process may record or wait on a notify (device memory is
 * addressable across the emulated server).
 */
#include "hal/emu/acl_internal.h"

/* "Forever" for the HAL, whose 0 means the default (HCCL_EXEC_TIMEOUT): ~49 days. */
#define ACL_NOTIFY_FOREVER_MS UINT32_MAX

static hal_notify *lookup(const char *func, aclrtNotify notify, aclError *err)
{
    *err = ACL_SUCCESS;
    if (!notify)
        *err = acl_fail(ACL_ERROR_INVALID_PARAM, func, "notify is NULL");
    else if (!acl_reg_find(ACL_H_NOTIFY, notify, NULL))
        *err = acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "notify %p is not a live notify", notify);
    return *err ? NULL : (hal_notify *)notify;
}

aclError aclrtCreateNotify(aclrtNotify *notify, uint64_t flag)
{
    if (!notify)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "notify is NULL");
    if (flag != ACL_NOTIFY_DEFAULT && flag != ACL_NOTIFY_DEVICE_USE_ONLY)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "flag %llu is not DEFAULT(0) or DEVICE_USE_ONLY(1)",
                        (unsigned long long)flag);
    hal_device *dev;
    aclError err = acl_current_device(__func__, &dev, NULL);
    if (err)
        return err;
    hal_notify *n = NULL;
    hal_result rc = emu_hal_ops.notify_create(dev, &n);
    if (rc != HAL_OK)
        return acl_fail(rc == HAL_E_NOMEM ? ACL_ERROR_RT_NO_NOTIFY_RESOURCE : acl_from_hal(rc), __func__,
                        "notify_create failed: %s", hal_result_name(rc));
    if (acl_reg_add(ACL_H_NOTIFY, n, 0) != 0) {
        emu_hal_ops.notify_destroy(n);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "registering the notify failed");
    }
    *notify = n;
    return ACL_SUCCESS;
}

aclError aclrtDestroyNotify(aclrtNotify notify)
{
    aclError err;
    hal_notify *n = lookup(__func__, notify, &err);
    if (!n)
        return err;
    if (!acl_reg_remove(ACL_H_NOTIFY, n))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "notify %p is not a live notify", notify);
    acl_reg_remove(ACL_H_NOTIFY_EXPORTED, n); /* its exports end with it (emu_ipc.c) */
    hal_result rc = emu_hal_ops.notify_destroy(n);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "notify_destroy");
    return ACL_SUCCESS;
}

aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream)
{
    aclError err;
    hal_notify *n = lookup(__func__, notify, &err);
    hal_stream *s;
    if (!n || (err = acl_stream(__func__, stream, &s)))
        return err;
    hal_result rc = emu_hal_ops.notify_record(n, s);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "notify_record");
    return ACL_SUCCESS;
}

aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, uint32_t timeout)
{
    aclError err;
    hal_notify *n = lookup(__func__, notify, &err);
    hal_stream *s;
    if (!n || (err = acl_stream(__func__, stream, &s)))
        return err;
    uint64_t ms = timeout == 0 ? ACL_NOTIFY_FOREVER_MS : (uint64_t)timeout * 1000u;
    if (ms > ACL_NOTIFY_FOREVER_MS)
        ms = ACL_NOTIFY_FOREVER_MS;
    hal_result rc = emu_hal_ops.notify_wait_reset(n, s, (uint32_t)ms);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "notify_wait_reset");
    return ACL_SUCCESS;
}

aclError aclrtGetNotifyId(aclrtNotify notify, uint32_t *notifyId)
{
    aclError err;
    hal_notify *n = lookup(__func__, notify, &err);
    if (!n)
        return err;
    if (!notifyId)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "notifyId is NULL");
    *notifyId = emu_hal_ops.notify_id(n);
    return ACL_SUCCESS;
}
