/* ACL process and device management: aclInit/aclFinalize, aclrtSetDevice & co.
 *
 * CANN semantics kept (hicann/runtime docs/api_docs/aclrtSetDevice.md, aclrtResetDevice.md):
 *   - aclrtSetDevice selects the device of the calling thread; threads that set the same device
 *     share it. Every aclrtSetDevice adds one reference, every aclrtResetDevice drops one, and
 *     the device's resources go when the count reaches 0. Each reference is one HAL
 *     device_open, so the HAL's own reference count matches ours.
 *   - aclrtGetDevice fails with ACL_ERROR_RT_CONTEXT_NULL when the thread has no device.
 *   - aclInit twice -> ACL_ERROR_REPEAT_INITIALIZE; aclFinalize twice -> ACL_ERROR_REPEAT_FINALIZE.
 * Not required by the emulator: calling aclInit before the rt calls (CANN programs always do).
 */
#include <pthread.h>
#include <stdio.h>

#include "hal/emu/acl_internal.h"
#include "hal/emu/emu_trace.h"

#define ACL_MAX_DEVICES 256

typedef struct acl_dev_slot {
    hal_device *dev; /* valid while refs > 0 */
    int refs;        /* aclrtSetDevice calls not yet matched by aclrtResetDevice */
} acl_dev_slot;

static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static acl_dev_slot g_devs[ACL_MAX_DEVICES];
static int g_init_state; /* 0 never initialized, 1 initialized, 2 finalized */
static aclrtFloatOverflowMode g_sat_mode = ACL_RT_OVERFLOW_MODE_INFNAN; /* A2 default */
static __thread int32_t t_current = -1; /* device id set by this thread, -1 none */
static __thread void *t_context;       /* aclrtCreateContext/SetCurrentContext context, NULL = default */

/* ---- helpers used by the other acl_*.c files ---------------------------------------------- */

hal_device *acl_device_by_id(int32_t id)
{
    if (id < 0 || id >= ACL_MAX_DEVICES)
        return NULL;
    pthread_mutex_lock(&g_dev_lock);
    hal_device *dev = g_devs[id].refs > 0 ? g_devs[id].dev : NULL;
    pthread_mutex_unlock(&g_dev_lock);
    return dev;
}

int32_t acl_device_id(hal_device *dev)
{
    pthread_mutex_lock(&g_dev_lock);
    int32_t id = -1;
    for (int32_t i = 0; i < ACL_MAX_DEVICES && id < 0; i++)
        if (g_devs[i].refs > 0 && g_devs[i].dev == dev)
            id = i;
    pthread_mutex_unlock(&g_dev_lock);
    return id;
}

aclError acl_current_device(const char *func, hal_device **dev, int32_t *id)
{
    hal_device *d = t_current >= 0 ? acl_device_by_id(t_current) : NULL;
    if (!d)
        return acl_fail(ACL_ERROR_RT_CONTEXT_NULL, func, "no device set on this thread (call aclrtSetDevice first)");
    if (dev)
        *dev = d;
    if (id)
        *id = t_current;
    return ACL_SUCCESS;
}

static aclError check_device_id(const char *func, int32_t id)
{
    uint32_t count = 0;
    hal_result rc = emu_hal_ops.device_count(&count);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, func, "device_count");
    if (id < 0 || (uint32_t)id >= count || id >= ACL_MAX_DEVICES)
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, func, "deviceId %d out of range [0, %u)", id, count);
    return ACL_SUCCESS;
}

/* ---- init / finalize ---------------------------------------------------------------------- */

aclError aclInit(const char *configPath)
{
    /* The JSON config (dump, profiling, error-message mode) has no effect on the emulator, but
     * a path that cannot be read is still an error, as in CANN. */
    if (configPath && configPath[0]) {
        FILE *f = fopen(configPath, "r");
        if (!f)
            return acl_fail(ACL_ERROR_INVALID_FILE, __func__, "cannot read configPath '%s'", configPath);
        fclose(f);
    }
    pthread_mutex_lock(&g_dev_lock);
    int was = g_init_state;
    if (was != 1)
        g_init_state = 1;
    pthread_mutex_unlock(&g_dev_lock);
    if (was == 1)
        return acl_fail(ACL_ERROR_REPEAT_INITIALIZE, __func__, "aclInit was already called");
    return ACL_SUCCESS;
}

