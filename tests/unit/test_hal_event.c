/* HAL conformance: events across streams, recorded status, timing. */
#include <stdatomic.h>

#include "common/hal_testutil.h"

static void set_fn(void *arg)
{
    atomic_store((atomic_int *)arg, 1);
}

typedef struct check_arg {
    atomic_int *flag;
    atomic_int seen;
} check_arg;

static void check_fn(void *arg)
{
    check_arg *c = arg;
    atomic_store(&c->seen, atomic_load(c->flag));
}

/* Stream B waits on an event that stream A records later (A is held back). */
Test(hal_event, wait_for_later_record)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *a, *b;
    hal_event *e;
    HT_OK(h->stream_create(d, &a));
    HT_OK(h->stream_create(d, &b));
    HT_OK(h->event_create(d, 0, &e));
    ht_gate g;
    ht_gate_init(&g);
    atomic_int produced = 0;
    check_arg chk = {&produced, -1};
    HT_OK(h->host_func_async(a, ht_gate_fn, &g));
    HT_OK(h->host_func_async(a, set_fn, &produced));
    HT_OK(h->event_record(e, a));
    cr_assert_eq(h->event_recorded(e), 1);
    HT_OK(h->stream_wait_event(b, e));
    HT_OK(h->host_func_async(b, check_fn, &chk));
    sem_wait(&g.entered);
    cr_assert_eq(h->event_query(e), HAL_E_NOT_READY);
    cr_assert_eq(h->stream_query(b), HAL_E_NOT_READY, "b must wait for a's record");
    ht_gate_open(&g);
    HT_OK(h->stream_sync(b, -1));
    cr_assert_eq(atomic_load(&chk.seen), 1, "b ran before a's work completed");
    HT_OK(h->event_sync(e, -1));
    HT_OK(h->event_query(e));
    HT_OK(h->event_destroy(e));
    HT_OK(h->stream_destroy(a));
    HT_OK(h->stream_destroy(b));
    ht_gate_fini(&g);
    HT_OK(h->device_close(d));
}

/* With HAL_EVENT_WAIT_UNRECORDED_BLOCKS a wait enqueued before any record waits for it. */
Test(hal_event, blocking_wait_before_record)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *a, *b;
    hal_event *e;
    HT_OK(h->stream_create(d, &a));
    HT_OK(h->stream_create(d, &b));
    HT_OK(h->event_create(d, HAL_EVENT_WAIT_UNRECORDED_BLOCKS, &e));
    cr_assert_eq(h->event_recorded(e), 0);
    atomic_int produced = 0;
    check_arg chk = {&produced, -1};
    HT_OK(h->stream_wait_event(b, e));
    HT_OK(h->host_func_async(b, check_fn, &chk));
    ht_gate g;
    ht_gate_init(&g);
    HT_OK(h->host_func_async(a, ht_gate_fn, &g));
    HT_OK(h->host_func_async(a, set_fn, &produced));
    HT_OK(h->event_record(e, a));
    sem_wait(&g.entered);
    cr_assert_eq(h->stream_query(b), HAL_E_NOT_READY);
    ht_gate_open(&g);
    HT_OK(h->stream_sync(b, -1));
    cr_assert_eq(atomic_load(&chk.seen), 1);
    /* After a reset the next wait blocks again until a new record. */
    HT_OK(h->event_reset(e, b));
    cr_assert_eq(h->event_recorded(e), 0);
    HT_OK(h->event_destroy(e));
    HT_OK(h->stream_destroy(a));
    HT_OK(h->stream_destroy(b));
    ht_gate_fini(&g);
    HT_OK(h->device_close(d));
}

/* Without the flag, a wait on a never-recorded event completes at once. */
Test(hal_event, unrecorded_wait_passes)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_event *e;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->event_create(d, 0, &e));
    HT_OK(h->event_query(e));
    HT_OK(h->stream_wait_event(s, e));
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->event_sync(e, -1));
    HT_OK(h->event_destroy(e));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(hal_event, elapsed_time)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_event *t0, *t1, *plain;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->event_create(d, HAL_EVENT_TIMING, &t0));
    HT_OK(h->event_create(d, HAL_EVENT_TIMING, &t1));
    HT_OK(h->event_create(d, 0, &plain));
    void *buf;
    HT_OK(h->mem_alloc(d, 1 << 20, &buf));
    HT_OK(h->event_record(t0, s));
    HT_OK(h->memset_async(s, buf, 1, 1 << 20));
    HT_OK(h->event_record(t1, s));
    HT_OK(h->event_record(plain, s));
    HT_OK(h->event_sync(t1, -1));
    float ms = -1;
    HT_OK(h->event_elapsed_ms(t0, t1, &ms));
    cr_assert_geq(ms, 0.0f);
    cr_assert_neq(h->event_elapsed_ms(t0, plain, &ms), HAL_OK, "needs HAL_EVENT_TIMING on both");
    HT_OK(h->event_destroy(t0));
    HT_OK(h->event_destroy(t1));
    HT_OK(h->event_destroy(plain));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* Destroying an event with pending records is safe; the records still run. */
Test(hal_event, destroy_while_pending)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_event *e;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->event_create(d, 0, &e));
    ht_gate g;
    ht_gate_init(&g);
    HT_OK(h->host_func_async(s, ht_gate_fn, &g));
    HT_OK(h->event_record(e, s));
    HT_OK(h->event_destroy(e));
    ht_gate_open(&g);
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->stream_destroy(s));
    ht_gate_fini(&g);
    HT_OK(h->device_close(d));
}
