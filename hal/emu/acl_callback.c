/* Host callbacks, CANN's flow (hicann/runtime docs, "aclrtLaunchCallback" section):
 *   1. the program creates a thread that loops on aclrtProcessReport(timeout);
 *   2. aclrtSubscribeReport(threadId, stream) binds that thread to the stream;
 *   3. aclrtLaunchCallback(fn, data, blockType, stream) enqueues a callback task;
 *   4. when the stream reaches the task, fn(data) runs ON THE SUBSCRIBED THREAD, inside its
 *      aclrtProcessReport call; ACL_CALLBACK_BLOCK holds the stream's later tasks until fn
 *      returned, ACL_CALLBACK_NO_BLOCK lets the stream go on at once;
 *   5. aclrtUnSubscribeReport(threadId, stream) ends the binding.
 * A stream has at most one subscribed thread; a thread may serve several streams of one device.
 * threadId is the pthread_t of the processing thread, as CANN's samples pass it.
 *
 * Emulation: the callback task is a HAL host function. On the stream's executor it queues a
 * report for the subscribed thread and, for BLOCK, waits until that thread has run it. One mutex
 * and one condition variable serve all queues: callbacks are rare control-path events.
 * aclrtLaunchHostFunc (acl_stream.c) is the other, self-contained callback flavour.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "hal/emu/acl_internal.h"

typedef struct cb_report {
    struct cb_report *next;
    aclrtCallback fn;
    void *data;
    uint64_t tid; /* thread bound at launch */
    int block;
    int done; /* BLOCK: set by the processing thread once fn returned */
} cb_report;

typedef struct cb_queue {
    struct cb_queue *next;
    uint64_t tid;
    hal_device *dev; /* a thread serves streams of one device */
    int nsubs;       /* streams subscribed to this thread */
    int waiters;     /* threads inside aclrtProcessReport on this queue */
    cb_report *head, *tail;
} cb_queue;

typedef struct cb_sub {
    struct cb_sub *next;
    hal_stream *s;
    uint64_t tid;
} cb_sub;

static pthread_mutex_t g_cb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cb_cv; /* CLOCK_MONOTONIC; new reports and finished BLOCK callbacks */
static pthread_once_t g_cb_once = PTHREAD_ONCE_INIT;
static cb_queue *g_queues;
static cb_sub *g_subs;

static void cb_init(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cb_cv, &attr);
    pthread_condattr_destroy(&attr);
}

static uint64_t self_tid(void)
{
    return (uint64_t)(uintptr_t)pthread_self();
}

/* ---- lookups (g_cb_lock held) ------------------------------------------------------------- */

static cb_queue *queue_of(uint64_t tid)
{
    cb_queue *q = g_queues;
    while (q && q->tid != tid)
        q = q->next;
    return q;
}

static cb_sub **sub_link(hal_stream *s)
{
    cb_sub **link = &g_subs;
    while (*link && (*link)->s != s)
        link = &(*link)->next;
    return link;
}

/* Frees a queue nobody can reach any more: no subscription, no report, no waiter. */
static void queue_release_if_idle(cb_queue *q)
{
    if (q->nsubs > 0 || q->head || q->waiters > 0)
        return;
    cb_queue **link = &g_queues;
    while (*link != q)
        link = &(*link)->next;
    *link = q->next;
    free(q);
}

static void drop_sub(cb_sub **link)
{
    cb_sub *sub = *link;
    *link = sub->next;
    cb_queue *q = queue_of(sub->tid);
    free(sub);
    if (q) {
        q->nsubs--;
        queue_release_if_idle(q);
    }
}

/* ---- subscribe / unsubscribe -------------------------------------------------------------- */

static aclError subscribe_locked(uint64_t tid, hal_stream *s, hal_device *dev)
{
    if (*sub_link(s))
        return acl_fail(ACL_ERROR_RT_STREAM_SUBSCRIBE, "aclrtSubscribeReport",
                        "stream %p already has a subscribed thread", (void *)s);
    cb_queue *q = queue_of(tid);
    if (q && q->dev != dev)
        return acl_fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, "aclrtSubscribeReport",
                        "thread %llu already serves streams of another device", (unsigned long long)tid);
    cb_sub *sub = calloc(1, sizeof *sub);
    if (!q && (q = calloc(1, sizeof *q)) != NULL) {
        q->tid = tid;
        q->dev = dev;
        q->next = g_queues;
        g_queues = q;
    }
    if (!sub || !q) {
        free(sub);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtSubscribeReport", "out of host memory");
    }
    sub->s = s;
    sub->tid = tid;
    sub->next = g_subs;
    g_subs = sub;
    q->nsubs++;
    return ACL_SUCCESS;
}

aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream)
{
    pthread_once(&g_cb_once, cb_init);
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    hal_device *dev = emu_hal_ops.stream_device(s);
    pthread_mutex_lock(&g_cb_lock);
    err = subscribe_locked(threadId, s, dev);
    pthread_mutex_unlock(&g_cb_lock);
    return err;
}

aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream)
{
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    pthread_mutex_lock(&g_cb_lock);
    cb_sub **link = sub_link(s);
    int found = *link && (*link)->tid == threadId;
    if (found)
        drop_sub(link);
    pthread_mutex_unlock(&g_cb_lock);
    if (!found)
        return acl_fail(ACL_ERROR_RT_STREAM_SUBSCRIBE, __func__, "stream %p is not subscribed to thread %llu", stream,
                        (unsigned long long)threadId);
    return ACL_SUCCESS;
}

