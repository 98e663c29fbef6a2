/* hal prog_run_now on the emulator: a program launched on an idle stream runs at once on the
 * calling thread, to its end, and leaves nothing queued (its completion event is not recorded:
 * nothing is left to wait for); on a stream with work queued or held it does nothing (the caller
 * launches it behind that work); where a wait would sleep it stops there and queues the rest with
 * the record, which the worker resumes from that wait (what ran does not run again); a failing
 * instruction fails the stream and queues the record, which carries the failure. An event record
 * on an idle stream completes at once, likewise (emu_event.c, record_now), from any number of
 * threads at once. */
#include <pthread.h>
#include <stdatomic.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct now_log {
    atomic_int n;
    int id[8];
    pthread_t who[8];
} now_log;

typedef struct now_item {
    now_log *log;
    int id;
    int fail; /* the task function's result */
} now_item;

static int log_fn(void *arg, char *msg, size_t len)
{
    now_item *it = arg;
    int k = atomic_fetch_add(&it->log->n, 1);
    it->log->id[k] = it->id;
    it->log->who[k] = pthread_self();
    if (it->fail)
        snprintf(msg, len, "item %d fails", it->id);
    return it->fail;
}

static hal_insn fn_insn(now_item *it)
{
    hal_insn in = {.kind = HAL_INSN_FN};
    in.u.fn.fn = log_fn;
    in.u.fn.arg = it;
    return in;
}

typedef struct now_fix {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s;
    hal_event *e;
} now_fix;

static now_fix fix_open(void)
{
    now_fix f = {.h = ht_hal()};
    cr_assert_not_null(f.h->prog_run_now, "the emulator offers prog_run_now");
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.s));
    HT_OK(f.h->event_create(f.d, HAL_EVENT_SERIAL, &f.e));
    return f;
}

static void fix_close(now_fix *f)
{
    HT_OK(f->h->event_destroy(f->e));
    HT_OK(f->h->stream_destroy(f->s));
    HT_OK(f->h->device_close(f->d));
}

static void expect_entry(const now_log *log, int k, int id, bool here)
{
    cr_expect_eq(log->id[k], id, "entry %d is item %d, expected %d", k, log->id[k], id);
    cr_expect_eq(pthread_equal(log->who[k], pthread_self()) != 0, here, "item %d ran %s the calling thread", id,
                 here ? "off" : "on");
}

Test(emu_run_now, runs_an_idle_streams_program_here_to_its_end, .timeout = 60)
{
    now_fix f = fix_open();
    static now_log log;
    static now_item it[2];
    static hal_insn prog[2];
    for (int i = 0; i < 2; i++) {
        it[i] = (now_item){&log, i, 0};
        prog[i] = fn_insn(&it[i]);
    }
    uint64_t before = emu_prog_test_runs_now();
    bool queued = true;
    HT_OK(f.h->prog_run_now(f.s, prog, 2, f.e, &queued));
    cr_expect(!queued, "a program that ended left something queued");
    cr_assert_eq(atomic_load(&log.n), 2, "the program did not run at once");
    expect_entry(&log, 0, 0, true);
    expect_entry(&log, 1, 1, true);
    cr_expect_geq(emu_prog_test_runs_now(), before + 1);
    cr_expect_eq(f.h->event_recorded(f.e), 0, "the completion event was recorded");
    HT_OK(f.h->stream_sync(f.s, 30000));
    fix_close(&f);
}

/* Behind a hold, or behind a queued program, nothing runs now: the caller launches it. */
Test(emu_run_now, leaves_a_stream_with_work_alone, .timeout = 60)
{
    now_fix f = fix_open();
    static now_log log;
    static now_item a, b;
    static hal_insn pa[1], pb[1];
    a = (now_item){&log, 1, 0};
    b = (now_item){&log, 2, 0};
    pa[0] = fn_insn(&a);
    pb[0] = fn_insn(&b);
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->host_func_async(f.s, ht_gate_fn, &gate));
    bool queued = true;
    cr_expect_eq(f.h->prog_run_now(f.s, pb, 1, f.e, &queued), HAL_E_NOT_READY, "ran past a hold");
    cr_expect(!queued);
    HT_OK(f.h->prog_launch(f.s, pa, 1));
    while (sem_wait(&gate.entered) != 0) /* the worker holds the stream in the gate */
        ;
    cr_expect_eq(f.h->prog_run_now(f.s, pb, 1, f.e, &queued), HAL_E_NOT_READY, "ran past a queued program");
    cr_expect_eq(atomic_load(&log.n), 0, "something ran behind the hold");
    ht_gate_open(&gate);
    HT_OK(f.h->stream_sync(f.s, 30000));
    cr_assert_eq(atomic_load(&log.n), 1);
    expect_entry(&log, 0, 1, false);
    ht_gate_fini(&gate);
    fix_close(&f);
}

