/* Stream workers' scheduling policy (hal/emu/emu_stream.c, worker_policy): SCHED_BATCH (no wakeup
 * preemption of the host that woke them) unless HCCL_EMU_WORKER_BATCH=0, whatever the number of
 * devices. Criterion runs each test in its own
 * process, so each sets the variable before the emulator reads its configuration. The policy is
 * read on the worker itself, by a host function that nobody syncs for. */
#define _GNU_SOURCE
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

typedef struct seen {
    sem_t done;
    int policy;
} seen;

static void policy_fn(void *arg)
{
    seen *p = arg;
    p->policy = sched_getscheduler(0);
    sem_post(&p->done);
}

/* Opens devices 0..ndev-1, then the policy of device 0's stream worker once it ran a task. */
static int worker_policy_with(uint32_t ndev)
{
    const hal_ops *h = ht_hal();
    hal_device *d[EMU_MAX_DEVICES];
    for (uint32_t i = 0; i < ndev; i++)
        d[i] = ht_open(h, (int32_t)i);
    hal_stream *s;
    HT_OK(h->stream_create(d[0], &s));
    seen p = {.policy = -1};
    sem_init(&p.done, 0, 0);
    HT_OK(h->host_func_async(s, policy_fn, &p));
    while (sem_wait(&p.done) != 0)
        ;
    HT_OK(h->stream_sync(s, -1));
    HT_OK(h->stream_destroy(s));
    for (uint32_t i = 0; i < ndev; i++)
        HT_OK(h->device_close(d[i]));
    sem_destroy(&p.done);
    return p.policy;
}

static uint32_t cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}

Test(emu_worker_sched, one_device_runs_batch, .timeout = 60)
{
    unsetenv("HCCL_EMU_WORKER_BATCH");
    cr_expect_eq(worker_policy_with(1), SCHED_BATCH);
}

Test(emu_worker_sched, more_devices_than_cpus_run_batch, .timeout = 60)
{
    uint32_t n = cpus() + 1;
    if (n > 8) /* HCCL_EMU_DEVICES' default */
        cr_skip_test("this machine has %u CPUs: it would take %u emulated devices to outnumber them", cpus(), n);
    unsetenv("HCCL_EMU_WORKER_BATCH");
    cr_expect_eq(worker_policy_with(n), SCHED_BATCH);
}

Test(emu_worker_sched, off_keeps_sched_other, .timeout = 60)
{
    setenv("HCCL_EMU_WORKER_BATCH", "0", 1);
    cr_expect_eq(worker_policy_with(1), SCHED_OTHER);
    uint32_t n = cpus() + 1;
    cr_expect_eq(worker_policy_with(n > 8 ? 8 : n), SCHED_OTHER);
}
