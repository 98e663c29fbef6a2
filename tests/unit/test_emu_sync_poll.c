/* A host thread blocked in a synchronize polls longer past the CPUs (hal/emu/emu_notify.c,
 * emu_wait_yield_ns; docs/emulator.md, "Waits"): with more emulated devices mapped than CPUs its
 * waits yield for HCCL_EMU_SYNC_YIELD_US before they sleep, elsewhere (a stream's worker, a host
 * that does not synchronize, devices that fit the CPUs) for HCCL_EMU_YIELD_US. Criterion runs each
 * test in its own process, so the devices a test opens are all it maps. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

#define SYNC_YIELD_US 1000000ull /* 1 s: far past a poll that did not take this window */

typedef struct poll_fix {
    const hal_ops *h;
    hal_device *d[EMU_MAX_DEVICES];
    uint32_t ndev;
    hal_stream *s;
    hal_notify *n;
} poll_fix;

/* Opens `ndev` devices (all this process maps) and a stream and notify on the first, whose
 * worker leaves queued tasks to a host that synchronizes (emu_stream_test_park). Waits neither
 * spin nor yield unless the synchronizing host's window applies. */
static poll_fix fix_open(uint32_t ndev)
{
    setenv("HCCL_EMU_DEVICES", "16", 1);
    setenv("HCCL_EMU_SPIN_US", "0", 1);
    setenv("HCCL_EMU_YIELD_US", "0", 1);
    setenv("HCCL_EMU_SYNC_YIELD_US", "1000000", 1);
    poll_fix f = {.h = ht_hal(), .ndev = ndev};
    for (uint32_t i = 0; i < ndev; i++)
        f.d[i] = ht_open(f.h, (int32_t)i);
    HT_OK(f.h->stream_create(f.d[0], &f.s));
    HT_OK(f.h->notify_create(f.d[0], &f.n));
    emu_stream_test_park(f.s);
    return f;
}

static void fix_close(poll_fix *f)
{
    HT_OK(f->h->notify_destroy(f->n));
    HT_OK(f->h->stream_destroy(f->s));
    for (uint32_t i = 0; i < f->ndev; i++)
        HT_OK(f->h->device_close(f->d[i]));
}

/* More devices than CPUs, or skip saying why. */
static uint32_t devices_past_the_cpus(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1 || cpus + 1 > EMU_MAX_DEVICES)
        cr_skip_test("%ld CPUs: one device more than the CPUs is more than the emulator's %d", cpus,
                     EMU_MAX_DEVICES);
    return (uint32_t)cpus + 1;
}

/* A task function: the window its own waits would take, run by whichever thread runs the task. */
static int note_window(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    *(uint64_t *)arg = emu_wait_yield_ns();
    return 0;
}

/* The window the host thread that synchronizes s takes, against that of this (not synchronizing)
 * thread. */
static void windows(poll_fix *f, uint64_t *in_sync, uint64_t *outside)
{
    HT_OK(f->h->task_async(f->s, note_window, in_sync));
    HT_OK(f->h->stream_sync(f->s, -1));
    *outside = emu_wait_yield_ns();
}

Test(emu_sync_poll, a_synchronizing_host_past_the_cpus_takes_the_longer_window, .timeout = 60)
{
    poll_fix f = fix_open(devices_past_the_cpus());
    uint64_t in_sync = 0, outside = 0;
    windows(&f, &in_sync, &outside);
    cr_expect_eq(in_sync, SYNC_YIELD_US * 1000, "window inside the synchronize: %llu ns", (unsigned long long)in_sync);
    cr_expect_eq(outside, 0, "window of a thread that does not synchronize: %llu ns", (unsigned long long)outside);
    fix_close(&f);
}

Test(emu_sync_poll, where_the_devices_fit_the_cpus_a_sync_takes_the_plain_window, .timeout = 60)
{
    poll_fix f = fix_open(1);
    uint64_t in_sync = 1, outside = 1;
    windows(&f, &in_sync, &outside);
    cr_expect_eq(in_sync, 0, "window inside the synchronize, one device: %llu ns", (unsigned long long)in_sync);
    cr_expect_eq(outside, 0, "window outside it: %llu ns", (unsigned long long)outside);
    fix_close(&f);
}

typedef struct sync_job {
    poll_fix *f;
    hal_result rc;
} sync_job;

static void *sync_thread(void *p)
{
    sync_job *j = p;
    j->rc = j->f->h->stream_sync(j->f->s, -1);
    return NULL;
}

/* The host runs the stream's notify wait itself (the worker is parked): it polls, so nobody sleeps
 * on the notify while the window lasts; once the window is spent it sleeps (the poll is bounded),
 * and a record wakes it. */
Test(emu_sync_poll, a_synchronizing_host_polls_its_window_then_sleeps, .timeout = 60)
{
    poll_fix f = fix_open(devices_past_the_cpus());
    HT_OK(f.h->notify_wait(f.n, f.s, 30000, NULL));
    sync_job j = {&f, HAL_E_INTERNAL};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, sync_thread, &j), 0);
    usleep(200000);
    cr_expect_eq(emu_notify_test_waiters(f.n), 0u, "the synchronizing host slept before its window ended");
    while (emu_notify_test_waiters(f.n) == 0) /* the window ends: it sleeps */
        usleep(10000);
    HT_OK(f.h->notify_host_record(f.n));
    pthread_join(t, NULL);
    cr_expect_eq(j.rc, HAL_OK, "the synchronize: %s", hal_result_name(j.rc));
    fix_close(&f);
}
