/* Stream waits for events: a wait task waits for the record that was the latest at the wait call
 * (emu_event.c). Waits that would hold nothing back queue nothing: a record that completed without
 * error, or one queued behind nothing but the waiting stream's own earlier work. A stream whose
 * next task is a wait for an unmet record is kicked by the record's completion
 * (emu_stream_kick.c); otherwise its worker waits for it aside (emu_stream.c), or runs it here. */
#include <stdio.h>

#include "hal/emu/emu_event.h"

/* Enqueues a wait task of s for record seq of e, queued on stream `from` (NULL: unknown). */
static hal_result wait_enqueue(hal_event *e, hal_stream *s, uint64_t seq, hal_stream *from, uint32_t from_gen)
{
    emu_task *t = emu_task_new(EMU_T_EVENT_WAIT);
    if (!t)
        return HAL_E_NOMEM;
    atomic_fetch_add(&e->refs, 1);
    t->u.ev.e = e;
    t->u.ev.seq = seq;
    t->u.ev.from = from;
    t->u.ev.from_gen = from_gen;
    t->u.ev.rec = (emu_rec){NULL, 0};
    return emu_stream_push_at(s, t, NULL, NULL);
}

/* Whether t, ahead of a record in its stream's queue, waits for nothing but work of stream s
 * queued before: a record, an event wait for a record queued on s, or one met without error. */
static bool waits_for_own_work(const emu_task *t, const hal_stream *s)
{
    if (t->kind == EMU_T_EVENT_RECORD)
        return true;
    if (t->kind != EMU_T_EVENT_WAIT)
        return false;
    if (t->u.ev.from == s && t->u.ev.from_gen == s->gen)
        return true;
    return emu_event_wait_met(t) && emu_event_err(t->u.ev.e) == HAL_OK;
}

/* Whether t is record seq of e: a record task, or a wait for s's own work that it rides on. */
static bool is_record(const emu_task *t, const hal_event *e, uint64_t seq, const hal_stream *s)
{
    if (t->kind == EMU_T_EVENT_RECORD)
        return t->u.ev.e == e && t->u.ev.seq == seq;
    return t->kind == EMU_T_EVENT_WAIT && t->u.ev.rec.e == e && t->u.ev.rec.seq == seq && waits_for_own_work(t, s);
}

/* e->mu held, record target of e pending: whether it is a record task queued on another stream
 * behind nothing but waits for s's own earlier work, so that s's stream order already holds what
 * a wait for it would. A process group's compute stream waits for the collective stream's record
 * after every call and records the event that the collective stream waits for before the next:
 * where the calls go to the queue (8 B AllReduce at 4 ranks on 2 CPUs), the collective stream
 * waited for the compute stream's worker at every call (docs/emulator.md, "Waits for one's own
 * work"). The other stream's lock is taken after e's, as a record's push takes them. */
static bool behind_own_work_locked(const hal_event *e, const hal_stream *s, uint64_t target)
{
    hal_stream *o = e->rec_stream;
    if (target != e->rec_seq || e->rec_done >= target || !o || o == s || o->dev != s->dev)
        return false;
    pthread_mutex_lock(&o->mu);
    bool own = o->gen == e->rec_gen && o->err == HAL_OK && !emu_stream_running_locked(o);
    uint64_t pos = o->done + 1;
    const emu_task *t = o->head;
    if (own && o->own_for == s && o->own_for_gen == s->gen && o->own_upto >= pos && o->own_upto < e->rec_pos) {
        pos = o->own_upto + 1; /* the last scan's tasks are still queued: go on after them */
        t = o->own_last->next;
    }
    for (; own && t && pos < e->rec_pos; pos++, t = t->next) {
        own = waits_for_own_work(t, s);
        if (own) {
            o->own_for = s;
            o->own_for_gen = s->gen;
            o->own_upto = pos;
            o->own_last = t;
        }
    }
    own = own && t && is_record(t, e, target, s);
    pthread_mutex_unlock(&o->mu);
    return own;
}

/* Without e->mu: whether the latest record has completed without error (or there is none and an
 * unrecorded event's wait does not block), so that a wait now holds nothing back. A process
 * group's two waits around every call mostly find this; a record or reset made meanwhile by
 * another thread is as if made after the wait. */
