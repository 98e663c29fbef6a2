/* Events: markers recorded on a stream and waited for by other streams or the host.
 *
 * Each record gets a sequence number at enqueue (rec_enq); when the record task runs it sets
 * rec_done (and the timestamp with HAL_EVENT_TIMING). A wait enqueued on a stream waits for the
 * record that was the latest at the time of the wait call (CUDA's rule). A never-recorded (or
 * reset) event completes a wait at once, unless HAL_EVENT_WAIT_UNRECORDED_BLOCKS: then the wait
 * waits for the next record (CANN's rule). Reset takes effect at the call.
 * Errors: a record on a failed stream still completes, carrying the stream's error; event_sync
 * returns it, and a stream waiting on it fails with the same code and message. The error is the
 * latest completed record's only (err_seq): a newer record may complete beside it, without the lock.
 * Waits are adaptive (emu_poll: spin, yield, then the condvar); a record broadcasts only when a
 * waiter sleeps. event_sync without deadline first runs the recording stream's queued tasks on
 * the calling thread up to the record, taking over from a worker at its next task boundary
 * (emu_stream_run_until). Stream waits are in emu_event_wait.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_event.h"
#include "hal/emu/emu_sys.h"


static void event_unlink(hal_event *e)
{
    hal_device *dev = e->dev;
    pthread_mutex_lock(&dev->mu);
    if (e->prev)
        e->prev->next = e->next;
    else if (dev->events == e)
        dev->events = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->next = e->prev = NULL;
    pthread_mutex_unlock(&dev->mu);
}

static void event_free(hal_event *e)
{
    emu_kicks_destroy(&e->kicks);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

void emu_event_put(hal_event *e)
{
    if (atomic_fetch_sub(&e->refs, 1) == 1)
        event_free(e);
}

void emu_events_free_all(hal_device *dev)
{
    for (;;) {
        pthread_mutex_lock(&dev->mu);
        hal_event *e = dev->events;
        pthread_mutex_unlock(&dev->mu);
        if (!e)
            break;
        emu_event_destroy(e);
    }
}

hal_result emu_event_create(hal_device *dev, uint32_t flags, hal_event **out)
{
    if (!out || !emu_device_live(dev))
        return HAL_E_PARAM;
    if (flags & ~(uint32_t)(HAL_EVENT_TIMING | HAL_EVENT_WAIT_UNRECORDED_BLOCKS | HAL_EVENT_SERIAL)) {
        OH_ERR("emu", "event_create: unknown flags 0x%x", flags);
        return HAL_E_PARAM;
    }
    hal_event *e = calloc(1, sizeof *e);
    if (!e)
        return HAL_E_NOMEM;
    e->dev = dev;
    e->flags = flags;
    pthread_mutex_init(&e->mu, NULL);
    emu_cond_init(&e->cv);
    emu_kicks_init(&e->kicks);
    atomic_init(&e->refs, 1);
    pthread_mutex_lock(&dev->mu);
    e->next = dev->events;
    if (dev->events)
        dev->events->prev = e;
    dev->events = e;
    pthread_mutex_unlock(&dev->mu);
    *out = e;
    return HAL_OK;
}

hal_result emu_event_destroy(hal_event *e)
{
    if (!e)
        return HAL_E_PARAM;
    pthread_mutex_lock(&e->mu);
    bool twice = e->destroyed;
    e->destroyed = true;
    pthread_mutex_unlock(&e->mu);
    if (twice)
        return HAL_E_PARAM;
    event_unlink(e);
    emu_event_put(e); /* pending tasks keep it alive until they ran */
    return HAL_OK;
}

/* The record's bookkeeping (rec_enq and where a sync finds the record) is set and read by callers
 * of the event's API only, under e->mu, unless they serialize their calls (HAL_EVENT_SERIAL): a
 * loop of small collectives records and helps one launch event per call, and those two locks were
 * a third of its lock operations. Completion (rec_done, err) never needs them. */
