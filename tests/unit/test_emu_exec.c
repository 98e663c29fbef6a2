/* The emulator's execution core: a host thread that syncs without deadline runs the stream's
 * queued tasks itself (order, sticky errors and accounting as on the worker), the worker still
 * runs tasks nobody syncs for, the task pool (many enqueues, threads that exit; ASan finds leaks;
 * a new stream's pool serves a burst of enqueues without allocating) and liveness checks of
 * destroyed streams. emu_stream_test_park keeps the worker off a stream until a host executor
 * ran, so who executes is deterministic (a regression that stops host execution leaves a parked
 * stream hanging: the timeouts turn that into a failure). */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct rec {
    atomic_int n;
    int order[64];
    pthread_t who[64];
} rec;

typedef struct rec_item {
    rec *r;
    int id;
} rec_item;

static void rec_fn(void *arg)
{
    rec_item *it = arg;
    int k = atomic_fetch_add(&it->r->n, 1);
    it->r->order[k] = it->id;
    it->r->who[k] = pthread_self();
}

/* A new stream on d that nothing runs until a host executor takes it (emu_stream_test_park). */
static hal_stream *parked_stream(const hal_ops *h, hal_device *d)
{
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    emu_stream_test_park(s);
    return s;
}

static int fail_fn(void *arg, char *msg, size_t len)
{
    (void)arg;
    snprintf(msg, len, "planned failure");
    return HAL_E_INTERNAL;
}