/* A, a wait for n, B: A runs here, the wait is not met within the poll, the rest is queued with
 * the record; once n is recorded the worker runs B (A does not run again) and the record. */
Test(emu_run_now, queues_the_rest_from_a_wait_that_would_sleep, .timeout = 60)
{
    now_fix f = fix_open();
    hal_notify *n;
    hal_stream *other;
    HT_OK(f.h->notify_create(f.d, &n));
    HT_OK(f.h->stream_create(f.d, &other));
    static now_log log;
    static now_item a, b;
    static hal_insn prog[3];
    a = (now_item){&log, 1, 0};
    b = (now_item){&log, 2, 0};
    prog[0] = fn_insn(&a);
    prog[1] = (hal_insn){.kind = HAL_INSN_NOTIFY_WAIT};
    prog[1].u.notify.n = n;
    prog[1].u.notify.timeout_ms = 30000;
    prog[2] = fn_insn(&b);
    bool queued = false;
    HT_OK(f.h->prog_run_now(f.s, prog, 3, f.e, &queued));
    cr_assert(queued, "a program stopped at a wait left nothing queued");
    cr_assert_eq(atomic_load(&log.n), 1);
    expect_entry(&log, 0, 1, true);
    cr_expect_eq(f.h->event_query(f.e), HAL_E_NOT_READY, "complete before its wait was met");
    HT_OK(f.h->notify_record(n, other));
    HT_OK(f.h->event_sync(f.e, 30000));
    cr_assert_eq(atomic_load(&log.n), 2, "A ran again, or B did not run");
    expect_entry(&log, 1, 2, false);
    HT_OK(f.h->stream_sync(other, 30000));
    HT_OK(f.h->stream_destroy(other));
    HT_OK(f.h->notify_destroy(n));
    fix_close(&f);
}

/* A failing instruction ends the program and fails the stream; the record queued after it carries
 * the failure, so whoever waits for the launch learns of it. */
Test(emu_run_now, a_failure_reaches_the_record, .timeout = 60)
{
    now_fix f = fix_open();
    static now_log log;
    static now_item a, b;
    static hal_insn prog[2];
    a = (now_item){&log, 1, HAL_E_INTERNAL};
    b = (now_item){&log, 2, 0};
    prog[0] = fn_insn(&a);
    prog[1] = fn_insn(&b);
    bool queued = false;
    HT_OK(f.h->prog_run_now(f.s, prog, 2, f.e, &queued));
    cr_assert(queued, "a failed program's record was not queued");
    cr_expect_eq(f.h->event_sync(f.e, 30000), HAL_E_INTERNAL, "the record does not carry the failure");
    cr_expect_eq(f.h->stream_sync(f.s, 30000), HAL_E_INTERNAL);
    cr_expect_eq(atomic_load(&log.n), 1, "the program went on past its failure");
    bool again = true;
    cr_expect_eq(f.h->prog_run_now(f.s, prog + 1, 1, f.e, &again), HAL_E_NOT_READY, "ran on a failed stream");
    f.h->stream_clear_error(f.s);
    fix_close(&f);
}

/* prog_check refuses what prog_launch refuses and accepts a good program; prog_run_now leaves the
 * check to it (the runtime checks a program once per build, not per call). */
