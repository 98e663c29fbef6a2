/* HAL conformance: notifies (device-side counting semaphores). */
#include <stdatomic.h>

#include "common/hal_testutil.h"

/* Imports notify n (owned by `owner`) for use by device `user`. */
static hal_notify *import_for(const hal_ops *h, hal_device *user, hal_notify *n)
{
    hal_notify_handle nh;
    HT_OK(h->notify_export(n, &nh));
    HT_OK(h->mem_import(user, &nh.owner));
    hal_notify *out = NULL;
    HT_OK(h->notify_import(user, &nh, &out));
    return out;
}

Test(hal_notify, ping_pong_10000)
{
    const hal_ops *h = ht_hal();
    hal_device *d0 = ht_open(h, 0), *d1 = ht_open(h, 1);
    hal_stream *s0, *s1;
    HT_OK(h->stream_create(d0, &s0));
    HT_OK(h->stream_create(d1, &s1));
    hal_notify *ping, *pong; /* ping lives on d1 (d1 waits), pong on d0 */
    HT_OK(h->notify_create(d1, &ping));
    HT_OK(h->notify_create(d0, &pong));
    hal_notify *ping_at0 = import_for(h, d0, ping), *pong_at1 = import_for(h, d1, pong);
    enum { TRIPS = 10000 };
    for (int i = 0; i < TRIPS; i++) {
        HT_OK(h->notify_record(ping_at0, s0));
        HT_OK(h->notify_wait(pong, s0, 0, NULL));
        HT_OK(h->notify_wait(ping, s1, 0, NULL));
        HT_OK(h->notify_record(pong_at1, s1));
    }
    HT_OK(h->stream_sync(s0, -1));
    HT_OK(h->stream_sync(s1, -1));
    HT_OK(h->notify_destroy(ping_at0));
    HT_OK(h->notify_destroy(pong_at1));
    HT_OK(h->notify_destroy(ping));
    HT_OK(h->notify_destroy(pong));
    HT_OK(h->stream_destroy(s0));
    HT_OK(h->stream_destroy(s1));
    HT_OK(h->device_close(d1));
    HT_OK(h->device_close(d0));
}

Test(hal_notify, counts_and_wait_reset)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    /* Two records satisfy two waits. */
    HT_OK(h->notify_record(n, s));
    HT_OK(h->notify_record(n, s));
    HT_OK(h->notify_wait(n, s, 100, NULL));
    HT_OK(h->notify_wait(n, s, 100, NULL));
    HT_OK(h->stream_sync(s, -1));
    /* wait_reset consumes every pending record. */
    HT_OK(h->notify_record(n, s));
    HT_OK(h->notify_record(n, s));
    HT_OK(h->notify_record(n, s));
    HT_OK(h->notify_wait_reset(n, s, 100));
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->notify_wait(n, s, 100, NULL));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_TIMEOUT);
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(hal_notify, timeout_100ms)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    atomic_int ran = 0;
    HT_OK(h->notify_wait(n, s, 100, NULL));
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_TIMEOUT);
    char id[32];
    snprintf(id, sizeof id, "notify %u", h->notify_id(n));
    cr_assert(strstr(h->stream_error_msg(s), id), "message names the notify: %s", h->stream_error_msg(s));
    (void)ran;
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(hal_notify, abort_flag_ends_wait)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    static volatile uint32_t abort_flag;
    abort_flag = 0;
    HT_OK(h->notify_wait(n, s, 0, &abort_flag)); /* default timeout: far away */
    cr_assert_eq(h->stream_query(s), HAL_E_NOT_READY);
    abort_flag = 1;
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_ABORTED);
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* Closing a device whose stream is blocked in a wait does not hang. */
Test(hal_notify, close_with_blocked_wait)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    HT_OK(h->notify_wait(n, s, 0, NULL));
    HT_OK(h->device_close(d));
}
