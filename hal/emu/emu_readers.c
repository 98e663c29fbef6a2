/* Lock-free readers of the region table (emu_region.c) announce themselves while they read (mem
 * lookups, the VMM check before each program's first DMA), each thread on a cache line of its own:
 * entering and leaving cost two plain stores (asymmetric fences, below). One counter shared by every thread
 * (the first design) made the line move between the host thread and the stream worker of a rank
 * at each program: at 2 ranks it cost an 8 B Broadcast ~0.06 us of its ~0.55 (docs/perf-history.md). A
 * writer that took a region out of the table waits until no thread is inside. */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "common/oh_tls.h"
#include "hal/emu/emu_internal.h"

#define READER_MARKS 512u /* threads beyond share one more mark (correct, only slower) */

typedef struct reader_mark {
    _Alignas(64) _Atomic uint32_t depth; /* > 0 while its thread reads */
    _Atomic bool taken;                  /* by a live thread */
} reader_mark;

static reader_mark g_marks[READER_MARKS];
static reader_mark g_shared;
static _Atomic uint32_t g_used; /* marks [0, g_used) were handed out at least once */
static _Thread_local OH_TLS_HOT reader_mark *t_mark;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;

static void mark_release(void *m)
{
    atomic_store(&((reader_mark *)m)->taken, false);
}

static void key_create(void)
{
    g_key_ok = pthread_key_create(&g_key, mark_release) == 0;
}

static void note_used(uint32_t n)
{
    uint32_t seen = atomic_load(&g_used);
    while (seen < n && !atomic_compare_exchange_weak(&g_used, &seen, n))
        ;
}

/* A free mark for this thread, given back at its exit; the shared one when none is left. */
static reader_mark *mark_take(void)
{
    pthread_once(&g_key_once, key_create);
    for (uint32_t i = 0; g_key_ok && i < READER_MARKS; i++) {
        bool free_mark = false;
        if (!atomic_compare_exchange_strong(&g_marks[i].taken, &free_mark, true))
            continue;
        note_used(i + 1); /* before the first entry: a writer that misses it, misses the entry too */
        if (pthread_setspecific(g_key, &g_marks[i]) == 0)
            return &g_marks[i];
        atomic_store(&g_marks[i].taken, false);
        break;
    }
    return &g_shared;
}

/* Asymmetric fences: with the process registered for expedited membarrier, a reader's own mark
 * takes a plain store, and the writer (a region leaving the table: rare) makes every thread of the
 * process run a full barrier before it reads the marks. Either a reader's mark is visible to the
 * writer then, or the reader's loads of the table come after that barrier and see the region gone.
 * A seq_cst increment, the fallback where the kernel refuses membarrier, costs a small call's
 * program the wait for the stores before it (docs/perf-history.md, "The host helps early"). */
static pthread_once_t g_fence_once = PTHREAD_ONCE_INIT;
static bool g_fence_async;

static long membarrier_cmd(int cmd)
{
    return syscall(__NR_membarrier, cmd, 0, 0);
}

static void fence_init(void)
{
    g_fence_async = membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

void emu_regions_read_begin(void)
{
    if (!t_mark) {
        pthread_once(&g_fence_once, fence_init); /* before this thread's first entry */
        t_mark = mark_take();
    }
    if (!g_fence_async || t_mark == &g_shared) {
        atomic_fetch_add(&t_mark->depth, 1); /* seq_cst: ordered before the loads of the table */
        return;
    }
    uint32_t d = atomic_load_explicit(&t_mark->depth, memory_order_relaxed); /* only this thread writes it */
    atomic_store_explicit(&t_mark->depth, d + 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the table's loads after it */
}

void emu_regions_read_end(void)
{
    if (t_mark == &g_shared) {
        atomic_fetch_sub_explicit(&t_mark->depth, 1, memory_order_release);
        return;
    }
    uint32_t d = atomic_load_explicit(&t_mark->depth, memory_order_relaxed); /* only this thread writes it */
    atomic_store_explicit(&t_mark->depth, d - 1, memory_order_release);
}

/* The writer's half: every thread of the process runs a full barrier. A process the kernel does
 * not count as registered (EPERM: a forked child, on a kernel that does not carry the
 * registration across fork; Linux 6.x here does) registers now, and the barrier still covers its
 * threads' earlier stores. Should the kernel refuse, a millisecond outlasts any store still
 * buffered (readers stay inside for a few loads only). */
static void writer_barrier(void)
{
    if (!g_fence_async || membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    if (errno == EPERM && membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
        membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    OH_ERR("emu", "membarrier refused (%s): waiting 1 ms for the region table's readers instead", strerror(errno));
    usleep(1000);
}

/* After a region left the table (a seq_cst exchange): no lock-free reader can still hold it once
 * this returns. Readers stay inside for a few loads only. */
void emu_regions_wait_readers(void)
{
    pthread_once(&g_fence_once, fence_init);
    writer_barrier();
    for (;;) {
        bool inside = atomic_load(&g_shared.depth) != 0;
        for (uint32_t i = 0, n = atomic_load(&g_used); i < n && !inside; i++)
            inside = atomic_load(&g_marks[i].depth) != 0;
        if (!inside)
            return;
        sched_yield();
    }
}
