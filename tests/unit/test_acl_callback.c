/* ACL front: host callbacks in CANN's flow (SubscribeReport / LaunchCallback / ProcessReport /
 * UnSubscribeReport), BLOCK vs NO_BLOCK, and aclrtLaunchHostFunc. No sleeps: holds are gates,
 * the report thread loops on aclrtProcessReport with a timeout until told to stop. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"


TestSuite(acl_callback, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

/* ---- the report thread ------------------------------------------------------------------- */

typedef struct reporter {
    pthread_t th;
    atomic_int stop;
    atomic_int processed_ok;
} reporter;

static void *report_loop(void *arg)
{
    reporter *r = arg;
    aclrtSetDevice(0); /* as CANN samples do in their callback thread */
    while (!atomic_load(&r->stop))
        if (aclrtProcessReport(50) == ACL_SUCCESS)
            atomic_fetch_add(&r->processed_ok, 1);
    aclrtResetDevice(0);
    return NULL;
}

static void reporter_start(reporter *r)
{
    atomic_init(&r->stop, 0);
    atomic_init(&r->processed_ok, 0);
    cr_assert_eq(pthread_create(&r->th, NULL, report_loop, r), 0);
}

static void reporter_stop(reporter *r)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->th, NULL);
}

/* ---- a callback that records where it ran, optionally held by a gate ---------------------- */

typedef struct probe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int hold;    /* wait for release before returning */
    int release;
    int calls;
    pthread_t ran_on;
} probe;

#define PROBE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0}

