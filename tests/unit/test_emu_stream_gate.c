/* The stream's gate (emu_stream_gate.c): a host thread running a program at once takes the executor
 * role of an idle stream with one compare-and-swap. It opens only once a run went through the
 * mutex and the stream is idle; what another thread does to the stream while the role is held
 * that way (queue a task, wait for it, fail it, destroy it) is seen by the holder's give-back,
 * which then goes through the mutex and wakes whoever waits: nothing is lost, nothing hangs, and
 * the stream's order holds (a task queued meanwhile runs after the holder, never beside it). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct gate_fix {
    const hal_ops *h;
    hal_device *d;
    hal_stream *s;
} gate_fix;

static gate_fix fix_open(void)
{
    gate_fix f = {.h = ht_hal()};
    f.d = ht_open(f.h, 0);
    HT_OK(f.h->stream_create(f.d, &f.s));
    return f;
}

static void fix_close(gate_fix *f)
{
    HT_OK(f->h->device_close(f->d));
}

static uint32_t gate_of(hal_stream *s)
{
    return atomic_load(&s->gate);
}

/* One run through the mutex: a new stream's gate is shut, and the give-back opens it. */
static void open_gate(hal_stream *s)
{
    cr_assert(emu_stream_take_idle(s), "an idle stream refused the role");
    emu_stream_give_back(s);
    cr_assert_eq(gate_of(s), EMU_GATE_OPEN, "an idle stream's gate stayed shut after a run");
}

static void wait_gate(hal_stream *s, uint32_t state)
{
    while (gate_of(s) != state)
        sched_yield();
}

/* Until a thread sleeps in a sync of s (one without deadline polls first, then sleeps too). */
static void wait_sync_sleeper(hal_stream *s)
{
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int n = s->sync_waiters;
        pthread_mutex_unlock(&s->mu);
        if (n)
            return;
        sched_yield();
    }
}

/* What the other thread does while the main one holds the role at the gate. */
typedef struct gate_peer {
    const hal_ops *h;
    hal_stream *s;
    hal_insn prog[1];
    atomic_int ran;       /* the task ran, on which thread */
    pthread_t ran_on;
    int32_t sync_ms;      /* its sync: -1 runs the tasks itself, else the worker does */
    hal_result launched, synced;
} gate_peer;

static int mark_fn(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    gate_peer *p = arg;
    p->ran_on = pthread_self();
    atomic_fetch_add(&p->ran, 1);
    return 0;
}

static void *peer_launch_sync(void *arg)
{
    gate_peer *p = arg;
    p->prog[0] = (hal_insn){.kind = HAL_INSN_FN};
    p->prog[0].u.fn.fn = mark_fn;
    p->prog[0].u.fn.arg = p;
    p->launched = p->h->prog_launch(p->s, p->prog, 1);
    p->synced = p->h->stream_sync(p->s, p->sync_ms);
    return NULL;
}

Test(emu_stream_gate, opens_once_idle_and_shuts_for_work, .timeout = 60)
{
    gate_fix f = fix_open();
    cr_expect_eq(gate_of(f.s), EMU_GATE_SHUT, "a new stream's gate is open before any run");
    open_gate(f.s);
    cr_assert(emu_stream_take_idle(f.s));
    cr_expect_eq(gate_of(f.s), EMU_GATE_HELD, "an open gate was not what the run took");
    emu_stream_give_back(f.s);
    cr_expect_eq(gate_of(f.s), EMU_GATE_OPEN);
    ht_gate hold;
    ht_gate_init(&hold);
    HT_OK(f.h->host_func_async(f.s, ht_gate_fn, &hold));
    cr_expect_eq(gate_of(f.s), EMU_GATE_SHUT, "a queued task left the gate open");
    cr_expect(!emu_stream_take_idle(f.s), "took the role of a stream with work queued");
    ht_gate_open(&hold);
    HT_OK(f.h->stream_sync(f.s, 30000));
    cr_expect_eq(gate_of(f.s), EMU_GATE_OPEN, "the worker left an idle stream's gate shut");
    emu_stream_test_park(f.s);
    cr_expect(!emu_stream_take_idle(f.s), "took the role of a parked stream");
    ht_gate_fini(&hold);
    fix_close(&f);
}

/* A program queued while the role is held at the gate waits for the holder, then runs: on the
 * worker (a timed sync sleeps) or on the syncing thread (a sync without deadline runs it). */
