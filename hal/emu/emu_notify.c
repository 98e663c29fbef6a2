/* Notifies: counting semaphores whose counters live in the owner device's control area, so any
 * process of the server that imported the owner's memory can record them and wait on them.
 * record = CAS increment + shared FUTEX_WAKE_BITSET if someone waits (EMU_WAKE_ANY); wait = shared
 * futex wait in slices of at most 200 ms, re-checking the abort flag, device close and the deadline.
 *
 * Generations: a slot's word carries the generation of its current notify next to the count, and
 * an exported handle carries the generation it was made for. Destroying the owner's notify bumps
 * the generation, so a peer that still holds an import of it (a communicator destroyed on one
 * rank while its peer already made a new one on the recycled slot) records into nothing: the CAS
 * sees another generation and the record is dropped. Waiting through a stale notify fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/oh_log.h"
#include "hal/emu/emu_internal.h"
#include "hal/emu/emu_sys.h"

#define EMU_AUTO_SPIN_NS 5000ull /* measured at 2 ranks on 2 cores: 1.47 -> 1.25 us per 8 B AllReduce */

struct hal_notify {
    hal_device *dev;        /* owner (created) or importer */
    emu_notify_slot *slot;
    uint32_t index;
    uint32_t gen;           /* the slot's generation this notify belongs to */
    bool imported;
    _Atomic uint32_t kept;  /* signals taken from the slot by a keep_rest wait, not yet consumed */
    hal_device_handle owner;
    _Atomic int refs;
    _Atomic bool ipc_exported; /* has had an IPC key (emu_ipc.c): its destroy closes the key */
    bool destroyed;
    struct hal_notify *next, *prev;
};

static void notify_link(hal_device *dev, hal_notify *n)
{
    pthread_mutex_lock(&dev->mu);
    n->next = dev->notifies;
    if (dev->notifies)
        dev->notifies->prev = n;
    dev->notifies = n;
    pthread_mutex_unlock(&dev->mu);
}

void emu_notify_put(hal_notify *n)
{
    if (atomic_fetch_sub(&n->refs, 1) != 1)
        return;
    if (!n->imported) { /* give the slot back: stale handles of this generation go dead here */
        hal_device *dev = n->dev;
        if (atomic_load(&n->ipc_exported)) /* the scan reads the whole IPC table: only if needed */
            emu_ipc_forget_notify(dev->region->base, (uint64_t)n->gen << 32 | n->index);
        atomic_store(&n->slot->word, (uint64_t)(n->gen + 1) << 32);
        pthread_mutex_lock(&dev->mu);
        dev->notify_bitmap[n->index / 8] &= (uint8_t) ~(1u << (n->index % 8));
        pthread_mutex_unlock(&dev->mu);
    }
    free(n);
}

void emu_notifies_free_all(hal_device *dev)
{
    for (;;) {
        pthread_mutex_lock(&dev->mu);
        hal_notify *n = dev->notifies;
        pthread_mutex_unlock(&dev->mu);
        if (!n)
            break;
        emu_notify_destroy(n);
    }
}

static hal_result notify_new(hal_device *dev, emu_notify_slot *slot, uint32_t index, uint32_t gen, bool imported,
                             const hal_device_handle *owner, hal_notify **out)
{
    hal_notify *n = calloc(1, sizeof *n);
    if (!n)
        return HAL_E_NOMEM;
    n->dev = dev;
    n->slot = slot;
    n->index = index;
    n->gen = gen;
    n->imported = imported;
    n->owner = *owner;
    atomic_init(&n->refs, 1);
    notify_link(dev, n);
    *out = n;
    return HAL_OK;
}

