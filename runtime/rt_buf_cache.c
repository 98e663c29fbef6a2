/* Buffers recently found to be device memory of a device (rt_check_buffer): a repeated collective
 * on the same buffers skips the HAL's memory lookup (its region lock and allocation search were a
 * fifth of the host's work per small collective). An entry is a range [lo, hi) of one live
 * allocation of one device; any free of this process's device memory (hal_ops.mem_free_listen:
 * mem_free, device close, VMM map/unmap/release) bumps the epoch and so drops every entry before
 * the range changes. Only successes are kept: a bad buffer is looked up, and reported, each time.
 * Entries are per thread (no lock on the hot path); a HAL that does not report frees (hal/ascend)
 * gets no cache. */
#include <pthread.h>
#include <stdatomic.h>

#include "runtime/rt_internal.h"

#define RT_BUF_CACHE_ENTRIES 4u /* a call checks two buffers; a loop may alternate a few pairs */

typedef struct buf_entry {
    const char *lo, *hi;
    uint64_t epoch; /* 0: empty */
    uint64_t server_key;
    uint32_t device_id;
} buf_entry;

static _Thread_local buf_entry t_cache[RT_BUF_CACHE_ENTRIES];
static _Thread_local uint32_t t_next;

enum { LISTEN_UNTRIED = 0, LISTEN_ON, LISTEN_OFF };
static _Atomic int g_state;
static const hal_ops *g_hal; /* the HAL whose frees we hear (set before g_state becomes LISTEN_ON) */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_epoch = 1;

static void on_free(void *arg, void *base, size_t size)
{
    (void)arg, (void)base, (void)size;
    atomic_fetch_add(&g_epoch, 1);
}

/* Listens once per process, for the first HAL that asks; the listener stays for the process's
 * life (it only counts). */
static bool listening(const hal_ops *hal)
{
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (st == LISTEN_UNTRIED) {
        pthread_mutex_lock(&g_mu);
        st = atomic_load(&g_state);
        if (st == LISTEN_UNTRIED) {
            uint64_t id = 0;
            bool on = hal->mem_free_listen && hal->mem_free_listen(on_free, NULL, &id) == HAL_OK;
            g_hal = hal;
            st = on ? LISTEN_ON : LISTEN_OFF;
            atomic_store_explicit(&g_state, st, memory_order_release);
        }
        pthread_mutex_unlock(&g_mu);
    }
    return st == LISTEN_ON && g_hal == hal;
}

bool rt_buf_cache_hit(const rt_comm *c, const void *p, uint64_t bytes, uint64_t *epoch)
{
    *epoch = 0;
    if (!listening(c->hal))
        return false;
    uint64_t now = atomic_load(&g_epoch);
    const char *q = p;
    for (uint32_t i = 0; i < RT_BUF_CACHE_ENTRIES; i++) {
        const buf_entry *e = &t_cache[i];
        if (e->epoch == now && e->device_id == c->dev_handle.device_id &&
            e->server_key == c->dev_handle.server_key && q >= e->lo && q < e->hi && (uint64_t)(e->hi - q) >= bytes)
            return true;
    }
    *epoch = now; /* read before the lookup: a free during it makes the entry stale at once */
    return false;
}

void rt_buf_cache_note(const rt_comm *c, const void *p, uint64_t bytes_after, uint64_t epoch)
{
    if (!epoch)
        return;
    buf_entry *e = &t_cache[t_next++ % RT_BUF_CACHE_ENTRIES];
    *e = (buf_entry){(const char *)p, (const char *)p + bytes_after, epoch, c->dev_handle.server_key,
                     c->dev_handle.device_id};
}

uint64_t rt_buf_cache_epoch(const rt_comm *c)
{
    return listening(c->hal) ? atomic_load(&g_epoch) : 0;
}

uint64_t rt_repeat_epoch(const rt_comm *c)
{
    return rt_mem_ranges_set() ? 0 : rt_buf_cache_epoch(c);
}
