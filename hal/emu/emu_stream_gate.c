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

bool emu_stream_take_idle(hal_stream *s)
{
    uint32_t open = EMU_GATE_OPEN;
    if (atomic_compare_exchange_strong_explicit(&s->gate, &open, EMU_GATE_HELD, memory_order_acquire,
                                                memory_order_relaxed))
        return true;
    pthread_mutex_lock(&s->mu);
    bool idle = !s->head && !s->stop && !s->parked && s->err == HAL_OK && !emu_stream_running_locked(s);
    if (idle) {
        s->running = true;
        s->running_prog = true;
    }
    pthread_mutex_unlock(&s->mu);
    return idle;
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
