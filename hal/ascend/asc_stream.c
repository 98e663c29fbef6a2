/* Streams and events over ACL. Every hal_stream wraps an aclrtStream (created with
 * aclrtCreateStreamWithConfig, or the user's, wrapped on first use) and owns the reporting thread
 * CANN's aclrtLaunchCallback needs: aclrtSubscribeReport binds it to the stream, and it loops in
 * aclrtProcessReport running the stream's callbacks (task_async, host_func_async, DMAs whose
 * addresses are only known on the device, the reduce fallback). A failed task fn sets the wrapper's
 * sticky error (see asc_task.c): stream_sync / stream_query report it. */
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/ascend/asc_internal.h"

#define REPORT_POLL_MS 60000 /* a reporter re-checks its stop flag this often when idle (stops normally come as callbacks) */

static void *reporter(void *arg)
{
    hal_stream *s = arg;
    asc_thread_fresh = 1; /* callbacks that need the device select it (asc_select) */
    while (sem_wait(&s->subscribed) != 0) /* aclrtProcessReport needs the subscription first */
        ;
    while (!atomic_load(&s->stop))
        ACL(aclrtProcessReport)(REPORT_POLL_MS); /* runs callbacks; a timeout is the idle case */
    return NULL;
}

static void stop_cb(void *arg)
{
    atomic_store(&((hal_stream *)arg)->stop, 1);
}

hal_result asc_stream_fail(hal_stream *s, hal_result rc, const char *fmt, ...)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&s->err, &expected, (int)rc)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->msg, sizeof s->msg, fmt, ap);
        va_end(ap);
    }
    return rc;
}

hal_result asc_stream_wrap(hal_device *dev, aclrtStream acl, int owned, hal_stream **out)
{
    hal_stream *s = calloc(1, sizeof *s);
    if (!s)
        return HAL_E_NOMEM;
    s->dev = dev;
    s->acl = acl;
    s->owned = owned;
    sem_init(&s->subscribed, 0, 0);
    if (pthread_create(&s->reporter, NULL, reporter, s) != 0) {
        free(s);
        return HAL_E_SYSCALL;
    }
    aclError e = ACL(aclrtSubscribeReport)((uint64_t)s->reporter, acl);
    if (e != ACL_SUCCESS)
        atomic_store(&s->stop, 1);
    sem_post(&s->subscribed);
    if (e != ACL_SUCCESS) {
        OH_ERR("hal", "ascend: aclrtSubscribeReport on device %d failed: %d %s", dev->id, e, asc_errmsg());
        pthread_join(s->reporter, NULL);
        sem_destroy(&s->subscribed);
        free(s);
        return asc_from_acl(e);
    }
    pthread_mutex_lock(&asc_lock);
    s->next = dev->streams;
    dev->streams = s;
    pthread_mutex_unlock(&asc_lock);
    *out = s;
    return HAL_OK;
}

static hal_result stream_create(hal_device *dev, hal_stream **out)
{
    aclrtStream acl = NULL;
    hal_result rc = out ? asc_select(dev) : HAL_E_PARAM;
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtCreateStreamWithConfig)(&acl, 0, ACL_STREAM_FAST_LAUNCH));
    if (rc != HAL_OK)
        return rc;
    rc = asc_stream_wrap(dev, acl, 1, out);
    if (rc != HAL_OK)
        ACL(aclrtDestroyStream)(acl);
    return rc;
}

/* Stops the reporter of a failed stream: a spare stream subscribed to the same thread carries the
 * stop callback (else the thread ends at its next poll). */
static void stop_via_spare(hal_stream *s)
{
    atomic_store(&s->stop, 1);
    aclrtStream spare = NULL;
    if (asc_select(s->dev) != HAL_OK || ACL(aclrtCreateStreamWithConfig)(&spare, 0, 0) != ACL_SUCCESS)
        return;
    if (ACL(aclrtSubscribeReport)((uint64_t)s->reporter, spare) == ACL_SUCCESS) {
        ACL(aclrtLaunchCallback)(stop_cb, s, ACL_CALLBACK_NO_BLOCK, spare);
        ACL(aclrtSynchronizeStreamWithTimeout)(spare, -1);
        ACL(aclrtUnSubscribeReport)((uint64_t)s->reporter, spare);
    }
    ACL(aclrtDestroyStream)(spare);
}

