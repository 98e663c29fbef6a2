/* ACL streams: an aclrtStream IS the HAL stream pointer on the emulator; NULL names the default
 * stream of the thread's current device. stream_from_native validates every handle, so a
 * destroyed or made-up stream is an error code, not a crash.
 *
 * Timeouts (hicann/runtime docs/api_docs/aclrtSynchronizeStreamWithTimeout.md, acl_rt.h): -1 waits
 * forever, > 0 is milliseconds, 0 checks once; when the host's wait expires the call returns
 * ACL_ERROR_RT_STREAM_SYNC_TIMEOUT and the stream keeps running. A task that itself timed out (a
 * notify wait) fails the stream; sync then reports that task's error (acl_from_hal).
 */
#include <stdatomic.h>

#include "hal/emu/acl_internal.h"

aclError acl_stream(const char *func, aclrtStream stream, hal_stream **s)
{
    if (!stream) {
        /* The default stream belongs to the thread's current device: without one (or after its
         * last aclrtResetDevice) report that, not a bad handle. */
        aclError err = acl_current_device(func, NULL, NULL);
        if (err)
            return err;
    }
    hal_result rc = emu_hal_ops.stream_from_native(stream, s);
    if (rc != HAL_OK)
        return acl_fail(acl_from_hal(rc), func, "stream %p is not a live stream: %s", stream, hal_result_name(rc));
    return ACL_SUCCESS;
}

static aclError create_stream(const char *func, aclrtStream *stream)
{
    if (!stream)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "stream is NULL");
    hal_device *dev;
    aclError err = acl_current_device(func, &dev, NULL);
    if (err)
        return err;
    hal_stream *s = NULL;
    hal_result rc = emu_hal_ops.stream_create(dev, &s);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, func, "stream_create");
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream)
{
    return create_stream(__func__, stream);
}

aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag)
{
    const uint32_t known = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC | ACL_STREAM_PERSISTENT | ACL_STREAM_HUGE |
                           ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY;
    if (flag & ~known)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "unknown flag bits 0x%x", flag & ~known);
    /* Priority (0 highest .. 7) and the flags only tune scheduling on hardware; every emulated
     * stream has its own executor, so they are accepted and have no effect. */
    if (priority > 7)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "priority %u out of range [0, 7]", priority);
    return create_stream(__func__, stream);
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    if (!stream)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "stream is NULL (the default stream cannot be destroyed)");
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    acl_callback_forget_stream(s);
    acl_reg_remove(ACL_H_STREAM_ID, s);
    hal_result rc = emu_hal_ops.stream_destroy(s);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "stream_destroy");
    return ACL_SUCCESS;
}

/* Maps a failed stream_sync: a host-side deadline, or the stream's sticky task error. */
static aclError sync_failure(const char *func, hal_stream *s, hal_result rc, int32_t timeout)
{
    if (rc == HAL_E_TIMEOUT && timeout != -1 && emu_hal_ops.stream_query(s) != HAL_E_TIMEOUT)
        return acl_fail(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, func, "stream %p not idle after %d ms", (void *)s, timeout);
    const char *msg = emu_hal_ops.stream_error_msg(s);
    return acl_fail(acl_from_hal(rc), func, "stream %p failed: %s%s%s", (void *)s, hal_result_name(rc),
                    msg && msg[0] ? ": " : "", msg ? msg : "");
}

static aclError sync_stream(const char *func, aclrtStream stream, int32_t timeout)
{
    hal_stream *s;
    aclError err = acl_stream(func, stream, &s);
    if (err)
        return err;
    /* 0 = check once: a query, reported like an expired wait when work is pending. */
    hal_result rc = timeout == 0 ? emu_hal_ops.stream_query(s) : emu_hal_ops.stream_sync(s, timeout);
    if (rc == HAL_E_NOT_READY)
        rc = HAL_E_TIMEOUT;
    return rc == HAL_OK ? ACL_SUCCESS : sync_failure(func, s, rc, timeout);
}

aclError aclrtSynchronizeStream(aclrtStream stream)
{
    return sync_stream(__func__, stream, -1);
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)
{
    if (timeout < -1)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "timeout %d: use -1 (forever), 0 (check) or > 0 ms",
                        timeout);
    return sync_stream(__func__, stream, timeout);
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status)
{
    if (!status)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "status is NULL");
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    hal_result rc = emu_hal_ops.stream_query(s);
    if (rc == HAL_OK || rc == HAL_E_NOT_READY) {
        *status = rc == HAL_OK ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
        return ACL_SUCCESS;
    }
    return sync_failure(__func__, s, rc, -1);
}

aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode)
{
    if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "mode %llu is not CONTINUE(0) or STOP(1)",
                        (unsigned long long)mode);
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    /* HAL streams always stop on the first failed task (sticky error). Accepting CONTINUE keeps
     * programs portable; the difference only shows after a task has failed. */
    if (mode == ACL_CONTINUE_ON_FAILURE)
        OH_DBG(ACL_MOD, "aclrtSetStreamFailureMode: stream %p keeps stop-on-failure on the emulator", stream);
    return ACL_SUCCESS;
}

/* Host function on the stream: runs on the stream's executor when reached, and the stream's
 * later tasks wait for it (aclrtLaunchHostFunc doc: blocks the stream's following tasks). */
aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args)
{
    if (!fn)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "fn is NULL");
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    hal_result rc = emu_hal_ops.host_func_async(s, fn, args);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "host_func_async");
    return ACL_SUCCESS;
}

/* Stream ids: handed out at a stream's first aclrtStreamGetId, in order, unique within the
 * process (never reused: a destroyed stream's id stays retired). */
aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId)
{
    static atomic_int next_id;
    if (!streamId)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "streamId is NULL");
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    uintptr_t id;
    while (!acl_reg_find(ACL_H_STREAM_ID, s, &id)) {
        id = (uintptr_t)atomic_fetch_add(&next_id, 1);
        if (acl_reg_add(ACL_H_STREAM_ID, s, id) == 0)
            break;
        if (!acl_reg_find(ACL_H_STREAM_ID, s, NULL)) /* not a race with another thread: no memory */
            return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
    }
    *streamId = (int32_t)id;
    return ACL_SUCCESS;
}
