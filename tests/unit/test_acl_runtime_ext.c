/* ACL front: the runtime calls Ascend programs and torch_npu use beyond the HCCL subset --
 * contexts, peer access, device info, flagged event calls and wait status, 2D copies, pointer
 * attributes, stream ids, timeouts, version string. Success paths and CANN's codes for bad
 * arguments. Written only against <acl/acl.h>. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"

TestSuite(acl_ext, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

/* ---- contexts -------------------------------------------------------------------------------- */

Test(acl_ext, contexts_select_their_device)
{
    aclrtContext def = NULL, c1 = NULL, cur = NULL;
    cr_assert_eq(aclrtGetCurrentContext(&def), ACL_SUCCESS);
    cr_assert_not_null(def, "aclrtSetDevice(0) gives the thread device 0's default context");
    cr_assert_eq(aclrtCreateContext(&c1, 1), ACL_SUCCESS);
    int32_t id = -1;
    cr_expect_eq(aclrtGetDevice(&id), ACL_SUCCESS);
    cr_expect_eq(id, 1, "creating a context makes it (and its device) current");
    cr_expect_eq(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    cr_expect_eq(cur, c1);
    void *p;
    cr_assert_eq(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    aclrtPtrAttributes a;
    cr_expect_eq(aclrtPointerGetAttributes(p, &a), ACL_SUCCESS);
    cr_expect_eq(a.location.id, 1, "memory allocated under the context is on its device");
    cr_expect_eq(aclrtFree(p), ACL_SUCCESS);
    cr_expect_eq(aclrtSetCurrentContext(def), ACL_SUCCESS);
    cr_expect_eq(aclrtGetDevice(&id), ACL_SUCCESS);
    cr_expect_eq(id, 0, "switching context switches device");
    cr_expect_eq(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    cr_expect_eq(cur, def);
    cr_expect_eq(aclrtSetCurrentContext(c1), ACL_SUCCESS);
    cr_expect_eq(aclrtDestroyContext(def), ACL_ERROR_RT_PARAM_INVALID, "a default context cannot be destroyed");
    cr_expect_eq(aclrtDestroyContext(c1), ACL_SUCCESS);
    cr_expect_eq(aclrtDestroyContext(c1), ACL_ERROR_RT_PARAM_INVALID, "destroyed twice");
    cr_expect_eq(aclrtSetCurrentContext(c1), ACL_ERROR_RT_PARAM_INVALID, "a destroyed context");
    cr_expect_eq(aclrtGetDevice(&id), ACL_ERROR_RT_CONTEXT_NULL,
                 "the context held the thread's only reference on device 1");
    cr_expect_eq(aclrtSetCurrentContext(def), ACL_SUCCESS, "device 0 is still set");
}

Test(acl_ext, context_bad_arguments)
{
    aclrtContext c = NULL;
    cr_expect_eq(aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtCreateContext(&c, -1), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_expect_eq(aclrtCreateContext(&c, 4096), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_expect_eq(aclrtDestroyContext(NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtSetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
    int junk;
    cr_expect_eq(aclrtSetCurrentContext(&junk), ACL_ERROR_RT_PARAM_INVALID);
    cr_expect_eq(aclrtGetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
}

static void *current_context_on_new_thread(void *arg)
{
    aclrtContext c = NULL;
    (void)arg;
    return (void *)(intptr_t)aclrtGetCurrentContext(&c);
}

Test(acl_ext, no_context_without_a_device)
{
    pthread_t t;
    void *res;
    cr_assert_eq(pthread_create(&t, NULL, current_context_on_new_thread, NULL), 0);
    pthread_join(t, &res);
    cr_expect_eq((aclError)(intptr_t)res, ACL_ERROR_RT_CONTEXT_NULL);
}

/* ---- peer access, device info ------------------------------------------------------------------ */

Test(acl_ext, peer_access)
{
    int32_t can = -1;
    cr_expect_eq(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_SUCCESS);
    cr_expect_eq(can, 1);
    cr_expect_eq(aclrtDeviceCanAccessPeer(NULL, 0, 1), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtDeviceCanAccessPeer(&can, 1, 1), ACL_ERROR_INVALID_PARAM, "a device with itself");
    cr_expect_eq(aclrtDeviceCanAccessPeer(&can, 0, 4096), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_expect_eq(aclrtDeviceEnablePeerAccess(1, 1), ACL_ERROR_INVALID_PARAM, "flags are reserved");
    cr_expect_eq(aclrtDeviceEnablePeerAccess(0, 0), ACL_ERROR_INVALID_PARAM, "the current device");
    cr_expect_eq(aclrtDeviceEnablePeerAccess(-1, 0), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_expect_eq(aclrtDeviceDisablePeerAccess(1), ACL_ERROR_RT_PARAM_INVALID, "never enabled");
    cr_expect_eq(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
    cr_expect_eq(aclrtDeviceDisablePeerAccess(1), ACL_SUCCESS);
}

Test(acl_ext, device_info_and_capability)
{
    int64_t v = -1, total = -1;
    size_t free_b = 0, total_b = 0;
    cr_assert_eq(aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b), ACL_SUCCESS);
    cr_expect_eq(aclrtGetDeviceInfo(1, ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE, &total), ACL_SUCCESS,
                 "device 1 is not set: the query opens nothing");
    cr_expect_eq((size_t)total, total_b, "the same memory size as aclrtGetMemInfo");
    const aclrtDevAttr counted[] = {ACL_DEV_ATTR_AICPU_CORE_NUM, ACL_DEV_ATTR_AICORE_CORE_NUM,
                                    ACL_DEV_ATTR_CUBE_CORE_NUM, ACL_DEV_ATTR_VECTOR_CORE_NUM,
                                    ACL_DEV_ATTR_L2_CACHE_SIZE};
    for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++) {
        v = -1;
        cr_expect_eq(aclrtGetDeviceInfo(0, counted[i], &v), ACL_SUCCESS, "attr %d", (int)counted[i]);
        cr_expect_gt(v, 0, "attr %d", (int)counted[i]);
    }
    cr_expect_eq(aclrtGetDeviceInfo(3, ACL_DEV_ATTR_PHY_CHIP_ID, &v), ACL_SUCCESS);
    cr_expect_eq(v, 3);
    cr_expect_eq(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_WARP_SIZE, &v), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_expect_eq(aclrtGetDeviceInfo(0, (aclrtDevAttr)7777, &v), ACL_ERROR_RT_PARAM_INVALID);
    cr_expect_eq(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_AICORE_CORE_NUM, NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtGetDeviceInfo(4096, ACL_DEV_ATTR_AICORE_CORE_NUM, &v), ACL_ERROR_RT_INVALID_DEVICEID);

    int64_t cores = -1;
    cr_expect_eq(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_AICORE_CORE_NUM, &cores), ACL_SUCCESS);
    cr_expect_eq(aclGetDeviceCapability(0, ACL_DEVICE_INFO_AI_CORE_NUM, &v), ACL_SUCCESS);
    cr_expect_eq(v, cores, "both calls describe the same device");
    cr_expect_eq(aclGetDeviceCapability(0, ACL_DEVICE_INFO_VECTOR_CORE_NUM, &v), ACL_SUCCESS);
    cr_expect_eq(aclGetDeviceCapability(0, ACL_DEVICE_INFO_L2_SIZE, &v), ACL_SUCCESS);
    cr_expect_eq(aclGetDeviceCapability(0, ACL_DEVICE_INFO_UNDEFINED, &v), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclGetDeviceCapability(4096, ACL_DEVICE_INFO_L2_SIZE, &v), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclGetDeviceCapability(0, ACL_DEVICE_INFO_L2_SIZE, NULL), ACL_ERROR_INVALID_PARAM);
}

Test(acl_ext, version_string_and_timeouts)
{
    char v[ACL_PKG_VERSION_MAX_SIZE];
    int32_t major = 0, minor = 0, patch = 0;
    cr_expect_eq(aclrtGetVersion(&major, &minor, &patch), ACL_SUCCESS);
    v[0] = '\0';
    cr_expect_eq(aclsysGetVersionStr("runtime", v), ACL_SUCCESS);
    cr_expect_neq(v[0], '\0');
    cr_expect_eq(aclsysGetVersionStr("no-such-package", v), ACL_ERROR_INVALID_FILE);
    cr_expect_eq(aclsysGetVersionStr(NULL, v), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclsysGetVersionStr("runtime", NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtSetOpWaitTimeout(30), ACL_SUCCESS);
    cr_expect_eq(aclrtSetOpExecuteTimeOut(600), ACL_SUCCESS);
}

/* ---- events: flagged record / wait, wait status ------------------------------------------------ */

Test(acl_ext, flagged_record_wait_and_wait_status)
{
    aclrtStream a, b;
    aclrtEvent e;
    cr_assert_eq(aclrtCreateStream(&a), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&b), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC), ACL_SUCCESS);
    aclrtEventWaitStatus st = ACL_EVENT_WAIT_STATUS_RESERVED;
    cr_expect_eq(aclrtQueryEventWaitStatus(e, &st), ACL_SUCCESS);
    cr_expect_eq(st, ACL_EVENT_WAIT_STATUS_NOT_READY, "a SYNC event's wait blocks until its record");
    /* The wait is issued first; the copy behind it lands only after the record. */
    unsigned char src[64], dst[64];
    memset(src, 0x5A, sizeof src);
    memset(dst, 0, sizeof dst);
    void *d;
    cr_assert_eq(aclrtMalloc(&d, sizeof src, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(d, sizeof src, 0, sizeof src), ACL_SUCCESS);
    cr_assert_eq(aclrtStreamWaitEventWithFlag(b, e, 0, ACL_EVENT_WAIT_DEFAULT), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d, sizeof src, src, sizeof src, ACL_MEMCPY_HOST_TO_DEVICE, b), ACL_SUCCESS);
    cr_expect_eq(aclrtSynchronizeStreamWithTimeout(b, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    cr_assert_eq(aclrtRecordEventWithFlag(e, a, ACL_EVENT_RECORD_DEFAULT), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(b), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(dst, sizeof dst, d, sizeof dst, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_expect_arr_eq(dst, src, sizeof src);
    cr_expect_eq(aclrtQueryEventWaitStatus(e, &st), ACL_SUCCESS);
    cr_expect_eq(st, ACL_EVENT_WAIT_STATUS_COMPLETE);
    cr_expect_eq(aclrtRecordEventWithFlag(e, a, ACL_EVENT_RECORD_EXTERNAL), ACL_SUCCESS);
    cr_expect_eq(aclrtStreamWaitEventWithFlag(b, e, 0, ACL_EVENT_WAIT_EXTERNAL), ACL_SUCCESS);
    cr_expect_eq(aclrtSynchronizeStream(b), ACL_SUCCESS);

    cr_expect_eq(aclrtRecordEventWithFlag(NULL, a, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtRecordEventWithFlag(e, a, 2), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtStreamWaitEventWithFlag(b, NULL, 0, 0), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtStreamWaitEventWithFlag(b, e, 0, 2), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtStreamWaitEventWithFlag(b, e, 5, ACL_EVENT_WAIT_EXTERNAL), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtQueryEventWaitStatus(NULL, &st), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtQueryEventWaitStatus(e, NULL), ACL_ERROR_INVALID_PARAM);
    aclrtEvent ex;
    cr_assert_eq(aclrtCreateEventExWithFlag(&ex, ACL_EVENT_SYNC), ACL_SUCCESS);
    cr_expect_eq(aclrtQueryEventWaitStatus(ex, &st), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "Ex events ([EV])");
    aclrtDestroyEvent(ex);
    aclrtDestroyEvent(e);
    aclrtFree(d);
    aclrtDestroyStream(a);
    aclrtDestroyStream(b);
}

/* ---- streams ids --------------------------------------------------------------------------------- */

Test(acl_ext, stream_ids)
{
    aclrtStream a, b;
    cr_assert_eq(aclrtCreateStream(&a), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&b), ACL_SUCCESS);
    int32_t ia = -1, ia2 = -1, ib = -1, idef = -1;
    cr_expect_eq(aclrtStreamGetId(a, &ia), ACL_SUCCESS);
    cr_expect_eq(aclrtStreamGetId(b, &ib), ACL_SUCCESS);
    cr_expect_eq(aclrtStreamGetId(a, &ia2), ACL_SUCCESS);
    cr_expect_eq(aclrtStreamGetId(NULL, &idef), ACL_SUCCESS, "the default stream");
    cr_expect_eq(ia, ia2, "an id is stable");
    cr_expect_neq(ia, ib);
    cr_expect_neq(idef, ia);
    cr_expect_neq(idef, ib);
    cr_expect_eq(aclrtStreamGetId(a, NULL), ACL_ERROR_INVALID_PARAM);
    int junk;
    cr_expect_eq(aclrtStreamGetId(&junk, &ia), ACL_ERROR_RT_PARAM_INVALID);
    aclrtDestroyStream(a);
    aclrtDestroyStream(b);
}

/* ---- 2D copies, pointer attributes -------------------------------------------------------------- */

enum { W = 48, H = 5, SP = 64, DP = 80 };

static void fill_rows(unsigned char *host)
{
    for (int i = 0; i < H * SP; i++)
        host[i] = (unsigned char)(i * 13 + 1);
}

/* 1 when the W-byte rows of got (pitch gp) equal those of want (pitch wp). */
static int rows_equal(const unsigned char *got, size_t gp, const unsigned char *want, size_t wp)
{
    for (int r = 0; r < H; r++)
        if (memcmp(got + r * gp, want + r * wp, W) != 0)
            return 0;
    return 1;
}

Test(acl_ext, memcpy2d_sync_and_async)
{
    unsigned char src[H * SP], back[H * DP], big[2 * H * SP];
    memset(big, 1, sizeof big);
    fill_rows(src);
    memset(back, 0, sizeof back);
    void *d;
    cr_assert_eq(aclrtMalloc(&d, H * DP, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(d, H * DP, 0xEE, H * DP), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy2d(d, DP, src, SP, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(back, sizeof back, d, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_expect(rows_equal(back, DP, src, SP), "rows copied with the pitches");
    cr_expect_eq(back[W], 0xEE, "bytes between rows are untouched");
    unsigned char again[H * SP];
    memset(again, 0, sizeof again);
    aclrtStream s;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy2dAsync(again, SP, d, DP, W, H, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_expect(rows_equal(again, SP, src, SP), "async round trip");
    cr_expect_eq(aclrtMemcpy2d(d, DP, src, SP, 0, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS, "width 0: nothing");

    cr_expect_eq(aclrtMemcpy2d(NULL, DP, src, SP, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtMemcpy2d(d, DP, src, W - 1, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "width above spitch");
    cr_expect_eq(aclrtMemcpy2d(d, W - 1, src, SP, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
                 "width above dpitch");
    cr_expect_eq(aclrtMemcpy2d(d, DP, src, SP, W, H, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM,
                 "kinds other than H2D, D2H, D2D, DEFAULT");
    cr_expect_eq(aclrtMemcpy2d(d, DP, big, SP, W, 2 * H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID,
                 "the last rows run past the allocation (and its 512-byte rounding)");
    cr_expect_eq(aclrtMemcpy2dAsync(d, DP, src, SP, W, H, (aclrtMemcpyKind)99, s), ACL_ERROR_INVALID_PARAM);
    aclrtDestroyStream(s);
    aclrtFree(d);
}

Test(acl_ext, pointer_attributes)
{
    void *d, *h;
    int plain;
    cr_assert_eq(aclrtMalloc(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMallocHost(&h, 4096), ACL_SUCCESS);
    aclrtPtrAttributes a;
    cr_expect_eq(aclrtPointerGetAttributes((char *)d + 100, &a), ACL_SUCCESS);
    cr_expect_eq(a.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
    cr_expect_eq(a.location.id, 0);
    cr_expect_gt(a.pageSize, 0);
    cr_expect_eq(aclrtPointerGetAttributes(h, &a), ACL_SUCCESS);
    cr_expect_eq(a.location.type, ACL_MEM_LOCATION_TYPE_HOST);
    cr_expect_eq(aclrtPointerGetAttributes(&plain, &a), ACL_SUCCESS);
    cr_expect_eq(a.location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
    cr_expect_eq(aclrtPointerGetAttributes(NULL, &a), ACL_ERROR_INVALID_PARAM);
    cr_expect_eq(aclrtPointerGetAttributes(d, NULL), ACL_ERROR_INVALID_PARAM);
    aclrtFreeHost(h);
    aclrtFree(d);
}
