/* hal event_help on the emulator: a host thread runs the recording stream's queued programs itself
 * (in order, on the calling thread), but never waits on anything but a poll: it stops before a host
 * function (a hold only the caller may release) and before an event wait not yet met, and leaves a
 * program whose notify wait is not met at that wait; the worker then goes on, resuming the program
 * where it stopped (what ran before the wait does not run again). The stream is parked
 * (emu_stream_test_park) so that nothing runs before the helper does. */
#include <pthread.h>
#include <stdatomic.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct help_log {
    atomic_int n;
    int id[32];
    pthread_t who[32];
} help_log;

typedef struct help_item {
    help_log *log;
    int id;
} help_item;

static int log_fn(void *arg, char *msg, size_t len)
{
    (void)msg;
    (void)len;
    help_item *it = arg;
    int k = atomic_fetch_add(&it->log->n, 1);
    it->log->id[k] = it->id;
    it->log->who[k] = pthread_self();
    return 0;
}

static hal_insn fn_insn(help_item *it)
{
    hal_insn in = {.kind = HAL_INSN_FN};
    in.u.fn.fn = log_fn;
    in.u.fn.arg = it;
    return in;
}

static hal_insn wait_insn(hal_notify *n)
{
    hal_insn in = {.kind = HAL_INSN_NOTIFY_WAIT};
    in.u.notify.n = n;
    in.u.notify.timeout_ms = 30000;
    return in;
}

typedef struct help_fix {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s;
    hal_event *e;
} help_fix;

static help_fix fix_open_flags(uint32_t event_flags)
{
    help_fix f = {.h = ht_hal()};
    cr_assert_not_null(f.h->event_help, "the emulator offers event_help");
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.s));
    emu_stream_test_park(f.s);
    HT_OK(f.h->event_create(f.d, event_flags, &f.e));
    return f;
}

static help_fix fix_open(void)
{
    return fix_open_flags(0);
}

static void fix_close(help_fix *f)
{
    HT_OK(f->h->event_destroy(f->e));
    HT_OK(f->h->stream_destroy(f->s));
    HT_OK(f->h->device_close(f->d));
}

static void expect_entry(const help_log *log, int k, int id, bool here)
{
    cr_expect_eq(log->id[k], id, "entry %d is item %d, expected %d", k, log->id[k], id);
    cr_expect_eq(pthread_equal(log->who[k], pthread_self()) != 0, here, "item %d ran %s the helping thread", id,
                 here ? "off" : "on");
}

/* Three programs, the event recorded after them (by the last one's own record: prog_record, as a
 * launch records its completion), then a help: all three run on this thread. */
static void runs_queued(uint32_t event_flags, bool prog_record)
{
    help_fix f = fix_open_flags(event_flags);
    static help_log log;
    static help_item items[3];
    static hal_insn prog[3][1];
    atomic_store(&log.n, 0);
    for (int i = 0; i < 3; i++) {
        items[i] = (help_item){&log, i};
        prog[i][0] = fn_insn(&items[i]);
        if (i == 2 && prog_record)
            HT_OK(f.h->prog_launch_record(f.s, prog[i], 1, f.e));
        else
            HT_OK(f.h->prog_launch(f.s, prog[i], 1));
    }
    if (!prog_record)
        HT_OK(f.h->event_record(f.e, f.s));
    cr_assert_eq(f.h->event_query(f.e), HAL_E_NOT_READY, "parked: nothing ran before the help");
    HT_OK(f.h->event_help(f.e));
    cr_assert_eq(atomic_load(&log.n), 3);
    for (int i = 0; i < 3; i++)
        expect_entry(&log, i, i, true);
    HT_OK(f.h->event_help(f.e)); /* complete: nothing to run */
    HT_OK(f.h->event_sync(f.e, -1));
    fix_close(&f);
}

Test(emu_help, runs_queued_programs_on_the_calling_thread, .timeout = 60)
{
    runs_queued(0, false);
}

/* A launch's completion event (HAL_EVENT_SERIAL: its caller serializes the calls, so the record's
 * bookkeeping goes unlocked) finds its record the same way. */
Test(emu_help, serial_event_runs_queued_programs_on_the_calling_thread, .timeout = 60)
{
    runs_queued(HAL_EVENT_SERIAL, false);
    runs_queued(HAL_EVENT_SERIAL, true);
}