hal_result emu_notify_create(hal_device *dev, hal_notify **out)
{
    if (!out || !emu_device_live(dev))
        return HAL_E_PARAM;
    uint32_t idx = UINT32_MAX;
    pthread_mutex_lock(&dev->mu);
    for (uint32_t i = 0; i < EMU_MAX_NOTIFIES / 8 && idx == UINT32_MAX; i++)
        if (dev->notify_bitmap[i] != 0xff)
            for (uint32_t b = 0; b < 8; b++)
                if (!(dev->notify_bitmap[i] & (1u << b))) {
                    dev->notify_bitmap[i] |= (uint8_t)(1u << b);
                    idx = i * 8 + b;
                    break;
                }
    pthread_mutex_unlock(&dev->mu);
    if (idx == UINT32_MAX) {
        OH_ERR("emu", "device %u has no free notify (%u in use)", dev->id, EMU_MAX_NOTIFIES);
        return HAL_E_NOMEM;
    }
    emu_notify_slot *slot = &emu_notify_slots(dev->region->base)[idx];
    /* A new generation with a zero count: nothing recorded through an older handle counts. */
    uint32_t gen = EMU_NOTIFY_GEN(atomic_load(&slot->word)) + 1;
    atomic_store(&slot->word, (uint64_t)gen << 32);
    hal_device_handle h = emu_device_handle(dev);
    hal_result rc = notify_new(dev, slot, idx, gen, false, &h, out);
    if (rc != HAL_OK) {
        pthread_mutex_lock(&dev->mu);
        dev->notify_bitmap[idx / 8] &= (uint8_t) ~(1u << (idx % 8));
        pthread_mutex_unlock(&dev->mu);
    }
    return rc;
}

hal_result emu_notify_destroy(hal_notify *n)
{
    if (!n)
        return HAL_E_PARAM;
    hal_device *dev = n->dev;
    pthread_mutex_lock(&dev->mu);
    bool twice = n->destroyed;
    n->destroyed = true;
    if (!twice) {
        if (n->prev)
            n->prev->next = n->next;
        else if (dev->notifies == n)
            dev->notifies = n->next;
        if (n->next)
            n->next->prev = n->prev;
    }
    pthread_mutex_unlock(&dev->mu);
    if (twice)
        return HAL_E_PARAM;
    emu_notify_put(n);
    return HAL_OK;
}

void emu_notify_mark_ipc(hal_notify *n)
{
    atomic_store(&n->ipc_exported, true);
}

hal_result emu_notify_export(hal_notify *n, hal_notify_handle *h)
{
    if (!n || !h)
        return HAL_E_PARAM;
    memset(h, 0, sizeof *h);
    h->owner = n->owner;
    h->offset = (uint64_t)n->gen << 32 | n->index;
    return HAL_OK;
}

hal_result emu_notify_import(hal_device *dev, const hal_notify_handle *h, hal_notify **out)
{
    if (!h || !out || !emu_device_live(dev) || (uint32_t)h->offset >= EMU_MAX_NOTIFIES)
        return HAL_E_PARAM;
    uint32_t index = (uint32_t)h->offset, gen = (uint32_t)(h->offset >> 32);
    const emu_config *cfg = emu_cfg();
    if (h->owner.server_key != cfg->server_key || h->owner.server_index != cfg->server_index ||
        h->owner.device_id >= EMU_MAX_DEVICES) {
        OH_ERR("emu", "notify_import: the notify's device %u is on another server", h->owner.device_id);
        return HAL_E_PARAM;
    }
    emu_regions_lock();
    emu_region *r = emu_region_find_locked(h->owner.device_id);
    void *base = r ? r->base : NULL;
    emu_regions_unlock();
    if (!base) {
        OH_ERR("emu", "notify_import: device %u's memory is not mapped here; mem_import it first",
               h->owner.device_id);
        return HAL_E_PARAM;
    }
    emu_notify_slot *slot = &emu_notify_slots(base)[index];
    uint32_t now = EMU_NOTIFY_GEN(atomic_load(&slot->word));
    if (now != gen) {
        OH_ERR("emu", "notify_import: notify %u of device %u was destroyed by its owner (handle generation %u, "
               "slot now at %u)", index, h->owner.device_id, gen, now);
        return HAL_E_PEER;
    }
    return notify_new(dev, slot, index, gen, true, &h->owner, out);
}

