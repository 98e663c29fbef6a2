/* HAL conformance: stream ordering, a stream held back by a blocking host function, default
 * streams and stream_from_native. */
#include <stdatomic.h>

#include "common/hal_testutil.h"

typedef struct order_log {
    atomic_int next;
    int seen[1000];
} order_log;

typedef struct order_item {
    order_log *log;
    int id;
} order_item;

static void order_fn(void *arg)
{
    order_item *it = arg;
    int slot = atomic_fetch_add(&it->log->next, 1);
    it->log->seen[slot] = it->id;
}

Test(hal_stream, fifo_order)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    static order_log log;
    static order_item items[1000];
    for (int i = 0; i < 1000; i++) {
        items[i] = (order_item){&log, i};
        HT_OK(h->host_func_async(s, order_fn, &items[i]));
    }
    HT_OK(h->stream_sync(s, -1));
    cr_assert_eq(atomic_load(&log.next), 1000);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(log.seen[i], i, "task %d ran at position %d", log.seen[i], i);
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

static void flag_fn(void *arg)
{
    atomic_store((atomic_int *)arg, 1);
}

Test(hal_stream, held_back_by_host_function)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    ht_gate g;
    ht_gate_init(&g);
    atomic_int after = 0;
    void *buf;
    HT_OK(h->mem_alloc(d, 4096, &buf));
    memset(buf, 0, 4096);
    HT_OK(h->host_func_async(s, ht_gate_fn, &g));
    /* These return at once although the stream cannot run them yet. */
    HT_OK(h->memset_async(s, buf, 0x7e, 4096));
    HT_OK(h->host_func_async(s, flag_fn, &after));
    sem_wait(&g.entered);
    cr_assert_eq(h->stream_query(s), HAL_E_NOT_READY);
    cr_assert_eq(atomic_load(&after), 0);
    cr_assert_eq(((unsigned char *)buf)[0], 0, "memset ran before the blocking task finished");
    cr_assert_eq(h->stream_sync(s, 0), HAL_E_TIMEOUT);
    ht_gate_open(&g);
    HT_OK(h->stream_sync(s, -1));
    cr_assert_eq(atomic_load(&after), 1);
    for (int i = 0; i < 4096; i++)
        cr_assert_eq(((unsigned char *)buf)[i], 0x7e);
    HT_OK(h->stream_query(s));
    HT_OK(h->mem_free(d, buf));
    HT_OK(h->stream_destroy(s));
    ht_gate_fini(&g);
    HT_OK(h->device_close(d));
}

Test(hal_stream, destroy_drains)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    static order_log log;
    static order_item items[100];
    for (int i = 0; i < 100; i++) {
        items[i] = (order_item){&log, i};
        HT_OK(h->host_func_async(s, order_fn, &items[i]));
    }
    HT_OK(h->stream_destroy(s));
    cr_assert_eq(atomic_load(&log.next), 100);
    HT_OK(h->device_close(d));
}

Test(hal_stream, default_stream_and_native)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0), *cur = NULL;
    HT_OK(h->set_current_device(d));
    HT_OK(h->current_device(&cur));
    cr_assert_eq(cur, d);
    hal_stream *def = NULL, *s = NULL, *back = NULL;
    HT_OK(h->stream_from_native(NULL, &def));
    cr_assert_not_null(def);
    cr_assert_eq(h->stream_device(def), d);
    atomic_int flag = 0;
    HT_OK(h->host_func_async(def, flag_fn, &flag));
    HT_OK(h->stream_sync(def, -1));
    cr_assert_eq(atomic_load(&flag), 1);
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->stream_from_native(s, &back));
    cr_assert_eq(back, s);
    int not_a_stream[64] = {0};
    cr_assert_eq(h->stream_from_native(not_a_stream, &back), HAL_E_PARAM);
    HT_OK(h->stream_destroy(s));
    cr_assert_eq(h->stream_from_native(s, &back), HAL_E_PARAM, "destroyed stream");
    HT_OK(h->device_close(d));
    cr_assert_eq(h->current_device(&cur), HAL_E_INVALID_DEVICE);
}

Test(hal_stream, device_refcount_and_range)
{
    const hal_ops *h = ht_hal();
    uint32_t n = 0;
    HT_OK(h->device_count(&n));
    cr_assert_geq(n, 2);
    hal_device *bad = NULL;
    cr_assert_eq(h->device_open((int32_t)n, &bad), HAL_E_INVALID_DEVICE);
    cr_assert_eq(h->device_open(-1, &bad), HAL_E_INVALID_DEVICE);
    hal_device *a = ht_open(h, 1), *b = ht_open(h, 1);
    cr_assert_eq(a, b);
    HT_OK(h->device_close(a));
    void *p;
    HT_OK(h->mem_alloc(b, 64, &p)); /* still open once */
    HT_OK(h->device_sync(b, -1));
    HT_OK(h->device_close(b));
}