Test(emu_help, stops_before_a_host_function, .timeout = 60)
{
    help_fix f = fix_open();
    static help_log log;
    static help_item a, b;
    static hal_insn pa[1], pb[1];
    a = (help_item){&log, 1};
    b = (help_item){&log, 2};
    pa[0] = fn_insn(&a);
    pb[0] = fn_insn(&b);
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->prog_launch(f.s, pa, 1));
    HT_OK(f.h->host_func_async(f.s, ht_gate_fn, &gate)); /* released by this thread, below */
    HT_OK(f.h->prog_launch(f.s, pb, 1));
    HT_OK(f.h->event_record(f.e, f.s));
    cr_assert_eq(f.h->event_help(f.e), HAL_E_NOT_READY, "the helper went past the hold");
    cr_assert_eq(atomic_load(&log.n), 1);
    expect_entry(&log, 0, 1, true);
    while (sem_wait(&gate.entered) != 0) /* the worker took the hold over */
        ;
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.e, 30000));
    cr_assert_eq(atomic_load(&log.n), 2);
    expect_entry(&log, 1, 2, false);
    ht_gate_fini(&gate);
    fix_close(&f);
}

/* Another stream of the device and an event `mark` recorded there after `first` (a host function
 * or NULL): what the waits below wait for. */
typedef struct mark_fix {
    hal_stream *other;
    hal_event *mark;
} mark_fix;

static mark_fix mark_open(const help_fix *f, ht_gate *first)
{
    mark_fix m;
    HT_OK(f->h->stream_create(f->d, &m.other));
    HT_OK(f->h->event_create(f->d, 0, &m.mark));
    if (first)
        HT_OK(f->h->host_func_async(m.other, ht_gate_fn, first));
    HT_OK(f->h->event_record(m.mark, m.other));
    return m;
}

static void mark_close(const help_fix *f, mark_fix *m)
{
    HT_OK(f->h->event_destroy(m->mark));
    HT_OK(f->h->stream_destroy(m->other));
}

/* prog A, a wait for `mark`, prog B, then f.e: what the helper runs. */
static void queue_around_wait(help_fix *f, hal_event *mark, help_log *log, help_item it[2], hal_insn p[2])
{
    it[0] = (help_item){log, 1};
    it[1] = (help_item){log, 2};
    p[0] = fn_insn(&it[0]);
    p[1] = fn_insn(&it[1]);
    HT_OK(f->h->prog_launch(f->s, &p[0], 1));
    HT_OK(f->h->stream_wait_event(f->s, mark));
    HT_OK(f->h->prog_launch(f->s, &p[1], 1));
    HT_OK(f->h->event_record(f->e, f->s));
}

Test(emu_help, runs_a_met_event_wait, .timeout = 60)
{
    help_fix f = fix_open();
    mark_fix m = mark_open(&f, NULL);
    HT_OK(f.h->event_sync(m.mark, 30000));
    static help_log log;
    static help_item it[2];
    static hal_insn p[2];
    queue_around_wait(&f, m.mark, &log, it, p);
    HT_OK(f.h->event_help(f.e));
    cr_assert_eq(atomic_load(&log.n), 2);
    expect_entry(&log, 0, 1, true);
    expect_entry(&log, 1, 2, true);
    mark_close(&f, &m);
    fix_close(&f);
}

Test(emu_help, stops_before_an_unmet_event_wait, .timeout = 60)
{
    help_fix f = fix_open();
    ht_gate gate;
    ht_gate_init(&gate);
    mark_fix m = mark_open(&f, &gate); /* the mark completes once the gate opens */
    static help_log log;
    static help_item it[2];
    static hal_insn p[2];
    queue_around_wait(&f, m.mark, &log, it, p);
    cr_assert_eq(f.h->event_help(f.e), HAL_E_NOT_READY, "the helper waited for another stream's event");
    cr_assert_eq(atomic_load(&log.n), 1);
    expect_entry(&log, 0, 1, true);
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.e, 30000)); /* the worker took the wait over */
    cr_assert_eq(atomic_load(&log.n), 2);
    ht_gate_fini(&gate);
    mark_close(&f, &m);
    fix_close(&f);
}

