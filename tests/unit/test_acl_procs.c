/* ACL front across processes: the calls CANN answers without a device (aclrtGetSocName,
 * aclrtGetDeviceCount, aclrtGetVersion, aclrtGetDeviceInfo) claim nothing, so processes that ask
 * first and then pick their own device all succeed (CANN's hccl_test does exactly this on every
 * rank); a second process opening a device another live process holds gets a clear error.
 * Processes are forked before anything is opened; children report through their exit status. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <acl/acl.h>

enum { NPROCS = 4 };

/* Exit codes of a child: 0 = every step passed, otherwise the step that failed. */
enum { STEP_INIT = 10, STEP_SOC, STEP_COUNT, STEP_VERSION, STEP_INFO, STEP_BARRIER, STEP_SET, STEP_GET, STEP_MALLOC,
       STEP_RESET, STEP_BUSY };

static int read_byte(int fd)
{
    char c;
    return read(fd, &c, 1) == 1 ? c : -1;
}

static int write_byte(int fd, char c)
{
    return write(fd, &c, 1) == 1 ? 0 : -1;
}

typedef struct child_pipes {
    int ready_fd, go_fd, done_fd;
    int phase; /* 0: before ready, 1: before done, 2: done sent */
} child_pipes;

/* Sends the next barrier byte ('r', then 'd'), or 'f' for it when the child fails: the parent
 * always gets one byte per barrier per child, so a failure never leaves it waiting. */
static int arrive(child_pipes *p, char c)
{
    int fd = p->phase == 0 ? p->ready_fd : p->done_fd;
    p->phase++;
    return write_byte(fd, c);
}

/* Queries before any device is set, tells the parent, waits for "go", then sets device `rank`. */
static int query_then_set(int rank, child_pipes *p)
{
    if (aclInit(NULL) != ACL_SUCCESS)
        return STEP_INIT;
    const char *soc = aclrtGetSocName();
    if (!soc || !soc[0])
        return STEP_SOC;
    uint32_t count = 0;
    if (aclrtGetDeviceCount(&count) != ACL_SUCCESS || count < NPROCS)
        return STEP_COUNT;
    int32_t major = -1, minor = -1, patch = -1;
    if (aclrtGetVersion(&major, &minor, &patch) != ACL_SUCCESS || major < 1)
        return STEP_VERSION;
    int64_t cores = 0;
    if (aclrtGetDeviceInfo(0, ACL_DEV_ATTR_AICORE_CORE_NUM, &cores) != ACL_SUCCESS || cores <= 0)
        return STEP_INFO;
    /* Every process has queried (device 0 included) before any of them sets a device. */
    if (arrive(p, 'r') != 0 || read_byte(p->go_fd) != 'g')
        return STEP_BARRIER;
    if (aclrtSetDevice(rank) != ACL_SUCCESS)
        return STEP_SET;
    int32_t id = -1;
    if (aclrtGetDevice(&id) != ACL_SUCCESS || id != rank)
        return STEP_GET;
    void *m = NULL;
    if (aclrtMalloc(&m, 4096, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS || aclrtFree(m) != ACL_SUCCESS)
        return STEP_MALLOC;
    /* Hold the device until every process has set its own. */
    if (arrive(p, 'd') != 0 || read_byte(p->go_fd) != 'e')
        return STEP_BARRIER;
    if (aclrtResetDevice(rank) != ACL_SUCCESS || aclFinalize() != ACL_SUCCESS)
        return STEP_RESET;
    return 0;
}

static int child_main(int rank, child_pipes *p)
{
    int rc = query_then_set(rank, p);
    while (rc != 0 && p->phase < 2)
        arrive(p, 'f');
    return rc;
}

Test(acl_procs, query_before_set_device_claims_nothing, .timeout = 60)
{
    int ready[2], done[2], go[NPROCS][2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(done), 0);
    pid_t pids[NPROCS];
    for (int r = 0; r < NPROCS; r++) {
        cr_assert_eq(pipe(go[r]), 0);
        pids[r] = fork();
        cr_assert_geq(pids[r], 0);
        if (pids[r] == 0) {
            child_pipes p = {ready[1], go[r][0], done[1], 0};
            _exit(child_main(r, &p));
        }
    }
    int queried = 0, set = 0;
    for (int r = 0; r < NPROCS; r++)
        queried += read_byte(ready[0]) == 'r';
    for (int r = 0; r < NPROCS; r++)
        write_byte(go[r][1], 'g');
    for (int r = 0; r < NPROCS; r++)
        set += read_byte(done[0]) == 'd';
    for (int r = 0; r < NPROCS; r++)
        write_byte(go[r][1], 'e');
    for (int r = 0; r < NPROCS; r++) {
        int status = -1;
        waitpid(pids[r], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed at step %d", r,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    cr_expect_eq(queried, NPROCS, "processes that answered every query before any device was set");
    cr_expect_eq(set, NPROCS, "processes that then set their own device");
}

/* Holds device 0 until told to let go. */
static int hold_device0(int ready_fd, int go_fd)
{
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        write_byte(ready_fd, 'f'); /* the parent must not wait for a holder that holds nothing */
        return STEP_SET;
    }
    if (write_byte(ready_fd, 'r') != 0 || read_byte(go_fd) != 'e')
        return STEP_BARRIER;
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}

/* One owner per emulated device: the second process gets ACL_ERROR_RT_DEV_SETUP_ERROR naming the
 * device, and may still use another device. */
Test(acl_procs, second_opener_of_a_device_gets_a_clear_error, .timeout = 60)
{
    int ready[2], go[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(go), 0);
    pid_t holder = fork();
    cr_assert_geq(holder, 0);
    if (holder == 0)
        _exit(hold_device0(ready[1], go[0]));
    cr_assert_eq(read_byte(ready[0]), 'r', "the holder could not set device 0");
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    /* Device 0 is held by another process: the device-free queries still answer. */
    cr_expect(aclrtGetSocName() != NULL);
    int64_t mem = 0;
    cr_expect_eq(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE, &mem), ACL_SUCCESS);
    cr_expect_gt(mem, 0);
    cr_expect_eq(aclrtSetDevice(0), ACL_ERROR_RT_DEV_SETUP_ERROR);
    const char *msg = aclGetRecentErrMsg();
    cr_expect(msg && strstr(msg, "device 0 is opened by another process"), "error text: %s", msg ? msg : "(none)");
    int32_t id = -1;
    cr_expect_eq(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL, "the failed set must not select device 0");
    cr_expect_eq(aclrtSetDevice(1), ACL_SUCCESS);
    cr_expect_eq(aclrtResetDevice(1), ACL_SUCCESS);
    write_byte(go[1], 'e');
    int status = -1;
    waitpid(holder, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "holder failed at step %d",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    /* Once the owner is gone, the device is free again. */
    cr_expect_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_expect_eq(aclrtResetDevice(0), ACL_SUCCESS);
    aclFinalize();
}