Test(emu_run_now, checks_are_prog_checks_alone, .timeout = 60)
{
    now_fix f = fix_open();
    cr_assert_not_null(f.h->prog_check, "the emulator offers prog_check");
    static now_log log;
    static now_item it = {&log, 0, 0};
    hal_insn good = fn_insn(&it);
    hal_insn bad = {.kind = HAL_INSN_FN}; /* no function */
    hal_insn odd = {.kind = 200};
    cr_expect_eq(f.h->prog_check(&bad, 1), HAL_E_PARAM, "an FN instruction without a function");
    cr_expect_eq(f.h->prog_check(&odd, 1), HAL_E_PARAM, "an unknown kind");
    cr_expect_eq(f.h->prog_launch(f.s, &bad, 1), HAL_E_PARAM, "prog_launch refuses what prog_check refuses");
    cr_expect_eq(f.h->prog_check(NULL, 1), HAL_E_PARAM, "no instructions");
    HT_OK(f.h->prog_check(&good, 1));
    uint64_t checks = emu_prog_test_checks();
    bool queued = true;
    HT_OK(f.h->prog_run_now(f.s, &good, 1, f.e, &queued));
    cr_expect(!queued);
    cr_expect_eq(atomic_load(&log.n), 1, "the program did not run");
    cr_expect_eq(emu_prog_test_checks(), checks, "prog_run_now checked the program again");
    cr_expect_eq(f.h->prog_run_now(f.s, NULL, 1, f.e, &queued), HAL_E_PARAM, "no instructions");
    HT_OK(f.h->stream_sync(f.s, 30000));
    fix_close(&f);
}

/* prog_launch_checked queues a checked program, with its record where one is given, and does not
 * check it again; prog_launch_record checks it every time (what a queued launch of the runtime
 * paid at every call before). */
Test(emu_run_now, launch_checked_queues_without_a_check, .timeout = 60)
{
    now_fix f = fix_open();
    cr_assert_not_null(f.h->prog_launch_checked, "the emulator offers prog_launch_checked");
    static now_log log;
    static now_item it = {&log, 0, 0};
    hal_insn good = fn_insn(&it);
    HT_OK(f.h->prog_check(&good, 1));
    uint64_t checks = emu_prog_test_checks();
    HT_OK(f.h->prog_launch_checked(f.s, &good, 1, f.e));
    HT_OK(f.h->prog_launch_checked(f.s, &good, 1, NULL));
    cr_expect_eq(emu_prog_test_checks(), checks, "prog_launch_checked checked the program again");
    HT_OK(f.h->prog_launch_record(f.s, &good, 1, f.e));
    cr_expect_eq(emu_prog_test_checks(), checks + 1, "prog_launch_record did not check the program");
    cr_expect_eq(f.h->prog_launch_checked(NULL, &good, 1, f.e), HAL_E_PARAM, "no stream");
    cr_expect_eq(f.h->prog_launch_checked(f.s, NULL, 1, f.e), HAL_E_PARAM, "no instructions");
    HT_OK(f.h->stream_sync(f.s, 30000));
    HT_OK(f.h->event_sync(f.e, 30000));
    cr_expect_eq(atomic_load(&log.n), 3, "%d of the 3 programs ran", atomic_load(&log.n));
    fix_close(&f);
}

/* The stream's count of queued tasks (under its mutex). */
static uint64_t queued_tasks(hal_stream *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->enq;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* A record on an idle stream completes at once on the calling thread: no task, the event done when
 * the record returns, its time stamped (two such records time the host work between them). */
Test(emu_run_now, an_idle_streams_record_completes_at_once, .timeout = 60)
{
    now_fix f = fix_open();
    hal_event *t0, *t1;
    HT_OK(f.h->event_create(f.d, HAL_EVENT_TIMING, &t0));
    HT_OK(f.h->event_create(f.d, HAL_EVENT_TIMING, &t1));
    uint64_t now = emu_event_test_records_now(), tasks = queued_tasks(f.s);
    HT_OK(f.h->event_record(t0, f.s));
    cr_expect_eq(f.h->event_query(t0), HAL_OK, "a record on an idle stream was not done at its return");
    HT_OK(f.h->event_record(f.e, f.s));
    HT_OK(f.h->event_record(t1, f.s));
    cr_expect_eq(emu_event_test_records_now() - now, 3, "records on an idle stream went to its queue");
    cr_expect_eq(queued_tasks(f.s), tasks, "a record on an idle stream queued a task");
    HT_OK(f.h->event_query(f.e));
    float ms = -1;
    HT_OK(f.h->event_elapsed_ms(t0, t1, &ms));
    cr_expect(ms >= 0, "elapsed time %f ms between two records in a row", (double)ms);
    HT_OK(f.h->event_destroy(t0));
    HT_OK(f.h->event_destroy(t1));
    fix_close(&f);
}

/* A record behind work (a hold), or on a failed stream, goes to the queue: it completes after the
 * work, and carries the failure. */
Test(emu_run_now, a_record_behind_work_or_a_failure_is_queued, .timeout = 60)
{
    now_fix f = fix_open();
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->host_func_async(f.s, ht_gate_fn, &gate));
    uint64_t now = emu_event_test_records_now();
    HT_OK(f.h->event_record(f.e, f.s));
    cr_expect_eq(f.h->event_query(f.e), HAL_E_NOT_READY, "a record behind a hold completed before it");
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.e, 30000));
    emu_stream_fail(f.s, HAL_E_INTERNAL, "failed on purpose");
    cr_expect_eq(f.h->stream_sync(f.s, 30000), HAL_E_INTERNAL);
    HT_OK(f.h->event_record(f.e, f.s));
    cr_expect_eq(f.h->event_sync(f.e, 30000), HAL_E_INTERNAL, "a failed stream's record does not carry it");
    cr_expect_eq(emu_event_test_records_now(), now, "a record ran at once behind work or a failure");
    f.h->stream_clear_error(f.s);
    ht_gate_fini(&gate);
    fix_close(&f);
}

