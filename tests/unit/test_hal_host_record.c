/* HAL conformance: notify_host_record, the record a network link's receive path makes from a host
 * thread of its own (runtime/net). Records count like stream records (up to 4 outstanding, the
 * runtime's bound), a wait enqueued before the record completes once it lands, and the records of
 * one thread are consumed in order by the waits of a stream. */
#include <pthread.h>

#include "common/hal_testutil.h"

typedef struct rec_arg {
    const hal_ops *h;
    hal_notify *n;
    int count;
    hal_result rc;
} rec_arg;

static void *recorder(void *p)
{
    rec_arg *a = p;
    a->rc = HAL_OK;
    for (int i = 0; i < a->count && a->rc == HAL_OK; i++)
        a->rc = a->h->notify_host_record(a->n);
    return NULL;
}

static void record_from_thread(const hal_ops *h, hal_notify *n, int count)
{
    rec_arg a = {h, n, count, HAL_E_INTERNAL};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, recorder, &a), 0);
    pthread_join(t, NULL);
    cr_assert_eq(a.rc, HAL_OK, "notify_host_record: %s", hal_result_name(a.rc));
}

Test(hal_host_record, counts_like_stream_records, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    cr_assert_not_null(h->notify_host_record, "%s has no notify_host_record", h->name);
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    record_from_thread(h, n, 3); /* three before any wait: each must count */
    for (int i = 0; i < 3; i++)
        HT_OK(h->notify_wait(n, s, 10000, NULL));
    HT_OK(h->stream_sync(s, 20000));
    /* A fourth wait has nothing left to consume: it times out. */
    HT_OK(h->notify_wait(n, s, 1000, NULL));
    cr_assert_eq(h->stream_sync(s, 20000), HAL_E_TIMEOUT, "a wait consumed a record that was never made");
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(hal_host_record, releases_a_pending_wait, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    enum { ROUNDS = 200 };
    for (int i = 0; i < ROUNDS; i++) {
        HT_OK(h->notify_wait(n, s, 10000, NULL));
        record_from_thread(h, n, 1);
        HT_OK(h->stream_sync(s, 20000));
    }
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* Records from one thread while the waits run: the stream passes exactly as many waits. */
Test(hal_host_record, streamed_records, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    enum { TOTAL = 1000, BATCH = 4 }; /* at most 4 outstanding, as the runtime's plans */
    for (int i = 0; i < TOTAL; i += BATCH) {
        for (int k = 0; k < BATCH; k++)
            HT_OK(h->notify_wait(n, s, 10000, NULL));
        record_from_thread(h, n, BATCH);
        HT_OK(h->stream_sync(s, 20000));
    }
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}