Test(emu_exec, host_runs_queue_in_order_on_sync, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s = parked_stream(h, d);
    static rec r;
    static rec_item items[32];
    for (int i = 0; i < 32; i++) {
        items[i] = (rec_item){&r, i};
        HT_OK(h->host_func_async(s, rec_fn, &items[i]));
    }
    cr_assert_eq(h->stream_query(s), HAL_E_NOT_READY, "parked: nothing ran before the sync");
    HT_OK(h->stream_sync(s, -1));
    cr_assert_eq(atomic_load(&r.n), 32);
    for (int i = 0; i < 32; i++) {
        cr_assert_eq(r.order[i], i, "task %d ran at position %d", r.order[i], i);
        cr_assert(pthread_equal(r.who[i], pthread_self()), "task %d did not run on the syncing thread", i);
    }
    HT_OK(h->stream_query(s));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(emu_exec, host_keeps_sticky_error_and_event_records, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_event *e;
    hal_stream *s = parked_stream(h, d);
    HT_OK(h->event_create(d, 0, &e));
    static rec r;
    static rec_item a = {&r, 1}, b = {&r, 2}, c = {&r, 3};
    HT_OK(h->host_func_async(s, rec_fn, &a));
    HT_OK(h->task_async(s, fail_fn, NULL));
    HT_OK(h->host_func_async(s, rec_fn, &b)); /* a host function runs anyway (hal.h) */
    HT_OK(h->event_record(e, s));             /* completes, carrying the error */
    cr_assert_eq(h->stream_sync(s, -1), HAL_E_INTERNAL);
    cr_assert_eq(atomic_load(&r.n), 2, "the host function after the failure did not run");
    cr_assert(pthread_equal(r.who[0], pthread_self()) && pthread_equal(r.who[1], pthread_self()));
    cr_assert_str_eq(h->stream_error_msg(s), "planned failure");
    cr_assert_eq(h->event_query(e), HAL_OK);
    cr_assert_eq(h->event_sync(e, -1), HAL_E_INTERNAL);
    h->stream_clear_error(s);
    HT_OK(h->host_func_async(s, rec_fn, &c));
    HT_OK(h->stream_sync(s, -1));
    cr_assert_eq(atomic_load(&r.n), 3);
    HT_OK(h->event_destroy(e));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(emu_exec, event_sync_runs_the_recording_stream, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_event *e;
    hal_stream *s = parked_stream(h, d);
    HT_OK(h->event_create(d, 0, &e));
    static rec r;
    static rec_item a = {&r, 7};
    HT_OK(h->host_func_async(s, rec_fn, &a));
    HT_OK(h->event_record(e, s));
    cr_assert_eq(h->event_query(e), HAL_E_NOT_READY);
    HT_OK(h->event_sync(e, -1));
    cr_assert_eq(atomic_load(&r.n), 1);
    cr_assert(pthread_equal(r.who[0], pthread_self()), "the event's stream ran elsewhere");
    HT_OK(h->stream_query(s));
    HT_OK(h->event_destroy(e));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

typedef struct recorder {
    const hal_ops *h;
    hal_device *d;
    hal_notify *n;
    sem_t *go;
} recorder;

static void *record_later(void *arg)
{
    recorder *rc = arg;
    sem_wait(rc->go);
    hal_stream *s;
    if (rc->h->stream_create(rc->d, &s) != HAL_OK)
        return (void *)1;
    hal_result r = rc->h->notify_record(rc->n, s);
    if (r == HAL_OK)
        r = rc->h->stream_sync(s, -1);
    rc->h->stream_destroy(s);
    return r == HAL_OK ? NULL : (void *)1;
}

static void post_fn(void *arg)
{
    sem_post(arg);
}

/* The host executes a notify wait; another thread's record ends it. */
Test(emu_exec, host_executed_wait_ends_on_record, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_notify *n;
    hal_stream *s = parked_stream(h, d);
    HT_OK(h->notify_create(d, &n));
    sem_t go;
    sem_init(&go, 0, 0);
    static rec r;
    static rec_item a = {&r, 3};
    HT_OK(h->host_func_async(s, post_fn, &go)); /* lets the recorder go once the host executes */
    HT_OK(h->notify_wait(n, s, 0, NULL));
    HT_OK(h->host_func_async(s, rec_fn, &a));
    recorder rc = {h, d, n, &go};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, record_later, &rc), 0);
    HT_OK(h->stream_sync(s, -1));
    void *ret;
    pthread_join(t, &ret);
    cr_assert_null(ret, "the recording thread failed");
    cr_assert_eq(atomic_load(&r.n), 1);
    cr_assert(pthread_equal(r.who[0], pthread_self()));
    sem_destroy(&go);
    HT_OK(h->notify_destroy(n));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

/* Work nobody syncs for still runs (the worker), and what a host executor leaves behind (enqueued
 * after its target) is handed to the worker when the host stops. */
typedef struct chain {
    const hal_ops *h;
    hal_stream *s;
    rec_item *next;
    sem_t done;
} chain;

static void enqueue_next_fn(void *arg)
{
    chain *c = arg;
    if (c->h->host_func_async(c->s, rec_fn, c->next) == HAL_OK)
        c->h->host_func_async(c->s, post_fn, &c->done);
}

Test(emu_exec, worker_runs_without_sync_and_after_host, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(d, &s));
    static rec r;
    static rec_item a = {&r, 1}, b = {&r, 2};
    chain c = {h, s, &b, {{0}}};
    sem_init(&c.done, 0, 0);
    /* no sync at all: the worker runs it */
    HT_OK(h->host_func_async(s, rec_fn, &a));
    HT_OK(h->host_func_async(s, post_fn, &c.done));
    sem_wait(&c.done);
    cr_assert_eq(atomic_load(&r.n), 1);
    cr_assert_not(pthread_equal(r.who[0], pthread_self()));
    /* the host runs the first task only (its target); the task enqueues more, which the worker runs */
    emu_stream_test_park(s);
    HT_OK(h->host_func_async(s, enqueue_next_fn, &c));
    HT_OK(h->stream_sync(s, -1));
    sem_wait(&c.done);
    cr_assert_eq(atomic_load(&r.n), 2);
    cr_assert_not(pthread_equal(r.who[1], pthread_self()), "the task enqueued after the sync's target ran on the host");
    HT_OK(h->stream_sync(s, 1000));
    sem_destroy(&c.done);
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

static void nop_fn(void *arg)
{
    (void)arg;
}

typedef struct pool_arg {
    const hal_ops *h;
    hal_stream *s;
    void *buf;
} pool_arg;

/* Every task kind through the pool, large descriptor arrays too. */
static hal_result pool_round(const hal_ops *h, hal_stream *s, hal_event *e, hal_notify *n, char *buf, int i)
{
    hal_dma_desc dd[80];
    uint32_t nd = i % 3 == 0 ? 1 : i % 3 == 1 ? 5 : 80;
    for (uint32_t k = 0; k < nd; k++)
        dd[k] = (hal_dma_desc){.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(buf + 64 * k),
                               .src = hal_ref_ptr(buf + 8192 + 64 * k), .bytes = 64};
    hal_result rc = h->dma_batch(s, dd, nd);
    if (rc == HAL_OK)
        rc = h->host_func_async(s, nop_fn, NULL);
    if (rc == HAL_OK)
        rc = h->memset_async(s, buf + 16384, i & 0xff, 256);
    if (rc == HAL_OK)
        rc = h->event_record(e, s);
    if (rc == HAL_OK)
        rc = h->stream_wait_event(s, e);
    if (rc == HAL_OK)
        rc = h->notify_record(n, s);
    if (rc == HAL_OK)
        rc = h->notify_wait(n, s, 0, NULL);
    return rc;
}

static void *pool_thread(void *arg)
{
    pool_arg *p = arg;
    for (int i = 0; i < 2000; i++)
        if (p->h->host_func_async(p->s, nop_fn, NULL) != HAL_OK)
            return (void *)1;
    return NULL; /* exits holding a spare task: freed at thread exit */
}

static void *burst_thread(void *arg)
{
    pool_arg *p = arg;
    for (uint32_t i = 0; i < EMU_STREAM_WARM_TASKS; i++)
        if (p->h->host_func_async(p->s, nop_fn, NULL) != HAL_OK)
            return (void *)1;
    return NULL;
}

/* A device's stream has its queue before the first launch: EMU_STREAM_WARM_TASKS enqueues into a
 * new stream that nothing runs yet (parked) take tasks from its pool, except the enqueuing
 * thread's first (it has no spare yet). Allocating them on the hot path faulted in fresh heap
 * pages, ~10 us each on a VM. */
Test(emu_exec, new_stream_pool_serves_a_burst, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s = parked_stream(h, d);
    pool_arg pa = {h, s, NULL};
    uint64_t before = emu_task_enqueue_allocs();
    pthread_t t; /* a new thread: no spare task from earlier enqueues */
    void *ret;
    cr_assert_eq(pthread_create(&t, NULL, burst_thread, &pa), 0);
    pthread_join(t, &ret);
    cr_assert_null(ret);
    uint64_t allocs = emu_task_enqueue_allocs() - before;
    cr_assert_leq(allocs, 1, "%llu of %u enqueues allocated a task", (unsigned long long)allocs,
                  EMU_STREAM_WARM_TASKS);
    cr_assert_eq(h->stream_query(s), HAL_E_NOT_READY, "parked: the burst is still queued");
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}

Test(emu_exec, task_pool_many_enqueues, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    hal_stream *s;
    hal_event *e;
    hal_notify *n;
    char *buf;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->event_create(d, 0, &e));
    HT_OK(h->notify_create(d, &n));
    HT_OK(h->mem_alloc(d, 1 << 16, (void **)&buf));
    for (int i = 0; i < 20000; i++) {
        HT_OK(pool_round(h, s, e, n, buf, i));
        if (i % 1000 == 999)
            HT_OK(h->stream_sync(s, i % 2000 == 999 ? -1 : 10000));
    }
    HT_OK(h->stream_sync(s, -1));
    cr_assert_eq((unsigned char)buf[16384], (unsigned char)(19999 & 0xff));
    pool_arg pa = {h, s, buf};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, pool_thread, &pa), 0);
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        cr_assert_null(ret);
    }
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->mem_free(d, buf));
    HT_OK(h->notify_destroy(n));
    HT_OK(h->event_destroy(e));
    HT_OK(h->stream_destroy(s)); /* frees its pool */
    HT_OK(h->device_close(d));
}

