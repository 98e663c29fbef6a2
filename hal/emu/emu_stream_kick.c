/* Kicks: a stream whose worker sleeps and whose next task is a wait for another stream's event
 * record is run by the record's completion instead of by its worker.
 *
 * A process group's compute stream waits for the collective stream's record after every call.
 * Where the calls go to the queue (small collectives at more ranks than CPUs), that wait woke the
 * compute stream's worker for its enqueue, the worker then waited aside for the record and was
 * woken again at its completion, and then polled for more work: futex calls and context switches
 * on CPUs the ranks share. Now the enqueue registers the stream with the event and wakes nobody
 * (and a worker that reaches such a wait registers it and sleeps); the thread that completes the
 * record (the collective stream's executor) runs the met wait and the records behind it, which
 * take no time, and wakes the worker only for other work. 64 B at 4 ranks in that pattern, in
 * place: AllReduce 4.6-4.8 -> 4.0 us a call, AllGather 4.2-4.4 -> 3.6-3.8, and a quarter less
 * kernel time (docs/emulator.md, "Kicks"). The event's list is short (EMU_EVENT_KICKS); a stream
 * that finds it full waits as before (emu_stream.c, await_head). */
#include "hal/emu/emu_internal.h"

void emu_kicks_init(emu_kicks *l)
{
    pthread_mutex_init(&l->mu, NULL);
    atomic_init(&l->n, 0);
}

void emu_kicks_destroy(emu_kicks *l)
{
    pthread_mutex_destroy(&l->mu);
}

bool emu_kicks_add(emu_kicks *l, emu_kick k)
{
    pthread_mutex_lock(&l->mu);
    uint32_t n = atomic_load_explicit(&l->n, memory_order_relaxed);
    bool room = n < EMU_EVENT_KICKS;
    if (room) {
        l->k[n] = k;
        atomic_store(&l->n, n + 1); /* seq_cst: before the caller reads rec_done */
    }
    pthread_mutex_unlock(&l->mu);
    return room;
}

static bool same_kick(const emu_kick *a, const emu_kick *b)
{
    return a->s == b->s && a->gen == b->gen && a->seq == b->seq;
}

void emu_kicks_remove(emu_kicks *l, emu_kick k)
{
    pthread_mutex_lock(&l->mu);
    uint32_t n = atomic_load_explicit(&l->n, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        if (same_kick(&l->k[i], &k)) {
            l->k[i] = l->k[n - 1];
            atomic_store_explicit(&l->n, n - 1, memory_order_relaxed);
            break;
        }
    pthread_mutex_unlock(&l->mu);
}

uint32_t emu_kicks_take(emu_kicks *l, uint64_t done, emu_kick out[EMU_EVENT_KICKS])
{
    uint32_t taken = 0;
    pthread_mutex_lock(&l->mu);
    uint32_t n = atomic_load_explicit(&l->n, memory_order_relaxed);
    for (uint32_t i = 0; i < n;) {
        if (l->k[i].seq <= done) {
            out[taken++] = l->k[i];
            l->k[i] = l->k[--n];
        } else {
            i++;
        }
    }
    atomic_store_explicit(&l->n, n, memory_order_relaxed);
    pthread_mutex_unlock(&l->mu);
    return taken;
}

/* s->mu held: nothing executes s, nor wants to, and its head waits aside. */
static bool kickable_locked(hal_stream *s)
{
    return !s->awaiting && !s->stop && !s->parked && !s->host_wants && emu_stream_waits_aside_locked(s) &&
           !emu_stream_running_locked(s);
}

bool emu_stream_await_kick_locked(hal_stream *s)
{
    if (s->sleeping && kickable_locked(s))
        s->awaiting = emu_event_kick_on(s->head, s);
    return s->awaiting;
}

bool emu_stream_worker_await_kick_locked(hal_stream *s)
{
    if (kickable_locked(s))
        s->awaiting = emu_event_kick_on(s->head, s);
    return s->awaiting;
}

/* No stop, error or executor, not parked (s->mu held; the executor check shuts an open gate). */
static bool drivable_locked(hal_stream *s)
{
    return !s->stop && s->err == HAL_OK && !s->parked && !emu_stream_running_locked(s);
}

static _Atomic uint64_t g_kicks; /* kicks that found their stream awaiting: for tests */

uint64_t emu_stream_test_kicks(void)
{
    return atomic_load(&g_kicks);
}

void emu_stream_kick(hal_stream *s, uint32_t gen)
{
    pthread_mutex_lock(&s->mu);
    if (s->gen == gen && s->awaiting) {
        atomic_fetch_add_explicit(&g_kicks, 1, memory_order_relaxed);
        s->awaiting = false;
        if (emu_stream_head_instant_locked(s) && drivable_locked(s))
            (void)emu_stream_host_exec_locked(s, UINT64_MAX, EMU_EXEC_INSTANT);
        if (!emu_stream_await_kick_locked(s))
            emu_stream_wake_worker_locked(s);
    }
    pthread_mutex_unlock(&s->mu);
}
