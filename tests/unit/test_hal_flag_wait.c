/* HAL conformance: flag waits (hal_flag_wait), what a one-way receiver waits with for its root's
 * header (runtime/rt_oneway.c). A wait passes once the flag holds at least its value, and not
 * before; past its poll it sleeps on its notify, which notify_wake wakes; notify_wake with nobody
 * asleep records nothing; the caller's check runs only where the wait would sleep, and its failure
 * fails the stream; timeouts and the abort flag end it as they end a notify wait. The same as a
 * stream operation and as a program instruction. */
#include <stdatomic.h>

#include "common/hal_testutil.h"

typedef struct fixture {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s, *w; /* the waiting stream, the writer's */
    hal_notify *n;
    _Atomic uint64_t *flag; /* in device memory */
} fixture;

static fixture open_fixture(void)
{
    fixture f = {.h = ht_hal()};
    if (!f.h->flag_wait || !f.h->notify_wake)
        cr_skip_test("%s has no flag waits (optional: one-way calls stay off there)", f.h->name);
    cr_assert(f.h->host_mapped_mem, "flag waits read device memory from the host");
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.s));
    HT_OK(f.h->stream_create(f.d, &f.w));
    HT_OK(f.h->notify_create(f.d, &f.n));
    void *p = NULL;
    HT_OK(f.h->mem_alloc(f.d, 64, &p));
    f.flag = p;
    atomic_store(f.flag, 0);
    return f;
}

static void close_fixture(fixture *f)
{
    HT_OK(f->h->mem_free(f->d, (void *)f->flag));
    HT_OK(f->h->notify_destroy(f->n));
    HT_OK(f->h->stream_destroy(f->w));
    HT_OK(f->h->stream_destroy(f->s));
    HT_OK(f->h->device_close(f->d));
}

static hal_flag_wait flag_wait(const fixture *f, uint64_t at_least, uint32_t timeout_ms)
{
    return (hal_flag_wait){.flag = (const volatile uint64_t *)f->flag, .at_least = at_least, .wake = f->n,
                           .timeout_ms = timeout_ms};
}

typedef struct store_arg {
    _Atomic uint64_t *flag;
    uint64_t value;
} store_arg;

static int store_fn(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    store_arg *a = arg;
    atomic_store_explicit(a->flag, a->value, memory_order_release);
    return 0;
}

/* The writer's side on its stream: the flag, then the wake. */
static void write_and_wake(const fixture *f, store_arg *a)
{
    HT_OK(f->h->task_async(f->w, store_fn, a));
    HT_OK(f->h->notify_wake(f->n, f->w));
    HT_OK(f->h->stream_sync(f->w, 20000));
}

static void expect_blocked(const fixture *f, const char *why)
{
    cr_assert_eq(f->h->stream_sync(f->s, 50), HAL_E_TIMEOUT, "%s", why);
}

Test(hal_flag_wait, passes_at_its_value_and_not_before, .timeout = 60)
{
    fixture f = open_fixture();
    hal_flag_wait w = flag_wait(&f, 5, 20000);
    HT_OK(f.h->flag_wait(f.s, &w));
    expect_blocked(&f, "flag 0 of 5");
    store_arg a = {f.flag, 4};
    write_and_wake(&f, &a); /* wakes the sleeper, which finds 4 and sleeps again */
    expect_blocked(&f, "flag 4 of 5");
    a.value = 7;
    write_and_wake(&f, &a);
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(f.h->notify_count(f.n), 0u, "the wake-ups are taken, not left for later waits");
    HT_OK(f.h->flag_wait(f.s, &w)); /* met already: passes without a wake */
    HT_OK(f.h->stream_sync(f.s, 20000));
    close_fixture(&f);
}

Test(hal_flag_wait, a_wake_with_nobody_asleep_records_nothing, .timeout = 60)
{
    fixture f = open_fixture();
    HT_OK(f.h->notify_wake(f.n, f.w));
    HT_OK(f.h->stream_sync(f.w, 20000));
    cr_assert_eq(f.h->notify_count(f.n), 0u, "no sleeper: the notify's count stays untouched");
    close_fixture(&f);
}

typedef struct check_arg {
    atomic_int calls;
    atomic_int fail; /* from now on the check fails */
} check_arg;

