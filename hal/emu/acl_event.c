/* ACL events over HAL events.
 *
 * An aclrtEvent is a small wrapper {hal_event, creating API, flags}, registered so stale or
 * foreign handles are rejected. The three creation calls map onto HAL flags as follows
 * (hicann/runtime docs/api_docs/aclrtCreateEvent.md, aclrtCreateEventWithFlag.md,
 * aclrtCreateEventExWithFlag.md, aclrtResetEvent.md, aclrtStreamWaitEvent.md):
 *
 *   aclrtCreateEvent            timing on; a wait on a never-recorded event completes at once
 *                               (the event takes a device resource only when recorded).
 *   aclrtCreateEventWithFlag    ACL_EVENT_TIME_LINE -> timing. ACL_EVENT_SYNC -> a multi-stream
 *                               sync event: aclrtStreamWaitEvent blocks the stream until the
 *                               event is recorded (even if the record is issued later), and
 *                               aclrtResetEvent re-arms it. Without ACL_EVENT_SYNC the event may
 *                               not be used with aclrtStreamWaitEvent / aclrtResetEvent (CANN:
 *                               "不支持"), which we report as ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
 *   aclrtCreateEventExWithFlag  same flags, but no hardware-limited resource: waits capture the
 *                               last record like a CUDA event (an unrecorded event is complete).
 *                               aclrtResetEvent / aclrtQueryEvent on it are errors (CANN);
 *                               ACL_EVENT_IPC is not emulated.
 *
 * Status queries: aclrtQueryEventStatus reports COMPLETE when every task the event captured has
 * run (an unrecorded event captured nothing); aclrtSynchronizeEvent on an unrecorded event
 * returns at once.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "hal/emu/acl_internal.h"

typedef enum acl_event_api { EV_PLAIN, EV_WITH_FLAG, EV_EX } acl_event_api;

typedef struct acl_event {
    hal_event *ev;
    acl_event_api api;
    uint32_t flags;   /* ACL_EVENT_* given at creation */
    atomic_int refs;  /* the user's handle + one per queued reset task */
} acl_event;

/* Drops a reference; the last one destroys the HAL event. */
static hal_result event_unref(acl_event *e)
{
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return HAL_OK;
    hal_result rc = emu_hal_ops.event_destroy(e->ev);
    free(e);
    return rc;
}

/* The wrapper behind a handle, or NULL (logged under func) when it is not a live event. */
static acl_event *lookup(const char *func, aclrtEvent event, aclError *err)
{
    if (!event) {
        *err = acl_fail(ACL_ERROR_INVALID_PARAM, func, "event is NULL");
        return NULL;
    }
    if (!acl_reg_find(ACL_H_EVENT, event, NULL)) {
        *err = acl_fail(ACL_ERROR_RT_PARAM_INVALID, func, "event %p is not a live event", event);
        return NULL;
    }
    *err = ACL_SUCCESS;
    return (acl_event *)event;
}

static int ev_blocks_unrecorded(const acl_event *e)
{
    return e->api == EV_WITH_FLAG && (e->flags & ACL_EVENT_SYNC);
}

static int ev_can_wait(const acl_event *e)
{
    return e->api == EV_PLAIN || (e->flags & ACL_EVENT_SYNC);
}

static int ev_timing(const acl_event *e)
{
    return e->api == EV_PLAIN || (e->flags & ACL_EVENT_TIME_LINE);
}

static aclError create_event(const char *func, aclrtEvent *event, acl_event_api api, uint32_t flags)
{
    if (!event)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "event is NULL");
    hal_device *dev;
    aclError err = acl_current_device(func, &dev, NULL);
    if (err)
        return err;
    acl_event *e = calloc(1, sizeof *e);
    if (!e)
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, func, "out of host memory");
    e->api = api;
    e->flags = flags;
    atomic_init(&e->refs, 1);
    uint32_t hal_flags = (ev_timing(e) ? HAL_EVENT_TIMING : 0) |
                         (ev_blocks_unrecorded(e) ? HAL_EVENT_WAIT_UNRECORDED_BLOCKS : 0);
    hal_result rc = emu_hal_ops.event_create(dev, hal_flags, &e->ev);
    if (rc != HAL_OK) {
        free(e);
        return acl_fail_hal(rc, func, "event_create");
    }
    if (acl_reg_add(ACL_H_EVENT, e, 0) != 0) {
        emu_hal_ops.event_destroy(e->ev);
        free(e);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, func, "registering the event failed");
    }
    *event = e;
    return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent *event)
{
    return create_event(__func__, event, EV_PLAIN, 0);
}

