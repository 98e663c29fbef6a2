/* ACL contexts: aclrtCreateContext / DestroyContext / SetCurrentContext / GetCurrentContext.
 *
 * CANN (hicann/runtime docs/zh/api_ref/05_context_management.md): a context belongs to one device;
 * aclrtSetDevice creates the device's default context implicitly; aclrtCreateContext creates an
 * explicit one and makes it the calling thread's context; aclrtSetCurrentContext switches the
 * thread's context, and with it the thread's device; only explicit contexts may be destroyed.
 *
 * The emulator has one default stream per device, so every context of a device shares it; a
 * context is the device reference it holds (one aclrtSetDevice worth) plus its identity. The
 * default context of a device is a static object, the same for every thread of the process.
 */
#include <stdlib.h>

#include "hal/emu/acl_internal.h"

#define ACL_CTX_MAX_DEVICES 256

typedef struct acl_context {
    int32_t device_id;
} acl_context;

static acl_context g_default_ctx[ACL_CTX_MAX_DEVICES];

static int is_default(const void *ctx)
{
    return (const char *)ctx >= (const char *)g_default_ctx &&
           (const char *)ctx < (const char *)(g_default_ctx + ACL_CTX_MAX_DEVICES);
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)
{
    if (!context)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "context is NULL");
    acl_context *c = malloc(sizeof *c);
    if (!c)
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
    c->device_id = deviceId;
    aclError err = acl_device_retain(__func__, deviceId);
    if (!err && acl_reg_add(ACL_H_CONTEXT, c, (uintptr_t)deviceId) != 0) {
        acl_device_release(__func__, deviceId);
        err = acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "registering the context failed");
    }
    if (err) {
        free(c);
        return err;
    }
    acl_thread_select(deviceId, c);
    *context = c;
    return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context)
{
    if (!context)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "context is NULL");
    if (is_default(context))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__,
                        "context %p is a device's default context: only aclrtCreateContext contexts can be destroyed",
                        context);
    uintptr_t dev = 0;
    if (!acl_reg_find(ACL_H_CONTEXT, context, &dev) || !acl_reg_remove(ACL_H_CONTEXT, context))
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "context %p is not a live context", context);
    /* A thread still on this context falls back to the device's default context, if the device
     * stays set; the release clears the selection when this was the last reference. */
    if (acl_thread_context() == context)
        acl_thread_select((int32_t)dev, NULL);
    free(context);
    return acl_device_release(__func__, (int32_t)dev);
}

aclError aclrtSetCurrentContext(aclrtContext context)
{
    if (!context)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "context is NULL");
    int32_t id;
    uintptr_t dev = 0;
    if (is_default(context))
        id = (int32_t)((acl_context *)context - g_default_ctx);
    else if (acl_reg_find(ACL_H_CONTEXT, context, &dev))
        id = (int32_t)dev;
    else
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "context %p is not a live context", context);
    if (!acl_device_by_id(id))
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, __func__, "context %p: its device %d was reset", context, id);
    acl_thread_select(id, is_default(context) ? NULL : context);
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context)
{
    if (!context)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "context is NULL");
    int32_t id;
    aclError err = acl_current_device(__func__, NULL, &id);
    if (err)
        return err;
    void *explicit_ctx = acl_thread_context();
    if (explicit_ctx) {
        *context = explicit_ctx;
        return ACL_SUCCESS;
    }
    if (id < 0 || id >= ACL_CTX_MAX_DEVICES)
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, __func__, "device %d has no default context", id);
    g_default_ctx[id].device_id = id;
    *context = &g_default_ctx[id];
    return ACL_SUCCESS;
}
