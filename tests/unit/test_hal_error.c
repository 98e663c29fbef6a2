/* HAL conformance: a failing task puts its stream into a sticky error state. */
#include <stdatomic.h>

#include "common/hal_testutil.h"

static int fail_fn(void *arg, char *msg, size_t len)
{
    (void)arg;
    snprintf(msg, len, "injected failure 42");
    return HAL_E_INTERNAL;
}

static int ok_fn(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    atomic_fetch_add((atomic_int *)arg, 1);
    return 0;
}

static void count_fn(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

Test(hal_error, sticky_error)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s, *other;
    hal_event *e;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->stream_create(d, &other));
    HT_OK(h->event_create(d, 0, &e));
    atomic_int ran = 0, host_ran = 0;
    HT_OK(h->task_async(s, ok_fn, &ran));
    HT_OK(h->task_async(s, fail_fn, NULL));
    HT_OK(h->task_async(s, ok_fn, &ran));
    HT_OK(h->host_func_async(s, count_fn, &host_ran));
    HT_OK(h->event_record(e, s));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_INTERNAL);
    cr_assert_eq(atomic_load(&ran), 1, "device tasks after the failure must be skipped");
    /* Host functions run anyway: they may free what the device work used. */
    cr_assert_eq(atomic_load(&host_ran), 1, "the host function after the failure did not run");
    cr_assert(strstr(h->stream_error_msg(s), "injected failure 42"), "message: %s", h->stream_error_msg(s));
    cr_assert_eq(h->stream_query(s), HAL_E_INTERNAL);
    /* The event recorded after the failure completes, carrying the error. */
    cr_assert_eq(h->event_sync(e, -1), HAL_E_INTERNAL);
    /* A stream waiting on it inherits the failure. */
    HT_OK(h->stream_wait_event(other, e));
    cr_assert_eq(h->stream_sync(other, -1), HAL_E_INTERNAL);
    cr_assert(strstr(h->stream_error_msg(other), "injected failure 42"));
    /* New device work on the failed stream is skipped too, a new host function not. */
    HT_OK(h->task_async(s, ok_fn, &ran));
    HT_OK(h->host_func_async(s, count_fn, &host_ran));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_INTERNAL);
    cr_assert_eq(atomic_load(&ran), 1);
    cr_assert_eq(atomic_load(&host_ran), 2);
    /* Clearing recovers the stream (not on hal/ascend: the failure reached ACL's stream, and the
     * public ACL API has no call that clears a failed stream). */
    h->stream_clear_error(s);
    h->stream_clear_error(other);
    cr_assert_str_eq(h->stream_error_msg(s), "");
    if (strcmp(h->name, "ascend") != 0) {
        HT_OK(h->task_async(s, ok_fn, &ran));
        HT_OK(h->stream_sync(s, -1));
        cr_assert_eq(atomic_load(&ran), 2);
    }
    HT_OK(h->event_destroy(e));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->stream_destroy(other));
    HT_OK(h->device_close(d));
}

Test(hal_error, bad_dma_address_fails_stream)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    void *dst;
    HT_OK(h->mem_alloc(d, 64, &dst));
    void *null_ptr = NULL;
    hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(dst), .bytes = 64};
    desc.src.indirect = &null_ptr; /* resolved when the task runs: NULL */
    HT_OK(h->dma_batch(s, &desc, 1));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_PARAM);
    cr_assert_neq(h->stream_error_msg(s)[0], 0);
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(hal_error, bad_descriptor_rejected_at_enqueue)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    void *p;
    HT_OK(h->mem_alloc(d, 64, &p));
    hal_dma_desc desc = {.kind = HAL_DMA_REDUCE, .dst = hal_ref_ptr(p), .src = hal_ref_ptr(p), .count = 4,
                         .dtype = (hal_dtype)13, .op = HAL_OP_SUM};
    cr_assert_neq(h->dma_batch(s, &desc, 1), HAL_OK);
    desc.dtype = HAL_DT_FP32;
    desc.op = (hal_redop)9;
    cr_assert_neq(h->dma_batch(s, &desc, 1), HAL_OK);
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}
