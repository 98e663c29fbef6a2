/* Event waits between streams on the emulator, as a framework makes them around every collective
 * (its collective stream waits for its compute stream's record, the compute stream for the
 * collective's): a wait whose record completed queues nothing; a stream whose next task is a wait
 * for an unmet record (its worker asleep when the wait came, or reaching it) is run by the record's
 * completion, on the completing thread, and its worker is woken only for other work
 * (emu_stream_kick.c); where the event's list of such streams is full, the worker waits for the
 * record without the stream's executor role (emu_stream.c await_head); a wait for a record behind
 * nothing but waits for the waiting stream's own earlier work queues nothing (emu_event_wait.c,
 * behind_own_work_locked). The recording stream is often parked (emu_stream_test_park): its worker
 * runs nothing, so its record runs where the test's thread runs it. */
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

/* prog: one FN instruction that counts into *counter (the array outlives the launch). */
static const hal_insn *count_prog(hal_insn prog[1], int *counter)
{
    prog[0] = (hal_insn){.kind = HAL_INSN_FN};
    prog[0].u.fn.fn = count_fn;
    prog[0].u.fn.arg = counter;
    return prog;
}

/* b parked, with a program (work of b's own) and then e's record queued on it. */
static int parked_work_ran;

static void record_behind_parked_work(aside_fix *f)
{
    static hal_insn work[1];
    emu_stream_test_park(f->b);
    HT_OK(f->h->prog_launch(f->b, count_prog(work, &parked_work_ran), 1));
    HT_OK(f->h->event_record(f->e, f->b));
}

static bool awaiting(hal_stream *s)
{
    pthread_mutex_lock(&s->mu);
    bool w = s->awaiting;
    pthread_mutex_unlock(&s->mu);
    return w;
}

/* Until s's worker sleeps with nothing queued (Criterion's timeout bounds the loop). */
static void until_asleep(hal_stream *s)
{
    for (bool asleep = false; !asleep; sched_yield()) {
        pthread_mutex_lock(&s->mu);
        asleep = s->sleeping && !s->head;
        pthread_mutex_unlock(&s->mu);
    }
}

/* Until s's wait at the head waits aside (a worker began await_head since `asides`) or awaits its
 * kick, whichever the worker's state when it came made it. */
static void until_waiting(hal_stream *s, uint64_t asides)
{
    while (emu_stream_test_asides() == asides && !awaiting(s))
        sched_yield();
}

/* a waits for e, recorded on the parked stream b behind work, its worker asleep when the wait
 * came: the wait awaits e's kick. */
static void kick_wait(aside_fix *f)
{
    until_asleep(f->a);
    record_behind_parked_work(f);
    HT_OK(f->h->stream_wait_event(f->a, f->e));
    cr_assert(awaiting(f->a), "a's wait does not await its record's kick");
}

/* s held by a host function on a gate until ht_gate_open. */
static void hold(const aside_fix *f, hal_stream *s, ht_gate *gate)
{
    ht_gate_init(gate);
    HT_OK(f->h->host_func_async(s, ht_gate_fn, gate));
}

/* a failed with b's error (the record it waited for carried it); both errors cleared. */
static void expect_waiter_failed(aside_fix *f)
{
    cr_expect_eq(f->h->stream_sync(f->a, 30000), HAL_E_INTERNAL, "the waiting stream did not fail");
    f->h->stream_clear_error(f->a);
    f->h->stream_clear_error(f->b);
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
    expect_waiter_failed(&f);
    fix_close(&f);
}

/* The record's completion runs what takes no time behind the wait (the met wait, a record) on the
 * completing thread: here, in the sync that runs the parked b. a's worker sleeps through it. */
Test(emu_wait_aside, a_records_completion_runs_the_waiting_stream, .timeout = 60)
{
    aside_fix f = fix_open();
    kick_wait(&f);
    HT_OK(f.h->event_record(f.x, f.a));
    cr_expect_eq(f.h->event_query(f.x), HAL_E_NOT_READY, "a's record ran before the wait's");
    uint64_t kicks = emu_stream_test_kicks();
    HT_OK(f.h->stream_sync(f.b, -1)); /* runs b's work and e's record here */
    cr_expect_eq(emu_stream_test_kicks(), kicks + 1, "e's completion did not kick a");
    cr_expect_eq(f.h->event_query(f.x), HAL_OK, "a's record did not complete with e's");
    pthread_mutex_lock(&f.a->mu);
    cr_expect(f.a->sleeping && !f.a->head && !f.a->awaiting, "a's worker was woken, or a kept a task");
    pthread_mutex_unlock(&f.a->mu);
    fix_close(&f);
}

/* The program a test queues behind a wait, and its count. */
static int count_prog_ran;
static hal_insn count_prog_insn[1];

