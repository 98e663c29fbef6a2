/* Task pool: no allocation per enqueue in steady state. A task that ran goes back to its stream's
 * free list (under the stream mutex the executor takes anyway after each task); each enqueue, while
 * it holds the stream mutex, moves one task from that list to the enqueuing thread's spare, and the
 * next emu_task_new of the thread takes the spare without a lock. Every task has the same size, so
 * a spare taken from one stream serves any other. Bounded: a stream keeps at most POOL_MAX tasks
 * (a burst of enqueues leaves no lasting footprint), a thread one spare (freed at thread exit). */
#include <stdatomic.h>
#include <stdlib.h>

#include "common/oh_tls.h"
#include "hal/emu/emu_internal.h"

#define POOL_MAX 2048u
#define HEAP_DESCS_KEEP 64u /* larger descriptor arrays are not kept with a pooled task */

static _Thread_local OH_TLS_HOT emu_task *t_spare;
static _Thread_local OH_TLS_HOT bool t_keyed;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;

static void destroy(emu_task *t)
{
    free(t->heap_descs);
    free(t);
}

static void spare_thread_exit(void *unused)
{
    (void)unused;
    if (t_spare) {
        destroy(t_spare);
        t_spare = NULL;
    }
}

static void key_create(void)
{
    g_key_ok = pthread_key_create(&g_key, spare_thread_exit) == 0;
}

static _Atomic uint64_t g_enqueue_allocs;

uint64_t emu_task_enqueue_allocs(void)
{
    return atomic_load(&g_enqueue_allocs);
}

static emu_task *task_alloc(void)
{
    emu_task *t = malloc(sizeof *t);
    if (t) {
        t->heap_descs = NULL;
        t->heap_cap = 0;
    }
    return t;
}

emu_task *emu_task_new(emu_task_kind kind)
{
    emu_task *t = t_spare;
    if (t)
        t_spare = NULL;
    else if (!(t = task_alloc()))
        return NULL;
    else
        atomic_fetch_add_explicit(&g_enqueue_allocs, 1, memory_order_relaxed);
    t->next = NULL;
    t->kind = kind;
    t->trace_tag.op = 0;
    return t;
}

void emu_task_release_refs(emu_task *t)
{
    if (t->kind == EMU_T_EVENT_RECORD || t->kind == EMU_T_EVENT_WAIT)
        emu_event_put(t->u.ev.e);
    if (t->kind == EMU_T_NOTIFY_RECORD || t->kind == EMU_T_NOTIFY_WAIT || t->kind == EMU_T_FLAG_WAIT ||
        t->kind == EMU_T_NOTIFY_WAKE)
        emu_notify_put(t->u.nt.n);
    for (uint32_t i = 0; t->kind == EMU_T_PROG && i < EMU_PROG_RECORDS && t->u.prog.rec[i].e; i++)
        emu_event_put(t->u.prog.rec[i].e);
    if (t->kind == EMU_T_EVENT_WAIT && t->u.ev.rec.e)
        emu_event_put(t->u.ev.rec.e);
    t->kind = EMU_T_HOST; /* nothing referenced any more */
}

void emu_task_free(emu_task *t)
{
    emu_task_release_refs(t);
    destroy(t);
}

void emu_task_recycle_locked(hal_stream *s, emu_task *t)
{
    if (s->nfree >= POOL_MAX) {
        destroy(t);
        return;
    }
    if (t->heap_cap > HEAP_DESCS_KEEP) {
        free(t->heap_descs);
        t->heap_descs = NULL;
        t->heap_cap = 0;
    }
    t->next = s->free_tasks;
    s->free_tasks = t;
    s->nfree++;
}

void emu_task_refill_locked(hal_stream *s)
{
    if (t_spare || !s->free_tasks)
        return;
    if (!t_keyed) { /* the spare must not outlive its thread */
        pthread_once(&g_key_once, key_create);
        if (!g_key_ok || pthread_setspecific(g_key, (void *)1) != 0)
            return;
        t_keyed = true;
    }
    t_spare = s->free_tasks;
    s->free_tasks = t_spare->next;
    s->nfree--;
}

void emu_task_pool_fill_locked(hal_stream *s, uint32_t n)
{
    while (s->nfree < n && s->nfree < POOL_MAX) {
        emu_task *t = task_alloc(); /* written: its page is faulted in here, not at an enqueue */
        if (!t)
            return; /* the pool is an optimization: enqueues allocate what is missing */
        t->kind = EMU_T_HOST;
        emu_task_recycle_locked(s, t);
    }
}

void emu_task_pool_drain(hal_stream *s)
{
    while (s->free_tasks) {
        emu_task *t = s->free_tasks;
        s->free_tasks = t->next;
        destroy(t);
    }
    s->nfree = 0;
}