/* The worker in the middle of a task (held at a gate) when a host thread syncs without deadline:
 * it stops at the end of that task and the syncing thread runs the rest, instead of polling
 * while the worker runs them (one executor per stream, no second thread competing for a core). */
typedef struct gate {
    sem_t started, go;
    hal_stream *s;
} gate;

static void gate_fn(void *arg)
{
    gate *g = arg;
    sem_post(&g->started);
    sem_wait(&g->go);
}

static uint32_t host_wants(hal_stream *s)
{
    pthread_mutex_lock(&s->mu);
    uint32_t w = s->host_wants;
    pthread_mutex_unlock(&s->mu);
    return w;
}

static void *open_when_host_waits(void *arg)
{
    gate *g = arg;
    while (!host_wants(g->s))
        usleep(200);
    sem_post(&g->go);
    return NULL;
}

static void handover_case(bool by_event)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    gate g = {.s = NULL};
    HT_OK(h->stream_create(d, &g.s));
    sem_init(&g.started, 0, 0);
    sem_init(&g.go, 0, 0);
    static rec r;
    static rec_item items[16];
    memset(&r, 0, sizeof r);
    HT_OK(h->host_func_async(g.s, gate_fn, &g));
    sem_wait(&g.started); /* the worker is inside the gate task */
    for (int i = 0; i < 16; i++) {
        items[i] = (rec_item){&r, i};
        HT_OK(h->host_func_async(g.s, rec_fn, &items[i]));
    }
    hal_event *e = NULL;
    if (by_event) {
        HT_OK(h->event_create(d, 0, &e));
        HT_OK(h->event_record(e, g.s));
    }
    pthread_t opener;
    cr_assert_eq(pthread_create(&opener, NULL, open_when_host_waits, &g), 0);
    HT_OK(by_event ? h->event_sync(e, -1) : h->stream_sync(g.s, -1));
    pthread_join(opener, NULL);
    cr_assert_eq(atomic_load(&r.n), 16);
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(r.order[i], i, "task %d ran at position %d", r.order[i], i);
        cr_assert(pthread_equal(r.who[i], pthread_self()), "task %d ran on the worker, not on the syncing thread", i);
    }
    if (e)
        HT_OK(h->event_destroy(e));
    sem_destroy(&g.started);
    sem_destroy(&g.go);
    HT_OK(h->stream_destroy(g.s));
    HT_OK(h->device_close(d));
}

