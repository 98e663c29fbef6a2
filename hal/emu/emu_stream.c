/* Streams: a FIFO task queue executed by one worker thread. Enqueue takes the stream mutex and
 * signals the condvar only when the worker sleeps, so enqueueing to a busy stream is a lock, a
 * malloc and a few stores. Sticky error: the first failing task records code + message; later
 * tasks are skipped, except event records, which complete carrying the error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

static pthread_mutex_t g_streams_mu = PTHREAD_MUTEX_INITIALIZER;
static hal_stream *g_streams; /* every live stream of the process */

bool emu_stream_live(const hal_stream *s)
{
    bool found = false;
    pthread_mutex_lock(&g_streams_mu);
    for (hal_stream *x = g_streams; x && !found; x = x->gnext)
        found = x == s;
    pthread_mutex_unlock(&g_streams_mu);
    return found;
}

emu_task *emu_task_new(emu_task_kind kind)
{
    emu_task *t = malloc(sizeof *t);
    if (t) {
        t->next = NULL;
        t->kind = kind;
        t->trace_tag.op = 0;
    }
    return t;
}

void emu_stream_fail(hal_stream *s, hal_result rc, const char *fmt, ...)
{
    pthread_mutex_lock(&s->mu);
    if (s->err == HAL_OK) {
        s->err = rc;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->msg, sizeof s->msg, fmt, ap);
        va_end(ap);
        OH_ERR("emu", "device %u stream %p failed (%s): %s", s->dev->id, (void *)s, hal_result_name(rc), s->msg);
    }
    pthread_mutex_unlock(&s->mu);
}

static void *stream_main(void *p)
{
    hal_stream *s = p;
    emu_task *t = NULL;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (t) {
            s->done++;
            if (s->sync_waiters)
                pthread_cond_broadcast(&s->cv_done);
        }
        while (!s->head && !s->stop) {
            s->sleeping = true;
            pthread_cond_wait(&s->cv_work, &s->mu);
            s->sleeping = false;
        }
        t = s->head;
        if (!t)
            break;
        s->head = t->next;
        if (!s->head)
            s->tail = NULL;
        hal_result sticky = s->err;
        pthread_mutex_unlock(&s->mu);
        emu_task_run(s, t, sticky);
        emu_task_free(t);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

hal_result emu_stream_push(hal_stream *s, emu_task *t)
{
    if (emu_trace_on()) /* the op step the enqueuing thread is at (docs/tracing.md) */
        emu_trace_tag_copy(&t->trace_tag);
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        emu_task_free(t);
        return HAL_E_PARAM;
    }
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    s->enq++;
    if (s->sleeping)
        pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    return HAL_OK;
}

hal_result emu_stream_new(hal_device *dev, hal_stream **out)
{
    hal_stream *s = calloc(1, sizeof *s);
    if (!s)
        return HAL_E_NOMEM;
    s->dev = dev;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_work, NULL);
    emu_cond_init(&s->cv_done);
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        OH_ERR("emu", "device %u: cannot start a stream worker thread", dev->id);
        free(s);
        return HAL_E_SYSCALL;
    }
    pthread_mutex_lock(&dev->mu);
    s->next = dev->streams;
    if (dev->streams)
        dev->streams->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->mu);
    pthread_mutex_lock(&g_streams_mu);
    s->gnext = g_streams;
    if (g_streams)
        g_streams->gprev = s;
    g_streams = s;
    pthread_mutex_unlock(&g_streams_mu);
    *out = s;
    return HAL_OK;
}

/* Drains, stops the worker, unlinks and frees. */
void emu_stream_free(hal_stream *s)
{
    pthread_mutex_lock(&g_streams_mu);
    if (s->gprev)
        s->gprev->gnext = s->gnext;
    else
        g_streams = s->gnext;
    if (s->gnext)
        s->gnext->gprev = s->gprev;
    pthread_mutex_unlock(&g_streams_mu);
    pthread_mutex_lock(&s->mu);
    s->stop = true; /* the worker finishes the queue, then exits */
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    hal_device *dev = s->dev;
    pthread_mutex_lock(&dev->mu);
    if (s->prev)
        s->prev->next = s->next;
    else
        dev->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_mutex_unlock(&dev->mu);
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_done);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

hal_result emu_stream_sync_impl(hal_stream *s, int32_t timeout_ms)
{
    uint64_t deadline = emu_deadline_ms(timeout_ms);
    hal_result rc = HAL_OK;
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->enq;
    while (s->done < target) {
        s->sync_waiters++;
        int e = emu_cond_wait_until(&s->cv_done, &s->mu, deadline);
        s->sync_waiters--;
        if (e == ETIMEDOUT && s->done < target) {
            rc = HAL_E_TIMEOUT;
            break;
        }
    }
    if (s->err != HAL_OK)
        rc = s->err;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* --- ops --- */

hal_result emu_stream_create(hal_device *dev, hal_stream **s)
{
    if (!s || !emu_device_live(dev))
        return HAL_E_PARAM;
    return emu_stream_new(dev, s);
}

hal_result emu_stream_destroy(hal_stream *s)
{
    if (!s || !emu_stream_live(s))
        return HAL_E_PARAM;
    if (s == s->dev->default_stream) {
        OH_ERR("emu", "the default stream of device %u cannot be destroyed", s->dev->id);
        return HAL_E_PARAM;
    }
    emu_stream_free(s);
    return HAL_OK;
}

hal_result emu_stream_sync(hal_stream *s, int32_t timeout_ms)
{
    if (!s)
        return HAL_E_PARAM;
    return emu_stream_sync_impl(s, timeout_ms);
}

hal_result emu_stream_query(hal_stream *s)
{
    if (!s)
        return HAL_E_PARAM;
    pthread_mutex_lock(&s->mu);
    hal_result rc = s->err != HAL_OK ? s->err : s->done < s->enq ? HAL_E_NOT_READY : HAL_OK;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

const char *emu_stream_error_msg(hal_stream *s)
{
    return s ? s->msg : "";
}

void emu_stream_clear_error(hal_stream *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->err = HAL_OK;
    s->msg[0] = 0;
    pthread_mutex_unlock(&s->mu);
}

hal_device *emu_stream_device(hal_stream *s)
{
    return s ? s->dev : NULL;
}

hal_result emu_stream_from_native(void *native, hal_stream **s)
{
    if (!s)
        return HAL_E_PARAM;
    if (!native) {
        hal_device *dev;
        hal_result rc = emu_current_device(&dev);
        if (rc != HAL_OK)
            return rc;
        *s = dev->default_stream;
        return HAL_OK;
    }
    if (!emu_stream_live(native)) {
        OH_ERR("emu", "stream %p is not a live stream of this process", native);
        return HAL_E_PARAM;
    }
    *s = native;
    return HAL_OK;
}
