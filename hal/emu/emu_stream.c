/* Streams: a FIFO task queue with exactly one executor at a time (`running`): the stream's worker
 * thread, or a host thread blocked in a sync without deadline, which runs the queued tasks itself
 * instead of sleeping while the worker runs them (no hand-off when the host waits anyway; the
 * worker stays for true asynchrony; emu_stream_host.c), or a host thread running a program at
 * once, which takes the role of an idle stream at its gate (emu_stream_gate.c). Enqueue takes the
 * stream mutex and signals the worker only when it sleeps and no host executes; tasks come from a
 * pool (emu_task_pool.c). Sticky error: the first failing task records code + message; later
 * tasks are skipped, except event records, which complete carrying the error.
 *
 * Streams live in slots of a table reserved once per process and never unmapped (type-stable
 * memory): emu_stream_live is a range check and one atomic load, and a stale pointer (an event
 * recorded on a stream destroyed since) is detected by the slot's generation under its mutex,
 * which stays initialized for the life of the process. */
#define _GNU_SOURCE /* SCHED_BATCH */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#define EMU_MAX_STREAMS 16384u /* per process; the table reserves address space, not memory */

static pthread_mutex_t g_slots_mu = PTHREAD_MUTEX_INITIALIZER; /* create/destroy only */
static _Atomic(hal_stream *) g_slots;  /* EMU_MAX_STREAMS slots */
static uint32_t g_fresh;               /* slots [g_fresh, max) never used */
static uint32_t g_ring[EMU_MAX_STREAMS]; /* freed slots, FIFO: a freed handle is reused last */
static uint32_t g_ring_head, g_ring_n;

bool emu_stream_live(const hal_stream *s)
{
    hal_stream *base = atomic_load_explicit(&g_slots, memory_order_acquire);
    uintptr_t off = (uintptr_t)s - (uintptr_t)base;
    if (!base || off >= (uintptr_t)EMU_MAX_STREAMS * sizeof *s || off % sizeof *s)
        return false;
    return atomic_load_explicit(&s->live, memory_order_acquire) != 0;
}

/* A free slot, or NULL (g_slots_mu held). */
static hal_stream *slot_take_locked(void)
{
    hal_stream *base = atomic_load(&g_slots);
    if (!base) {
        void *p = mmap(NULL, (size_t)EMU_MAX_STREAMS * sizeof *base, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
#ifdef __SANITIZE_ADDRESS__
        /* LeakSanitizer scans no anonymous mapping: the task pools of streams alive at exit hang
         * off this table only and would be reported lost. */
        __lsan_register_root_region(p, (size_t)EMU_MAX_STREAMS * sizeof *base);
#endif
        base = p;
        atomic_store_explicit(&g_slots, base, memory_order_release);
    }
    if (g_ring_n) {
        uint32_t i = g_ring[g_ring_head];
        g_ring_head = (g_ring_head + 1) % EMU_MAX_STREAMS;
        g_ring_n--;
        return &base[i];
    }
    return g_fresh < EMU_MAX_STREAMS ? &base[g_fresh++] : NULL;
}

static void slot_put(hal_stream *s)
{
    pthread_mutex_lock(&g_slots_mu);
    uint32_t i = (uint32_t)(s - atomic_load(&g_slots));
    g_ring[(g_ring_head + g_ring_n) % EMU_MAX_STREAMS] = i;
    g_ring_n++;
    pthread_mutex_unlock(&g_slots_mu);
}

void emu_stream_fail(hal_stream *s, hal_result rc, const char *fmt, ...)
{
    pthread_mutex_lock(&s->mu);
    (void)emu_stream_gate_held_locked(s); /* not idle any more: the gate shuts (or its holder goes through mu) */
    if (s->err == HAL_OK) {
        s->err = rc;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->msg, sizeof s->msg, fmt, ap);
        va_end(ap);
        OH_ERR("emu", "device %u stream %p failed (%s): %s", s->dev->id, (void *)s, hal_result_name(rc), s->msg);
    }
    pthread_mutex_unlock(&s->mu);
}