/* Work behind the wait that takes time is the worker's: the kick wakes it (a timed sync of a
 * only waits for the worker). */
Test(emu_wait_aside, a_kick_wakes_the_worker_for_other_work, .timeout = 60)
{
    aside_fix f = fix_open();
    kick_wait(&f);
    count_prog_ran = 0;
    HT_OK(f.h->prog_launch(f.a, count_prog(count_prog_insn, &count_prog_ran), 1)); /* queued behind the wait: no wake-up */
    HT_OK(f.h->event_record(f.x, f.a));
    HT_OK(f.h->stream_sync(f.b, -1));
    HT_OK(f.h->stream_sync(f.a, 30000));
    cr_expect_eq(count_prog_ran, 1, "the program behind the wait did not run");
    HT_OK(f.h->event_sync(f.x, 30000));
    fix_close(&f);
}

/* A record that completes with its stream's error fails the stream its kick runs. */
Test(emu_wait_aside, a_kick_carries_the_records_failure, .timeout = 60)
{
    aside_fix f = fix_open();
    kick_wait(&f);
    emu_stream_fail(f.b, HAL_E_INTERNAL, "failed on purpose");
    cr_expect_eq(f.h->stream_sync(f.b, -1), HAL_E_INTERNAL);
    expect_waiter_failed(&f);
    fix_close(&f);
}

/* More streams wait for one record than its event's kick list holds: the rest wait as before,
 * on their workers, and every one goes on. */
Test(emu_wait_aside, waits_beyond_the_kick_list_go_on, .timeout = 60)
{
    aside_fix f = fix_open();
    enum { N = EMU_EVENT_KICKS + 2 };
    hal_stream *w[N];
    hal_event *r[N];
    for (int i = 0; i < N; i++) {
        HT_OK(f.h->stream_create(f.d, &w[i]));
        HT_OK(f.h->event_create(f.d, 0, &r[i]));
        until_asleep(w[i]);
    }
    record_behind_parked_work(&f);
    int kicked = 0;
    for (int i = 0; i < N; i++) {
        HT_OK(f.h->stream_wait_event(w[i], f.e));
        kicked += awaiting(w[i]);
        HT_OK(f.h->event_record(r[i], w[i]));
    }
    cr_expect_eq(kicked, EMU_EVENT_KICKS, "%d of %d waits await a kick", kicked, N);
    HT_OK(f.h->stream_sync(f.b, -1));
    for (int i = 0; i < N; i++) {
        HT_OK(f.h->event_sync(r[i], 30000));
        HT_OK(f.h->event_destroy(r[i]));
        HT_OK(f.h->stream_destroy(w[i]));
    }
    fix_close(&f);
}

/* A worker that was busy when the wait came reaches it and sleeps until the kick, which wakes it
 * for the program behind the wait (a timed sync of a only waits for the worker). */
Test(emu_wait_aside, a_busy_worker_sleeps_until_the_kick, .timeout = 60)
{
    aside_fix f = fix_open();
    ht_gate gate;
    hold(&f, f.a, &gate);
    while (sem_wait(&gate.entered) != 0) /* a's worker runs the host function */
        ;
    record_behind_parked_work(&f);
    HT_OK(f.h->stream_wait_event(f.a, f.e));
    cr_expect(!awaiting(f.a), "a wait that came while the worker ran awaits a kick");
    count_prog_ran = 0;
    HT_OK(f.h->prog_launch(f.a, count_prog(count_prog_insn, &count_prog_ran), 1));
    ht_gate_open(&gate);
    while (!awaiting(f.a)) /* the worker reaches the wait */
        sched_yield();
    uint64_t kicks = emu_stream_test_kicks();
    HT_OK(f.h->stream_sync(f.b, -1)); /* runs b's record here */
    cr_expect_eq(emu_stream_test_kicks(), kicks + 1, "e's completion did not kick a");
    HT_OK(f.h->stream_sync(f.a, 30000));
    cr_expect_eq(count_prog_ran, 1, "the program behind the wait did not run");
    ht_gate_fini(&gate);
    fix_close(&f);
}

/* Where the event's list is full, the worker waits aside for the record (without the role), and
 * goes on once it completes elsewhere. */