Test(emu_exec, worker_hands_over_to_stream_sync, .timeout = 60) { handover_case(false); }
Test(emu_exec, worker_hands_over_to_event_sync, .timeout = 60) { handover_case(true); }

Test(emu_exec, destroyed_streams_are_not_live, .timeout = 60)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    enum { K = 64 };
    hal_stream *s[K], *back;
    for (int i = 0; i < K; i++)
        HT_OK(h->stream_create(d, &s[i]));
    for (int i = 0; i < K; i++) {
        HT_OK(h->stream_from_native(s[i], &back));
        cr_assert_eq(back, s[i]);
    }
    cr_assert_eq(h->stream_from_native((char *)s[0] + 8, &back), HAL_E_PARAM, "a pointer inside a stream");
    for (int i = 0; i < K; i += 2)
        HT_OK(h->stream_destroy(s[i]));
    for (int i = 0; i < K; i++)
        cr_assert_eq(h->stream_from_native(s[i], &back), i % 2 ? HAL_OK : HAL_E_PARAM, "stream %d", i);
    cr_assert_eq(h->stream_destroy(s[0]), HAL_E_PARAM, "destroyed twice");
    /* an event recorded on a stream destroyed since: its sync must not touch the old stream */
    hal_event *e;
    HT_OK(h->event_create(d, 0, &e));
    hal_stream *x;
    HT_OK(h->stream_create(d, &x));
    HT_OK(h->event_record(e, x));
    HT_OK(h->stream_destroy(x));
    HT_OK(h->event_sync(e, -1));
    HT_OK(h->stream_create(d, &x)); /* may reuse a slot: new generation */
    HT_OK(h->event_sync(e, -1));
    HT_OK(h->stream_destroy(x));
    HT_OK(h->event_destroy(e));
    for (int i = 1; i < K; i += 2)
        HT_OK(h->stream_destroy(s[i]));
    HT_OK(h->device_close(d));
}
