/* hal/ascend's key directories (/dev/shm/ohccl_asc_<uid>_<pid>_<device>) do not outlive their
 * process: removed at exit though the device was never closed (the runtime keeps its devices to the
 * end), and when the process was killed, by the next process that publishes; a live process's
 * directory stays. Each process is a child forked before it touches the HAL, on our libascendcl.so;
 * it reports through a pipe (its exit status may be a sanitizer's, its devices being left open).
 * The cases run at once (Criterion's jobs): each takes devices of its own. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hal_testutil.h"

static void dir_path(char *buf, size_t n, pid_t pid, int dev)
{
    snprintf(buf, n, "/dev/shm/ohccl_asc_%u_%u_%d", (unsigned)getuid(), (unsigned)pid, dev);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

typedef enum { THEN_EXIT, THEN_WAIT } then;

/* A child that opens device dev on hal/ascend and publishes its directory (device_info makes it
 * importable), then exits normally or waits to be killed. Returns its pid once its report arrived:
 * 1 published and its directory there, 0 not. */
static pid_t publisher(int dev, then after, char *report)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork");
    if (pid == 0) {
        close(fds[0]);
        setenv("HCCL_HAL", "ascend", 1);
        setenv("HCCL_ASCEND_ACL_LIB", OH_BUILD_DIR "/libascendcl.so", 1);
        const hal_ops *h = hal_get();
        hal_device *d = NULL;
        hal_device_info info;
        char path[128], ok = 0;
        dir_path(path, sizeof path, getpid(), dev);
        if (h && h->device_open(dev, &d) == HAL_OK && h->device_info(d, &info) == HAL_OK)
            ok = exists(path);
        if (write(fds[1], &ok, 1) != 1)
            _exit(3);
        if (after == THEN_WAIT)
            for (;;)
                pause();
        exit(0); /* atexit handlers run; the device stays open */
    }
    close(fds[1]);
    cr_assert_eq(read(fds[0], report, 1), 1, "the child on device %d reported nothing", dev);
    close(fds[0]);
    return pid;
}

static void end(pid_t pid, bool kill_it)
{
    if (kill_it)
        kill(pid, SIGKILL);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
}

Test(asc_keydir, goes_with_its_process_at_exit)
{
    char ok;
    pid_t pid = publisher(0, THEN_EXIT, &ok);
    end(pid, false);
    cr_assert_eq(ok, 1, "the child's directory was not there while it lived");
    char path[128];
    dir_path(path, sizeof path, pid, 0);
    cr_expect(!exists(path), "%s outlived its process", path);
}

/* (Another suite's rank that publishes meanwhile may sweep it first: the check is that it is gone.) */
Test(asc_keydir, a_killed_process_is_swept_by_the_next_publisher)
{
    char ok, ok2;
    pid_t dead = publisher(2, THEN_WAIT, &ok);
    end(dead, true);
    cr_assert_eq(ok, 1, "the child's directory was not there while it lived");
    char path[128];
    dir_path(path, sizeof path, dead, 2);
    end(publisher(3, THEN_EXIT, &ok2), false);
    cr_assert_eq(ok2, 1, "the second child did not publish");
    cr_expect(!exists(path), "%s of a killed process was not swept", path);
}

Test(asc_keydir, a_live_process_is_not_swept)
{
    char ok, ok2;
    pid_t live = publisher(4, THEN_WAIT, &ok);
    char path[128];
    dir_path(path, sizeof path, live, 4);
    end(publisher(5, THEN_EXIT, &ok2), false);
    bool kept = exists(path);
    end(live, true);
    unlink(path); /* killed: nothing of the test removes it otherwise */
    cr_assert_eq(ok, 1, "the first child did not publish");
    cr_assert_eq(ok2, 1, "the second child did not publish");
    cr_expect(kept, "%s of a live process was swept", path);
}