static int check_fn(void *arg, char *msg, size_t len)
{
    check_arg *c = arg;
    int k = atomic_fetch_add(&c->calls, 1) + 1;
    if (!atomic_load(&c->fail))
        return 0;
    snprintf(msg, len, "the writer left (check call %d)", k);
    return HAL_E_PEER;
}

Test(hal_flag_wait, check_runs_where_it_would_sleep, .timeout = 60)
{
    fixture f = open_fixture();
    static check_arg ca;
    hal_flag_wait w = flag_wait(&f, 1, 20000);
    w.check = check_fn;
    w.check_arg = &ca;
    atomic_store(f.flag, 1);
    HT_OK(f.h->flag_wait(f.s, &w));
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(atomic_load(&ca.calls), 0, "a met flag runs no check");
    w.at_least = 2;
    HT_OK(f.h->flag_wait(f.s, &w));
    expect_blocked(&f, "flag 1 of 2");
    cr_assert_geq(atomic_load(&ca.calls), 1, "the check ran before the wait slept");
    atomic_store(&ca.fail, 1); /* the next check, after a wake-up, fails */
    store_arg a = {f.flag, 1};
    write_and_wake(&f, &a);
    cr_assert_eq(f.h->stream_sync(f.s, 20000), HAL_E_PEER, "the check's failure fails the stream");
    const char *why = f.h->stream_error_msg(f.s);
    cr_assert(why && strstr(why, "the writer left"), "the check's message is the stream's: %s", why ? why : "(none)");
    f.h->stream_clear_error(f.s);
    close_fixture(&f);
}

Test(hal_flag_wait, times_out_and_aborts, .timeout = 60)
{
    fixture f = open_fixture();
    hal_flag_wait w = flag_wait(&f, 1, 300);
    HT_OK(f.h->flag_wait(f.s, &w));
    cr_assert_eq(f.h->stream_sync(f.s, 20000), HAL_E_TIMEOUT, "nobody stores the flag");
    f.h->stream_clear_error(f.s);
    static volatile uint32_t abort_word;
    w = flag_wait(&f, 1, 20000);
    w.abort_flag = &abort_word;
    HT_OK(f.h->flag_wait(f.s, &w));
    expect_blocked(&f, "no flag, no abort");
    abort_word = 1;
    HT_OK(f.h->notify_wake(f.n, f.w)); /* or the slice's end: the wait sees the flag go up */
    cr_assert_eq(f.h->stream_sync(f.s, 20000), HAL_E_ABORTED);
    f.h->stream_clear_error(f.s);
    close_fixture(&f);
}

static int mark(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    atomic_store((atomic_int *)arg, 1);
    return 0;
}

Test(hal_flag_wait, as_program_instructions, .timeout = 60)
{
    fixture f = open_fixture();
    if (!f.h->prog_launch) {
        close_fixture(&f);
        cr_skip_test("%s has no stream program executor", f.h->name);
    }
    static atomic_int ran;
    static hal_flag_wait w;
    w = flag_wait(&f, 3, 20000);
    static hal_insn waiter[2];
    waiter[0] = (hal_insn){.kind = HAL_INSN_FLAG_WAIT};
    waiter[0].u.flag.w = &w;
    waiter[1] = (hal_insn){.kind = HAL_INSN_FN};
    waiter[1].u.fn.fn = mark;
    waiter[1].u.fn.arg = (void *)&ran;
    HT_OK(f.h->prog_launch(f.s, waiter, 2));
    expect_blocked(&f, "flag 0 of 3");
    cr_assert_eq(atomic_load(&ran), 0, "nothing after the wait ran");
    static store_arg a;
    a = (store_arg){f.flag, 3};
    static hal_insn writer[2];
    writer[0] = (hal_insn){.kind = HAL_INSN_FN};
    writer[0].u.fn.fn = store_fn;
    writer[0].u.fn.arg = &a;
    writer[1] = (hal_insn){.kind = HAL_INSN_NOTIFY_WAKE};
    writer[1].u.notify.n = f.n;
    HT_OK(f.h->prog_launch(f.w, writer, 2));
    HT_OK(f.h->stream_sync(f.w, 20000));
    HT_OK(f.h->stream_sync(f.s, 20000));
    cr_assert_eq(atomic_load(&ran), 1);
    static hal_insn bad = {.kind = HAL_INSN_FLAG_WAIT}; /* no hal_flag_wait */
    cr_assert_eq(f.h->prog_launch(f.s, &bad, 1), HAL_E_PARAM);
    close_fixture(&f);
}