Test(emu_wait_aside, a_worker_waits_aside_where_the_list_is_full, .timeout = 60)
{
    aside_fix f = fix_open();
    enum { N = EMU_EVENT_KICKS };
    hal_stream *w[N];
    for (int i = 0; i < N; i++) {
        HT_OK(f.h->stream_create(f.d, &w[i]));
        until_asleep(w[i]);
    }
    until_asleep(f.a);
    record_behind_parked_work(&f);
    for (int i = 0; i < N; i++) {
        HT_OK(f.h->stream_wait_event(w[i], f.e));
        cr_assert(awaiting(w[i]), "stream %d does not await a kick", i);
    }
    uint64_t asides = emu_stream_test_asides();
    HT_OK(f.h->stream_wait_event(f.a, f.e)); /* the list is full: the push wakes a's worker */
    count_prog_ran = 0;
    HT_OK(f.h->prog_launch(f.a, count_prog(count_prog_insn, &count_prog_ran), 1));
    while (emu_stream_test_asides() == asides) /* a's worker waits aside */
        sched_yield();
    cr_expect(!awaiting(f.a), "a awaits a kick beyond the list");
    HT_OK(f.h->stream_sync(f.b, -1));
    HT_OK(f.h->stream_sync(f.a, 30000));
    cr_expect_eq(count_prog_ran, 1, "the program behind the wait did not run");
    for (int i = 0; i < N; i++) {
        HT_OK(f.h->stream_sync(w[i], 30000));
        HT_OK(f.h->stream_destroy(w[i]));
    }
    fix_close(&f);
}

/* a held by a host function records e; b waits for e (without b's role) and records g behind
 * that wait; a's wait for g adds no task: g is behind nothing but a's own work. Returns a's
 * task count before that wait. */
static uint64_t wait_for_own_work(aside_fix *f, ht_gate *gate, hal_event *g)
{
    hold(f, f->a, gate);
    HT_OK(f->h->event_record(f->e, f->a));
    uint64_t asides = emu_stream_test_asides();
    HT_OK(f->h->stream_wait_event(f->b, f->e));
    until_waiting(f->b, asides);
    HT_OK(f->h->event_record(g, f->b)); /* rides on b's wait */
    uint64_t tasks = queued_tasks(f->a);
    HT_OK(f->h->stream_wait_event(f->a, g));
    cr_expect_eq(queued_tasks(f->a), tasks, "a wait behind the stream's own earlier work queued a task");
    return tasks;
}

/* A wait for a record queued on another stream behind nothing but waits for this stream's own
 * earlier work (a process group's compute stream between two calls) queues nothing: the
 * stream's order already holds it; everything completes once a is released. */
Test(emu_wait_aside, a_wait_behind_ones_own_work_queues_nothing, .timeout = 60)
{
    aside_fix f = fix_open();
    hal_event *g;
    HT_OK(f.h->event_create(f.d, 0, &g));
    ht_gate gate;
    (void)wait_for_own_work(&f, &gate, g);
    HT_OK(f.h->event_record(f.x, f.a));
    cr_expect_eq(f.h->event_query(g), HAL_E_NOT_READY, "b's record completed while a was held");
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.x, 30000));
    HT_OK(f.h->event_sync(g, 30000));
    ht_gate_fini(&gate);
    HT_OK(f.h->event_destroy(g));
    fix_close(&f);
}

static void bump_fn(void *arg)
{
    ++*(int *)arg;
}

/* The scan for one's own work goes on where the last one for the same stream stopped (its tasks
 * still queued): a host function queued on b after the first check, before b's next record (a
 * task: a record rides only on a program or an event wait right before it), still makes a's wait
 * for that record a task, and the function runs before a goes past it. */
Test(emu_wait_aside, own_work_scans_go_on_where_they_stopped, .timeout = 60)
{
    aside_fix f = fix_open();
    hal_event *g1, *g2;
    HT_OK(f.h->event_create(f.d, 0, &g1));
    HT_OK(f.h->event_create(f.d, 0, &g2));
    ht_gate gate;
    uint64_t tasks = wait_for_own_work(&f, &gate, g1); /* scans b: a wait for a's own work with g1 */
    static int bumped;
    bumped = 0;
    HT_OK(f.h->host_func_async(f.b, bump_fn, &bumped)); /* other work, behind the first scan */
    HT_OK(f.h->event_record(g2, f.b));
    HT_OK(f.h->stream_wait_event(f.a, g2));
    cr_expect_eq(queued_tasks(f.a), tasks + 1, "a wait behind other work queued nothing");
    ht_gate_open(&gate);
    HT_OK(f.h->stream_sync(f.a, 30000));
    cr_expect_eq(bumped, 1, "a went past its wait before b's host function ran");
    ht_gate_fini(&gate);
    HT_OK(f.h->event_destroy(g1));
    HT_OK(f.h->event_destroy(g2));
    fix_close(&f);
}

/* Behind other work of the recording stream (a host function there), the wait is queued and
 * holds the waiting stream back until that work is done. */
Test(emu_wait_aside, a_wait_behind_other_work_is_queued, .timeout = 60)
{
    aside_fix f = fix_open();
    ht_gate gate;
    hold(&f, f.b, &gate);
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