/* Drops every device reference this process still holds (CANN's aclFinalize resets them). */
static void release_all_devices(void)
{
    for (int32_t i = 0; i < ACL_MAX_DEVICES; i++) {
        pthread_mutex_lock(&g_dev_lock);
        hal_device *dev = g_devs[i].dev;
        int refs = g_devs[i].refs;
        g_devs[i].refs = 0;
        g_devs[i].dev = NULL;
        pthread_mutex_unlock(&g_dev_lock);
        for (int r = 0; r < refs; r++)
            emu_hal_ops.device_close(dev);
    }
}

aclError aclFinalize(void)
{
    pthread_mutex_lock(&g_dev_lock);
    int was = g_init_state;
    if (was == 1)
        g_init_state = 2;
    pthread_mutex_unlock(&g_dev_lock);
    if (was == 0)
        return acl_fail(ACL_ERROR_UNINITIALIZE, __func__, "aclInit was not called");
    if (was == 2)
        return acl_fail(ACL_ERROR_REPEAT_FINALIZE, __func__, "aclFinalize was already called");
    acl_callback_reset();
    release_all_devices();
    emu_trace_env_finish(); /* HCCL_TRACE ends here (docs/tracing.md) */
    t_current = -1;
    t_context = NULL;
    return ACL_SUCCESS;
}

aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion)
{
    if (!majorVersion || !minorVersion || !patchVersion)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "null output pointer (major %p minor %p patch %p)",
                        (void *)majorVersion, (void *)minorVersion, (void *)patchVersion);
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return ACL_SUCCESS;
}

/* ---- set / reset / get -------------------------------------------------------------------- */

aclError acl_device_retain(const char *func, int32_t deviceId)
{
    aclError err = check_device_id(func, deviceId);
    if (err)
        return err;
    hal_device *dev = NULL;
    hal_result rc = emu_hal_ops.device_open(deviceId, &dev);
    /* The id is valid, so the HAL's INVALID_DEVICE means another live process owns the device
     * (one owner per emulated device, docs/emulator.md): not a bad id but a failed device setup. */
    if (rc == HAL_E_INVALID_DEVICE)
        return acl_fail(ACL_ERROR_RT_DEV_SETUP_ERROR, func,
                        "device %d is opened by another process (one process per emulated device)", deviceId);
    if (rc != HAL_OK)
        return acl_fail(acl_from_hal(rc), func, "opening device %d failed: %s", deviceId, hal_result_name(rc));
    pthread_mutex_lock(&g_dev_lock);
    g_devs[deviceId].dev = dev;
    g_devs[deviceId].refs++;
    pthread_mutex_unlock(&g_dev_lock);
    return ACL_SUCCESS;
}

void acl_thread_select(int32_t deviceId, void *context)
{
    hal_device *dev = acl_device_by_id(deviceId);
    hal_result rc = dev ? emu_hal_ops.set_current_device(dev) : HAL_E_INVALID_DEVICE;
    if (rc != HAL_OK)
        OH_WARN(ACL_MOD, "selecting device %d for this thread: HAL set_current_device: %s", deviceId,
                hal_result_name(rc));
    t_current = deviceId;
    t_context = context;
}

void *acl_thread_context(void)
{
    return t_current >= 0 ? t_context : NULL;
}

aclError aclrtSetDevice(int32_t deviceId)
{
    aclError err = acl_device_retain(__func__, deviceId);
    if (err)
        return err;
    acl_thread_select(deviceId, NULL); /* the device's default context */
    return ACL_SUCCESS;
}