static void queued_while_held(int32_t sync_ms)
{
    gate_fix f = fix_open();
    open_gate(f.s);
    cr_assert(emu_stream_take_idle(f.s));
    static gate_peer p;
    p = (gate_peer){.h = f.h, .s = f.s, .sync_ms = sync_ms};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, peer_launch_sync, &p), 0);
    wait_gate(f.s, EMU_GATE_DIRTY); /* the launch marked the holder's gate */
    wait_sync_sleeper(f.s);          /* its sync sleeps until the holder gives the role back */
    cr_expect_eq(atomic_load(&p.ran), 0, "a task ran beside the role's holder");
    emu_stream_give_back(f.s);
    pthread_join(t, NULL);
    HT_OK(p.launched);
    HT_OK(p.synced);
    cr_expect_eq(atomic_load(&p.ran), 1);
    cr_expect_eq(pthread_equal(p.ran_on, t) != 0, sync_ms < 0, "the task ran on the %s",
                 sync_ms < 0 ? "worker, not the syncing thread" : "syncing thread, not the worker");
    cr_expect_eq(gate_of(f.s), EMU_GATE_OPEN, "an idle stream's gate stayed shut");
    fix_close(&f);
}

Test(emu_stream_gate, queued_while_held_the_worker_runs_it_after, .timeout = 60)
{
    queued_while_held(30000);
}

Test(emu_stream_gate, queued_while_held_a_host_sync_runs_it_after, .timeout = 60)
{
    queued_while_held(-1);
}

Test(emu_stream_gate, a_failure_while_held_keeps_it_shut, .timeout = 60)
{
    gate_fix f = fix_open();
    open_gate(f.s);
    cr_assert(emu_stream_take_idle(f.s));
    emu_stream_fail(f.s, HAL_E_INTERNAL, "failed on purpose");
    cr_expect_eq(gate_of(f.s), EMU_GATE_DIRTY);
    emu_stream_give_back(f.s);
    cr_expect_eq(gate_of(f.s), EMU_GATE_SHUT, "a failed stream's gate reopened");
    cr_expect(!emu_stream_take_idle(f.s), "took the role of a failed stream");
    emu_stream_clear_error(f.s);
    open_gate(f.s);
    fix_close(&f);
}

typedef struct destroyer {
    const hal_ops *h;
    hal_stream *s;
    atomic_bool done;
    hal_result rc;
} destroyer;

static void *destroy_stream(void *arg)
{
    destroyer *d = arg;
    d->rc = d->h->stream_destroy(d->s);
    atomic_store(&d->done, true);
    return NULL;
}

/* The worker ends only after the holder gave the role back. */
Test(emu_stream_gate, destroy_waits_for_the_holder, .timeout = 60)
{
    gate_fix f = fix_open();
    open_gate(f.s);
    cr_assert(emu_stream_take_idle(f.s));
    static destroyer d;
    d = (destroyer){.h = f.h, .s = f.s};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_stream, &d), 0);
    wait_gate(f.s, EMU_GATE_DIRTY); /* the destroy marked it */
    cr_expect(!atomic_load(&d.done), "the stream was destroyed under its holder");
    emu_stream_give_back(f.s);
    pthread_join(t, NULL);
    HT_OK(d.rc);
    HT_OK(f.h->device_close(f.d));
}

/* A record on a stream whose gate is open completes at the call and leaves the gate as it was (it
 * takes no role: record_now reads the gate once); one on a stream whose role is held at the gate
 * waits for the holder, then completes (here on the syncing thread, after the give-back). */
Test(emu_stream_gate, a_record_completes_at_an_open_gate_only, .timeout = 60)
{
    gate_fix f = fix_open();
    open_gate(f.s);
    hal_event *e;
    HT_OK(f.h->event_create(f.d, 0, &e));
    HT_OK(f.h->event_record(e, f.s));
    cr_expect_eq(f.h->event_query(e), HAL_OK, "a record at an open gate did not complete at the call");
    cr_expect_eq(gate_of(f.s), EMU_GATE_OPEN, "a record at an open gate changed it");
    cr_assert(emu_stream_take_idle(f.s));
    HT_OK(f.h->event_record(e, f.s));
    cr_expect_eq(f.h->event_query(e), HAL_E_NOT_READY, "a record completed while the role was held");
    cr_expect_eq(gate_of(f.s), EMU_GATE_DIRTY, "the queued record did not mark the holder's gate");
    emu_stream_give_back(f.s);
    HT_OK(f.h->event_sync(e, -1));
    cr_expect_eq(gate_of(f.s), EMU_GATE_OPEN, "an idle stream's gate stayed shut");
    HT_OK(f.h->event_destroy(e));
    fix_close(&f);
}