/* A record that completes without the lock read the event's error as none; if an older record of
 * the event, failed on another stream, completes under the lock before the newer one raises
 * rec_done, the error left in the event is the older record's. The event's latest record carried
 * none: syncs, queries and stream waits read none (each record's error goes with its number). */
Test(emu_run_now, a_newer_good_record_hides_an_older_ones_failure, .timeout = 60)
{
    now_fix f = fix_open();
    hal_event *e;
    HT_OK(f.h->event_create(f.d, 0, &e));
    hal_stream *waiter;
    HT_OK(f.h->stream_create(f.d, &waiter));
    emu_event_test_fast_past_failed(e, f.s, HAL_E_INTERNAL);
    cr_expect_eq(f.h->event_sync(e, 30000), HAL_OK, "an older record's failure read as the newer one's");
    cr_expect_eq(f.h->event_sync(e, -1), HAL_OK);
    HT_OK(f.h->stream_wait_event(waiter, e));
    cr_expect_eq(f.h->stream_sync(waiter, 30000), HAL_OK, "a wait for the newer record failed its stream");
    emu_stream_fail(f.s, HAL_E_INTERNAL, "failed on purpose"); /* a latest record that failed still says so */
    HT_OK(f.h->event_record(e, f.s));
    cr_expect_eq(f.h->event_sync(e, 30000), HAL_E_INTERNAL, "the latest record's own failure was lost");
    f.h->stream_clear_error(f.s);
    HT_OK(f.h->stream_destroy(waiter));
    HT_OK(f.h->event_destroy(e));
    fix_close(&f);
}

/* The program's instruction: notes whether the event that rides on it was done when it ran. */
typedef struct ride_probe {
    const hal_ops *h;
    hal_event *e;
    hal_result seen;
} ride_probe;

static int probe_fn(void *arg, char *msg, size_t len)
{
    (void)msg;
    (void)len;
    ride_probe *p = arg;
    p->seen = p->h->event_query(p->e);
    return 0;
}

/* Records behind a queued program ride on it (emu_event.c, ride): no task of their own, up to the
 * program's free record slots (a program launched without its own record has two); they complete
 * after it, time stamped then. The next record goes to the queue. */
Test(emu_run_now, a_record_behind_a_queued_program_rides_on_it, .timeout = 60)
{
    now_fix f = fix_open();
    hal_event *t1, *t2;
    HT_OK(f.h->event_create(f.d, HAL_EVENT_TIMING, &t1));
    HT_OK(f.h->event_create(f.d, HAL_EVENT_TIMING, &t2));
    static ride_probe probe;
    probe = (ride_probe){f.h, f.e, HAL_OK};
    static hal_insn prog[1];
    prog[0] = (hal_insn){.kind = HAL_INSN_FN};
    prog[0].u.fn.fn = probe_fn;
    prog[0].u.fn.arg = &probe;
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->host_func_async(f.s, ht_gate_fn, &gate));
    HT_OK(f.h->prog_launch(f.s, prog, 1));
    uint64_t tasks = queued_tasks(f.s);
    HT_OK(f.h->event_record(f.e, f.s));
    HT_OK(f.h->event_record(t1, f.s));
    cr_expect_eq(queued_tasks(f.s), tasks, "a record behind a queued program queued a task");
    HT_OK(f.h->event_record(t2, f.s));
    cr_expect_eq(queued_tasks(f.s), tasks + 1, "a third record found a slot on the program");
    cr_expect_eq(f.h->event_query(f.e), HAL_E_NOT_READY, "a record that rides completed before its program");
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.e, -1)); /* without deadline: runs the stream up to the program here */
    cr_expect_eq(probe.seen, HAL_E_NOT_READY, "the record completed before the program ran");
    HT_OK(f.h->event_sync(t2, 30000));
    HT_OK(f.h->event_query(t1));
    float ms = -1;
    HT_OK(f.h->event_elapsed_ms(t1, t2, &ms));
    cr_expect(ms >= 0, "elapsed time %f ms from a record that rode to the record behind it", (double)ms);
    HT_OK(f.h->event_destroy(t1));
    HT_OK(f.h->event_destroy(t2));
    ht_gate_fini(&gate);
    fix_close(&f);
}