static bool completed_now(hal_event *e)
{
    uint64_t enq = atomic_load_explicit(&e->rec_enq, memory_order_acquire);
    if (enq == atomic_load_explicit(&e->reset_mark, memory_order_relaxed))
        return !(e->flags & HAL_EVENT_WAIT_UNRECORDED_BLOCKS);
    return atomic_load_explicit(&e->rec_done, memory_order_acquire) >= enq &&
           emu_event_err(e) == HAL_OK && !emu_trace_on();
}

hal_result emu_stream_wait_event(hal_stream *s, hal_event *e)
{
    if (!e || !s)
        return HAL_E_PARAM;
    if (completed_now(e))
        return HAL_OK;
    pthread_mutex_lock(&e->mu);
    uint64_t target = e->rec_enq;
    if (target == e->reset_mark) /* nothing recorded since create/reset */
        target = e->flags & HAL_EVENT_WAIT_UNRECORDED_BLOCKS ? target + 1 : 0;
    /* met, or behind nothing but s's own earlier work: waiting would hold nothing back (a failed
     * record's wait fails s) */
    bool met = target == 0 || (!emu_trace_on() && ((e->rec_done >= target && emu_event_err(e) == HAL_OK) ||
                                                   behind_own_work_locked(e, s, target)));
    bool known = target == e->rec_seq && e->rec_done < target;
    hal_stream *from = known ? e->rec_stream : NULL;
    uint32_t from_gen = e->rec_gen;
    pthread_mutex_unlock(&e->mu);
    return met ? HAL_OK : wait_enqueue(e, s, target, from, from_gen);
}

bool emu_event_kick_on(const emu_task *t, hal_stream *s)
{
    hal_event *e = t->u.ev.e;
    emu_kick k = {s, s->gen, t->u.ev.seq};
    if (!emu_kicks_add(&e->kicks, k))
        return false;
    if (atomic_load(&e->rec_done) < k.seq) /* seq_cst, after the add: see emu_kicks */
        return true;
    emu_kicks_remove(&e->kicks, k); /* completed meanwhile: if its completer took k, s ignores it */
    return false;
}

void emu_event_kick_waiters(hal_event *e)
{
    if (!atomic_load(&e->kicks.n)) /* seq_cst, after raise_done's */
        return;
    emu_kick k[EMU_EVENT_KICKS];
    uint32_t n = emu_kicks_take(&e->kicks, atomic_load(&e->rec_done), k);
    for (uint32_t i = 0; i < n; i++)
        emu_stream_kick(k[i].s, k[i].gen);
}

bool emu_event_wait_met(const emu_task *t)
{
    return emu_event_reached((emu_rec){t->u.ev.e, t->u.ev.seq});
}

emu_rec emu_event_hold(const emu_task *t)
{
    atomic_fetch_add(&t->u.ev.e->refs, 1);
    return (emu_rec){t->u.ev.e, t->u.ev.seq};
}

void emu_event_await(emu_rec r, hal_device *dev)
{
    (void)emu_event_await_locked(r.e, r.seq, dev);
    pthread_mutex_unlock(&r.e->mu);
}

bool emu_event_reached(emu_rec r)
{
    return atomic_load_explicit(&r.e->rec_done, memory_order_acquire) >= r.seq;
}

/* The wait itself: HAL_OK, or the error it failed s with. */
static hal_result run_wait(hal_stream *s, emu_task *t)
{
    hal_event *e = t->u.ev.e;
    /* met without error, the common case: no lock (err is written before rec_done rises) */
    if (emu_event_wait_met(t) && emu_event_err(e) == HAL_OK)
        return HAL_OK;
    bool done = emu_event_await_locked(e, t->u.ev.seq, s->dev);
    hal_result err = emu_event_err(e);
    char msg[EMU_MSG_LEN];
    msg[0] = 0;
    if (err != HAL_OK)
        snprintf(msg, sizeof msg, "%s", e->msg);
    pthread_mutex_unlock(&e->mu);
    if (!done)
        emu_stream_fail(s, HAL_E_ABORTED, "event wait aborted: device %u is closing", s->dev->id);
    else if (err != HAL_OK)
        emu_stream_fail(s, err, "waited on an event recorded by a failed stream: %s", msg);
    else
        return HAL_OK;
    return emu_stream_err(s);
}

void emu_event_run_wait(hal_stream *s, emu_task *t, hal_result sticky)
{
    hal_result rc = sticky == HAL_OK ? run_wait(s, t) : sticky;
    if (t->u.ev.rec.e) /* as a record task behind the wait: it carries the error */
        emu_event_complete(s, t->u.ev.rec.e, t->u.ev.rec.seq, rc);
}
