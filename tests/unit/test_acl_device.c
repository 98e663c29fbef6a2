/* ACL front: init/finalize, devices, version, SoC, error reporting, two devices from two threads.
 * Written only against <acl/acl.h>, as an Ascend program would be. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include <acl/acl.h>

Test(acl_device, init_finalize_repeat)
{
    cr_assert_eq(aclFinalize(), ACL_ERROR_UNINITIALIZE);
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    cr_assert_eq(aclFinalize(), ACL_SUCCESS);
    cr_assert_eq(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
}

Test(acl_device, init_with_missing_config_file)
{
    cr_assert_neq(aclInit("/nonexistent/acl.json"), ACL_SUCCESS);
    cr_assert_eq(aclInit(""), ACL_SUCCESS);
    cr_assert_eq(aclFinalize(), ACL_SUCCESS);
}

Test(acl_device, count_set_get_reset)
{
    uint32_t n = 0;
    cr_assert_eq(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    cr_assert_geq(n, 2);
    int32_t id = -1;
    cr_assert_eq(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL);
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    cr_assert_eq(aclrtGetDevice(&id), ACL_SUCCESS);
    cr_assert_eq(id, 1);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtGetDevice(&id), ACL_SUCCESS);
    cr_assert_eq(id, 0);
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL);
    cr_assert_eq(aclrtResetDevice(1), ACL_SUCCESS);
    cr_assert_neq(aclrtResetDevice(1), ACL_SUCCESS); /* not set any more */
}

Test(acl_device, reference_counted_set_reset)
{
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    void *p = NULL;
    cr_assert_eq(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
    /* One reference left: the device and its memory are still there. */
    int32_t id;
    cr_assert_eq(aclrtGetDevice(&id), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(p), ACL_SUCCESS);
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
}

Test(acl_device, bad_arguments)
{
    uint32_t n = 0;
    cr_assert_eq(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_assert_eq(aclrtSetDevice((int32_t)n), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_assert_eq(aclrtResetDevice((int32_t)n), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_assert_eq(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtGetRunMode(NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtSynchronizeDevice(), ACL_ERROR_RT_CONTEXT_NULL);
}

Test(acl_device, recent_error_message_is_per_call_and_cleared)
{
    cr_assert_null(aclGetRecentErrMsg());
    cr_assert_eq(aclrtSetDevice(-7), ACL_ERROR_RT_INVALID_DEVICEID);
    const char *msg = aclGetRecentErrMsg();
    cr_assert_not_null(msg);
    cr_assert(strstr(msg, "aclrtSetDevice") != NULL, "message: %s", msg);
    cr_assert(strstr(msg, "-7") != NULL, "message: %s", msg);
    cr_assert_null(aclGetRecentErrMsg());
    cr_assert_eq(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_assert_eq(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(NULL, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_INVALID_PARAM);
}

Test(acl_device, run_mode_version_soc_satmode)
{
    aclrtRunMode mode;
    cr_assert_eq(aclrtGetRunMode(&mode), ACL_SUCCESS);
    cr_assert_eq(mode, ACL_HOST);
    int32_t ma, mi, pa;
    cr_assert_eq(aclrtGetVersion(&ma, &mi, &pa), ACL_SUCCESS);
    cr_assert_eq(ma, ACL_MAJOR_VERSION);
    cr_assert_eq(mi, ACL_MINOR_VERSION);
    const char *soc = aclrtGetSocName();
    cr_assert_not_null(soc);
    cr_assert(strncmp(soc, "Ascend", 6) == 0, "soc %s", soc);
    aclrtFloatOverflowMode sat;
    cr_assert_eq(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION), ACL_SUCCESS);
    cr_assert_eq(aclrtGetDeviceSatMode(&sat), ACL_SUCCESS);
    cr_assert_eq(sat, ACL_RT_OVERFLOW_MODE_SATURATION);
    cr_assert_eq(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN), ACL_SUCCESS);
    cr_assert_eq(aclrtGetDeviceSatMode(&sat), ACL_SUCCESS);
    cr_assert_eq(sat, ACL_RT_OVERFLOW_MODE_INFNAN);
    cr_assert_eq(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_UNDEF), ACL_ERROR_INVALID_PARAM);
}

Test(acl_device, synchronize_device)
{
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeDevice(), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeDeviceWithTimeout(1000), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeDeviceWithTimeout(0), ACL_SUCCESS); /* check once: idle */
    cr_assert_eq(aclrtSynchronizeDeviceWithTimeout(-3), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
}

/* ---- one process, two devices, two threads ------------------------------------------------ */

typedef struct {
    int32_t dev;
    int ok;
} dev_job;

static void *drive_device(void *arg)
{
    dev_job *job = arg;
    enum { N = 4096 };
    static __thread unsigned char host[N], back[N];
    if (aclrtSetDevice(job->dev) != ACL_SUCCESS)
        return NULL;
    int32_t id = -1;
    aclrtGetDevice(&id);
    void *d = NULL;
    aclrtStream s = NULL;
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7 + job->dev);
    int ok = id == job->dev && aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_ONLY) == ACL_SUCCESS &&
             aclrtCreateStream(&s) == ACL_SUCCESS &&
             aclrtMemcpyAsync(d, N, host, N, ACL_MEMCPY_HOST_TO_DEVICE, s) == ACL_SUCCESS &&
             aclrtSynchronizeStream(s) == ACL_SUCCESS &&
             aclrtMemcpy(back, N, d, N, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS && memcmp(host, back, N) == 0;
    if (s)
        ok &= aclrtDestroyStream(s) == ACL_SUCCESS;
    if (d)
        ok &= aclrtFree(d) == ACL_SUCCESS;
    ok &= aclrtResetDevice(job->dev) == ACL_SUCCESS;
    job->ok = ok;
    return NULL;
}

Test(acl_device, two_devices_from_two_threads)
{
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    dev_job jobs[2] = {{0, 0}, {1, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, drive_device, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    cr_assert(jobs[0].ok, "device 0 thread failed");
    cr_assert(jobs[1].ok, "device 1 thread failed");
    /* The main thread never set a device. */
    int32_t id;
    cr_assert_eq(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL);
    cr_assert_eq(aclFinalize(), ACL_SUCCESS);
}
