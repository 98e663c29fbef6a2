/* Free listeners (hal_ops.mem_free_listen): who must hear that device memory of this process is
 * about to go away (hal/net's registration caches).
 *
 * A list of nodes under one mutex. A notifier pins the node it is at (busy), drops the mutex around
 * the call, and pins the next node before unpinning the current one, so no lock of the emulator is
 * held while a listener runs: it may take its own locks (a cache's mutex) and call the HAL without
 * a lock-order cycle with the free path. Removal marks the node dead (no more calls), waits until
 * nobody is pinned on it, then unlinks it: a pinned node is never unlinked, so its next pointer
 * stays valid. With no listener a free costs one atomic load. */
#include <stdlib.h>

#include "hal/emu/emu_internal.h"

typedef struct listener {
    struct listener *next;
    hal_mem_free_fn fn;
    void *arg;
    uint64_t id;
    uint32_t busy; /* notifiers pinned on this node */
    bool dead;     /* removed: skipped, unlinked once busy is 0 */
} listener;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static listener *g_head;
static uint64_t g_next_id = 1;
static _Atomic uint32_t g_live; /* listeners not removed */

hal_result emu_mem_free_listen(hal_mem_free_fn fn, void *arg, uint64_t *id)
{
    if (!fn || !id)
        return HAL_E_PARAM;
    listener *l = calloc(1, sizeof *l);
    if (!l)
        return HAL_E_NOMEM;
    l->fn = fn;
    l->arg = arg;
    pthread_mutex_lock(&g_mu);
    l->id = g_next_id++;
    l->next = g_head;
    g_head = l;
    atomic_fetch_add(&g_live, 1);
    *id = l->id;
    pthread_mutex_unlock(&g_mu);
    return HAL_OK;
}

hal_result emu_mem_free_unlisten(uint64_t id)
{
    pthread_mutex_lock(&g_mu);
    listener *l = g_head;
    while (l && (l->id != id || l->dead))
        l = l->next;
    if (!l) {
        pthread_mutex_unlock(&g_mu);
        return HAL_E_PARAM;
    }
    l->dead = true;
    atomic_fetch_sub(&g_live, 1);
    while (l->busy)
        pthread_cond_wait(&g_cv, &g_mu);
    listener **pp = &g_head;
    while (*pp != l)
        pp = &(*pp)->next;
    *pp = l->next;
    pthread_mutex_unlock(&g_mu);
    free(l);
    return HAL_OK;
}

void emu_mem_freeing(void *base, size_t size)
{
    if (!base || !size || !atomic_load(&g_live))
        return;
    pthread_mutex_lock(&g_mu);
    listener *l = g_head;
    if (l)
        l->busy++;
    while (l) {
        if (!l->dead) {
            hal_mem_free_fn fn = l->fn;
            void *arg = l->arg;
            pthread_mutex_unlock(&g_mu);
            fn(arg, base, size);
            pthread_mutex_lock(&g_mu);
        }
        listener *next = l->next;
        if (next)
            next->busy++;
        if (--l->busy == 0 && l->dead)
            pthread_cond_broadcast(&g_cv); /* its remover may unlink it now */
        l = next;
    }
    pthread_mutex_unlock(&g_mu);
}