/* A record that rides on a program that fails carries the failure, as a record task would; one
 * behind a launch with its own record takes the program's other slot. */
Test(emu_run_now, a_record_that_rides_carries_its_programs_failure, .timeout = 60)
{
    now_fix f = fix_open();
    hal_event *done;
    HT_OK(f.h->event_create(f.d, HAL_EVENT_SERIAL, &done));
    static now_log log;
    static now_item it;
    static hal_insn prog[1];
    it = (now_item){&log, 1, HAL_E_INTERNAL};
    prog[0] = fn_insn(&it);
    ht_gate gate;
    ht_gate_init(&gate);
    HT_OK(f.h->host_func_async(f.s, ht_gate_fn, &gate));
    HT_OK(f.h->prog_launch_record(f.s, prog, 1, done));
    uint64_t tasks = queued_tasks(f.s);
    HT_OK(f.h->event_record(f.e, f.s));
    cr_expect_eq(queued_tasks(f.s), tasks, "a record behind a program with its own record queued a task");
    ht_gate_open(&gate);
    cr_expect_eq(f.h->event_sync(f.e, 30000), HAL_E_INTERNAL, "a record that rode lost its program's failure");
    cr_expect_eq(f.h->event_sync(done, 30000), HAL_E_INTERNAL);
    cr_expect_eq(atomic_load(&log.n), 1, "the program did not run once");
    cr_expect_eq(f.h->stream_sync(f.s, 30000), HAL_E_INTERNAL);
    f.h->stream_clear_error(f.s);
    HT_OK(f.h->event_destroy(done));
    ht_gate_fini(&gate);
    fix_close(&f);
}

/* f.s waits for `held`, recorded on a second stream behind a gate (the wait is queued), and f.e
 * is recorded behind the wait, where it rides: no task of its own. Returns the second stream. */
static hal_stream *ride_a_wait(now_fix *f, hal_event *held, ht_gate *gate)
{
    hal_stream *other;
    HT_OK(f->h->stream_create(f->d, &other));
    HT_OK(f->h->host_func_async(other, ht_gate_fn, gate));
    HT_OK(f->h->event_record(held, other));
    HT_OK(f->h->stream_wait_event(f->s, held));
    cr_assert_eq(f->h->event_query(held), HAL_E_NOT_READY);
    uint64_t tasks = queued_tasks(f->s);
    HT_OK(f->h->event_record(f->e, f->s));
    cr_expect_eq(queued_tasks(f->s), tasks, "a record behind a queued wait queued a task");
    return other;
}

static void ride_close(now_fix *f, hal_stream *other, hal_event *held, ht_gate *gate)
{
    HT_OK(f->h->stream_destroy(other));
    HT_OK(f->h->event_destroy(held));
    ht_gate_fini(gate);
}

/* A record behind a queued event wait rides on it, as on a program: no task of its own, and it
 * completes when the wait is met. The next record goes to the queue (one slot). */
Test(emu_run_now, a_record_behind_a_queued_wait_rides_on_it, .timeout = 60)
{
    now_fix f = fix_open();
    hal_event *held, *second;
    HT_OK(f.h->event_create(f.d, 0, &held));
    HT_OK(f.h->event_create(f.d, 0, &second));
    ht_gate gate;
    ht_gate_init(&gate);
    hal_stream *other = ride_a_wait(&f, held, &gate);
    uint64_t tasks = queued_tasks(f.s);
    HT_OK(f.h->event_record(second, f.s));
    cr_expect_eq(queued_tasks(f.s), tasks + 1, "a second record found a slot on the wait");
    cr_expect_eq(f.h->event_query(f.e), HAL_E_NOT_READY, "a record that rides completed before its wait");
    ht_gate_open(&gate);
    HT_OK(f.h->event_sync(f.e, 30000));
    HT_OK(f.h->event_sync(second, 30000));
    cr_expect_eq(f.h->event_query(held), HAL_OK, "the wait's record was not done when the record behind it was");
    HT_OK(f.h->stream_sync(f.s, 30000));
    HT_OK(f.h->event_destroy(second));
    ride_close(&f, other, held, &gate);
    fix_close(&f);
}

