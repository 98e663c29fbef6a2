/* The abort flag of notify_wait on ACL. aclrtWaitAndResetNotify has no hook to poll a flag, so a
 * watcher thread polls, every ASC_ABORT_POLL_MS, the flags that waits were enqueued with. When a
 * flag turns non-zero it
 *   - fails (sticky HAL_E_ABORTED) the stream that last enqueued a wait on each such notify, if it
 *     still has work queued: its later callbacks are skipped, so the gate of its next task_async
 *     times out and ACL fails the stream about a second later (asc_task.c);
 *   - records every lane of every notify waited on with that flag, on the device's host-record
 *     stream, and again on each poll for ASC_ABORT_RELEASE_TICKS polls: a CANN notify is a flag,
 *     so extra records pile up nowhere, and each pending or later wait on those notifies passes
 *     at once instead of at HCCL_EXEC_TIMEOUT.
 * The released waits do not fail by themselves (ACL cannot fail them): the stream's failure comes
 * from its sticky error and the gate. Lane counts of such notifies are meaningless afterwards; an
 * abort ends the communicator that owns them. The watcher exits when nothing is registered. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "hal/ascend/asc_internal.h"

#define ASC_ABORT_POLL_MS 100
#define ASC_ABORT_RELEASE_TICKS 50 /* keep releasing for 5 s after an abort */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
/* Notifies waited on with a flag (n->abort_flag set). Only notifies are registered: they die with
 * the communicator that owns the flag, so the watcher never reads a flag that outlived it. */
static hal_notify **g_notifies;
static size_t g_nn, g_ncap;
static int g_running;

static int push(hal_notify *n)
{
    if (g_nn == g_ncap) {
        size_t c = g_ncap ? 2 * g_ncap : 64;
        hal_notify **a = realloc(g_notifies, c * sizeof *a);
        if (!a)
            return 0;
        g_notifies = a;
        g_ncap = c;
    }
    g_notifies[g_nn++] = n;
    return 1;
}

/* Records every lane of n on its device's host-record stream (asc_notify.c). */
static void release(hal_notify *n)
{
    for (int k = 0; k < n->nlanes; k++)
        if (asc_host_record_lane(n, k) != HAL_OK)
            return;
}

static void fail_busy(hal_stream *s)
{
    aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
    if (atomic_load(&s->err) || ACL(aclrtStreamQuery)(s->acl, &st) != ACL_SUCCESS || st == ACL_STREAM_STATUS_COMPLETE)
        return;
    asc_stream_fail(s, HAL_E_ABORTED, "a notify wait on device %d was aborted (the communicator's abort flag is set)",
                    s->dev->id);
}

/* One poll; returns whether anything is still registered. */
static int poll_once(void)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nn; i++) {
        hal_notify *n = g_notifies[i];
        if (*n->abort_flag == 0) {
            n->abort_ticks = 0;
            continue;
        }
        if (n->abort_ticks == 0 && n->abort_stream)
            fail_busy(n->abort_stream);
        if (n->abort_ticks < ASC_ABORT_RELEASE_TICKS) {
            n->abort_ticks++;
            release(n);
        }
    }
    int any = g_nn != 0;
    if (!any)
        g_running = 0;
    pthread_mutex_unlock(&g_lock);
    return any;
}

static void *watcher(void *arg)
{
    (void)arg;
    asc_thread_fresh = 1;
    struct timespec ts = {0, ASC_ABORT_POLL_MS * 1000000L};
    do {
        while (nanosleep(&ts, NULL) != 0 && errno == EINTR)
            ;
    } while (poll_once());
    return NULL;
}

static void start_locked(void)
{
    if (g_running)
        return;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, watcher, NULL) == 0)
        g_running = 1;
    else
        OH_WARN("hal", "ascend: no abort watcher thread: aborted notify waits end at HCCL_EXEC_TIMEOUT");
    pthread_attr_destroy(&a);
}

/* notify_wait with a flag: cheap when n is already watched for it from s (every wait of a plan). */
void asc_abort_watch(hal_notify *n, hal_stream *s, const volatile uint32_t *flag)
{
    if (!flag || (n->abort_flag == flag && n->abort_stream == s))
        return;
    pthread_mutex_lock(&g_lock);
    if (n->abort_flag || push(n)) {
        n->abort_flag = flag;
        n->abort_stream = s;
    }
    start_locked();
    pthread_mutex_unlock(&g_lock);
}

/* Before a notify is freed: the watcher must not touch it again. Returns whether n was watched
 * (its releases may still be queued on the host-record stream). */
int asc_abort_forget_notify(hal_notify *n)
{
    if (!n->abort_flag)
        return 0;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nn; i++)
        if (g_notifies[i] == n) {
            g_notifies[i] = g_notifies[--g_nn];
            break;
        }
    n->abort_flag = NULL;
    n->abort_stream = NULL;
    pthread_mutex_unlock(&g_lock);
    return 1;
}

/* Before a stream is freed: no watched notify names it any more. */
void asc_abort_forget_stream(hal_stream *s)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nn; i++)
        if (g_notifies[i]->abort_stream == s)
            g_notifies[i]->abort_stream = NULL;
    pthread_mutex_unlock(&g_lock);
}
