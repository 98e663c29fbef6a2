/* Event waits between streams on the emulator, as a framework makes them around every collective
 * (its collective stream waits for its compute stream's record, the compute stream for the
 * collective's): a wait whose record completed queues nothing; a worker waits for an unmet record
 * without the stream's executor role; and a host thread that finds such a wait at the head of a
 * stream (running at once, or helping) helps the stream that records the event up to the record,
 * then runs the met wait, and what follows, itself (emu_stream.c await_head,
 * emu_stream_host.c emu_stream_follow_wait_locked, emu_stream_gate.c idle_locked). The recording
 * stream is parked (emu_stream_test_park): its record runs only where a host thread runs it. A
 * wait for a record behind nothing but waits for the waiting stream's own earlier work queues
 * nothing (emu_event.c, behind_own_work_locked). A parked stream's worker runs nothing, so what
 * runs there runs on the test's thread. */
#include <sched.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct aside_fix {
    const hal_ops *h;
    hal_device *d;
    hal_stream *a, *b; /* a waits for b's record of e */
    hal_event *e, *x;
} aside_fix;

static aside_fix fix_open(void)
{
    aside_fix f = {.h = ht_hal()};
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.a));
    HT_OK(f.h->stream_create(f.d, &f.b));
    HT_OK(f.h->event_create(f.d, 0, &f.e));
    HT_OK(f.h->event_create(f.d, HAL_EVENT_SERIAL, &f.x));
    return f;
}

static void fix_close(aside_fix *f)
{
    HT_OK(f->h->stream_sync(f->b, -1));
    HT_OK(f->h->stream_sync(f->a, -1));
    HT_OK(f->h->event_destroy(f->e));
    HT_OK(f->h->event_destroy(f->x));
    HT_OK(f->h->stream_destroy(f->a));
    HT_OK(f->h->stream_destroy(f->b));
    HT_OK(f->h->device_close(f->d));
}

