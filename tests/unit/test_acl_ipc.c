/* ACL inter-process sharing: aclrtIpcMem* and aclrtNotify*Key between forked processes, each on
 * its own device. A granted process imports and uses the memory / notify; a process not on the
 * whitelist is refused (ACL_ERROR_RT_NO_PERMISSION) unless the export disabled the pid check.
 * Children are forked before anything is opened and report through their exit status. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"

enum { N = 1 << 16, KEY = 65 };

static int xread(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int xwrite(int fd, const void *buf, size_t n)
{
    return write(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

static unsigned char pattern(size_t i, int seed)
{
    return (unsigned char)(i * 7u + (unsigned)seed);
}

/* 1 when the device range holds pattern(seed). */
static int holds(const void *dev, int seed)
{
    static unsigned char host[N];
    if (aclrtMemcpy(host, N, dev, N, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS)
        return 0;
    for (size_t i = 0; i < N; i++)
        if (host[i] != pattern(i, seed))
            return 0;
    return 1;
}

static void fill_host(unsigned char *h, int seed)
{
    for (size_t i = 0; i < N; i++)
        h[i] = pattern(i, seed);
}

/* A child: own device, sends its pid, then runs `body` with the keys the parent sends. */
typedef struct child_io {
    int to_child, from_child;
} child_io;

static int child_start(int device, const child_io *io)
{
    int32_t pid = 0;
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(device) != ACL_SUCCESS ||
        aclrtDeviceGetBareTgid(&pid) != ACL_SUCCESS || pid != (int32_t)getpid())
        return 2;
    return xwrite(io->from_child, &pid, sizeof pid) == 0 ? 0 : 3;
}

/* Granted: imports, checks the exporter's data, writes its own through a stream, closes. */
static int granted_mem(const child_io *io)
{
    char key[KEY];
    if (xread(io->to_child, key, KEY) != 0)
        return 10;
    void *p = NULL;
    if (aclrtIpcMemImportByKey(&p, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT) != ACL_SUCCESS || !p)
        return 11;
    if (!holds(p, 1))
        return 12;
    static unsigned char h[N];
    fill_host(h, 2);
    aclrtStream s;
    if (aclrtCreateStream(&s) != ACL_SUCCESS || aclrtMemcpyAsync(p, N, h, N, ACL_MEMCPY_HOST_TO_DEVICE, s) != 0 ||
        aclrtSynchronizeStream(s) != ACL_SUCCESS || aclrtDestroyStream(s) != ACL_SUCCESS)
        return 13;
    if (aclrtIpcMemClose(key) != ACL_SUCCESS)
        return 14;
    if (aclrtIpcMemClose(key) != ACL_ERROR_RT_PARAM_INVALID) /* closed already */
        return 15;
    return 0;
}

/* Not granted: refused for the whitelisted key, admitted for the one without a pid check. */
static int other_mem(const child_io *io)
{
    char key1[KEY], key2[KEY];
    if (xread(io->to_child, key1, KEY) != 0 || xread(io->to_child, key2, KEY) != 0)
        return 20;
    void *p = NULL;
    if (aclrtIpcMemImportByKey(&p, key1, 0) != ACL_ERROR_RT_NO_PERMISSION)
        return 21;
    if (aclrtIpcMemImportByKey(&p, key2, 0) != ACL_SUCCESS || !holds(p, 3))
        return 22;
    if (aclrtIpcMemClose(key2) != ACL_SUCCESS)
        return 23;
    return 0;
}

static pid_t spawn(int device, int (*body)(const child_io *), child_io *parent_side)
{
    int down[2], up[2];
    cr_assert_eq(pipe(down), 0);
    cr_assert_eq(pipe(up), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        child_io io = {down[0], up[1]};
        int rc = child_start(device, &io);
        if (rc == 0)
            rc = body(&io);
        char done = rc == 0 ? 'd' : 'f';
        xwrite(io.from_child, &done, 1);
        aclFinalize();
        _exit(rc);
    }
    close(down[0]);
    close(up[1]);
    parent_side->to_child = down[1];
    parent_side->from_child = up[0];
    return pid;
}