uint32_t emu_notify_id(hal_notify *n)
{
    return n ? n->index : UINT32_MAX;
}

static hal_result notify_enqueue_flag(hal_notify *n, hal_stream *s, emu_task_kind kind, uint32_t timeout_ms,
                                      const volatile uint32_t *abort_flag, emu_take take, const hal_flag_wait *flag)
{
    if (!n || !s)
        return HAL_E_PARAM;
    emu_task *t = emu_task_new(kind);
    if (!t)
        return HAL_E_NOMEM;
    atomic_fetch_add(&n->refs, 1);
    t->u.nt.n = n;
    t->u.nt.timeout_ms = timeout_ms ? timeout_ms : emu_cfg()->exec_timeout_ms;
    t->u.nt.abort = abort_flag;
    t->u.nt.take = take;
    t->u.nt.flag = flag;
    return emu_stream_push(s, t);
}

static hal_result notify_enqueue(hal_notify *n, hal_stream *s, emu_task_kind kind, uint32_t timeout_ms,
                                 const volatile uint32_t *abort_flag, emu_take take)
{
    return notify_enqueue_flag(n, s, kind, timeout_ms, abort_flag, take, NULL);
}

hal_result emu_notify_wait_checked(hal_notify *n, hal_stream *s, uint32_t timeout_ms,
                                   const volatile uint32_t *abort_flag, hal_task_fn check, void *arg)
{
    emu_take take = {.check = check, .check_arg = arg};
    return notify_enqueue(n, s, EMU_T_NOTIFY_WAIT, timeout_ms, abort_flag, take);
}

hal_result emu_flag_wait(hal_stream *s, const hal_flag_wait *w)
{
    if (!w || !w->flag || !w->wake)
        return HAL_E_PARAM;
    return notify_enqueue_flag(w->wake, s, EMU_T_FLAG_WAIT, w->timeout_ms, w->abort_flag, (emu_take){0}, w);
}

hal_result emu_notify_wake(hal_notify *n, hal_stream *s)
{
    return notify_enqueue(n, s, EMU_T_NOTIFY_WAKE, 0, NULL, (emu_take){0});
}

emu_notify_slot *emu_notify_slot_of(const hal_notify *n, uint32_t *gen)
{
    *gen = n->gen;
    return n->slot;
}

hal_result emu_notify_record(hal_notify *n, hal_stream *s)
{
    return notify_enqueue(n, s, EMU_T_NOTIFY_RECORD, 0, NULL, (emu_take){0});
}

hal_result emu_notify_wait(hal_notify *n, hal_stream *s, uint32_t timeout_ms, const volatile uint32_t *abort_flag)
{
    return notify_enqueue(n, s, EMU_T_NOTIFY_WAIT, timeout_ms, abort_flag, (emu_take){0});
}

hal_result emu_notify_wait_reset(hal_notify *n, hal_stream *s, uint32_t timeout_ms)
{
    return notify_enqueue(n, s, EMU_T_NOTIFY_WAIT, timeout_ms, NULL, (emu_take){.reset = true});
}

hal_result emu_notify_wait_count(hal_notify *n, hal_stream *s, uint32_t at_least, uint32_t timeout_ms,
                                 const volatile uint32_t *abort_flag)
{
    if (!at_least)
        return HAL_E_PARAM;
    return notify_enqueue(n, s, EMU_T_NOTIFY_WAIT, timeout_ms, abort_flag, (emu_take){.at_least = at_least});
}

typedef enum { TAKE_NONE, TAKE_OK, TAKE_STALE } take_result;