/* The stream's count of queued tasks (under its mutex). */
static uint64_t queued_tasks(hal_stream *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->enq;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static int count_fn(void *arg, char *msg, size_t len)
{
    (void)msg;
    (void)len;
    ++*(int *)arg;
    return 0;
}

/* b parked, with a program (work of b's own) and then e's record queued on it. */
static int parked_work_ran;

static void record_behind_parked_work(aside_fix *f)
{
    static hal_insn work[1];
    work[0] = (hal_insn){.kind = HAL_INSN_FN};
    work[0].u.fn.fn = count_fn;
    work[0].u.fn.arg = &parked_work_ran;
    emu_stream_test_park(f->b);
    HT_OK(f->h->prog_launch(f->b, work, 1));
    HT_OK(f->h->event_record(f->e, f->b));
}

/* a waits for e, recorded on the parked stream b behind work, and a's worker has gone to wait. */
static void wait_for_parked_record(aside_fix *f)
{
    record_behind_parked_work(f);
    cr_assert_eq(f->h->event_query(f->e), HAL_E_NOT_READY, "a record on a parked stream ran");
    uint64_t asides = emu_stream_test_asides();
    HT_OK(f->h->stream_wait_event(f->a, f->e));
    while (emu_stream_test_asides() == asides) /* the worker reaches the wait (Criterion's timeout bounds it) */
        sched_yield();
}

/* A wait for a record that completed without error holds nothing back: no task. */
Test(emu_wait_aside, a_wait_for_a_completed_record_queues_nothing, .timeout = 60)
{
    aside_fix f = fix_open();
    HT_OK(f.h->event_record(f.e, f.b));
    HT_OK(f.h->event_sync(f.e, 30000));
    uint64_t tasks = queued_tasks(f.a);
    HT_OK(f.h->stream_wait_event(f.a, f.e));
    cr_expect_eq(queued_tasks(f.a), tasks, "a wait for a completed record queued a task");
    HT_OK(f.h->event_record(f.x, f.a));
    cr_expect_eq(f.h->event_query(f.x), HAL_OK, "the stream was not idle after a met wait");
    fix_close(&f);
}

/* A failed record's wait still goes to the queue, and fails the waiting stream. */
Test(emu_wait_aside, a_wait_for_a_failed_record_fails_the_stream, .timeout = 60)
{
    aside_fix f = fix_open();
    emu_stream_fail(f.b, HAL_E_INTERNAL, "failed on purpose");
    HT_OK(f.h->event_record(f.e, f.b));
    cr_expect_eq(f.h->event_sync(f.e, 30000), HAL_E_INTERNAL);
    uint64_t tasks = queued_tasks(f.a);
    HT_OK(f.h->stream_wait_event(f.a, f.e));
    cr_expect_eq(queued_tasks(f.a), tasks + 1, "a wait for a failed record queued no task");
    cr_expect_eq(f.h->stream_sync(f.a, 30000), HAL_E_INTERNAL, "the waiting stream did not fail");
    f.h->stream_clear_error(f.a);
    f.h->stream_clear_error(f.b);
    fix_close(&f);
}

/* The worker waits for the record without a's role: a record on a, from this thread, helps b up
 * to e's record before it returns (only a host executor runs the parked b), and completes after
 * the wait, on this thread or on the worker, woken by e. Were the worker holding the role, the
 * record would queue behind the wait, and nothing would run b's record. */
Test(emu_wait_aside, a_record_behind_a_wait_helps_the_recording_stream, .timeout = 60)
{
    aside_fix f = fix_open();
    wait_for_parked_record(&f);
    HT_OK(f.h->event_record(f.x, f.a));
    cr_expect_eq(f.h->event_query(f.e), HAL_OK, "the record waited for did not run");
    HT_OK(f.h->event_sync(f.x, 30000));
    fix_close(&f);
}

/* a and b parked (their workers run nothing): a waits for e, recorded on b behind work. */
static void parked_wait(aside_fix *f)
{
    emu_stream_test_park(f->a);
    record_behind_parked_work(f);
    HT_OK(f->h->stream_wait_event(f->a, f->e));
}

/* A record on a parked stream whose head is a wait for a record of b: the record helps b up to
 * it, runs the met wait and completes, all here before it returns. */
Test(emu_wait_aside, a_record_behind_a_wait_runs_it_here, .timeout = 60)
{
    aside_fix f = fix_open();
    parked_wait(&f);
    uint64_t now = emu_event_test_records_now();
    HT_OK(f.h->event_record(f.x, f.a));
    cr_expect_eq(f.h->event_query(f.x), HAL_OK, "a record behind a wait did not complete at once");
    cr_expect_eq(emu_event_test_records_now(), now + 1, "the record did not complete on the calling thread");
    cr_expect_eq(f.h->event_query(f.e), HAL_OK, "the record waited for did not run");
    fix_close(&f);
}

/* A helper that stops at an unmet wait helps the recording stream, then goes on past the wait:
 * event_help of a launch queued behind the wait completes it (only the helper runs). */
Test(emu_wait_aside, a_helper_follows_a_wait_to_its_record, .timeout = 60)
{
    aside_fix f = fix_open();
    parked_wait(&f);
    static int ran;
    static hal_insn prog[1];
    prog[0] = (hal_insn){.kind = HAL_INSN_FN};
    prog[0].u.fn.fn = count_fn;
    prog[0].u.fn.arg = &ran;
    HT_OK(f.h->prog_launch_record(f.a, prog, 1, f.x)); /* queued: a launch does not run at once */
    cr_expect_eq(f.h->event_query(f.e), HAL_E_NOT_READY, "b's record ran before the helper");
    cr_expect_eq(f.h->event_help(f.x), HAL_OK, "the helper stopped at the wait");
    cr_expect_eq(ran, 1, "the program behind the wait did not run");
    cr_expect_eq(f.h->event_query(f.e), HAL_OK, "the record waited for did not run");
    fix_close(&f);
}

/* The worker that waits aside goes on once the record completes elsewhere. */
Test(emu_wait_aside, the_worker_goes_on_once_the_record_completes, .timeout = 60)
{
    aside_fix f = fix_open();
    wait_for_parked_record(&f);
    static int ran;
    hal_insn in = {.kind = HAL_INSN_FN};
    in.u.fn.fn = count_fn;
    in.u.fn.arg = &ran;
    static hal_insn prog[1];
    prog[0] = in;
    HT_OK(f.h->prog_launch(f.a, prog, 1));
    HT_OK(f.h->stream_sync(f.b, -1)); /* runs b's record here */
    HT_OK(f.h->stream_sync(f.a, 30000)); /* a timed sync: the worker runs the rest */
    cr_expect_eq(ran, 1, "the program behind the wait did not run");
    fix_close(&f);
}

/* A wait for a record queued on another stream behind nothing but waits for this stream's own
 * earlier work (a process group's compute stream between two calls) queues nothing: the
 * stream's order already holds it. a is held by a host function; b waits for a's record and then
 * records f; a's wait for f adds no task, and everything completes once a is released. */
Test(emu_wait_aside, a_wait_behind_ones_own_work_queues_nothing, .timeout = 60)
{
    aside_fix f = fix_open();
    hal_event *g;
    HT_OK(f.h->event_create(f.d, 0, &g));
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->host_func_async(f.a, ht_gate_fn, &gate));
    HT_OK(f.h->event_record(f.e, f.a));
    uint64_t asides = emu_stream_test_asides();
    HT_OK(f.h->stream_wait_event(f.b, f.e));
    while (emu_stream_test_asides() == asides) /* b's worker waits for e without b's role */
        sched_yield();
    HT_OK(f.h->event_record(g, f.b));
    uint64_t tasks = queued_tasks(f.a);
    HT_OK(f.h->stream_wait_event(f.a, g));
    cr_expect_eq(queued_tasks(f.a), tasks, "a wait behind the stream's own earlier work queued a task");
    HT_OK(f.h->event_record(f.x, f.a));
    cr_expect_eq(f.h->event_query(g), HAL_E_NOT_READY, "b's record completed while a was held");
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.x, 30000));
    HT_OK(f.h->event_sync(g, 30000));
    ht_gate_fini(&gate);
    HT_OK(f.h->event_destroy(g));
    fix_close(&f);
}

/* Behind other work of the recording stream (a host function there), the wait is queued and
 * holds the waiting stream back until that work is done. */
Test(emu_wait_aside, a_wait_behind_other_work_is_queued, .timeout = 60)
{
    aside_fix f = fix_open();
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->host_func_async(f.b, ht_gate_fn, &gate));
    HT_OK(f.h->event_record(f.e, f.b));
    uint64_t tasks = queued_tasks(f.a);
    HT_OK(f.h->stream_wait_event(f.a, f.e));
    cr_expect_eq(queued_tasks(f.a), tasks + 1, "a wait behind another stream's work queued nothing");
    HT_OK(f.h->event_record(f.x, f.a));
    while (sem_wait(&gate.entered) != 0)
        ;
    cr_expect_eq(f.h->event_query(f.x), HAL_E_NOT_READY, "a went past its wait while b was held");
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.x, 30000));
    ht_gate_fini(&gate);
    fix_close(&f);
}
