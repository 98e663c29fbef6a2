/* The stream's gate: a host thread that runs a program at once on an idle stream
 * (emu_prog_run_now) takes the executor role with one compare-and-swap and gives it back with
 * another, where the stream's mutex took two locked instructions each way (an 8 B call on one rank:
 * 0.09 -> 0.07 us; docs/emulator.md, "The stream's gate").
 *
 * The gate is OPEN only while the stream is idle: no executor, nothing queued, no stop, park or
 * error. Every thread that changes one of those under s->mu first closes an open gate (OPEN ->
 * SHUT), and sees a gate taken meanwhile (HELD) as an executor: it marks it DIRTY, so that the
 * holder gives the role back through the mutex, and wakes whoever waits for it then. A holder
 * whose gate is still HELD at the end changed nothing anyone waits for: HELD -> OPEN is all it
 * does. The gate reopens under s->mu where an executor leaves the stream idle; a SHUT gate is
 * always safe, and only sends the next run through the mutex. */
#include "hal/emu/emu_internal.h"

bool emu_stream_gate_held_locked(hal_stream *s)
{
    uint32_t g = atomic_load_explicit(&s->gate, memory_order_acquire);
    for (;;) {
        if (g == EMU_GATE_SHUT || g == EMU_GATE_DIRTY)
            return g == EMU_GATE_DIRTY;
        uint32_t to = g == EMU_GATE_OPEN ? EMU_GATE_SHUT : EMU_GATE_DIRTY;
        if (atomic_compare_exchange_weak_explicit(&s->gate, &g, to, memory_order_acq_rel, memory_order_acquire))
            return to == EMU_GATE_DIRTY;
    }
}

bool emu_stream_running_locked(hal_stream *s)
{
    return s->running || emu_stream_gate_held_locked(s);
}

void emu_stream_gate_reopen_locked(hal_stream *s)
{
    if (!s->head && !s->running && !s->stop && !s->parked && s->err == HAL_OK &&
        atomic_load_explicit(&s->gate, memory_order_relaxed) == EMU_GATE_SHUT)
        atomic_store_explicit(&s->gate, EMU_GATE_OPEN, memory_order_release);
}

/* No executor, stop or error (s->mu held; the executor check shuts an open gate). */
static bool startable_locked(hal_stream *s)
{
    return !s->stop && s->err == HAL_OK && !emu_stream_running_locked(s);
}

/* Whether s is idle (s->mu held). Records and met event waits at the head of the queue, which
 * the worker has yet to reach, end here first. A framework records an event after every call and
 * makes its collective stream and its compute stream wait for each other's: such tasks left behind
 * one call that went to the queue kept every later call from running at once (8 B Broadcast at 2
 * ranks: 2.4 us a call in that pattern, 0.2 without events; docs/emulator.md, "Records and waits
 * that take no time"). A wait whose record has not completed is left to the record's kick
 * (emu_stream_kick.c) or the worker. Helping the recording stream up to the record from here
 * made this thread wait for the previous call's peers at every call where ranks outnumber CPUs
 * (64 B AllGather at 4 ranks in that pattern: 4.1 us a call against 3.1 without). */
static bool idle_locked(hal_stream *s)
{
    if (startable_locked(s) && emu_stream_head_instant_locked(s)) /* a host executor ran: that ends a park */
        (void)emu_stream_host_exec_locked(s, UINT64_MAX, EMU_EXEC_INSTANT);
    if (startable_locked(s) && s->head && !emu_stream_await_kick_locked(s))
        emu_stream_wake_worker_locked(s); /* the rest is the worker's */
    return startable_locked(s) && !s->parked && !s->head;
}

bool emu_stream_take_idle(hal_stream *s)
{
    uint32_t open = EMU_GATE_OPEN;
    if (atomic_compare_exchange_strong_explicit(&s->gate, &open, EMU_GATE_HELD, memory_order_acquire,
                                                memory_order_relaxed))
        return true;
    pthread_mutex_lock(&s->mu);
    bool idle = idle_locked(s);
    if (idle) {
        s->running = true;
        s->running_prog = true;
    }
    pthread_mutex_unlock(&s->mu);
    return idle;
}

bool emu_stream_idle_now(hal_stream *s)
{
    return atomic_load_explicit(&s->gate, memory_order_acquire) == EMU_GATE_OPEN;
}

void emu_stream_give_back(hal_stream *s)
{
    uint32_t g = EMU_GATE_HELD;
    if (atomic_compare_exchange_strong_explicit(&s->gate, &g, EMU_GATE_OPEN, memory_order_release,
                                                memory_order_acquire))
        return;
    pthread_mutex_lock(&s->mu);
    if (g == EMU_GATE_DIRTY) /* taken at the gate: nobody else writes a DIRTY gate */
        atomic_store_explicit(&s->gate, EMU_GATE_SHUT, memory_order_relaxed);
    else
        s->running = false;
    emu_stream_wake_locked(s); /* tasks queued meanwhile (another thread's, or the rest of the program) */
    emu_stream_gate_reopen_locked(s);
    pthread_mutex_unlock(&s->mu);
}