/* May a wait that takes `take` go on with `count` signals there (the slot's and those kept)? */
static bool take_ready(uint32_t count, const emu_take *take)
{
    return take->at_least ? count >= take->at_least : count > 0;
}

/* One kept signal, if there is one (any executor of a stream that waits through n may take). */
bool emu_notify_take_kept(hal_notify *n)
{
    uint32_t k = atomic_load_explicit(&n->kept, memory_order_acquire);
    while (k && !atomic_compare_exchange_weak_explicit(&n->kept, &k, k - 1, memory_order_acquire,
                                                       memory_order_acquire))
        ;
    return k > 0;
}

/* Takes what `take` says once it may go on (decrement, clear for wait_reset, nothing for a count
 * wait, all but one kept for keep_rest), in n's generation only. A plain take uses a kept signal
 * first: it touches no shared line. */
static take_result notify_take(hal_notify *n, const emu_take *take)
{
    if (!take->reset && !take->at_least && emu_notify_take_kept(n))
        return TAKE_OK;
    uint64_t w = atomic_load(&n->slot->word);
    for (;;) {
        if (EMU_NOTIFY_GEN(w) != n->gen)
            return TAKE_STALE;
        uint32_t count = EMU_NOTIFY_COUNT(w), kept = atomic_load_explicit(&n->kept, memory_order_acquire);
        if (!take_ready(count + kept, take))
            return TAKE_NONE;
        if (take->at_least)
            return TAKE_OK;
        bool all = take->reset || take->keep_rest;
        if (atomic_compare_exchange_weak(&n->slot->word, &w, all ? (uint64_t)n->gen << 32 : w - 1)) {
            if (take->reset)
                atomic_store_explicit(&n->kept, 0, memory_order_release);
            else if (take->keep_rest)
                atomic_fetch_add_explicit(&n->kept, count - 1, memory_order_release);
            return TAKE_OK;
        }
    }
}

static bool fail_stale(hal_stream *s, const hal_notify *n)
{
    emu_stream_fail(s, HAL_E_PEER, "wait on notify %u of device %u: its owner destroyed it (generation %u is gone)",
                    n->index, n->owner.device_id, n->gen);
    return false;
}

/* Who a record wakes (futex bitsets): every plain wait (EMU_WAKE_ANY), and of the count waits only
 * those whose target count is the new count modulo 31 (count_bit). A drain waiting for 128 credits
 * is woken by the record that brings the 128th and a few before it, not by each of them: woken at
 * each, it took a context switch per credit from the receiver it shares a core with (8 B
 * Broadcast at 4 ranks: the last receiver's 128 calls took 1.7 ms instead of 0.15). */
static uint32_t count_bit(uint32_t count)
{
    return 1u << (count % 31);
}

/* The futex bits a wait sleeps with: a count wait's target for the slot's count alone (the kept
 * signals change only by takes through this handle, i.e. not while this wait sleeps). */
static uint32_t sleep_bits(hal_notify *n, const emu_take *take)
{
    uint32_t kept = atomic_load_explicit(&n->kept, memory_order_acquire);
    return take->at_least && take->at_least > kept ? count_bit(take->at_least - kept) : EMU_WAKE_ANY;
}

emu_wait_stop emu_wait_stopped(hal_stream *s, const volatile uint32_t *abort_flag, uint64_t deadline)
{
    if (abort_flag && *abort_flag)
        return EMU_STOP_ABORTED;
    if (atomic_load(&s->dev->closing))
        return EMU_STOP_CLOSING;
    return deadline && emu_now_ns() >= deadline ? EMU_STOP_TIMEOUT : EMU_STOP_NONE;
}

