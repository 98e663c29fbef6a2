/* Host threads that run a stream's tasks: a synchronize without deadline runs them up to its
 * target itself (no hand-off when the host waits anyway), and a helping thread (hal event_help)
 * runs what cannot wait on it. One executor at a time (emu_stream.c): the worker stops at its next
 * task boundary once a host thread wants the role. */
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

/* Polls (emu_poll) until s completed target tasks or the worker handed the role over, with s->mu
 * released. */
static void poll_done(hal_stream *s, uint64_t target, uint64_t yield_ns)
{
    const emu_config *cfg = emu_cfg();
    emu_poll p;
    emu_poll_init(&p, cfg->spin_ns, yield_ns);
    uint32_t seen = atomic_load_explicit(&s->handovers, memory_order_acquire);
    pthread_mutex_unlock(&s->mu);
    while (atomic_load_explicit(&s->done, memory_order_acquire) < target &&
           atomic_load_explicit(&s->handovers, memory_order_acquire) == seen && emu_poll_step(&p))
        ;
    pthread_mutex_lock(&s->mu);
}

/* Sleeps on cv_done until woken (s completed target, the role came free) or the deadline (s->mu
 * held); returns the condvar wait's result. */
static int sleep_done(hal_stream *s, uint64_t target, uint64_t deadline)
{
    s->sync_waiters++;
    if (target < s->wake_at)
        s->wake_at = target;
    int e = emu_cond_wait_until(&s->cv_done, &s->mu, deadline);
    s->sync_waiters--;
    return e;
}

/* Synchronizes this thread is inside (host_run_until_locked; a host function it runs may
 * synchronize another stream): its waits may poll longer (emu_wait_yield_ns). */
static _Thread_local uint32_t t_host_syncs;

bool emu_stream_in_host_sync(void)
{
    return t_host_syncs != 0;
}

/* No hand-off when the host waits anyway: the calling thread runs s's tasks up to target itself
 * (s->mu held). A worker in the middle of a task stops at its end (exec_locked) and this thread
 * takes over; meanwhile it waits adaptively (docs/emulator.md, "Waits"), then on the condvar. */
static void host_run_until_locked(hal_stream *s, uint64_t target)
{
    bool polled = false;
    t_host_syncs++;
    s->host_wants++;
    while (s->done < target) {
        if (s->head && !emu_stream_running_locked(s)) {
            (void)emu_stream_host_exec_locked(s, target, EMU_EXEC_HOST);
        } else if (!polled) {
            polled = true;
            poll_done(s, target, emu_wait_yield_ns());
        } else {
            (void)sleep_done(s, target, UINT64_MAX);
            polled = false; /* the role may be free now: poll again before the next sleep */
        }
    }
    t_host_syncs--;
    s->host_wants--;
    emu_stream_wake_worker_locked(s); /* woken while we wanted the role, it slept again: tasks past target are its */
}

/* A helping host thread (emu_stream_help_until): takes the role from the worker at its next task
 * boundary if the worker runs a program and ends it within a short poll (a small collective's takes
 * a few microseconds unless it waits for a peer), runs what it may, and leaves the rest to the
 * worker. A worker inside anything else (a host function, an event wait) may stay there for long:
 * the helper leaves at once. */
static void host_help_locked(hal_stream *s, uint64_t target)
{
    bool polled = false;
    s->host_wants++;
    while (s->done < target) {
        if (s->head && !emu_stream_running_locked(s)) {
            if (!emu_stream_host_exec_locked(s, target, EMU_EXEC_HELP))
                break;
        } else if (!polled && (s->running ? s->running_prog : emu_stream_gate_held_locked(s))) {
            polled = true;
            poll_done(s, target, EMU_HELP_POLL_NS);
        } else {
            break; /* the worker is inside a task that may take long (a hold, a wait): it goes on */
        }
    }
    s->host_wants--;
    emu_stream_wake_worker_locked(s);
}

/* Timed: a blocking wait. No deadline: the calling thread executes (host_run_until_locked). */
hal_result emu_stream_sync_impl(hal_stream *s, int32_t timeout_ms)
{
    uint64_t deadline = emu_deadline_ms(timeout_ms);
    hal_result rc = HAL_OK;
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->enq;
    if (timeout_ms < 0)
        host_run_until_locked(s, target);
    while (s->done < target) {
        int e = sleep_done(s, target, deadline);
        if (e == ETIMEDOUT && s->done < target) {
            rc = HAL_E_TIMEOUT;
            break;
        }
    }
    if (s->err != HAL_OK)
        rc = s->err;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void emu_stream_run_until(hal_stream *s, uint32_t gen, uint64_t pos)
{
    pthread_mutex_lock(&s->mu);
    if (s->gen == gen && s->done < pos)
        host_run_until_locked(s, pos);
    pthread_mutex_unlock(&s->mu);
}

void emu_stream_help_until(hal_stream *s, uint32_t gen, uint64_t pos)
{
    if (emu_trace_on()) /* a suspended program would be timed twice (docs/tracing.md) */
        return;
    pthread_mutex_lock(&s->mu);
    if (s->gen == gen && s->done < pos)
        host_help_locked(s, pos);
    pthread_mutex_unlock(&s->mu);
}
