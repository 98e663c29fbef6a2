/* ACL front: streams (ordering, queries, timeouts, bad handles) and each event kind's
 * semantics across streams. Holds are host functions blocked on a gate, or event waits whose
 * record is issued later -- never sleeps. Written only against <acl/acl.h>. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"


TestSuite(acl_stream, .init = acl_fixture_setup, .fini = acl_fixture_teardown);
TestSuite(acl_event, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
} gate;

#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}

static void gate_hold(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

enum { N = 256 };

typedef struct fixture {
    aclrtStream a, b;
    unsigned char *dev; /* N bytes of device memory, zeroed */
    unsigned char src[N], zero[N];
} fixture;

static void fx_init(fixture *f)
{
    cr_assert_eq(aclrtCreateStream(&f->a), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&f->b), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc((void **)&f->dev, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(f->dev, N, 0, N), ACL_SUCCESS);
    memset(f->src, 0xC3, N);
    memset(f->zero, 0, N);
}

static void fx_fini(fixture *f)
{
    cr_assert_eq(aclrtDestroyStream(f->a), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyStream(f->b), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(f->dev), ACL_SUCCESS);
}

/* ---- streams ------------------------------------------------------------------------------ */

Test(acl_stream, create_destroy_and_bad_handles)
{
    aclrtStream s;
    int not_a_stream = 0;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
    cr_assert_neq(aclrtSynchronizeStream(s), ACL_SUCCESS); /* destroyed */
    cr_assert_neq(aclrtSynchronizeStream(&not_a_stream), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_FAST_LAUNCH), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStreamWithConfig(&s, 0, 0x80000000u), ACL_ERROR_INVALID_PARAM);
    aclrtStreamStatus st;
    cr_assert_eq(aclrtStreamQuery(NULL, &st), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamQuery(NULL, NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtSetStreamFailureMode(NULL, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
    cr_assert_eq(aclrtSetStreamFailureMode(NULL, 7), ACL_ERROR_INVALID_PARAM);
}

Test(acl_stream, default_stream_needs_a_device)
{
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(NULL), ACL_ERROR_RT_CONTEXT_NULL);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
}

/* Tasks of one stream run in order: a memset queued after a copy wins. */
Test(acl_stream, tasks_run_in_stream_order)
{
    fixture f;
    fx_init(&f);
    gate g = GATE_INIT;
    cr_assert_eq(aclrtLaunchHostFunc(f.a, gate_hold, &g), ACL_SUCCESS);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(aclrtMemcpyAsync(f.dev, N, f.src, N, ACL_MEMCPY_HOST_TO_DEVICE, f.a), ACL_SUCCESS);
        cr_assert_eq(aclrtMemsetAsync(f.dev, N, i + 1, N, f.a), ACL_SUCCESS);
    }
    gate_open(&g);
    cr_assert_eq(aclrtSynchronizeStream(f.a), ACL_SUCCESS);
    unsigned char want[N];
    memset(want, 8, N);
    cr_assert_arr_eq(f.dev, want, N);
    fx_fini(&f);
}