static void probe_cb(void *arg)
{
    probe *p = arg;
    pthread_mutex_lock(&p->mu);
    p->ran_on = pthread_self();
    p->calls++;
    pthread_cond_broadcast(&p->cv);
    while (p->hold && !p->release)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

static void probe_release(probe *p)
{
    pthread_mutex_lock(&p->mu);
    p->release = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void probe_wait_calls(probe *p, int n)
{
    pthread_mutex_lock(&p->mu);
    while (p->calls < n)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

enum { N = 128 };

/* A copy's source (src filled with `fill`), what the device buffer holds before it (zero), and that
 * device buffer, zeroed. */
static void *copy_setup(unsigned char src[N], unsigned char zero[N], int fill)
{
    memset(src, fill, N);
    memset(zero, 0, N);
    void *d;
    cr_assert_eq(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(d, N, 0, N), ACL_SUCCESS);
    return d;
}

Test(acl_callback, runs_on_the_subscribed_thread)
{
    reporter r;
    reporter_start(&r);
    aclrtStream s;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    probe p = PROBE_INIT;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(aclrtLaunchCallback(probe_cb, &p, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(p.calls, 3);
    cr_assert(pthread_equal(p.ran_on, r.th), "callback did not run on the subscribed thread");
    cr_assert_eq(aclrtUnSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    reporter_stop(&r);
    cr_assert_geq(atomic_load(&r.processed_ok), 1);
    cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* BLOCK: the copy queued after the callback waits until the callback returned. */
Test(acl_callback, block_holds_the_stream)
{
    reporter r;
    reporter_start(&r);
    aclrtStream s;
    unsigned char src[N], zero[N];
    void *d = copy_setup(src, zero, 0x42);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    probe p = PROBE_INIT;
    p.hold = 1;
    cr_assert_eq(aclrtLaunchCallback(probe_cb, &p, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    probe_wait_calls(&p, 1); /* the callback is running and held */
    cr_assert_arr_eq((unsigned char *)d, zero, N);
    aclrtStreamStatus st;
    cr_assert_eq(aclrtStreamQuery(s, &st), ACL_SUCCESS);
    cr_assert_eq(st, ACL_STREAM_STATUS_NOT_READY);
    probe_release(&p);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_arr_eq((unsigned char *)d, src, N);
    cr_assert_eq(aclrtUnSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    reporter_stop(&r);
    aclrtDestroyStream(s);
    aclrtFree(d);
}

/* NO_BLOCK: the stream completes while the callback is still held on the report thread. */
Test(acl_callback, no_block_lets_the_stream_go_on)
{
    reporter r;
    reporter_start(&r);
    aclrtStream s;
    unsigned char src[N];
    memset(src, 0x24, N);
    void *d;
    cr_assert_eq(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    probe p = PROBE_INIT;
    p.hold = 1;
    cr_assert_eq(aclrtLaunchCallback(probe_cb, &p, ACL_CALLBACK_NO_BLOCK, s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS); /* returns although the callback is held */
    cr_assert_arr_eq((unsigned char *)d, src, N);
    probe_wait_calls(&p, 1);
    probe_release(&p);
    cr_assert_eq(aclrtUnSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    reporter_stop(&r);
    aclrtDestroyStream(s);
    aclrtFree(d);
}

Test(acl_callback, errors)
{
    aclrtStream s;
    probe p = PROBE_INIT;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    /* No thread subscribed to the stream / this thread serves no stream. */
    cr_assert_eq(aclrtLaunchCallback(probe_cb, &p, ACL_CALLBACK_BLOCK, s), ACL_ERROR_RT_STREAM_NO_CB_REG);
    cr_assert_eq(aclrtProcessReport(10), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    cr_assert_eq(aclrtProcessReport(0), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtProcessReport(-2), ACL_ERROR_INVALID_PARAM);
    uint64_t me = (uint64_t)pthread_self();
    cr_assert_eq(aclrtSubscribeReport(me, s), ACL_SUCCESS);
    cr_assert_eq(aclrtSubscribeReport(me, s), ACL_ERROR_RT_STREAM_SUBSCRIBE); /* one thread per stream */
    cr_assert_eq(aclrtProcessReport(10), ACL_ERROR_RT_REPORT_TIMEOUT);     /* nothing queued */
    cr_assert_eq(aclrtLaunchCallback(NULL, &p, ACL_CALLBACK_BLOCK, s), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtLaunchCallback(probe_cb, &p, (aclrtCallbackBlockType)5, s), ACL_ERROR_INVALID_PARAM);
    /* This thread processes its own stream's NO_BLOCK callback. */
    cr_assert_eq(aclrtLaunchCallback(probe_cb, &p, ACL_CALLBACK_NO_BLOCK, s), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtProcessReport(-1), ACL_SUCCESS);
    cr_assert_eq(p.calls, 1);
    cr_assert(pthread_equal(p.ran_on, pthread_self()));
    cr_assert_eq(aclrtUnSubscribeReport(me, s), ACL_SUCCESS);
    cr_assert_eq(aclrtUnSubscribeReport(me, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* aclrtLaunchHostFunc: needs no subscription, holds the stream's later tasks. */
Test(acl_callback, host_func)
{
    aclrtStream s;
    unsigned char src[N], zero[N];
    void *d = copy_setup(src, zero, 0x99);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    probe p = PROBE_INIT;
    p.hold = 1;
    cr_assert_eq(aclrtLaunchHostFunc(s, probe_cb, &p), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    probe_wait_calls(&p, 1);
    cr_assert_arr_eq((unsigned char *)d, zero, N);
    probe_release(&p);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_arr_eq((unsigned char *)d, src, N);
    cr_assert_eq(aclrtLaunchHostFunc(s, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    aclrtDestroyStream(s);
    aclrtFree(d);
}

/* After a task failed, a stream skips its later device work, but callbacks and host functions
 * still run (CANN runs a stream's later tasks by default): a callback that frees what the work
 * used must not be lost. Before, they were skipped, and the emulator's callback record and every
 * hal/ascend task launched as a callback leaked (ASan, test_coll_ascend's dead-peer cases). */
Test(acl_callback, callbacks_and_host_funcs_run_on_a_failed_stream)
{
    reporter r;
    reporter_start(&r);
    aclrtStream s;
    aclrtNotify n;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT), ACL_SUCCESS);
    unsigned char src[N], zero[N];
    void *d = copy_setup(src, zero, 0x5a);
    cr_assert_eq(aclrtWaitAndResetNotify(n, s, 1), ACL_SUCCESS); /* nobody records: fails after 1 s */
    cr_assert_eq(aclrtMemcpyAsync(d, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    probe cb = PROBE_INIT, host = PROBE_INIT;
    cr_assert_eq(aclrtLaunchCallback(probe_cb, &cb, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
    cr_assert_eq(aclrtLaunchHostFunc(s, probe_cb, &host), ACL_SUCCESS);
    aclError rc = aclrtSynchronizeStream(s);
    cr_assert_eq(rc, ACL_ERROR_RT_FFTS_PLUS_TIMEOUT, "got %d", rc);
    cr_assert_arr_eq((unsigned char *)d, zero, N, "the copy after the failure ran");
    cr_assert_eq(cb.calls, 1, "the callback after the failure did not run");
    cr_assert(pthread_equal(cb.ran_on, r.th), "the callback did not run on the subscribed thread");
    cr_assert_eq(host.calls, 1, "the host function after the failure did not run");
    cr_assert_eq(aclrtUnSubscribeReport((uint64_t)r.th, s), ACL_SUCCESS);
    reporter_stop(&r);
    cr_assert_eq(aclrtDestroyNotify(n), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(d), ACL_SUCCESS);
}