void emu_wait_fail(hal_stream *s, emu_wait_stop why, const char *what, uint64_t start)
{
    if (why == EMU_STOP_ABORTED)
        emu_stream_fail(s, HAL_E_ABORTED, "%s aborted", what);
    else if (why == EMU_STOP_CLOSING)
        emu_stream_fail(s, HAL_E_ABORTED, "%s aborted: device %u is closing", what, s->dev->id);
    else
        emu_stream_fail(s, HAL_E_TIMEOUT, "%s timed out after %.3f s (HCCL_EXEC_TIMEOUT or the wait's timeout)", what,
                        (double)(emu_now_ns() - start) / 1e9);
}

bool emu_wait_check_ok(hal_stream *s, hal_task_fn check, void *arg)
{
    if (!check)
        return true;
    char msg[EMU_MSG_LEN];
    msg[0] = 0;
    int rc = check(arg, msg, sizeof msg);
    if (rc == 0)
        return true;
    msg[sizeof msg - 1] = 0;
    emu_stream_fail(s, rc > 0 && rc <= HAL_E_INTERNAL ? (hal_result)rc : HAL_E_INTERNAL, "%s",
                    msg[0] ? msg : "a wait's check failed");
    return false;
}

uint64_t emu_wait_slice_ns(uint64_t deadline)
{
    uint64_t now = emu_now_ns(), slice = EMU_NOTIFY_SLICE_NS;
    return deadline && deadline > now && deadline - now < slice ? deadline - now : slice;
}

/* After the poll window: futex waits in slices, re-checking the abort flag, the device and the
 * deadline. A wait with a check (hal_insn) runs it once counted among the sleepers, before each
 * sleep: a notify_wake after what the check reads then sees this wait. False when it failed the
 * stream. */
static bool wait_asleep(hal_stream *s, hal_notify *n, uint64_t start, uint32_t timeout_ms,
                        const volatile uint32_t *abort_flag, const emu_take *take)
{
    emu_notify_slot *slot = n->slot;
    uint64_t deadline = timeout_ms ? start + timeout_ms * 1000000ull : 0;
    for (;;) {
        take_result tr = notify_take(n, take);
        if (tr == TAKE_STALE)
            return fail_stale(s, n);
        if (tr != TAKE_NONE)
            return true;
        emu_wait_stop why = emu_wait_stopped(s, abort_flag, deadline);
        if (why != EMU_STOP_NONE) {
            char what[64];
            snprintf(what, sizeof what, "wait on notify %u of device %u", n->index, n->owner.device_id);
            emu_wait_fail(s, why, what, start);
            return false;
        }
        uint64_t slice = emu_wait_slice_ns(deadline);
        atomic_fetch_add(&slot->waiters, 1);
        if (take->check) {
            atomic_thread_fence(memory_order_seq_cst); /* pairs with emu_notify_do_wake's */
            if (!emu_wait_check_ok(s, take->check, take->check_arg)) {
                atomic_fetch_sub(&slot->waiters, 1);
                return false;
            }
        }
        uint32_t seen = EMU_NOTIFY_COUNT(atomic_load(&slot->word)); /* a record changes it: no wake is lost */
        bool woken = !take_ready(seen + atomic_load_explicit(&n->kept, memory_order_acquire), take) &&
                     emu_futex_wait_bits(emu_notify_count_word(slot), seen, slice, sleep_bits(n, take));
        if (!woken) /* a record that woke this wait counted it out (emu_notify_do_record) */
            atomic_fetch_sub(&slot->waiters, 1);
    }
}

/* A notify is recorded by a peer device, run by another process or thread. Spinning pays when
 * that one runs on another core right now: likely while there are no more devices than cores,
 * harmful beyond (docs/emulator.md, "Waits"). */
static uint64_t wait_spin_ns(void)
{
    const emu_config *cfg = emu_cfg();
    if (!cfg->spin_auto)
        return cfg->spin_ns;
    return emu_devices_fit_cpus() ? EMU_AUTO_SPIN_NS : 0;
}