/* A record that rides on a wait for a failed stream's record carries the failure the wait gives
 * its stream, as a record task behind it would. */
Test(emu_run_now, a_record_that_rides_on_a_wait_carries_its_failure, .timeout = 60)
{
    now_fix f = fix_open();
    hal_event *held;
    HT_OK(f.h->event_create(f.d, 0, &held));
    ht_gate gate;
    ht_gate_init(&gate);
    hal_stream *other = ride_a_wait(&f, held, &gate);
    emu_stream_fail(other, HAL_E_INTERNAL, "failed on purpose");
    ht_gate_open(&gate);
    cr_expect_eq(f.h->event_sync(held, 30000), HAL_E_INTERNAL);
    cr_expect_eq(f.h->event_sync(f.e, 30000), HAL_E_INTERNAL, "a record that rode on a failed wait lost its failure");
    cr_expect_eq(f.h->stream_sync(f.s, 30000), HAL_E_INTERNAL);
    f.h->stream_clear_error(f.s);
    f.h->stream_clear_error(other);
    ride_close(&f, other, held, &gate);
    fix_close(&f);
}

typedef struct recorder {
    const hal_ops *h;
    hal_event *e;
    hal_stream *s;
    atomic_int *left;
    pthread_barrier_t *start;
    hal_result rc;
} recorder;

#define RECORDS_EACH 20000

static void *record_loop(void *arg)
{
    recorder *r = arg;
    pthread_barrier_wait(r->start);
    for (int i = 0; i < RECORDS_EACH && r->rc == HAL_OK; i++)
        r->rc = r->h->event_record(r->e, r->s);
    atomic_fetch_sub(r->left, 1);
    return NULL;
}

/* Records at once take no lock (a sequence number by atomic increment, the completion without the
 * event's lock): two threads recording one event on two idle streams, while a third makes a stream
 * wait for it and syncs it, in between a record's number and its completion at times. Every call
 * succeeds, no wait or sync hangs (Criterion's timeout), and the event ends completed. */
Test(emu_run_now, records_at_once_from_two_threads_meet_every_wait_and_sync, .timeout = 120)
{
    now_fix f = fix_open();
    hal_event *e;
    HT_OK(f.h->event_create(f.d, 0, &e));
    hal_stream *s[2], *waiter;
    atomic_int left = 2;
    recorder r[2];
    pthread_t t[2];
    pthread_barrier_t start;
    cr_assert_eq(pthread_barrier_init(&start, NULL, 3), 0);
    HT_OK(f.h->stream_create(f.d, &waiter));
    for (int i = 0; i < 2; i++) {
        HT_OK(f.h->stream_create(f.d, &s[i]));
        r[i] = (recorder){f.h, e, s[i], &left, &start, HAL_OK};
        cr_assert_eq(pthread_create(&t[i], NULL, record_loop, &r[i]), 0);
    }
    pthread_barrier_wait(&start);
    uint64_t rounds = 0;
    do { /* beside the recorders while they run (how often depends on the scheduler) */
        HT_OK(f.h->stream_wait_event(waiter, e));
        if (++rounds % 16 == 0) {
            HT_OK(f.h->event_sync(e, -1));
            HT_OK(f.h->stream_sync(waiter, -1));
        }
    } while (atomic_load(&left) > 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_join(t[i], NULL), 0);
        cr_expect_eq(r[i].rc, HAL_OK, "recorder %d failed: %s", i, hal_result_name(r[i].rc));
        HT_OK(f.h->stream_destroy(s[i]));
    }
    HT_OK(f.h->event_sync(e, -1));
    cr_expect_eq(f.h->event_query(e), HAL_OK, "the event did not end completed");
    HT_OK(f.h->stream_wait_event(waiter, e));
    HT_OK(f.h->stream_sync(waiter, -1));
    pthread_barrier_destroy(&start);
    HT_OK(f.h->stream_destroy(waiter));
    HT_OK(f.h->event_destroy(e));
    fix_close(&f);
}