static void serial_lock(hal_event *e)
{
    if (!(e->flags & HAL_EVENT_SERIAL))
        pthread_mutex_lock(&e->mu);
}

static void serial_unlock(hal_event *e)
{
    if (!(e->flags & HAL_EVENT_SERIAL))
        pthread_mutex_unlock(&e->mu);
}

/* Publishes the next record's sequence number. A serial event's caller serializes its calls: a
 * plain store. Other events take an atomic increment, so that a record on an idle stream
 * (record_now) needs no e->mu: the sequence number is all of the bookkeeping it changes. */
static uint64_t next_record(hal_event *e)
{
    if (!(e->flags & HAL_EVENT_SERIAL))
        return atomic_fetch_add_explicit(&e->rec_enq, 1, memory_order_acq_rel) + 1;
    uint64_t seq = atomic_load_explicit(&e->rec_enq, memory_order_relaxed) + 1;
    atomic_store_explicit(&e->rec_enq, seq, memory_order_release);
    return seq;
}

/* e->mu held (or the caller serializes): queued record seq is the one a sync helps towards. */
static void note_queued(hal_event *e, uint64_t seq, hal_stream *s, uint32_t gen, uint64_t pos)
{
    e->rec_stream = s;
    e->rec_gen = gen;
    e->rec_pos = pos;
    e->rec_seq = seq;
}

/* e->mu across the push (then s->mu: the order emu_event_complete takes them in), so the
 * record's sequence number and where a sync finds it are set together, one lock per record. */
hal_result emu_event_push_record(hal_event *e, hal_stream *s, emu_task *t, uint64_t *seq_slot)
{
    if (s->dev != e->dev) {
        OH_ERR("emu", "event of device %u recorded on a stream of device %u", e->dev->id, s->dev->id);
        t->kind = EMU_T_HOST; /* holds no reference of e yet */
        emu_task_free(t);
        return HAL_E_PARAM;
    }
    serial_lock(e);
    uint64_t seq = next_record(e), pos;
    uint32_t gen;
    atomic_fetch_add(&e->refs, 1); /* the task's: dropped by emu_task_release_refs */
    *seq_slot = seq;
    hal_result rc = emu_stream_push_at(s, t, &pos, &gen);
    if (rc == HAL_OK) /* a sync may run the stream up to the record */
        note_queued(e, seq, s, gen, pos);
    else /* never queued: a sync must not wait for it (unless a record_now came after it: then for that one) */
        (void)atomic_compare_exchange_strong(&e->rec_enq, &seq, seq - 1);
    serial_unlock(e);
    return rc;
}

hal_result emu_event_reset(hal_event *e, hal_stream *s)
{
    if (!e || !s)
        return HAL_E_PARAM;
    pthread_mutex_lock(&e->mu);
    e->reset_mark = e->rec_enq;
    pthread_mutex_unlock(&e->mu);
    return HAL_OK;
}

void emu_event_run_record(hal_stream *s, emu_task *t, hal_result sticky)
{
    emu_event_complete(s, t->u.ev.e, t->u.ev.seq, sticky);
}

/* rec_done only grows, also when two streams complete records of one event at once. */
static void raise_done(hal_event *e, uint64_t seq)
{
    uint64_t cur = atomic_load_explicit(&e->rec_done, memory_order_relaxed);
    while (cur < seq && !atomic_compare_exchange_weak(&e->rec_done, &cur, seq))
        ;
}

/* The common completion, without e->mu: no error to carry, no time to stamp (a loop of small
 * calls completes one launch event per call). It reads `sleepers` after raising rec_done, and a
 * sleeper counts itself before it reads rec_done (sleep_locked): a sleeper that missed the raise
 * is woken. */
