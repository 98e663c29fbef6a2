/* The emulator's process boundary: who may map a device's memory (SO_PEERCRED), a stopped owner
 * (the memory hand-over is bounded by HCCL_CONNECT_TIMEOUT), a visible message for an
 * out-of-range HCCL_EMU_DEVICES, and which regions the VMM check of a DMA address reads.
 * Processes fork before opening any device and pass plain-data handles through pipes, as
 * test_hal_proc does. */
#include <signal.h>
#include <sys/wait.h>

#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

/* Runs fn with stderr going to a temporary file; returns what it wrote (caller frees). */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    cr_assert_not_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t len = lseek(fileno(tmp), 0, SEEK_END);
    cr_assert_geq(len, 0);
    char *out = calloc(1, (size_t)len + 1);
    cr_assert_not_null(out);
    lseek(fileno(tmp), 0, SEEK_SET);
    cr_assert_eq(ht_xfer(fileno(tmp), out, (size_t)len, 0), 0);
    fclose(tmp);
    return out;
}

static void count_devices(void *arg)
{
    HT_OK(ht_hal()->device_count(arg));
}

Test(emu_env, devices_out_of_range_is_reported)
{
    setenv("HCCL_EMU_DEVICES", "99", 1); /* read once per process: before the first HAL call */
    uint32_t n = 0;
    char *log = capture_stderr(count_devices, &n);
    cr_expect_eq(n, 8, "the default replaces an invalid value");
    cr_expect(strstr(log, "HCCL_EMU_DEVICES=99 is not in [1, 16]") != NULL,
              "no visible message naming the value and the range; stderr was: %s", log);
    free(log);
}

/* Owner of device 0 in the parent; `child` runs in a forked process with the parent's handle. */
static void with_owner(int (*child)(const hal_ops *h, const hal_device_handle *owner), int *status)
{
    const hal_ops *h = ht_hal();
    int to_child[2];
    cr_assert_eq(pipe(to_child), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(to_child[1]);
        hal_device_handle owner;
        if (ht_xfer(to_child[0], &owner, sizeof owner, 0) != 0)
            _exit(3);
        _exit(child(h, &owner));
    }
    close(to_child[0]);
    hal_device *d0 = ht_open(h, 0);
    hal_device_info info;
    HT_OK(h->device_info(d0, &info));
    cr_assert_eq(ht_xfer(to_child[1], &info.handle, sizeof info.handle, 1), 0);
    close(to_child[1]);
    waitpid(pid, status, 0);
    HT_OK(h->device_close(d0));
}

static int import_as_nobody(const hal_ops *h, const hal_device_handle *owner)
{
    if (setgid(65534) != 0 || setuid(65534) != 0)
        return 4;
    hal_device *d1 = NULL;
    if (h->device_open(1, &d1) != HAL_OK)
        return 5;
    hal_result rc = h->mem_import(d1, owner);
    h->device_close(d1);
    return rc == HAL_E_PEER ? 0 : 1;
}

Test(emu_share, other_user_is_refused)
{
    if (geteuid() != 0)
        cr_skip_test("needs root: the test forks a process that drops to another uid (nobody)");
    int status = -1;
    with_owner(import_as_nobody, &status);
    cr_assert(WIFEXITED(status), "the child did not exit normally");
    cr_assert_eq(WEXITSTATUS(status), 0, "a process of another user %s (child status %d)",
                 WEXITSTATUS(status) == 1 ? "mapped the device's memory" : "could not run", WEXITSTATUS(status));
}


Test(emu_share, stopped_owner_fails_import_after_connect_timeout, .timeout = 60)
{
    setenv("HCCL_CONNECT_TIMEOUT", "1", 1);
    const hal_ops *h = ht_hal();
    int from_child[2];
    cr_assert_eq(pipe(from_child), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(from_child[0]);
        hal_device *d1 = NULL;
        if (h->device_open(1, &d1) != HAL_OK)
            _exit(5);
        hal_device_info info;
        if (h->device_info(d1, &info) != HAL_OK || ht_xfer(from_child[1], &info.handle, sizeof info.handle, 1) != 0)
            _exit(6);
        /* Stop the listener thread with the rest of the process: the hand-over never comes. */
        raise(SIGSTOP);
        _exit(0);
    }
    close(from_child[1]);
    hal_device_handle owner;
    cr_assert_eq(ht_xfer(from_child[0], &owner, sizeof owner, 0), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
    cr_assert(WIFSTOPPED(st), "the owner should be stopped");
    hal_device *d0 = ht_open(h, 0);
    hal_result rc = h->mem_import(d0, &owner);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    cr_expect_eq(rc, HAL_E_TIMEOUT, "mem_import from a stopped owner -> %s", hal_result_name(rc));
    HT_OK(h->device_close(d0));
}

/* Notify waits spin only while a process works with no more devices than there are cores
 * (emu_notify.c): the count follows opens and closes. */
Test(emu_env, mapped_devices_follow_open_and_close)
{
    const hal_ops *h = ht_hal();
    uint32_t before = emu_regions_mapped();
    hal_device *a = NULL, *b = NULL;
    HT_OK(h->device_open(0, &a));
    HT_OK(h->device_open(1, &b));
    cr_expect_eq(emu_regions_mapped(), before + 2);
    HT_OK(h->device_close(b));
    cr_expect_eq(emu_regions_mapped(), before + 1);
    HT_OK(h->device_close(a));
    cr_expect_eq(emu_regions_mapped(), before);
}

/* emu_vmm_sync_at runs for every address a DMA resolves to (emu_vmm_share.c). It reads a region's
 * VMM table only where this process knows the region is mapped: an address of another server's
 * slot, of this server's slot of a device not opened here, or outside the regions is left alone
 * (reading a table there would fault: the test would crash), twice in a row (the second time from
 * what the first learned), and a DMA through an opened device, before and after, still copies. */
Test(emu_vmm, sync_reads_only_regions_mapped_here)
{
    const hal_ops *h = ht_hal();
    hal_device *d = ht_open(h, 0);
    uint32_t server = emu_cfg()->server_index;
    char *other_server = (char *)emu_region_base(server + 1, 0) + 4096;
    char *not_opened = (char *)emu_region_base(server, EMU_MAX_DEVICES - 1) + 4096;
    int host = 0;
    const void *outside[] = {NULL, &host, other_server, not_opened, (void *)(uintptr_t)EMU_REGION_BASE - 64};
    hal_stream *s;
    void *a, *b;
    HT_OK(h->stream_create(d, &s));
    HT_OK(h->mem_alloc(d, 4096, &a));
    HT_OK(h->mem_alloc(d, 4096, &b));
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
            emu_vmm_sync_at(outside[i]);
        ht_fill(a, 4096, 3 + round);
        hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(b), .src = hal_ref_ptr(a), .bytes = 4096};
        HT_OK(h->dma_batch(s, &desc, 1));
        HT_OK(h->stream_sync(s, -1));
        cr_assert(memcmp(a, b, 4096) == 0, "round %d: the copy through device 0", round);
    }
    HT_OK(h->mem_free(d, a));
    HT_OK(h->mem_free(d, b));
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(d));
}