static void reap(pid_t pid, const child_io *io, const char *who)
{
    char done = 0;
    cr_expect_eq(xread(io->from_child, &done, 1), 0, "%s sent no result", who);
    int status = -1;
    waitpid(pid, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed at step %d", who,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    cr_expect_eq(done, 'd', "%s", who);
}

Test(acl_ipc, memory_between_processes_with_whitelist, .timeout = 60)
{
    child_io b, c;
    pid_t pb = spawn(1, granted_mem, &b);
    pid_t pc = spawn(2, other_mem, &c);
    int32_t bpid = 0, cpid = 0;
    cr_assert_eq(xread(b.from_child, &bpid, sizeof bpid), 0, "process B could not start");
    cr_assert_eq(xread(c.from_child, &cpid, sizeof cpid), 0, "process C could not start");

    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    void *buf1, *buf2;
    static unsigned char h[N];
    cr_assert_eq(aclrtMalloc(&buf1, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&buf2, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    fill_host(h, 1);
    cr_assert_eq(aclrtMemcpy(buf1, N, h, N, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    fill_host(h, 3);
    cr_assert_eq(aclrtMemcpy(buf2, N, h, N, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    char key1[KEY], key2[KEY];
    cr_assert_eq(aclrtIpcMemGetExportKey(buf1, N, key1, KEY, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT), ACL_SUCCESS);
    cr_assert_eq(aclrtIpcMemSetImportPid(key1, &bpid, 1), ACL_SUCCESS);
    cr_assert_eq(aclrtIpcMemGetExportKey(buf2, N, key2, KEY, ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION),
                 ACL_SUCCESS);
    cr_assert_str_neq(key1, key2);
    cr_assert_eq(xwrite(b.to_child, key1, KEY), 0);
    cr_assert_eq(xwrite(c.to_child, key1, KEY), 0);
    cr_assert_eq(xwrite(c.to_child, key2, KEY), 0);
    reap(pb, &b, "process B (whitelisted)");
    reap(pc, &c, "process C (not whitelisted)");

    cr_expect(holds(buf1, 2), "B's write through the imported pointer is not in A's buffer");
    cr_expect_eq(aclrtIpcMemClose(key1), ACL_SUCCESS);
    cr_expect_eq(aclrtIpcMemClose(key2), ACL_SUCCESS);
    void *p = NULL;
    cr_expect_eq(aclrtIpcMemImportByKey(&p, key1, 0), ACL_ERROR_RT_PARAM_INVALID, "a closed export");
    cr_expect_eq(aclrtIpcMemClose(key1), ACL_ERROR_RT_PARAM_INVALID, "closed twice");
    aclrtFree(buf1);
    aclrtFree(buf2);
    aclrtResetDevice(0);
    aclFinalize();
}

/* Granted: imports the notify and records it; the exporter's waiting stream then proceeds. */
static int granted_notify(const child_io *io)
{
    char key[KEY];
    if (xread(io->to_child, key, KEY) != 0)
        return 30;
    aclrtNotify n = NULL;
    if (aclrtNotifyImportByKey(&n, key, ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS) != ACL_SUCCESS)
        return 31;
    if (aclrtRecordNotify(n, NULL) != ACL_SUCCESS || aclrtSynchronizeStream(NULL) != ACL_SUCCESS)
        return 32;
    return aclrtDestroyNotify(n) == ACL_SUCCESS ? 0 : 33;
}

static int other_notify(const child_io *io)
{
    char key[KEY];
    if (xread(io->to_child, key, KEY) != 0)
        return 40;
    aclrtNotify n = NULL;
    return aclrtNotifyImportByKey(&n, key, 0) == ACL_ERROR_RT_NO_PERMISSION ? 0 : 41;
}

Test(acl_ipc, notify_between_processes_with_whitelist, .timeout = 60)
{
    child_io b, c;
    pid_t pb = spawn(1, granted_notify, &b);
    pid_t pc = spawn(2, other_notify, &c);
    int32_t bpid = 0, cpid = 0;
    cr_assert_eq(xread(b.from_child, &bpid, sizeof bpid), 0, "process B could not start");
    cr_assert_eq(xread(c.from_child, &cpid, sizeof cpid), 0, "process C could not start");

    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtNotify n;
    aclrtStream s;
    cr_assert_eq(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    char key[KEY], again[KEY];
    cr_assert_eq(aclrtNotifySetImportPid(n, &bpid, 1), ACL_ERROR_RT_PARAM_INVALID, "not exported yet");
    cr_assert_eq(aclrtNotifyGetExportKey(n, key, KEY, ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT), ACL_SUCCESS);
    cr_assert_eq(aclrtNotifyGetExportKey(n, again, KEY, ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT), ACL_SUCCESS);
    cr_expect_str_eq(key, again, "exporting a notify twice gives its one key");
    cr_assert_eq(aclrtNotifySetImportPid(n, &bpid, 1), ACL_SUCCESS);
    /* The wait is queued before B can record: it completes only through B's record. */
    cr_assert_eq(aclrtWaitAndResetNotify(n, s, 30), ACL_SUCCESS);
    cr_assert_eq(xwrite(b.to_child, key, KEY), 0);
    cr_assert_eq(xwrite(c.to_child, key, KEY), 0);
    reap(pb, &b, "process B (whitelisted)");
    reap(pc, &c, "process C (not whitelisted)");
    cr_expect_eq(aclrtSynchronizeStream(s), ACL_SUCCESS, "the wait did not see B's record");
    cr_expect_eq(aclrtDestroyNotify(n), ACL_SUCCESS);
    aclrtNotify gone = NULL;
    cr_expect_eq(aclrtNotifyImportByKey(&gone, key, 0), ACL_ERROR_RT_PARAM_INVALID, "the notify was destroyed");
    aclrtDestroyStream(s);
    aclrtResetDevice(0);
    aclFinalize();
}

/* ---- argument checks (one process) ----------------------------------------------------------- */

static void *import_without_device(void *key)
{
    void *p = NULL;
    return (void *)(intptr_t)aclrtIpcMemImportByKey(&p, key, 0);
}

Test(acl_ipc, bad_arguments, .init = acl_fixture_setup, .fini = acl_fixture_teardown)
{
    void *d;
    char key[KEY];
    int32_t pid = (int32_t)getpid();
    cr_assert_eq(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_expect_eq(aclrtIpcMemGetExportKey(NULL, N, key, KEY, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemGetExportKey(d, N, NULL, KEY, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemGetExportKey(d, N, key, KEY - 1, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemGetExportKey(d, N, key, KEY, 4), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemGetExportKey(d, 0, key, KEY, 0), ACL_ERROR_RT_PARAM_INVALID);
    cr_expect_eq(aclrtIpcMemGetExportKey(d, N + 4096, key, KEY, 0), ACL_ERROR_RT_PARAM_INVALID, "past the end");
    cr_expect_eq(aclrtIpcMemGetExportKey(key, 16, key, KEY, 0), ACL_ERROR_RT_PARAM_INVALID, "host memory");
    void *d1;
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&d1, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_expect_eq(aclrtIpcMemGetExportKey(d1, N, key, KEY, 0), ACL_SUCCESS, "memory of another device of the process");
    cr_expect_eq(aclrtIpcMemClose(key), ACL_SUCCESS);
    cr_expect_eq(aclrtFree(d1), ACL_SUCCESS);
    cr_expect_eq(aclrtResetDevice(1), ACL_SUCCESS);
    cr_expect_eq(aclrtResetDevice(0), ACL_SUCCESS); /* the second aclrtSetDevice(0) */
    cr_assert_eq(aclrtIpcMemGetExportKey(d, N, key, KEY, 0), ACL_SUCCESS);
    cr_expect_eq(aclrtIpcMemSetImportPid(NULL, &pid, 1), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemSetImportPid(key, NULL, 1), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemSetImportPid(key, &pid, 0), ACL_ERROR_RT_PARAM_INVALID);
    cr_expect_eq(aclrtIpcMemSetImportPid("oh:m:garbage", &pid, 1), ACL_ERROR_RT_PARAM_INVALID);
    cr_expect_eq(aclrtIpcMemSetImportPid(key, &pid, 1), ACL_SUCCESS);
    void *p = NULL;
    cr_expect_eq(aclrtIpcMemImportByKey(NULL, key, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemImportByKey(&p, NULL, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemImportByKey(&p, key, 2), ACL_ERROR_RT_PARAM_INVALID, "flags beyond ENABLE_PEER_ACCESS");
    cr_expect_eq(aclrtIpcMemImportByKey(&p, "not a key", 0), ACL_ERROR_RT_PARAM_INVALID);
    pthread_t t;
    void *res;
    cr_assert_eq(pthread_create(&t, NULL, import_without_device, key), 0);
    pthread_join(t, &res);
    cr_expect_eq((aclError)(intptr_t)res, ACL_ERROR_RT_CONTEXT_NULL, "import on a thread without a device");
    cr_expect_eq(aclrtIpcMemImportByKey(&p, key, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS), ACL_SUCCESS);
    cr_expect_eq(p, d, "the exporter's own import is its pointer");
    cr_expect_eq(aclrtIpcMemClose(NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtIpcMemClose("garbage"), ACL_ERROR_RT_PARAM_INVALID);
    cr_expect_eq(aclrtIpcMemClose(key), ACL_SUCCESS);

    aclrtNotify n;
    cr_assert_eq(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT), ACL_SUCCESS);
    cr_expect_eq(aclrtNotifyGetExportKey(NULL, key, KEY, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtNotifyGetExportKey(d, key, KEY, 0), ACL_ERROR_RT_PARAM_INVALID, "not a notify");
    cr_expect_eq(aclrtNotifyGetExportKey(n, key, KEY - 1, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtNotifyGetExportKey(n, key, KEY, 1), ACL_ERROR_INVALID_PARAM, "1 is the memory flag");
    cr_expect_eq(aclrtNotifySetImportPid(n, NULL, 1), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtNotifyGetExportKey(n, key, KEY, ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION), ACL_SUCCESS);
    aclrtNotify m = NULL;
    cr_expect_eq(aclrtNotifyImportByKey(NULL, key, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtNotifyImportByKey(&m, key, 1), ACL_ERROR_INVALID_PARAM);
    char memkey[KEY];
    cr_assert_eq(aclrtIpcMemGetExportKey(d, N, memkey, KEY, 0), ACL_SUCCESS);
    cr_expect_eq(aclrtNotifyImportByKey(&m, memkey, 0), ACL_ERROR_RT_PARAM_INVALID, "a memory key");
    cr_expect_eq(aclrtIpcMemImportByKey(&p, key, 0), ACL_ERROR_RT_PARAM_INVALID, "a notify key");
    cr_expect_eq(aclrtIpcMemClose(memkey), ACL_SUCCESS);
    cr_expect_eq(aclrtDestroyNotify(n), ACL_SUCCESS);
    int32_t tgid = 0;
    cr_expect_eq(aclrtDeviceGetBareTgid(NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtDeviceGetBareTgid(&tgid), ACL_SUCCESS);
    cr_expect_eq(tgid, pid);
    aclrtFree(d);
}