/* Unlinks, stops the reporter (a last callback tells it to), then frees ACL resources. */
hal_result asc_stream_destroy(hal_stream *s)
{
    if (!s)
        return HAL_E_PARAM;
    asc_abort_forget_stream(s);
    pthread_mutex_lock(&asc_lock);
    for (hal_stream **l = &s->dev->streams; *l; l = &(*l)->next)
        if (*l == s) {
            *l = s->next;
            break;
        }
    pthread_mutex_unlock(&asc_lock);
    aclError e = ACL(aclrtSynchronizeStreamWithTimeout)(s->acl, -1);
    if (e != ACL_SUCCESS || ACL(aclrtLaunchCallback)(stop_cb, s, ACL_CALLBACK_NO_BLOCK, s->acl) != ACL_SUCCESS)
        stop_via_spare(s); /* a failed stream runs no more callbacks */
    pthread_join(s->reporter, NULL);
    ACL(aclrtUnSubscribeReport)((uint64_t)s->reporter, s->acl);
    if (s->helper)
        ACL(aclrtDestroyStream)(s->helper);
    if (s->gate)
        ACL(aclrtDestroyNotify)(s->gate);
    for (size_t i = 0; i < s->nretired; i++)
        ACL(aclrtFree)(s->retired[i]);
    if (s->stage)
        ACL(aclrtFree)(s->stage);
    free(s->retired);
    e = s->owned ? ACL(aclrtDestroyStream)(s->acl) : ACL_SUCCESS;
    sem_destroy(&s->subscribed);
    /* The wrapper itself is kept (a few hundred bytes) until its device closes: events recorded
     * on it and streams that waited on it may still read its sticky error. */
    s->acl = NULL;
    s->stage = s->helper = s->gate = NULL;
    s->retired = NULL;
    pthread_mutex_lock(&asc_lock);
    s->next = s->dev->retired;
    s->dev->retired = s;
    pthread_mutex_unlock(&asc_lock);
    return asc_from_acl(e);
}

static hal_result sticky(hal_stream *s, hal_result rc)
{
    int err = atomic_load(&s->err);
    if (rc == HAL_OK || rc == HAL_E_NOT_READY)
        return err ? (hal_result)err : rc;
    hal_stream *up = atomic_load(&s->upstream);
    int up_err = up ? atomic_load(&up->err) : 0;
    /* the ACL stream failed: a device task (notify wait timeout, bad copy...), or it waited on a
     * stream that failed, whose error is the cause (ACL fails waiters too, skipping our callback) */
    if (!err && up_err)
        asc_stream_fail(s, (hal_result)up_err, "%s", up->msg);
    else if (!err)
        asc_stream_fail(s, rc, "%s", asc_errmsg());
    err = atomic_load(&s->err);
    return err ? (hal_result)err : rc;
}

static hal_result stream_sync(hal_stream *s, int32_t timeout_ms)
{
    aclError e = ACL(aclrtSynchronizeStreamWithTimeout)(s->acl, timeout_ms < 0 ? -1 : timeout_ms);
    if (e == 507046) /* ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: the host's deadline, the stream runs on */
        return atomic_load(&s->err) ? (hal_result)atomic_load(&s->err) : HAL_E_TIMEOUT;
    return sticky(s, asc_from_acl(e));
}

static hal_result stream_query(hal_stream *s)
{
    aclrtStreamStatus st = ACL_STREAM_STATUS_NOT_READY;
    aclError e = ACL(aclrtStreamQuery)(s->acl, &st);
    if (e != ACL_SUCCESS)
        return sticky(s, asc_from_acl(e));
    return sticky(s, st == ACL_STREAM_STATUS_COMPLETE ? HAL_OK : HAL_E_NOT_READY);
}

static const char *stream_error_msg(hal_stream *s)
{
    return atomic_load(&s->err) ? s->msg : "";
}

/* Clears our sticky error only: ACL has no public call to clear a failed stream's state. */
static void stream_clear_error(hal_stream *s)
{
    s->msg[0] = 0;
    atomic_store(&s->err, 0);
}

static hal_device *stream_device(hal_stream *s)
{
    return s->dev;
}

static hal_result stream_from_native(void *native, hal_stream **out)
{
    hal_device *dev;
    if (!out || asc_dev_ops.current_device(&dev) != HAL_OK)
        return HAL_E_PARAM;
    pthread_mutex_lock(&asc_lock);
    hal_stream *s = dev->streams;
    while (s && s->acl != native && (void *)s != native) /* a wrapper stands for its stream too */
        s = s->next;
    pthread_mutex_unlock(&asc_lock);
    if (s) {
        *out = s;
        return HAL_OK;
    }
    return asc_stream_wrap(dev, native, 0, out);
}