/* Past the CPUs, the peers a synchronizing host waits for (in the barrier before a loop, say) are
 * often waiting for a CPU themselves, and a host that slept after 200 us must be woken, one after
 * another: 8 B Reduce at 8 ranks on 2 CPUs, loops of 1000 calls, 1.91-3.68 us a call (median 2.80)
 * with the plain window, 0.75-2.27 (1.43) with 2 ms for a synchronizing host. The same 2 ms for
 * every wait, the workers' too, made Send/Recv at 8 ranks slower (2.14 -> 2.75 us; docs/perf-history.md,
 * thirty-fourth pass). Where each device has a CPU, peers run: their waits end in the window. */
uint64_t emu_wait_yield_ns(void)
{
    const emu_config *cfg = emu_cfg();
    if (!emu_stream_in_host_sync() || cfg->sync_yield_ns <= cfg->yield_ns || emu_devices_fit_cpus())
        return cfg->yield_ns;
    return cfg->sync_yield_ns;
}

void emu_wait_poll_init(emu_poll *p, uint64_t budget)
{
    uint64_t spin = wait_spin_ns(), yield = emu_wait_yield_ns();
    spin = spin < budget ? spin : budget;
    yield = yield < budget - spin ? yield : budget - spin;
    emu_poll_init(p, spin, yield);
}

/* A wait's poll before it sleeps: spin, then yield (waking a sleeper costs tens of us), for at most
 * `budget` ns in all. TAKE_NONE when it did not get through (or the abort flag is up); *t0: when
 * the poll began. */
static take_result wait_polled(hal_notify *n, const volatile uint32_t *abort_flag, const emu_take *take,
                               uint64_t budget, uint64_t *t0)
{
    take_result tr = notify_take(n, take); /* already signalled: no clock read, no poll */
    if (tr != TAKE_NONE)
        return tr;
    emu_poll p;
    emu_wait_poll_init(&p, budget);
    *t0 = p.t0;
    do {
        tr = notify_take(n, take);
        if (tr != TAKE_NONE || (abort_flag && *abort_flag))
            return tr; /* an abort is reported by the sleeping wait */
    } while (emu_poll_step(&p));
    return TAKE_NONE;
}

bool emu_notify_do_wait(hal_stream *s, hal_notify *n, uint32_t timeout_ms, const volatile uint32_t *abort_flag,
                        const emu_take *take)
{
    uint64_t t0 = 0;
    take_result tr = wait_polled(n, abort_flag, take, UINT64_MAX, &t0);
    if (tr != TAKE_NONE)
        return tr == TAKE_OK || fail_stale(s, n);
    return wait_asleep(s, n, t0, timeout_ms, abort_flag, take); /* t0: set by every poll that got nothing */
}

emu_wait_end emu_notify_help_wait(hal_stream *s, hal_notify *n, const volatile uint32_t *abort_flag,
                                  const emu_take *take, uint64_t poll_ns)
{
    uint64_t t0 = 0;
    take_result tr = wait_polled(n, abort_flag, take, poll_ns, &t0);
    if (tr == TAKE_NONE)
        return EMU_WAIT_LATER;
    return tr == TAKE_OK || fail_stale(s, n) ? EMU_WAIT_MET : EMU_WAIT_FAILED;
}

static _Atomic uint64_t g_wake_calls; /* records that made a wake call: for tests */

uint64_t emu_notify_test_wake_calls(void)
{
    return atomic_load(&g_wake_calls);
}

uint32_t emu_notify_test_waiters(const hal_notify *n)
{
    return atomic_load(&n->slot->waiters);
}

/* count += 1 in n's generation. A stale generation means the owner destroyed the notify (a peer
 * left): the signal has nobody to reach and is dropped, never counted for the slot's new owner. */