static bool complete_fast(hal_event *e, uint64_t seq)
{
    if (e->flags & HAL_EVENT_TIMING || atomic_load_explicit(&e->err, memory_order_relaxed) != HAL_OK)
        return false;
    raise_done(e, seq);
    if (atomic_load(&e->sleepers)) {
        pthread_mutex_lock(&e->mu);
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
    emu_event_kick_waiters(e);
    return true;
}

/* e->mu held: record seq completes at `now`, carrying sticky (and s's message with it). */
static void complete_locked(hal_stream *s, hal_event *e, uint64_t seq, hal_result sticky, uint64_t now)
{
    if (seq <= atomic_load_explicit(&e->rec_done, memory_order_relaxed))
        return;
    e->ts_ns = now;
    atomic_store_explicit(&e->err_seq, (uint32_t)seq, memory_order_relaxed);
    e->err = sticky;
    if (sticky != HAL_OK) {
        pthread_mutex_lock(&s->mu);
        snprintf(e->msg, sizeof e->msg, "%s", s->msg);
        pthread_mutex_unlock(&s->mu);
    }
    raise_done(e, seq); /* after err/msg/ts: a poller that sees it takes mu before reading them */
    if (e->sleepers)
        pthread_cond_broadcast(&e->cv);
}

/* Only elapsed_ms reads an event's time. */
static uint64_t stamp(const hal_event *e)
{
    return e->flags & HAL_EVENT_TIMING ? emu_now_ns() : 0;
}

void emu_event_complete(hal_stream *s, hal_event *e, uint64_t seq, hal_result sticky)
{
    if (sticky == HAL_OK && complete_fast(e, seq))
        return;
    uint64_t now = stamp(e);
    pthread_mutex_lock(&e->mu);
    complete_locked(s, e, seq, sticky, now);
    pthread_mutex_unlock(&e->mu);
    emu_event_kick_waiters(e);
}

static _Atomic uint64_t g_records_now; /* records record_now completed: for tests */

uint64_t emu_event_test_records_now(void)
{
    return atomic_load(&g_records_now);
}

void emu_event_test_fast_past_failed(hal_event *e, hal_stream *s, hal_result err)
{
    uint64_t older = next_record(e), newer = next_record(e);
    emu_event_complete(s, e, older, err);
    raise_done(e, newer);
}

/* A record on an idle stream (nothing queued, no executor, no error, not parked:
 * emu_stream_take_idle): everything before it on s has completed, so it completes here, at once,
 * as its task would at the head of the queue, without the task and without waking the sleeping
 * worker for it (a futex call of microseconds on a VM, then the woken worker's CPU time beside the
 * caller's: the perf tool's start and end events cost a loop of 1000 8 B Broadcasts at 2 ranks
 * 7-12 us). Not while the timeline trace records (every record is timed as a task there). No
 * e->mu either, unless the record stamps a time or clears an error (emu_event_complete): a process
 * group records two events around every call, and their locks were 2 of the call's 4. */
static bool record_now(hal_event *e, hal_stream *s)
{
    if (s->dev != e->dev || emu_trace_on())
        return false;
    /* An open gate: idle now, and nothing needs holding while the record completes. Work another
     * thread enqueues on s meanwhile, unordered with this call, is as if enqueued after it. */
    bool open = emu_stream_idle_now(s);
    if (!open && !emu_stream_take_idle(s))
        return false;
    emu_event_complete(s, e, next_record(e), HAL_OK);
    if (!open)
        emu_stream_give_back(s);
    atomic_store_explicit(&g_records_now, atomic_load_explicit(&g_records_now, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return true;
}

/* A record behind a queued program rides on it: the program's task completes it after the
 * launch's own record (EMU_PROG_RECORDS), as a record task right behind it would complete, without
 * the task. A framework records an event after every call. Where a launch went to the queue (its
 * program stopped at a wait), that record went behind it as a task of its own; the host's help ran
 * the launch up to its own record and left the user's queued, so the next launch found the stream
 * busy and queued too, and so on: a loop of 8 B AllReduce at 2 ranks with a record after each call
 * ran 95% of its calls through the queue, against 1% without the records. A record behind a queued
 * event wait rides on the wait likewise: a process group's compute stream, between two calls that
 * went to the queue, holds a wait for the collective's record and the record of the event the next
 * call waits for, and that record's task cost 8 B AllReduce at 4 ranks about 0.4 us a call. Not
 * while the timeline trace records (every record is a task there). */
static bool ride(hal_event *e, hal_stream *s)
{
    if (s->dev != e->dev || emu_trace_on())
        return false;
    serial_lock(e);
    pthread_mutex_lock(&s->mu);
    emu_task *t = s->tail; /* queued, so not running: its executor pops it under s->mu first */
    emu_rec *slot = NULL;
    if (t && !s->stop && t->kind == EMU_T_PROG)
        for (uint32_t i = 0; i < EMU_PROG_RECORDS && !slot; i++)
            slot = t->u.prog.rec[i].e ? NULL : &t->u.prog.rec[i];
    if (t && !s->stop && t->kind == EMU_T_EVENT_WAIT && !t->u.ev.rec.e)
        slot = &t->u.ev.rec;
    if (slot) { /* where a sync finds it: the tail's position is the latest enqueue's */
        atomic_fetch_add(&e->refs, 1); /* the task's: dropped by emu_task_release_refs */
        slot->seq = next_record(e);
        slot->e = e;
        note_queued(e, slot->seq, s, s->gen, s->enq);
    }
    pthread_mutex_unlock(&s->mu);
    serial_unlock(e);
    return slot != NULL;
}

hal_result emu_event_record(hal_event *e, hal_stream *s)
{
    if (!e || !s)
        return HAL_E_PARAM;
    if (record_now(e, s) || ride(e, s))
        return HAL_OK;
    emu_task *t = emu_task_new(EMU_T_EVENT_RECORD);
    if (!t)
        return HAL_E_NOMEM;
    t->u.ev.e = e;
    return emu_event_push_record(e, s, t, &t->u.ev.seq);
}

bool emu_event_poll(hal_event *e, uint64_t seq)
{
    const emu_config *cfg = emu_cfg();
    emu_poll p;
    emu_poll_init(&p, cfg->spin_ns, emu_wait_yield_ns());
    do {
        if (atomic_load_explicit(&e->rec_done, memory_order_acquire) >= seq)
            return true;
    } while (emu_poll_step(&p));
    return false;
}

/* e->mu held: sleeps on e->cv until record seq completed (or the deadline, 0: none, or a spurious
 * wake). The sleeper counts itself in `sleepers` before it reads rec_done, and a completion
 * without the lock (complete_fast) raises rec_done before it reads `sleepers`, both seq_cst: one
 * of the two sees the other. Reading rec_done first left a window in which a completion on
 * another thread found no sleeper and a sync without deadline slept for good. */
static int sleep_locked(hal_event *e, uint64_t seq, uint64_t deadline)
{
    e->sleepers++;
    int w = atomic_load(&e->rec_done) < seq ? emu_cond_wait_until(&e->cv, &e->mu, deadline) : 0;
    e->sleepers--;
    return w;
}

bool emu_event_await_locked(hal_event *e, uint64_t seq, hal_device *dev)
{
    emu_event_poll(e, seq);
    pthread_mutex_lock(&e->mu);
    /* Slices of 200 ms only to notice device close; a plain wait otherwise. */
    while (e->rec_done < seq && !atomic_load(&dev->closing))
        (void)sleep_locked(e, seq, emu_now_ns() + 200000000ull);
    return e->rec_done >= seq;
}

/* The record a sync or query waits for: the latest, or 0 if none since create or reset. */
static uint64_t sync_target(hal_event *e)
{
    uint64_t enq = atomic_load_explicit(&e->rec_enq, memory_order_acquire);
    return enq == atomic_load_explicit(&e->reset_mark, memory_order_relaxed) ? 0 : enq;
}

/* e->mu held: the stream, slot generation and position of the record `target` waits for, if it
 * has not completed and its stream is known. */
static bool pending_record(const hal_event *e, uint64_t target, hal_stream **s, uint32_t *gen, uint64_t *pos)
{
    *s = e->rec_stream;
    *gen = e->rec_gen;
    *pos = e->rec_pos;
    return e->rec_done < target && *s && e->rec_seq == target;
}

hal_result emu_event_sync(hal_event *e, int32_t timeout_ms)
{
    if (!e)
        return HAL_E_PARAM;
    uint64_t target = sync_target(e);
    if (atomic_load_explicit(&e->rec_done, memory_order_acquire) >= target) /* done: no lock */
        return target ? emu_event_err(e) : HAL_OK;
    uint64_t deadline = emu_deadline_ms(timeout_ms);
    pthread_mutex_lock(&e->mu);
    target = sync_target(e);
    hal_stream *s;
    uint32_t gen;
    uint64_t pos;
    if (timeout_ms < 0 && pending_record(e, target, &s, &gen, &pos)) { /* no hand-off: run it here */
        pthread_mutex_unlock(&e->mu);
        emu_stream_run_until(s, gen, pos);
        (void)emu_event_poll(e, target); /* the stream was destroyed since (another gen) */
        pthread_mutex_lock(&e->mu);
    }
    hal_result rc = HAL_OK;
    while (e->rec_done < target) {
        int w = sleep_locked(e, target, deadline);
        if (w == ETIMEDOUT && e->rec_done < target) {
            rc = HAL_E_TIMEOUT;
            break;
        }
    }
    if (rc == HAL_OK && target)
        rc = emu_event_err(e);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* event_sync's "run it here", helping only (emu_stream_help_until), and no sleep. */
hal_result emu_event_help(hal_event *e)
{
    if (!e)
        return HAL_E_PARAM;
    uint64_t target = sync_target(e);
    if (atomic_load_explicit(&e->rec_done, memory_order_acquire) < target) {
        hal_stream *s;
        uint32_t gen;
        uint64_t pos;
        serial_lock(e);
        bool pending = pending_record(e, sync_target(e), &s, &gen, &pos);
        serial_unlock(e);
        if (pending)
            emu_stream_help_until(s, gen, pos);
    }
    if (atomic_load_explicit(&e->rec_done, memory_order_acquire) < target)
        return HAL_E_NOT_READY;
    return target ? emu_event_err(e) : HAL_OK;
}

hal_result emu_event_query(hal_event *e)
{
    if (!e)
        return HAL_E_PARAM;
    return atomic_load_explicit(&e->rec_done, memory_order_acquire) >= sync_target(e) ? HAL_OK : HAL_E_NOT_READY;
}

int emu_event_recorded(hal_event *e)
{
    if (!e)
        return 0;
    pthread_mutex_lock(&e->mu);
    int r = e->rec_enq != e->reset_mark;
    pthread_mutex_unlock(&e->mu);
    return r;
}

hal_result emu_event_elapsed_ms(hal_event *start, hal_event *end, float *ms)
{
    if (!start || !end || !ms)
        return HAL_E_PARAM;
    if (!(start->flags & HAL_EVENT_TIMING) || !(end->flags & HAL_EVENT_TIMING)) {
        OH_ERR("emu", "event_elapsed_ms: both events need HAL_EVENT_TIMING");
        return HAL_E_PARAM;
    }
    if (emu_event_query(start) != HAL_OK || emu_event_query(end) != HAL_OK)
        return HAL_E_NOT_READY;
    pthread_mutex_lock(&start->mu);
    uint64_t a = start->ts_ns, ra = start->rec_done;
    pthread_mutex_unlock(&start->mu);
    pthread_mutex_lock(&end->mu);
    uint64_t b = end->ts_ns, rb = end->rec_done;
    pthread_mutex_unlock(&end->mu);
    if (!ra || !rb)
        return HAL_E_NOT_READY;
    *ms = (float)((double)((int64_t)(b - a)) / 1e6);
    return HAL_OK;
}
