/* Notify wakes on the emulator (hal/emu/emu_notify.c, emu_notify_do_record): a record that wakes a
 * sleeping wait counts it out of the slot's waiters at once, so the records after it make no wake
 * call while the woken wait has not run yet (each a syscall of microseconds on a VM); a wait that
 * ends otherwise (its time limit) counts itself out. Waits sleep at once here (no poll), and the
 * process runs on one CPU with workers that do not preempt on wakeup, so a woken worker runs only
 * once the test thread blocks. Criterion runs each test in its own process. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct wake_fix {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s;
    hal_notify *n;
} wake_fix;

static wake_fix fix_open(void)
{
    setenv("HCCL_EMU_SPIN_US", "0", 1);
    setenv("HCCL_EMU_YIELD_US", "0", 1);
    setenv("HCCL_EMU_WORKER_BATCH", "1", 1);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0, "pin to one CPU"); /* threads made later inherit it */
    wake_fix f = {.h = ht_hal()};
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.s));
    HT_OK(f.h->notify_create(f.d, &f.n));
    return f;
}

static void fix_close(wake_fix *f)
{
    HT_OK(f->h->notify_destroy(f->n));
    HT_OK(f->h->stream_destroy(f->s));
    HT_OK(f->h->device_close(f->d));
}

/* Blocks (in sleeps) until the stream's wait on f->n sleeps on the futex. */
static void until_asleep(const wake_fix *f)
{
    while (emu_notify_test_waiters(f->n) == 0)
        usleep(200);
}

Test(emu_notify_wake, records_after_a_wake_make_no_wake_call, .timeout = 60)
{
    wake_fix f = fix_open();
    HT_OK(f.h->notify_wait(f.n, f.s, 30000, NULL));
    until_asleep(&f);
    uint64_t before = emu_notify_test_wake_calls();
    enum { RECORDS = 64 };
    for (int i = 0; i < RECORDS; i++)
        HT_OK(f.h->notify_host_record(f.n));
    cr_expect_eq(emu_notify_test_wake_calls() - before, 1u, "one wake call for one sleeping wait, not one a record");
    cr_expect_eq(emu_notify_test_waiters(f.n), 0u, "the wake counted the woken wait out");
    HT_OK(f.h->stream_sync(f.s, -1));
    cr_expect_eq(f.h->notify_pending(f.n), RECORDS - 1u);
    cr_expect_eq(emu_notify_test_waiters(f.n), 0u, "the woken wait did not count itself out again");
    fix_close(&f);
}

Test(emu_notify_wake, waiters_balance_over_wakes_and_timeouts, .timeout = 60)
{
    wake_fix f = fix_open();
    for (int i = 0; i < 20; i++) {
        HT_OK(f.h->notify_wait(f.n, f.s, 30000, NULL));
        until_asleep(&f);
        HT_OK(f.h->notify_host_record(f.n));
        HT_OK(f.h->stream_sync(f.s, -1));
        cr_assert_eq(emu_notify_test_waiters(f.n), 0u, "after wake %d", i);
    }
    HT_OK(f.h->notify_wait(f.n, f.s, 20, NULL)); /* nobody records: it ends by its limit */
    cr_expect_eq(f.h->stream_sync(f.s, -1), HAL_E_TIMEOUT);
    cr_expect_eq(emu_notify_test_waiters(f.n), 0u, "a wait that timed out counted itself out");
    fix_close(&f);
}

/* notify_wake (flag waits, hal.h): a wake call only for a wait asleep on the notify, none (and no
 * record) where nobody sleeps; the woken flag wait takes the wake-up signal with it. */
Test(emu_notify_wake, notify_wake_wakes_a_sleeping_flag_wait_only, .timeout = 60)
{
    wake_fix f = fix_open();
    hal_stream *w;
    HT_OK(f.h->stream_create(f.d, &w));
    uint64_t before = emu_notify_test_wake_calls();
    HT_OK(f.h->notify_wake(f.n, w));
    HT_OK(f.h->stream_sync(w, -1));
    cr_expect_eq(emu_notify_test_wake_calls() - before, 0u, "nobody asleep: no wake call");
    cr_expect_eq(f.h->notify_count(f.n), 0u, "nobody asleep: no record");
    void *mem = NULL;
    HT_OK(f.h->mem_alloc(f.d, 64, &mem));
    volatile uint64_t *flag = mem;
    *flag = 0;
    hal_flag_wait fw = {.flag = flag, .at_least = 1, .wake = f.n, .timeout_ms = 30000};
    HT_OK(f.h->flag_wait(f.s, &fw));
    until_asleep(&f);
    *flag = 1;
    HT_OK(f.h->notify_wake(f.n, w));
    HT_OK(f.h->stream_sync(w, -1));
    cr_expect_eq(emu_notify_test_wake_calls() - before, 1u, "one wake call for the sleeping flag wait");
    HT_OK(f.h->stream_sync(f.s, -1));
    cr_expect_eq(emu_notify_test_waiters(f.n), 0u);
    cr_expect_eq(f.h->notify_count(f.n), 0u, "the woken wait took its wake-up");
    HT_OK(f.h->mem_free(f.d, mem));
    HT_OK(f.h->stream_destroy(w));
    fix_close(&f);
}

typedef struct seen_asleep {
    const wake_fix *f;
    int calls, counted_in;
} seen_asleep;

static int note_waiters(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    seen_asleep *a = arg;
    a->calls++;
    a->counted_in += emu_notify_test_waiters(a->f->n) > 0;
    return 0;
}

/* A checked notify wait runs its check once counted among the sleepers (so a notify_wake after
 * what the check read finds it), and only where it sleeps. */
Test(emu_notify_wake, a_checked_wait_checks_once_counted_in, .timeout = 60)
{
    wake_fix f = fix_open();
    static seen_asleep a;
    a = (seen_asleep){&f, 0, 0};
    HT_OK(f.h->notify_host_record(f.n));
    HT_OK(f.h->notify_wait_checked(f.n, f.s, 30000, NULL, note_waiters, &a));
    HT_OK(f.h->stream_sync(f.s, -1));
    cr_expect_eq(a.calls, 0, "a signal there: no check");
    HT_OK(f.h->notify_wait_checked(f.n, f.s, 30000, NULL, note_waiters, &a));
    until_asleep(&f);
    HT_OK(f.h->notify_host_record(f.n));
    HT_OK(f.h->stream_sync(f.s, -1));
    cr_expect_geq(a.calls, 1, "the check ran before the wait slept");
    cr_expect_eq(a.counted_in, a.calls, "every check ran with the wait counted among the sleepers");
    fix_close(&f);
}
