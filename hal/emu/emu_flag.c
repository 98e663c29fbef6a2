/* Flag waits (hal.h, hal_flag_wait): a stream waits until a word of device memory reaches a
 * value. It polls the word as a notify wait polls its count (spin while the writer likely runs on
 * another core, then yield: emu_sys.h, emu_poll), then sleeps on a notify of its own device,
 * which the writer's notify_wake records only while someone sleeps there. So in the common case
 * the flag's line is the only one both sides touch: the writer stores data and flag, the reader
 * loads them. A notify handshake per call costs a compare-and-swap on a line the reader just
 * read, which waits for that line to come back from the reader's core (docs/emulator.md, "Flag
 * waits"). */
#include <stdio.h>

#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

static bool aborted(const hal_flag_wait *w)
{
    return w->abort_flag && *w->abort_flag;
}

/* Polls for at most `budget` ns (spin, then yield), from *start (when the poll began); true once
 * the flag is met. */
static bool flag_polled(const hal_flag_wait *w, uint64_t budget, uint64_t *start)
{
    emu_poll p;
    emu_wait_poll_init(&p, budget);
    *start = p.t0;
    do {
        if (hal_flag_met(w))
            return true;
    } while (!aborted(w) && emu_poll_step(&p));
    return false;
}

/* The signals there are wake-ups only: taken, so the count stays small. */
static void take_all(emu_notify_slot *slot, uint32_t gen)
{
    uint64_t word = atomic_load(&slot->word);
    while (EMU_NOTIFY_GEN(word) == gen && EMU_NOTIFY_COUNT(word) &&
           !atomic_compare_exchange_weak(&slot->word, &word, (uint64_t)gen << 32))
        ;
}

/* After the poll: sleeps on w->wake in slices, running the caller's check before each sleep. A
 * sleeper counts itself in the slot's waiters and fences before it runs the check and reads the
 * flag; a writer stores the flag (and what the check reads) and fences before it reads the
 * waiters (emu_notify_do_wake): one of the two sees the other. */
static bool flag_asleep(hal_stream *s, const hal_flag_wait *w, uint64_t start)
{
    uint32_t gen;
    emu_notify_slot *slot = emu_notify_slot_of(w->wake, &gen);
    uint64_t ms = w->timeout_ms ? w->timeout_ms : emu_cfg()->exec_timeout_ms;
    uint64_t deadline = ms ? start + ms * 1000000ull : 0;
    for (;;) {
        emu_wait_stop why = emu_wait_stopped(s, w->abort_flag, deadline);
        if (why != EMU_STOP_NONE) {
            char what[96];
            snprintf(what, sizeof what, "flag wait (at %p, for %llu, found %llu) of device %u", (const void *)w->flag,
                     (unsigned long long)w->at_least, (unsigned long long)*w->flag, s->dev->id);
            emu_wait_fail(s, why, what, start);
            return false;
        }
        uint64_t slice = emu_wait_slice_ns(deadline);
        atomic_fetch_add(&slot->waiters, 1);
        atomic_thread_fence(memory_order_seq_cst);
        if (!emu_wait_check_ok(s, w->check, w->check_arg)) { /* counted in: a wake after it is not lost */
            atomic_fetch_sub(&slot->waiters, 1);
            return false;
        }
        uint64_t word = atomic_load(&slot->word);
        if (EMU_NOTIFY_GEN(word) != gen) {
            atomic_fetch_sub(&slot->waiters, 1);
            emu_stream_fail(s, HAL_E_PEER, "flag wait: its notify was destroyed (generation %u is gone)", gen);
            return false;
        }
        bool woken = !hal_flag_met(w) && emu_futex_wait_bits(emu_notify_count_word(slot), EMU_NOTIFY_COUNT(word),
                                                              slice, EMU_WAKE_ANY);
        if (!woken) /* a record that woke this wait counted it out (emu_notify_do_record) */
            atomic_fetch_sub(&slot->waiters, 1);
        take_all(slot, gen);
        if (hal_flag_met(w))
            return true;
    }
}

emu_wait_end emu_flag_do_wait(hal_stream *s, const hal_flag_wait *w, uint64_t poll_ns)
{
    if (hal_flag_met(w))
        return EMU_WAIT_MET; /* the common case in a run ahead: no clock read (tens of ns in a VM) */
    uint64_t start;
    if (flag_polled(w, poll_ns ? poll_ns : UINT64_MAX, &start))
        return EMU_WAIT_MET;
    if (poll_ns && !aborted(w))
        return EMU_WAIT_LATER; /* the worker sleeps in it, not a helping host thread */
    return flag_asleep(s, w, start) ? EMU_WAIT_MET : EMU_WAIT_FAILED;
}