hal_result emu_stream_err(hal_stream *s)
{
    pthread_mutex_lock(&s->mu);
    hal_result rc = s->err;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* May a helping host thread run t? Not a host or task function (it may wait for this very thread),
 * a plain notify wait, nor an event wait whose record has not completed. */
static bool helpable(const emu_task *t)
{
    switch (t->kind) {
    case EMU_T_PROG:
    case EMU_T_DMA:
    case EMU_T_MEMSET:
    case EMU_T_EVENT_RECORD:
    case EMU_T_NOTIFY_RECORD:
    case EMU_T_NOTIFY_WAKE:
        return true;
    case EMU_T_EVENT_WAIT:
        return emu_event_wait_met(t);
    default:
        return false;
    }
}

/* Tasks that take no time at the head of the queue: an event record, and an event wait whose
 * record completed. */
static bool instant(const emu_task *t)
{
    return t->kind == EMU_T_EVENT_RECORD || (t->kind == EMU_T_EVENT_WAIT && emu_event_wait_met(t));
}

bool emu_stream_head_instant_locked(hal_stream *s)
{
    return s->head && instant(s->head);
}

/* Not on a failed stream (the wait is skipped there), on a closing device (the wait fails the
 * stream), or while the timeline trace records (the wait shows as a task as long as it waits). */
bool emu_stream_waits_aside_locked(hal_stream *s)
{
    const emu_task *t = s->head;
    return t && t->kind == EMU_T_EVENT_WAIT && !emu_event_wait_met(t) && s->err == HAL_OK &&
           !atomic_load(&s->dev->closing) && !emu_trace_on();
}

/* Runs queued tasks in order until `done` reaches target or the queue is empty. s->mu held, the
 * caller holds the executor role (s->running). The worker also stops at the next task boundary
 * once a host thread waits in a sync without deadline: that thread runs the rest itself (one thread
 * per stream executes, instead of the worker running while the host polls for it). False: a helper
 * stopped before target, at a task it may not run or a program it suspended (back at the head). */
static bool exec_locked(hal_stream *s, uint64_t target, emu_exec_mode mode)
{
    while (s->head && s->done < target && !(mode == EMU_EXEC_WORKER && s->host_wants)) {
        emu_task *t = s->head;
        if ((mode == EMU_EXEC_HELP && !helpable(t)) || (mode == EMU_EXEC_INSTANT && !instant(t)) ||
            (mode == EMU_EXEC_WORKER && emu_stream_waits_aside_locked(s)))
            return false;
        s->head = t->next;
        if (!s->head)
            s->tail = NULL;
        hal_result sticky = s->err;
        s->running_prog = t->kind == EMU_T_PROG;
        pthread_mutex_unlock(&s->mu);
        bool ran = emu_task_run(s, t, sticky, mode == EMU_EXEC_HELP);
        if (ran)
            emu_task_release_refs(t);
        pthread_mutex_lock(&s->mu);
        if (!ran) { /* suspended at a wait: the next executor resumes it */
            t->next = s->head;
            s->head = t;
            if (!s->tail)
                s->tail = t;
            return false;
        }
        emu_task_recycle_locked(s, t);
        atomic_store_explicit(&s->done, s->done + 1, memory_order_release); /* polled by syncs */
        if (s->sync_waiters && s->done >= s->wake_at) {
            s->wake_at = UINT64_MAX;
            pthread_cond_broadcast(&s->cv_done);
        }
    }
    return true;
}

/* Wakes every sleeping sync waiter (s->mu held): one may be done, or may take the role. */
static void wake_sync_waiters(hal_stream *s)
{
    if (s->sync_waiters) {
        s->wake_at = UINT64_MAX;
        pthread_cond_broadcast(&s->cv_done);
    }
}

void emu_stream_wake_worker_locked(hal_stream *s)
{
    if (s->sleeping && (s->head || s->stop) && !s->host_wants && (!s->awaiting || s->stop) &&
        !emu_stream_running_locked(s)) {
        s->sleeping = false;
        pthread_cond_signal(&s->cv_work);
    }
}

bool emu_stream_host_exec_locked(hal_stream *s, uint64_t target, emu_exec_mode mode)
{
    s->running = true;
    bool through = exec_locked(s, target, mode);
    s->running = false;
    s->parked = false;
    wake_sync_waiters(s); /* waiters that slept while we ran may be done, or may take over */
    emu_stream_gate_reopen_locked(s);
    return through;
}

void emu_stream_wake_locked(hal_stream *s)
{
    wake_sync_waiters(s);
    emu_stream_wake_worker_locked(s);
}

/* The worker ran out of work: polls (emu_poll, HCCL_EMU_WORKER_POLL_US) for the next enqueue
 * before it sleeps, so an enqueue that follows soon needs no wake-up (a futex wake costs the
 * enqueuing thread several microseconds on a VM). s->mu held. */
static void worker_poll(hal_stream *s)
{
    uint64_t window = emu_cfg()->worker_poll_ns;
    if (!window)
        return;
    uint64_t seen = s->enq;
    emu_poll p;
    emu_poll_init(&p, 0, window);
    pthread_mutex_unlock(&s->mu);
    bool more = false;
    while (!more && emu_poll_step(&p))
        more = atomic_load_explicit(&s->enq_pub, memory_order_relaxed) != seen;
    pthread_mutex_lock(&s->mu);
}

/* A woken worker that preempts the thread that woke it (its host, on the same CPU when ranks are
 * bound) costs two context switches before the host goes on, and a host that takes the stream's
 * mutex again before the worker got it makes a convoy: the worker blocks on the mutex, the host
 * wakes it at the unlock, the worker preempts it again. SCHED_BATCH keeps the worker's share of
 * the CPU without wakeup preemption. 100-call loops at 2 ranks on 2 CPUs, median (spread of 9
 * launches): AllReduce 8 B 0.96 -> 0.69 us (2.1 -> 1.4), AllGather 1.82 -> 0.72 (8.0 -> 1.7),
 * AlltoAll 1.57 -> 0.70 (4.6 -> 1.9); at 4 ranks 8 B AllReduce 5.0 -> 4.0 (docs/emulator.md,
 * "Threads"). HCCL_EMU_WORKER_BATCH=0 keeps SCHED_OTHER: work a host enqueues before it goes on
 * computing on the same CPU then starts at once. */
static void worker_policy(void)
{
    struct sched_param none = {0};
    if (emu_cfg()->worker_batch)
        (void)sched_setscheduler(0, SCHED_BATCH, &none); /* refused: the worker runs as it is */
}

/* The worker waits for the record of the event wait at the head without the role (s->mu held,
 * released meanwhile). Holding the role there kept every host thread from running anything on
 * the stream until the worker woke: a framework that makes its collective stream wait for its
 * compute stream, and the compute stream for the collective, had its streams pass every call
 * between their workers once one call went to the queue (8 B Broadcast at 2 ranks: 2.2-2.4 us a
 * call, against 0.2 without the waits; docs/emulator.md, "Waits aside"). Meanwhile a host thread
 * that finds the wait met runs it, and what follows, itself (emu_stream_take_idle, help). Only
 * where the event's list of streams to kick is full: otherwise the worker sleeps until the
 * record's completion kicks the stream (emu_stream_kick.c). */
static _Atomic uint64_t g_asides; /* await_head's waits: for tests */

uint64_t emu_stream_test_asides(void)
{
    return atomic_load(&g_asides);
}

static void await_head(hal_stream *s)
{
    atomic_fetch_add_explicit(&g_asides, 1, memory_order_relaxed);
    emu_rec r = emu_event_hold(s->head);
    pthread_mutex_unlock(&s->mu);
    emu_event_await(r, s->dev);
    emu_event_put(r.e);
    pthread_mutex_lock(&s->mu);
}

static void *stream_main(void *p)
{
    hal_stream *s = p;
    bool polled = false;
    worker_policy();
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (s->head && !s->running && !s->parked && !s->host_wants && (!s->awaiting || s->stop) &&
            !emu_stream_gate_held_locked(s)) {
            s->running = true;
            (void)exec_locked(s, UINT64_MAX, EMU_EXEC_WORKER);
            s->running = false;
            emu_stream_gate_reopen_locked(s);
            polled = false;
            if (s->host_wants) { /* stopped for a host thread: let it take the role */
                atomic_fetch_add_explicit(&s->handovers, 1, memory_order_release);
                wake_sync_waiters(s);
            } else if (emu_stream_waits_aside_locked(s)) {
                wake_sync_waiters(s); /* one may take the role now */
                if (!emu_stream_worker_await_kick_locked(s)) /* else sleeps until the kick wakes it */
                    await_head(s);
            }
            continue;
        }
        if (s->stop && !s->head && !emu_stream_running_locked(s))
            break;
        if (!polled && !s->stop && !s->host_wants && !s->awaiting) { /* once per idle period; then re-check under mu, and sleep */
            polled = true;
            worker_poll(s);
            continue;
        }
        s->sleeping = true; /* cleared by whoever signals, so one wake-up per sleep */
        pthread_cond_wait(&s->cv_work, &s->mu);
        s->sleeping = false;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

hal_result emu_stream_push_at(hal_stream *s, emu_task *t, uint64_t *pos, uint32_t *gen)
{
    if (emu_trace_on()) /* the op step the enqueuing thread is at (docs/tracing.md) */
        emu_trace_tag_copy(&t->trace_tag);
    t->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        emu_task_free(t);
        return HAL_E_PARAM;
    }
    bool held = emu_stream_gate_held_locked(s); /* before the link: an open gate means an empty queue */
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    s->enq++;
    atomic_store_explicit(&s->enq_pub, s->enq, memory_order_relaxed);
    if (pos)
        *pos = s->enq;
    if (gen)
        *gen = s->gen;
    /* a host executing hands the rest over when it stops; a wait at the head may leave it to a kick */
    bool wake = s->sleeping && !s->running && !held && !emu_stream_await_kick_locked(s);
    if (wake)
        s->sleeping = false;
    emu_task_refill_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (wake) /* after the unlock: the worker does not wake into a held mutex (its cv and mu are type-stable) */
        pthread_cond_signal(&s->cv_work);
    return HAL_OK;
}

hal_result emu_stream_push(hal_stream *s, emu_task *t)
{
    return emu_stream_push_at(s, t, NULL, NULL);
}

/* Resets a slot for a new stream (its mutex and condvars are initialized once, ever). */
static void slot_init(hal_stream *s, hal_device *dev)
{
    s->dev = dev;
    s->head = s->tail = NULL;
    s->enq = 0;
    atomic_store(&s->enq_pub, 0);
    atomic_store(&s->done, 0);
    s->wake_at = UINT64_MAX;
    s->sleeping = s->stop = s->running = s->running_prog = s->parked = s->awaiting = false;
    s->own_for = NULL;
    s->own_upto = 0;
    atomic_store(&s->gate, EMU_GATE_SHUT); /* the first run at once goes through mu, and opens it */
    s->sync_waiters = 0;
    s->err = HAL_OK;
    s->msg[0] = 0;
    s->free_tasks = NULL;
    s->nfree = 0;
    s->next = s->prev = NULL;
}

hal_result emu_stream_new(hal_device *dev, hal_stream **out)
{
    pthread_mutex_lock(&g_slots_mu);
    hal_stream *s = slot_take_locked();
    pthread_mutex_unlock(&g_slots_mu);
    if (!s) {
        OH_ERR("emu", "device %u: no free stream slot (%u streams per process)", dev->id, EMU_MAX_STREAMS);
        return HAL_E_NOMEM;
    }
    if (!s->inited) { /* a fresh slot: nobody else can know it yet */
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv_work, NULL);
        emu_cond_init(&s->cv_done);
        s->inited = true;
    }
    pthread_mutex_lock(&s->mu); /* a late event sync may still look at the slot: gen tells it apart */
    slot_init(s, dev);
    emu_task_pool_fill_locked(s, EMU_STREAM_WARM_TASKS);
    pthread_mutex_unlock(&s->mu);
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        OH_ERR("emu", "device %u: cannot start a stream worker thread", dev->id);
        slot_put(s);
        return HAL_E_SYSCALL;
    }
    pthread_mutex_lock(&dev->mu);
    s->next = dev->streams;
    if (dev->streams)
        dev->streams->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->mu);
    atomic_store_explicit(&s->live, 1, memory_order_release);
    *out = s;
    return HAL_OK;
}