Test(emu_help, leaves_a_program_at_an_unmet_wait_for_the_worker, .timeout = 60)
{
    help_fix f = fix_open();
    hal_notify *n;
    HT_OK(f.h->notify_create(f.d, &n));
    static help_log log;
    static help_item before, after;
    before = (help_item){&log, 1};
    after = (help_item){&log, 2};
    static hal_insn prog[3];
    prog[0] = fn_insn(&before);
    prog[1] = wait_insn(n);
    prog[2] = fn_insn(&after);
    HT_OK(f.h->prog_launch_record(f.s, prog, 3, f.e));
    cr_assert_eq(f.h->event_help(f.e), HAL_E_NOT_READY, "the helper slept in the program's wait");
    cr_assert_eq(atomic_load(&log.n), 1, "the program ran on past its wait");
    expect_entry(&log, 0, 1, true);
    HT_OK(f.h->notify_host_record(n));
    HT_OK(f.h->event_sync(f.e, 30000));
    cr_assert_eq(atomic_load(&log.n), 2, "the resumed program ran %d functions, expected 1 more",
                 atomic_load(&log.n) - 1);
    expect_entry(&log, 1, 2, false);
    cr_expect_eq(f.h->notify_pending(n), 0, "the wait took the one signal");
    HT_OK(f.h->stream_sync(f.s, 30000)); /* no error on the stream */
    HT_OK(f.h->notify_destroy(n));
    fix_close(&f);
}

/* The same for a flag wait (hal_flag_wait): the helper polls, then leaves it to the worker. */
Test(emu_help, leaves_a_program_at_an_unmet_flag_wait_for_the_worker, .timeout = 60)
{
    help_fix f = fix_open();
    hal_notify *n;
    HT_OK(f.h->notify_create(f.d, &n));
    void *mem = NULL;
    HT_OK(f.h->mem_alloc(f.d, 64, &mem));
    _Atomic uint64_t *flag = mem;
    atomic_store(flag, 0);
    static help_log log;
    static help_item before, after;
    before = (help_item){&log, 1};
    after = (help_item){&log, 2};
    static hal_flag_wait w;
    w = (hal_flag_wait){.flag = (const volatile uint64_t *)flag, .at_least = 1, .wake = n, .timeout_ms = 30000};
    static hal_insn prog[3];
    prog[0] = fn_insn(&before);
    prog[1] = (hal_insn){.kind = HAL_INSN_FLAG_WAIT};
    prog[1].u.flag.w = &w;
    prog[2] = fn_insn(&after);
    HT_OK(f.h->prog_launch_record(f.s, prog, 3, f.e));
    cr_assert_eq(f.h->event_help(f.e), HAL_E_NOT_READY, "the helper slept in the program's flag wait");
    cr_assert_eq(atomic_load(&log.n), 1, "the program ran on past its flag wait");
    expect_entry(&log, 0, 1, true);
    atomic_store(flag, 1);
    hal_stream *ws;
    HT_OK(f.h->stream_create(f.d, &ws));
    HT_OK(f.h->notify_wake(n, ws));
    HT_OK(f.h->stream_sync(ws, 30000));
    HT_OK(f.h->event_sync(f.e, 30000));
    cr_assert_eq(atomic_load(&log.n), 2, "the resumed program ran %d functions, expected 1 more",
                 atomic_load(&log.n) - 1);
    expect_entry(&log, 1, 2, false);
    HT_OK(f.h->stream_sync(f.s, 30000));
    HT_OK(f.h->stream_destroy(ws));
    HT_OK(f.h->mem_free(f.d, mem));
    HT_OK(f.h->notify_destroy(n));
    fix_close(&f);
}

Test(emu_help, met_waits_run_through, .timeout = 60)
{
    help_fix f = fix_open();
    hal_notify *n;
    HT_OK(f.h->notify_create(f.d, &n));
    HT_OK(f.h->notify_host_record(n));
    static help_log log;
    static help_item after;
    after = (help_item){&log, 1};
    static hal_insn prog[2];
    prog[0] = wait_insn(n);
    prog[1] = fn_insn(&after);
    HT_OK(f.h->prog_launch_record(f.s, prog, 2, f.e));
    HT_OK(f.h->event_help(f.e));
    cr_assert_eq(atomic_load(&log.n), 1);
    expect_entry(&log, 0, 1, true);
    HT_OK(f.h->notify_destroy(n));
    fix_close(&f);
}
