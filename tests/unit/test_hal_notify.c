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
    if (!strcmp(h->name, "ascend"))
        cr_skip_test("hal/ascend: CANN's notify is a flag (aclrtWaitAndResetNotify); hal/ascend counts with "
                     "ASC_LANES flags used round robin, so notify_wait_reset consumes one record, not all pending");
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
    const hal_ops *h = ht_hal(); /* hal/ascend: a watcher thread polls the flag (asc_abort.c) */
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
    if (!strcmp(h->name, "ascend"))
        cr_skip_test("hal/ascend: the public ACL API cannot cancel a queued notify wait before its timeout");
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_notify *n;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->notify_create(d, &n));
    HT_OK(h->notify_wait(n, s, 0, NULL));
    HT_OK(h->device_close(d));
}

/* Generations: a notify destroyed by its owner and handed out again (same slot) must not count a
 * record made through an import of the old one: the stray signal of a destroyed communicator. */
Test(hal_notify, stale_record_dropped_after_slot_reuse)
{
    const hal_ops *h = ht_hal();
    hal_device *d0 = ht_open(h, 0), *d1 = ht_open(h, 1);
    hal_stream *s0, *s1;
    HT_OK(h->stream_create(d0, &s0));
    HT_OK(h->stream_create(d1, &s1));
    hal_notify *old;
    HT_OK(h->notify_create(d1, &old));
    hal_notify *old_at0 = import_for(h, d0, old);
    uint32_t slot = h->notify_id(old);
    HT_OK(h->notify_destroy(old));
    hal_notify *fresh;
    HT_OK(h->notify_create(d1, &fresh));
    cr_assert_eq(h->notify_id(fresh), slot, "the freed slot is handed out again (first free)");
    HT_OK(h->notify_record(old_at0, s0)); /* stale: dropped */
    HT_OK(h->stream_sync(s0, -1));
    hal_notify *fresh_at0 = import_for(h, d0, fresh);
    HT_OK(h->notify_record(fresh_at0, s0));
    HT_OK(h->stream_sync(s0, -1));
    HT_OK(h->notify_wait(fresh, s1, 0, NULL)); /* the one real record */
    HT_OK(h->stream_sync(s1, -1));
    HT_OK(h->notify_wait(fresh, s1, 100, NULL)); /* the stale one must not be there */
    cr_assert_eq(h->stream_sync(s1, -1), HAL_E_TIMEOUT, "a record of the destroyed notify was counted");
    h->stream_clear_error(s1);
    HT_OK(h->notify_destroy(old_at0));
    HT_OK(h->notify_destroy(fresh_at0));
    HT_OK(h->notify_destroy(fresh));
    HT_OK(h->stream_destroy(s0));
    HT_OK(h->stream_destroy(s1));
    HT_OK(h->device_close(d1));
    HT_OK(h->device_close(d0));
}

Test(hal_notify, stale_handle_import_and_wait_refused)
{
    const hal_ops *h = ht_hal();
    hal_device *d0 = ht_open(h, 0), *d1 = ht_open(h, 1);
    hal_stream *s0;
    HT_OK(h->stream_create(d0, &s0));
    hal_notify *n;
    HT_OK(h->notify_create(d1, &n));
    hal_notify_handle nh;
    HT_OK(h->notify_export(n, &nh));
    hal_notify *imp = import_for(h, d0, n);
    HT_OK(h->notify_destroy(n));
    hal_notify *late = NULL;
    cr_assert_eq(h->notify_import(d0, &nh, &late), HAL_E_PEER, "import of a destroyed notify");
    cr_assert_null(late);
    hal_notify *again;
    HT_OK(h->notify_create(d1, &again)); /* the slot lives again, in a new generation */
    cr_assert_eq(h->notify_import(d0, &nh, &late), HAL_E_PEER, "import of the old generation");
    HT_OK(h->notify_wait(imp, s0, 0, NULL));
    cr_assert_eq(h->stream_sync(s0, -1), HAL_E_PEER, "a wait through a stale import fails at once");
    cr_assert(strstr(h->stream_error_msg(s0), "destroyed") != NULL, "message: %s", h->stream_error_msg(s0));
    h->stream_clear_error(s0);
    HT_OK(h->notify_destroy(imp));
    HT_OK(h->notify_destroy(again));
    HT_OK(h->stream_destroy(s0));
    HT_OK(h->device_close(d1));
    HT_OK(h->device_close(d0));
}