void acl_callback_forget_stream(hal_stream *s)
{
    pthread_mutex_lock(&g_cb_lock);
    cb_sub **link = sub_link(s);
    if (*link)
        drop_sub(link);
    pthread_mutex_unlock(&g_cb_lock);
}

/* aclFinalize: reports never processed are dropped; BLOCK ones are released so their streams
 * can drain instead of hanging the device close. */
void acl_callback_reset(void)
{
    pthread_once(&g_cb_once, cb_init);
    pthread_mutex_lock(&g_cb_lock);
    while (g_subs)
        drop_sub(&g_subs);
    for (cb_queue *q = g_queues; q; q = q->next) {
        while (q->head) {
            cb_report *r = q->head;
            q->head = r->next;
            if (r->block)
                r->done = 1; /* the stream's executor frees it */
            else
                free(r);
        }
        q->tail = NULL;
    }
    cb_queue *q = g_queues;
    while (q) {
        cb_queue *next = q->next;
        queue_release_if_idle(q);
        q = next;
    }
    pthread_cond_broadcast(&g_cb_cv);
    pthread_mutex_unlock(&g_cb_lock);
}

/* ---- launch: the stream-side half --------------------------------------------------------- */

/* Runs on the stream's executor when the stream reaches the callback task. */
static void cb_task(void *arg)
{
    cb_report *r = arg;
    pthread_mutex_lock(&g_cb_lock);
    cb_queue *q = queue_of(r->tid);
    if (!q) {
        /* The thread unsubscribed after the launch: run the callback here rather than lose it
         * or stall the stream. */
        pthread_mutex_unlock(&g_cb_lock);
        OH_WARN(ACL_MOD, "aclrtLaunchCallback: thread %llu no longer subscribed; callback runs on the stream",
                (unsigned long long)r->tid);
        r->fn(r->data);
        free(r);
        return;
    }
    int block = r->block;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    pthread_cond_broadcast(&g_cb_cv);
    if (block) {
        while (!r->done)
            pthread_cond_wait(&g_cb_cv, &g_cb_lock);
        free(r);
    }
    pthread_mutex_unlock(&g_cb_lock);
}

aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream)
{
    pthread_once(&g_cb_once, cb_init);
    if (!fn)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "fn is NULL");
    if (blockType != ACL_CALLBACK_BLOCK && blockType != ACL_CALLBACK_NO_BLOCK)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "invalid blockType %d", (int)blockType);
    hal_stream *s;
    aclError err = acl_stream(__func__, stream, &s);
    if (err)
        return err;
    cb_report *r = calloc(1, sizeof *r);
    if (!r)
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
    r->fn = fn;
    r->data = userData;
    r->block = blockType == ACL_CALLBACK_BLOCK;
    pthread_mutex_lock(&g_cb_lock);
    cb_sub *sub = *sub_link(s);
    if (sub)
        r->tid = sub->tid;
    pthread_mutex_unlock(&g_cb_lock);
    if (!sub) {
        free(r);
        return acl_fail(ACL_ERROR_RT_STREAM_NO_CB_REG, __func__,
                        "stream %p has no subscribed thread (call aclrtSubscribeReport first)", stream);
    }
    hal_result rc = emu_hal_ops.host_func_async(s, cb_task, r);
    if (rc != HAL_OK) {
        free(r);
        return acl_fail_hal(rc, __func__, "host_func_async");
    }
    return ACL_SUCCESS;
}

/* ---- process: the subscribed thread's half ------------------------------------------------ */

static struct timespec deadline_after(int32_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Waits (g_cb_lock held) until q has a report; 0 on success, ETIMEDOUT past the deadline. */
static int wait_report(cb_queue *q, int32_t timeout)
{
    struct timespec until = timeout > 0 ? deadline_after(timeout) : (struct timespec){0, 0};
    int rc = 0;
    q->waiters++;
    while (!q->head && rc != ETIMEDOUT)
        rc = timeout > 0 ? pthread_cond_timedwait(&g_cb_cv, &g_cb_lock, &until)
                         : pthread_cond_wait(&g_cb_cv, &g_cb_lock);
    q->waiters--;
    return q->head ? 0 : ETIMEDOUT;
}

/* Runs the reports taken off the queue, outside the lock (callbacks may call ACL). */
static void run_reports(cb_report *list)
{
    while (list) {
        cb_report *r = list;
        list = r->next;
        int block = r->block;
        r->fn(r->data);
        if (block) {
            pthread_mutex_lock(&g_cb_lock);
            r->done = 1; /* the executor waiting in cb_task frees it */
            pthread_cond_broadcast(&g_cb_cv);
            pthread_mutex_unlock(&g_cb_lock);
        } else {
            free(r);
        }
    }
}

aclError aclrtProcessReport(int32_t timeout)
{
    pthread_once(&g_cb_once, cb_init);
    if (timeout == 0 || timeout < -1)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "timeout %d: use -1 (forever) or > 0 ms", timeout);
    pthread_mutex_lock(&g_cb_lock);
    cb_queue *q = queue_of(self_tid());
    if (!q || q->nsubs == 0) {
        pthread_mutex_unlock(&g_cb_lock);
        return acl_fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, __func__, "no stream is subscribed to this thread");
    }
    int rc = wait_report(q, timeout);
    cb_report *list = q->head;
    q->head = q->tail = NULL;
    queue_release_if_idle(q);
    pthread_mutex_unlock(&g_cb_lock);
    if (rc == ETIMEDOUT)
        return acl_fail(ACL_ERROR_RT_REPORT_TIMEOUT, __func__, "no callback within %d ms", timeout);
    run_reports(list);
    return ACL_SUCCESS;
}