/* Drains, stops the worker, unlinks and gives the slot back. */
void emu_stream_free(hal_stream *s)
{
    atomic_store_explicit(&s->live, 0, memory_order_release);
    pthread_mutex_lock(&s->mu);
    s->stop = true; /* the worker finishes the queue (after a host executor), then exits */
    s->parked = false;
    (void)emu_stream_gate_held_locked(s);
    if (s->sleeping) {
        s->sleeping = false;
        pthread_cond_signal(&s->cv_work);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    hal_device *dev = s->dev;
    pthread_mutex_lock(&dev->mu);
    if (s->prev)
        s->prev->next = s->next;
    else
        dev->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_mutex_unlock(&dev->mu);
    pthread_mutex_lock(&s->mu);
    s->gen++; /* events recorded on it no longer reach it */
    emu_task_pool_drain(s);
    pthread_mutex_unlock(&s->mu);
    slot_put(s);
}

void emu_stream_test_park(hal_stream *s)
{
    pthread_mutex_lock(&s->mu);
    s->parked = true;
    (void)emu_stream_gate_held_locked(s);
    pthread_mutex_unlock(&s->mu);
}

/* --- ops --- */

hal_result emu_stream_create(hal_device *dev, hal_stream **s)
{
    if (!s || !emu_device_live(dev))
        return HAL_E_PARAM;
    return emu_stream_new(dev, s);
}

hal_result emu_stream_destroy(hal_stream *s)
{
    if (!s || !emu_stream_live(s))
        return HAL_E_PARAM;
    if (s == s->dev->default_stream) {
        OH_ERR("emu", "the default stream of device %u cannot be destroyed", s->dev->id);
        return HAL_E_PARAM;
    }
    emu_stream_free(s);
    return HAL_OK;
}

hal_result emu_stream_sync(hal_stream *s, int32_t timeout_ms)
{
    if (!s)
        return HAL_E_PARAM;
    return emu_stream_sync_impl(s, timeout_ms);
}

hal_result emu_stream_query(hal_stream *s)
{
    if (!s)
        return HAL_E_PARAM;
    pthread_mutex_lock(&s->mu);
    hal_result rc = s->err != HAL_OK ? s->err : s->done < s->enq ? HAL_E_NOT_READY : HAL_OK;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

const char *emu_stream_error_msg(hal_stream *s)
{
    return s ? s->msg : "";
}

void emu_stream_clear_error(hal_stream *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->err = HAL_OK;
    s->msg[0] = 0;
    pthread_mutex_unlock(&s->mu);
}

hal_device *emu_stream_device(hal_stream *s)
{
    return s ? s->dev : NULL;
}

hal_result emu_stream_from_native(void *native, hal_stream **s)
{
    if (!s)
        return HAL_E_PARAM;
    if (!native) {
        hal_device *dev;
        hal_result rc = emu_current_device(&dev);
        if (rc != HAL_OK)
            return rc;
        *s = dev->default_stream;
        return HAL_OK;
    }
    if (!emu_stream_live(native)) {
        OH_ERR("emu", "stream %p is not a live stream of this process", native);
        return HAL_E_PARAM;
    }
    *s = native;
    return HAL_OK;
}