/* --- events: aclrtCreateEventWithFlag(ACL_EVENT_SYNC [| ACL_EVENT_TIME_LINE]) --------------- */

static hal_result event_create(hal_device *dev, uint32_t flags, hal_event **out)
{
    hal_event *e = calloc(1, sizeof *e);
    hal_result rc = e ? asc_select(dev) : HAL_E_NOMEM;
    uint32_t f = ACL_EVENT_SYNC | ((flags & HAL_EVENT_TIMING) ? ACL_EVENT_TIME_LINE : 0);
    if (rc == HAL_OK)
        rc = asc_from_acl(ACL(aclrtCreateEventWithFlag)(&e->acl, f));
    if (rc != HAL_OK) {
        free(e);
        return rc;
    }
    e->dev = dev;
    e->flags = flags;
    *out = e;
    return HAL_OK;
}

static hal_result event_destroy(hal_event *e)
{
    aclError r = ACL(aclrtDestroyEvent)(e->acl);
    free(e);
    return asc_from_acl(r);
}

static hal_result event_record(hal_event *e, hal_stream *s)
{
    hal_result rc = asc_from_acl(ACL(aclrtRecordEvent)(e->acl, s->acl));
    if (rc == HAL_OK) {
        atomic_store(&e->recorded, 1);
        atomic_store(&e->src, s);
    }
    return rc;
}

static hal_result event_reset(hal_event *e, hal_stream *s)
{
    atomic_store(&e->recorded, 0);
    atomic_store(&e->src, NULL);
    return asc_from_acl(ACL(aclrtResetEvent)(e->acl, s->acl));
}

/* A sync event blocks waits until recorded; the HAL's default is CUDA's (a never-recorded event is
 * complete), which the host knows: such a wait is not enqueued at all. */
static hal_result stream_wait_event(hal_stream *s, hal_event *e)
{
    if (!atomic_load(&e->recorded) && !(e->flags & HAL_EVENT_WAIT_UNRECORDED_BLOCKS))
        return HAL_OK;
    hal_result rc = asc_from_acl(ACL(aclrtStreamWaitEvent)(s->acl, e->acl));
    hal_stream *src = atomic_load(&e->src);
    /* A task fn's failure lives in the host wrapper, not in ACL's stream: a callback after the wait
     * hands it on, as a failed stream's error reaches the streams that wait on it. */
    if (rc == HAL_OK && src && src != s) {
        atomic_store(&s->upstream, src);
        rc = asc_inherit_error(s, src);
    }
    return rc;
}

static hal_result event_error(hal_event *e, hal_result rc)
{
    hal_stream *src = atomic_load(&e->src);
    int err = src ? atomic_load(&src->err) : 0;
    return err && (rc == HAL_OK || rc == HAL_E_TIMEOUT) ? (hal_result)err : rc; /* the cause, not its echo */
}

static hal_result event_sync(hal_event *e, int32_t timeout_ms)
{
    if (!atomic_load(&e->recorded))
        return HAL_OK;
    aclError r = ACL(aclrtSynchronizeEventWithTimeout)(e->acl, timeout_ms < 0 ? -1 : timeout_ms);
    return r == 507047 ? HAL_E_TIMEOUT : event_error(e, asc_from_acl(r));
}

static hal_result event_query(hal_event *e)
{
    if (!atomic_load(&e->recorded))
        return HAL_OK;
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    hal_result rc = asc_from_acl(ACL(aclrtQueryEventStatus)(e->acl, &st));
    return rc != HAL_OK ? rc : st == ACL_EVENT_RECORDED_STATUS_COMPLETE ? event_error(e, HAL_OK) : HAL_E_NOT_READY;
}

static int event_recorded(hal_event *e)
{
    return atomic_load(&e->recorded);
}

static hal_result event_elapsed_ms(hal_event *a, hal_event *b, float *ms)
{
    return asc_from_acl(ACL(aclrtEventElapsedTime)(ms, a->acl, b->acl));
}

const hal_ops asc_stream_ops = {
    .stream_create = stream_create, .stream_destroy = asc_stream_destroy, .stream_sync = stream_sync,
    .stream_query = stream_query, .stream_error_msg = stream_error_msg, .stream_clear_error = stream_clear_error,
    .stream_device = stream_device, .stream_from_native = stream_from_native,
    .event_create = event_create, .event_destroy = event_destroy, .event_record = event_record,
    .event_reset = event_reset, .stream_wait_event = stream_wait_event, .event_sync = event_sync,
    .event_query = event_query, .event_recorded = event_recorded, .event_elapsed_ms = event_elapsed_ms,
};