/* Flags both flag-taking creators accept; EXTERNAL and IPC must stand alone. */
static aclError check_flags(const char *func, uint32_t flag, uint32_t known)
{
    if (flag & ~known)
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "unknown flag bits 0x%x", flag & ~known);
    if ((flag & (ACL_EVENT_EXTERNAL | ACL_EVENT_IPC)) && (flag & (flag - 1)))
        return acl_fail(ACL_ERROR_INVALID_PARAM, func, "flag 0x%x: EXTERNAL/IPC cannot be combined", flag);
    return ACL_SUCCESS;
}

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
    const uint32_t known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                           ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL;
    aclError err = check_flags(__func__, flag, known);
    return err ? err : create_event(__func__, event, EV_WITH_FLAG, flag);
}

aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag)
{
    const uint32_t known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE | ACL_EVENT_IPC;
    aclError err = check_flags(__func__, flag, known);
    if (err)
        return err;
    if (flag & ACL_EVENT_IPC)
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__, "ACL_EVENT_IPC events are not emulated");
    return create_event(__func__, event, EV_EX, flag);
}

aclError aclrtDestroyEvent(aclrtEvent event)
{
    aclError err;
    acl_event *e = lookup(__func__, event, &err);
    if (!e)
        return err;
    if (!acl_reg_remove(ACL_H_EVENT, e)) /* lost a race with another destroy */
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, __func__, "event %p is not a live event", event);
    hal_result rc = event_unref(e);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "event_destroy");
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    aclError err;
    acl_event *e = lookup(__func__, event, &err);
    hal_stream *s;
    if (!e || (err = acl_stream(__func__, stream, &s)))
        return err;
    hal_result rc = emu_hal_ops.event_record(e->ev, s);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "event_record (event and stream must be on one device)");
    return ACL_SUCCESS;
}

/* A reset queued on a stream: the event (referenced) and the stream that runs it. */
typedef struct reset_job {
    acl_event *e;
    hal_stream *s;
} reset_job;

/* Runs on the stream when it reaches the reset. CANN's reset is stream-ordered ("异步接口",
 * typically queued on the waiting stream after aclrtStreamWaitEvent): it must not clear a record
 * that the stream has not waited for yet, so the HAL reset (which acts at its call) is made here. */
static void reset_task(void *arg)
{
    reset_job *job = arg;
    hal_result rc = emu_hal_ops.event_reset(job->e->ev, job->s);
    if (rc != HAL_OK)
        OH_ERR(ACL_MOD, "aclrtResetEvent: event_reset failed: %s", hal_result_name(rc));
    event_unref(job->e);
    free(job);
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream)
{
    aclError err;
    acl_event *e = lookup(__func__, event, &err);
    hal_stream *s;
    if (!e || (err = acl_stream(__func__, stream, &s)))
        return err;
    if (!ev_can_wait(e) || e->api == EV_EX)
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                        "event %p cannot be reset (needs aclrtCreateEventWithFlag + ACL_EVENT_SYNC)", event);
    reset_job *job = malloc(sizeof *job);
    if (!job)
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
    job->e = e;
    job->s = s;
    atomic_fetch_add(&e->refs, 1);
    hal_result rc = emu_hal_ops.host_func_async(s, reset_task, job);
    if (rc != HAL_OK) {
        event_unref(e);
        free(job);
        return acl_fail_hal(rc, __func__, "enqueueing the reset");
    }
    return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event)
{
    aclError err;
    acl_event *e = lookup(__func__, event, &err);
    hal_stream *s;
    if (!e || (err = acl_stream(__func__, stream, &s)))
        return err;
    if (!ev_can_wait(e))
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__, "event %p was created without ACL_EVENT_SYNC",
                        event);
    hal_result rc = emu_hal_ops.stream_wait_event(s, e->ev);
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "stream_wait_event (event and stream must be on one device)");
    return ACL_SUCCESS;
}

/* 1 complete, 0 pending; < 0 on error (already reported under func into *err). */
static int query(const char *func, acl_event *e, aclError *err)
{
    hal_result rc = emu_hal_ops.event_query(e->ev);
    if (rc == HAL_OK || rc == HAL_E_NOT_READY)
        return rc == HAL_OK;
    *err = acl_fail_hal(rc, func, "event_query");
    return -1;
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status)
{
    aclError err;
    acl_event *e = lookup(__func__, event, &err);
    if (!e)
        return err;
    if (!status)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "status is NULL");
    if (e->api == EV_EX)
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__, "Ex event %p: use aclrtQueryEventStatus", event);
    int done = query(__func__, e, &err);
    if (done < 0)
        return err;
    *status = done ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status)
{
    aclError err;
    acl_event *e = lookup(__func__, event, &err);
    if (!e)
        return err;
    if (!status)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "status is NULL");
    int done = query(__func__, e, &err);
    if (done < 0)
        return err;
    *status = done ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