bool emu_notify_do_record(hal_stream *s, const hal_notify *n)
{
    emu_notify_slot *slot = n->slot;
    uint64_t w = atomic_load(&slot->word);
    do {
        if (EMU_NOTIFY_GEN(w) != n->gen) {
            OH_DBG("emu", "record on notify %u of device %u dropped: generation %u was destroyed (slot at %u)",
                     n->index, n->owner.device_id, n->gen, EMU_NOTIFY_GEN(w));
            return true;
        }
        if (EMU_NOTIFY_COUNT(w) == UINT32_MAX) {
            emu_stream_fail(s, HAL_E_INTERNAL, "record on notify %u of device %u: count overflow", n->index,
                            n->owner.device_id);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&slot->word, &w, w + 1));
    /* The waker counts out whom it woke: a woken wait that has not run yet (its core is busy) is no
     * longer a sleeper, and the records after this one make no wake call for it (each a syscall of
     * microseconds on a VM: a root's loop of one-way calls took 3 us a call instead of 0.6 while a
     * receiver it had woken waited for its core). */
    if (atomic_load(&slot->waiters) > 0) {
        atomic_fetch_add_explicit(&g_wake_calls, 1, memory_order_relaxed);
        uint32_t bits = EMU_WAKE_ANY | count_bit(EMU_NOTIFY_COUNT(w) + 1);
        uint32_t woken = emu_futex_wake_bits(emu_notify_count_word(slot), bits);
        if (woken)
            atomic_fetch_sub(&slot->waiters, woken);
    }
    return true;
}

bool emu_notify_do_wake(hal_stream *s, const hal_notify *n, bool fence)
{
    if (fence)
        atomic_thread_fence(memory_order_seq_cst); /* pairs with the sleeper's (emu_flag.c) */
    if (atomic_load_explicit(&n->slot->waiters, memory_order_relaxed) == 0)
        return true; /* nobody asleep: the line stays the poller's */
    return emu_notify_do_record(s, n);
}

uint32_t emu_notify_pending(hal_notify *n)
{
    if (!n)
        return 0;
    uint32_t kept = atomic_load_explicit(&n->kept, memory_order_acquire);
    if (kept) /* enough for "a wait will not block": the shared line is not read */
        return kept;
    uint64_t w = atomic_load(&n->slot->word);
    return EMU_NOTIFY_GEN(w) == n->gen ? EMU_NOTIFY_COUNT(w) : 0;
}

uint32_t emu_notify_count(hal_notify *n)
{
    if (!n)
        return 0;
    uint32_t kept = atomic_load_explicit(&n->kept, memory_order_acquire);
    uint64_t w = atomic_load(&n->slot->word);
    return EMU_NOTIFY_GEN(w) == n->gen ? kept + EMU_NOTIFY_COUNT(w) : 0;
}

hal_result emu_notify_host_record(hal_notify *n)
{
    if (!n)
        return HAL_E_PARAM;
    if (EMU_NOTIFY_COUNT(atomic_load(&n->slot->word)) == UINT32_MAX)
        return HAL_E_INTERNAL; /* the stream-side record reports it with the notify named */
    (void)emu_notify_do_record(NULL, n);
    return HAL_OK;
}

void emu_notify_run(hal_stream *s, emu_task *t)
{
    if (t->kind == EMU_T_NOTIFY_WAIT) {
        (void)emu_notify_do_wait(s, t->u.nt.n, t->u.nt.timeout_ms, t->u.nt.abort, &t->u.nt.take);
        return;
    }
    if (t->kind == EMU_T_FLAG_WAIT) {
        (void)emu_flag_do_wait(s, t->u.nt.flag, 0);
        return;
    }
    if (t->kind == EMU_T_NOTIFY_WAKE) {
        (void)emu_notify_do_wake(s, t->u.nt.n, true);
        return;
    }
    (void)emu_notify_do_record(s, t->u.nt.n); /* a failure failed the stream */
}

_Static_assert(EMU_NOTIFY_OFFSET + (uint64_t)EMU_MAX_NOTIFIES * sizeof(emu_notify_slot) <= EMU_CTRL_SIZE,
               "notify slots must fit in the control area");
