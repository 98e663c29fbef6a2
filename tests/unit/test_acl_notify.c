/* ACL front: notifies -- record/wait across two streams and across two devices, wait timeout
 * as an error (never a hang), ids and bad handles. Written only against <acl/acl.h>. */
#include <criterion/criterion.h>
#include <string.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"


TestSuite(acl_notify, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

enum { N = 256 };

/* Stream b waits on the notify before anything records it: its copy lands only after a record. */
Test(acl_notify, record_and_wait_across_streams)
{
    aclrtStream a, b;
    aclrtNotify n;
    unsigned char src[N], zero[N];
    memset(src, 0x6B, N);
    memset(zero, 0, N);
    void *d;
    cr_assert_eq(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(d, N, 0, N), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&a), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&b), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT), ACL_SUCCESS);
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(aclrtMemset(d, N, 0, N), ACL_SUCCESS);
        cr_assert_eq(aclrtWaitAndResetNotify(n, b, 30), ACL_SUCCESS);
        cr_assert_eq(aclrtMemcpyAsync(d, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, b), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStreamWithTimeout(b, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
        cr_assert_arr_eq((unsigned char *)d, zero, N);
        cr_assert_eq(aclrtRecordNotify(n, a), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(b), ACL_SUCCESS);
        cr_assert_arr_eq((unsigned char *)d, src, N);
    }
    uint32_t id = 0xFFFFFFFFu;
    cr_assert_eq(aclrtGetNotifyId(n, &id), ACL_SUCCESS);
    cr_assert_neq(id, 0xFFFFFFFFu);
    cr_assert_eq(aclrtDestroyNotify(n), ACL_SUCCESS);
    aclrtDestroyStream(a);
    aclrtDestroyStream(b);
    aclrtFree(d);
}

/* A notify of device 0 waited on by a stream of device 1 and recorded by a stream of device 0. */
Test(acl_notify, record_and_wait_across_devices)
{
    aclrtStream s0, s1;
    aclrtNotify n;
    unsigned char src[N], zero[N];
    memset(src, 0x1F, N);
    memset(zero, 0, N);
    cr_assert_eq(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s0), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    void *d1;
    cr_assert_eq(aclrtMalloc(&d1, N, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMemset(d1, N, 0, N), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s1), ACL_SUCCESS);
    cr_assert_eq(aclrtWaitAndResetNotify(n, s1, 30), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(d1, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, s1), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStreamWithTimeout(s1, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    cr_assert_arr_eq((unsigned char *)d1, zero, N);
    cr_assert_eq(aclrtRecordNotify(n, s0), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s1), ACL_SUCCESS);
    cr_assert_arr_eq((unsigned char *)d1, src, N);
    cr_assert_eq(aclrtDestroyStream(s1), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(d1), ACL_SUCCESS);
    cr_assert_eq(aclrtResetDevice(1), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS); /* back to device 0 (second reference) */
    cr_assert_eq(aclrtDestroyStream(s0), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyNotify(n), ACL_SUCCESS);
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
}

/* A wait nobody records times out (1 s): the stream fails with an error, it does not hang. */
Test(acl_notify, wait_timeout_is_an_error)
{
    aclrtStream s;
    aclrtNotify n;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT), ACL_SUCCESS);
    cr_assert_eq(aclrtWaitAndResetNotify(n, s, 1), ACL_SUCCESS);
    aclError rc = aclrtSynchronizeStream(s);
    cr_assert_eq(rc, ACL_ERROR_RT_FFTS_PLUS_TIMEOUT, "got %d", rc);
    cr_assert_not_null(aclGetRecentErrMsg());
    aclrtDestroyNotify(n);
    aclrtDestroyStream(s);
}

Test(acl_notify, bad_arguments)
{
    aclrtNotify n;
    int not_a_notify = 0;
    uint32_t id;
    cr_assert_eq(aclrtCreateNotify(NULL, 0), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtCreateNotify(&n, 5), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtRecordNotify(&not_a_notify, NULL), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtRecordNotify(NULL, NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtWaitAndResetNotify(&not_a_notify, NULL, 1), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtGetNotifyId(&not_a_notify, &id), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtCreateNotify(&n, ACL_NOTIFY_DEVICE_USE_ONLY), ACL_SUCCESS);
    cr_assert_eq(aclrtGetNotifyId(n, NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtDestroyNotify(n), ACL_SUCCESS);
    cr_assert_eq(aclrtDestroyNotify(n), ACL_ERROR_RT_PARAM_INVALID);
}