static aclError sync_event(const char *func, aclrtEvent event, int32_t timeout)
{
    aclError err;
    acl_event *e = lookup(func, event, &err);
    if (!e)
        return err;
    if (!emu_hal_ops.event_recorded(e->ev))
        return ACL_SUCCESS; /* nothing captured: nothing to wait for */
    /* 0 = check once (acl_rt.h): a query, reported like an expired wait when pending. */
    hal_result rc = timeout == 0 ? emu_hal_ops.event_query(e->ev) : emu_hal_ops.event_sync(e->ev, timeout);
    if (rc == HAL_E_NOT_READY)
        return acl_fail(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, func, "event %p not complete (timeout %d ms)", event, timeout);
    if (rc == HAL_OK)
        return ACL_SUCCESS;
    if (rc == HAL_E_TIMEOUT && timeout != -1 && emu_hal_ops.event_query(e->ev) == HAL_E_NOT_READY)
        return acl_fail(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, func, "event %p not complete after %d ms", event, timeout);
    return acl_fail_hal(rc, func, "event_sync (the recording stream failed)");
}

aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    return sync_event(__func__, event, -1);
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout)
{
    if (timeout < -1)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "timeout %d: use -1 (forever), 0 (check) or > 0 ms",
                        timeout);
    return sync_event(__func__, event, timeout);
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent)
{
    if (!ms)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "ms is NULL");
    aclError err;
    acl_event *a = lookup(__func__, startEvent, &err);
    if (!a)
        return err;
    acl_event *b = lookup(__func__, endEvent, &err);
    if (!b)
        return err;
    if (!ev_timing(a) || !ev_timing(b))
        return acl_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, __func__,
                        "both events need timestamps (created without ACL_EVENT_TIME_LINE)");
    if (!emu_hal_ops.event_recorded(a->ev) || !emu_hal_ops.event_recorded(b->ev))
        return acl_fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, __func__, "start %p or end %p was never recorded",
                        startEvent, endEvent);
    hal_result rc = emu_hal_ops.event_elapsed_ms(a->ev, b->ev, ms);
    if (rc == HAL_E_NOT_READY)
        return acl_fail(ACL_ERROR_RT_EVENT_NOT_COMPLETE, __func__, "an event has not completed yet");
    if (rc != HAL_OK)
        return acl_fail_hal(rc, __func__, "event_elapsed_ms");
    return ACL_SUCCESS;
}

/* ---- flagged record / wait, wait status (acl_rt.h; CANN's ACL layer checks the flags) -------- */

/* ACL_EVENT_RECORD_EXTERNAL marks a record for graph capture; the emulator has no capture, so it
 * records like ACL_EVENT_RECORD_DEFAULT. */
aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, uint32_t flag)
{
    if (!event)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "event is NULL");
    if (flag != ACL_EVENT_RECORD_DEFAULT && flag != ACL_EVENT_RECORD_EXTERNAL)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "flag %u is not RECORD_DEFAULT(0) or RECORD_EXTERNAL(1)",
                        flag);
    return aclrtRecordEvent(event, stream);
}

/* timeout: CANN's per-wait limit; the emulator's event waits have none, so it is accepted and not
 * enforced. ACL_EVENT_WAIT_EXTERNAL needs timeout 0 (CANN). */
aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, uint32_t timeout, uint32_t flag)
{
    if (!event)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "event is NULL");
    if (flag != ACL_EVENT_WAIT_DEFAULT && flag != ACL_EVENT_WAIT_EXTERNAL)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "flag %u is not WAIT_DEFAULT(0) or WAIT_EXTERNAL(1)", flag);
    if (flag == ACL_EVENT_WAIT_EXTERNAL && timeout != 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "timeout %u must be 0 with ACL_EVENT_WAIT_EXTERNAL", timeout);
    return aclrtStreamWaitEvent(stream, event);
}

/* Whether a wait on the event would be satisfied now: its captured work is done, and a SYNC event
 * (whose waits block until a record) has been recorded. Events that cannot be waited on, and Ex
 * events ([EV]), are errors. */
aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status)
{
    aclError err;
    acl_event *e = lookup(__func__, event, &err);
    if (!e)
        return err;
    if (!status)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "status is NULL");
    if (!ev_can_wait(e) || e->api == EV_EX)
        return acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                        "event %p: wait status needs an aclrtCreateEvent or ACL_EVENT_SYNC (non-Ex) event", event);
    int done = query(__func__, e, &err);
    if (done < 0)
        return err;
    if (ev_blocks_unrecorded(e) && !emu_hal_ops.event_recorded(e->ev))
        done = 0;
    *status = done ? ACL_EVENT_WAIT_STATUS_COMPLETE : ACL_EVENT_WAIT_STATUS_NOT_READY;
    return ACL_SUCCESS;
}