/* The host's wait expires while the stream is held: STREAM_SYNC_TIMEOUT, the stream goes on. */
Test(acl_stream, synchronize_with_timeout)
{
    fixture f;
    fx_init(&f);
    gate g = GATE_INIT;
    cr_assert_eq(aclrtLaunchHostFunc(f.a, gate_hold, &g), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(f.dev, N, f.src, N, ACL_MEMCPY_HOST_TO_DEVICE, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStreamWithTimeout(f.a, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    cr_assert_eq(aclrtSynchronizeStreamWithTimeout(f.a, 0), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT); /* check once */
    cr_assert_eq(aclrtSynchronizeStreamWithTimeout(f.a, -2), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtSynchronizeDeviceWithTimeout(20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    cr_assert_arr_eq(f.dev, f.zero, N);
    gate_open(&g);
    cr_assert_eq(aclrtSynchronizeStreamWithTimeout(f.a, -1), ACL_SUCCESS);
    cr_assert_arr_eq(f.dev, f.src, N);
    cr_assert_eq(aclrtSynchronizeDevice(), ACL_SUCCESS);
    fx_fini(&f);
}

/* ---- events ------------------------------------------------------------------------------- */

/* Stream b waits for an event recorded on a held stream a: b's copy waits for a's release. */
Test(acl_event, cross_stream_wait_on_recorded_event)
{
    fixture f;
    fx_init(&f);
    aclrtEvent e;
    cr_assert_eq(aclrtCreateEvent(&e), ACL_SUCCESS);
    gate g = GATE_INIT;
    cr_assert_eq(aclrtLaunchHostFunc(f.a, gate_hold, &g), ACL_SUCCESS);
    cr_assert_eq(aclrtRecordEvent(e, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamWaitEvent(f.b, e), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(f.dev, N, f.src, N, ACL_MEMCPY_HOST_TO_DEVICE, f.b), ACL_SUCCESS);
    aclrtEventRecordedStatus rs;
    cr_assert_eq(aclrtQueryEventStatus(e, &rs), ACL_SUCCESS);
    cr_assert_eq(rs, ACL_EVENT_RECORDED_STATUS_NOT_READY);
    aclrtEventStatus es;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    cr_assert_eq(aclrtQueryEvent(e, &es), ACL_SUCCESS); /* deprecated, still provided */
#pragma GCC diagnostic pop
    cr_assert_eq(es, ACL_EVENT_STATUS_NOT_READY);
    cr_assert_eq(aclrtSynchronizeEventWithTimeout(e, 20), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
    cr_assert_eq(aclrtSynchronizeEventWithTimeout(e, 0), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
    cr_assert_arr_eq(f.dev, f.zero, N);
    gate_open(&g);
    cr_assert_eq(aclrtSynchronizeStream(f.b), ACL_SUCCESS);
    cr_assert_arr_eq(f.dev, f.src, N);
    cr_assert_eq(aclrtSynchronizeEvent(e), ACL_SUCCESS);
    cr_assert_eq(aclrtQueryEventStatus(e, &rs), ACL_SUCCESS);
    cr_assert_eq(rs, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    cr_assert_eq(aclrtDestroyEvent(e), ACL_SUCCESS);
    fx_fini(&f);
}

/* aclrtCreateEvent / ExWithFlag: waiting on a never-recorded event does not block. */
Test(acl_event, unrecorded_plain_and_ex_events_do_not_block)
{
    fixture f;
    fx_init(&f);
    aclrtEvent plain, ex;
    cr_assert_eq(aclrtCreateEvent(&plain), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateEventExWithFlag(&ex, ACL_EVENT_SYNC), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamWaitEvent(f.b, plain), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamWaitEvent(f.b, ex), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(f.dev, N, f.src, N, ACL_MEMCPY_HOST_TO_DEVICE, f.b), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(f.b), ACL_SUCCESS);
    cr_assert_arr_eq(f.dev, f.src, N);
    aclrtEventRecordedStatus rs;
    cr_assert_eq(aclrtQueryEventStatus(plain, &rs), ACL_SUCCESS);
    cr_assert_eq(rs, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    cr_assert_eq(aclrtSynchronizeEvent(plain), ACL_SUCCESS);
    cr_assert_eq(aclrtResetEvent(ex, f.b), ACL_ERROR_RT_FEATURE_NOT_SUPPORT); /* Ex events: error */
    cr_assert_eq(aclrtDestroyEvent(plain), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyEvent(ex), ACL_SUCCESS);
    fx_fini(&f);
}

/* WithFlag(ACL_EVENT_SYNC): a wait issued before the record blocks until the record; after
 * aclrtResetEvent the next wait blocks again until the next record. */
Test(acl_event, sync_event_wait_before_record_and_reset)
{
    fixture f;
    fx_init(&f);
    aclrtEvent e;
    cr_assert_eq(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamWaitEvent(f.b, e), ACL_SUCCESS);
    cr_assert_eq(aclrtResetEvent(e, f.b), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(f.dev, N, f.src, N, ACL_MEMCPY_HOST_TO_DEVICE, f.b), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStreamWithTimeout(f.b, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    cr_assert_arr_eq(f.dev, f.zero, N);
    cr_assert_eq(aclrtRecordEvent(e, f.a), ACL_SUCCESS); /* the record comes later */
    cr_assert_eq(aclrtSynchronizeStream(f.b), ACL_SUCCESS);
    cr_assert_arr_eq(f.dev, f.src, N);
    /* Re-armed by the reset: the next wait blocks until the next record. */
    cr_assert_eq(aclrtStreamWaitEvent(f.b, e), ACL_SUCCESS);
    cr_assert_eq(aclrtMemsetAsync(f.dev, N, 0, N, f.b), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStreamWithTimeout(f.b, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    cr_assert_arr_eq(f.dev, f.src, N);
    cr_assert_eq(aclrtRecordEvent(e, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(f.b), ACL_SUCCESS);
    cr_assert_arr_eq(f.dev, f.zero, N);
    cr_assert_eq(aclrtDestroyEvent(e), ACL_SUCCESS);
    fx_fini(&f);
}

/* WithFlag without ACL_EVENT_SYNC: not usable for waits or resets (CANN: not supported). */
Test(acl_event, non_sync_flag_event_rejects_wait_and_reset)
{
    aclrtEvent e;
    cr_assert_eq(aclrtCreateEventWithFlag(&e, ACL_EVENT_TIME_LINE), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamWaitEvent(NULL, e), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_assert_eq(aclrtResetEvent(e, NULL), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_assert_eq(aclrtRecordEvent(e, NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeEvent(e), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyEvent(e), ACL_SUCCESS);
}

Test(acl_event, elapsed_time)
{
    fixture f;
    fx_init(&f);
    aclrtEvent a, b, tl, notime;
    cr_assert_eq(aclrtCreateEvent(&a), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateEvent(&b), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateEventWithFlag(&tl, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateEventWithFlag(&notime, ACL_EVENT_SYNC), ACL_SUCCESS);
    float ms = -1;
    cr_assert_eq(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID); /* unrecorded */
    cr_assert_eq(aclrtRecordEvent(a, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(f.dev, N, f.src, N, ACL_MEMCPY_HOST_TO_DEVICE, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtRecordEvent(b, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtRecordEvent(tl, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtRecordEvent(notime, f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(f.a), ACL_SUCCESS);
    cr_assert_eq(aclrtEventElapsedTime(&ms, a, b), ACL_SUCCESS);
    cr_assert_geq(ms, 0.0f);
    cr_assert_eq(aclrtEventElapsedTime(&ms, a, tl), ACL_SUCCESS);
    cr_assert_geq(ms, 0.0f);
    cr_assert_eq(aclrtEventElapsedTime(&ms, a, notime), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);
    cr_assert_eq(aclrtEventElapsedTime(NULL, a, b), ACL_ERROR_INVALID_PARAM);
    aclrtDestroyEvent(a);
    aclrtDestroyEvent(b);
    aclrtDestroyEvent(tl);
    aclrtDestroyEvent(notime);
    fx_fini(&f);
}

Test(acl_event, bad_handles_and_flags)
{
    aclrtEvent e;
    int not_an_event = 0;
    cr_assert_eq(aclrtCreateEvent(NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtCreateEventWithFlag(&e, 0x4000), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtCreateEventWithFlag(&e, ACL_EVENT_EXTERNAL | ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtCreateEventExWithFlag(&e, ACL_EVENT_IPC), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_assert_eq(aclrtRecordEvent(&not_an_event, NULL), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtRecordEvent(NULL, NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtDestroyEvent(&not_an_event), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtCreateEvent(&e), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyEvent(e), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyEvent(e), ACL_ERROR_RT_PARAM_INVALID); /* stale */
    aclrtEventRecordedStatus rs;
    cr_assert_eq(aclrtQueryEventStatus(e, &rs), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtSynchronizeEventWithTimeout(e, -5), ACL_ERROR_INVALID_PARAM);
}