aclError acl_device_release(const char *func, int32_t deviceId)
{
    aclError err = check_device_id(func, deviceId);
    if (err)
        return err;
    pthread_mutex_lock(&g_dev_lock);
    acl_dev_slot *slot = &g_devs[deviceId];
    hal_device *dev = slot->dev;
    int had = slot->refs;
    if (had > 0 && --slot->refs == 0)
        slot->dev = NULL;
    int left = slot->refs;
    pthread_mutex_unlock(&g_dev_lock);
    if (had == 0)
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, func, "deviceId %d was not set by aclrtSetDevice", deviceId);
    if (left == 0 && t_current == deviceId) {
        t_current = -1;
        t_context = NULL;
    }
    /* The last close drains the device's streams before freeing them (hal.h). */
    hal_result rc = emu_hal_ops.device_close(dev);
    if (rc != HAL_OK)
        return acl_fail(acl_from_hal(rc), func, "closing device %d failed: %s", deviceId, hal_result_name(rc));
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    return acl_device_release(__func__, deviceId);
}

aclError aclrtGetDevice(int32_t *deviceId)
{
    if (!deviceId)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "deviceId is NULL");
    return acl_current_device(__func__, NULL, deviceId);
}

aclError aclrtGetDeviceCount(uint32_t *count)
{
    if (!count)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "count is NULL");
    hal_result rc = emu_hal_ops.device_count(count);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "device_count");
    return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode *runMode)
{
    if (!runMode)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "runMode is NULL");
    *runMode = ACL_HOST; /* the program runs on the host, devices are attached */
    return ACL_SUCCESS;
}

/* ---- synchronize ------------------------------------------------------------------------ */

static aclError sync_device(const char *func, int32_t timeout)
{
    hal_device *dev = NULL;
    aclError err = acl_current_device(func, &dev, NULL);
    if (err)
        return err;
    hal_result rc = emu_hal_ops.device_sync(dev, timeout);
    if (rc == HAL_OK)
        return ACL_SUCCESS;
    /* With no deadline a timeout can only come from a task (a notify wait); with one, it is the
     * host's wait that expired. */
    if (rc == HAL_E_TIMEOUT && timeout != -1)
        return acl_fail(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, func, "device not idle after %d ms", timeout);
    return acl_fail_hal(rc, func, "device_sync");
}

aclError aclrtSynchronizeDevice(void)
{
    return sync_device(__func__, -1);
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout)
{
    if (timeout < -1)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "timeout %d: use -1 (forever), 0 (check) or > 0 ms",
                        timeout);
    /* 0 = check once, as for streams: the shortest deadline the HAL takes. */
    return sync_device(__func__, timeout == 0 ? 1 : timeout);
}

/* ---- overflow mode, SoC name -------------------------------------------------------------- */

aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode)
{
    if (mode != ACL_RT_OVERFLOW_MODE_SATURATION && mode != ACL_RT_OVERFLOW_MODE_INFNAN)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "mode %d is not SATURATION(0) or INFNAN(1)", (int)mode);
    /* Recorded only: the emulator's arithmetic is IEEE (INF/NaN) in both modes. */
    pthread_mutex_lock(&g_dev_lock);
    g_sat_mode = mode;
    pthread_mutex_unlock(&g_dev_lock);
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode)
{
    if (!mode)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "mode is NULL");
    pthread_mutex_lock(&g_dev_lock);
    *mode = g_sat_mode;
    pthread_mutex_unlock(&g_dev_lock);
    return ACL_SUCCESS;
}

/* The SoC name is common to all emulated devices: the HAL answers it without opening (and so
 * without claiming) a device, so processes may ask before choosing their device (CANN's hccl_test
 * does, on every rank). */
const char *aclrtGetSocName(void)
{
    hal_device_info info;
    hal_result rc = emu_hal_ops.device_info(NULL, &info);
    if (rc != HAL_OK || !info.soc_name) {
        acl_fail(ACL_ERROR_RT_NO_DEVICE, __func__, "the device backend reports no SoC name: %s", hal_result_name(rc));
        return NULL;
    }
    return info.soc_name;
}
