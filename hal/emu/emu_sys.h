/* Small OS helpers of the emulator: futexes, monotonic time, condvars on CLOCK_MONOTONIC. */
#ifndef EMU_SYS_H
#define EMU_SYS_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t emu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline struct timespec emu_ts_from_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    return ts;
}

/* Waits while *addr == val, at most rel_ns (0 = no limit), in the futex of a word other processes
 * may map too (notify counters: the non-PRIVATE futex). Only a wake whose bits share one with
 * `bits` ends it (FUTEX_WAIT_BITSET), so a waiter can sleep through wakes meant for others.
 * True when a wake ended it (not the value, the limit or a signal). */
static inline bool emu_futex_wait_bits(_Atomic uint32_t *addr, uint32_t val, uint64_t rel_ns, uint32_t bits)
{
    struct timespec ts = emu_ts_from_ns(emu_now_ns() + rel_ns); /* the bitset wait's limit is absolute */
    return syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_BITSET, val, rel_ns ? &ts : NULL, NULL, bits) == 0;
}

/* Wakes every waiter of *addr whose bits share one with `bits`; how many it woke. */
static inline uint32_t emu_futex_wake_bits(_Atomic uint32_t *addr, uint32_t bits)
{
    long n = syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, bits);
    return n > 0 ? (uint32_t)n : 0;
}

static inline void emu_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Adaptive wait (docs/emulator.md, "Waits"): a waiter polls its condition, calling
 * emu_poll_step between checks; first cpu_relax for spin_ns (the peer runs on another core right
 * now), then sched_yield until spin_ns + yield_ns (hands the core to runnable threads, often the
 * peer it waits for, on an oversubscribed machine), then emu_poll_step returns false: sleep. */
typedef struct emu_poll {
    uint64_t t0, spin_end, yield_end;
    uint32_t i;
} emu_poll;

static inline void emu_poll_init(emu_poll *p, uint64_t spin_ns, uint64_t yield_ns)
{
    p->t0 = emu_now_ns();
    p->spin_end = p->t0 + spin_ns;
    p->yield_end = p->spin_end + yield_ns;
    p->i = 0;
}

/* false: the poll budget is spent, go to sleep (and stay there: later calls return false too). */
static inline bool emu_poll_step(emu_poll *p)
{
    uint32_t i = p->i++;
    if (p->spin_end > p->t0 && i % 32 != 31) {
        emu_cpu_relax();
        return true;
    }
    uint64_t now = emu_now_ns();
    if (now < p->spin_end) {
        emu_cpu_relax();
        return true;
    }
    if (now < p->yield_end) {
        sched_yield();
        return true;
    }
    p->spin_end = p->yield_end = p->t0; /* spent: no more clock reads */
    return false;
}

/* A condvar whose timed waits use CLOCK_MONOTONIC. */
static inline void emu_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

/* Waits on cv until the absolute monotonic deadline (0 = none). Returns ETIMEDOUT past it. */
static inline int emu_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns)
{
    if (!deadline_ns)
        return pthread_cond_wait(cv, mu);
    struct timespec ts = emu_ts_from_ns(deadline_ns);
    return pthread_cond_timedwait(cv, mu, &ts);
}

/* Absolute deadline for a timeout in ms (negative = none -> 0). */
static inline uint64_t emu_deadline_ms(int64_t timeout_ms)
{
    return timeout_ms < 0 ? 0 : emu_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

#endif
