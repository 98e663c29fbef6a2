/* ACL front: virtual memory management -- reserve, allocate physical, map, use, unmap, free,
 * release -- and its errors. Written only against <acl/acl.h>. */
#include <criterion/criterion.h>
#include <string.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"


TestSuite(acl_vmm, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

/* Reserves a range, or skips the test while the backend has no VMM (HAL_E_NOT_SUPPORTED). */
static void reserve_or_skip(void **va, size_t size)
{
    aclError rc = aclrtReserveMemAddress(va, size, 0, NULL, 0);
    if (rc == ACL_ERROR_RT_FEATURE_NOT_SUPPORT)
        cr_skip_test("the HAL backend does not implement VMM yet");
    cr_assert_eq(rc, ACL_SUCCESS);
}

static aclrtPhysicalMemProp device_prop(uint32_t dev)
{
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof prop);
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

Test(acl_vmm, reserve_map_use_unmap_release)
{
    aclrtPhysicalMemProp prop = device_prop(0);
    size_t gran = 0;
    cr_assert_eq(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &gran), ACL_SUCCESS);
    cr_assert_gt(gran, 0);
    void *va = NULL;
    reserve_or_skip(&va, 2 * gran);
    aclrtDrvMemHandle h0, h1;
    cr_assert_eq(aclrtMallocPhysical(&h0, gran, &prop, 0), ACL_SUCCESS);
    cr_assert_eq(aclrtMallocPhysical(&h1, gran, &prop, 0), ACL_SUCCESS);
    cr_assert_eq(aclrtMapMem(va, gran, 0, h0, 0), ACL_SUCCESS);
    cr_assert_eq(aclrtMapMem((char *)va + gran, gran, 0, h1, 0), ACL_SUCCESS);

    /* The mapped range is device memory: copies of every direction, sync and async. */
    enum { N = 4096 };
    static unsigned char src[N], back[N];
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(i ^ 0x5A);
    char *tail = (char *)va + 2 * gran - N / 2; /* straddles the two chunks */
    aclrtStream s;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpyAsync(tail - N / 2, N, src, N, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(back, N, tail - N / 2, N, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_assert_arr_eq(back, src, N);
    cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);

    cr_assert_eq(aclrtFreePhysical(h0), ACL_SUCCESS); /* still mapped: released at unmap (CANN) */
    cr_assert_neq(aclrtFreePhysical(h0), ACL_SUCCESS); /* the handle is gone */
    cr_assert_eq(aclrtUnmapMem(va), ACL_SUCCESS);
    cr_assert_eq(aclrtUnmapMem((char *)va + gran), ACL_SUCCESS);
    cr_assert_neq(aclrtUnmapMem(va), ACL_SUCCESS); /* not mapped any more */
    cr_assert_eq(aclrtFreePhysical(h1), ACL_SUCCESS);
    cr_assert_neq(aclrtFreePhysical(h1), ACL_SUCCESS); /* double free */
    cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
    cr_assert_neq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

Test(acl_vmm, bad_arguments)
{
    aclrtPhysicalMemProp prop = device_prop(0);
    size_t gran = 0;
    cr_assert_eq(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &gran),
                 ACL_SUCCESS);
    cr_assert_eq(aclrtMemGetAllocationGranularity(NULL, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &gran),
                 ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, &gran),
                 ACL_ERROR_INVALID_PARAM);
    void *va;
    aclrtDrvMemHandle h;
    int local;
    cr_assert_eq(aclrtReserveMemAddress(NULL, gran, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtReserveMemAddress(&va, gran + 1, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtMallocPhysical(&h, gran / 2, &prop, 0), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtMallocPhysical(NULL, gran, &prop, 0), ACL_ERROR_INVALID_PARAM);
    aclrtPhysicalMemProp host = prop;
    host.location.type = ACL_MEM_LOCATION_TYPE_HOST;
    cr_assert_eq(aclrtMallocPhysical(&h, gran, &host, 0), ACL_ERROR_INVALID_PARAM);
    aclrtPhysicalMemProp unset = device_prop(3); /* not set by this process */
    cr_assert_eq(aclrtMallocPhysical(&h, gran, &unset, 0), ACL_ERROR_RT_INVALID_DEVICEID);
    cr_assert_eq(aclrtFreePhysical(&local), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtReleaseMemAddress(&local), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtUnmapMem(&local), ACL_ERROR_RT_PARAM_INVALID);
    reserve_or_skip(&va, gran);
    cr_assert_eq(aclrtMallocPhysical(&h, gran, &prop, 0), ACL_SUCCESS);
    cr_assert_eq(aclrtMapMem(va, 2 * gran, 0, h, 0), ACL_ERROR_INVALID_PARAM); /* larger than the chunk */
    cr_assert_eq(aclrtMapMem(va, gran, 4096, h, 0), ACL_ERROR_INVALID_PARAM);  /* offset must be 0 */
    cr_assert_eq(aclrtMapMem(va, gran, 0, &local, 0), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_neq(aclrtMapMem(&local, gran, 0, h, 0), ACL_SUCCESS); /* not a reserved range */
    cr_assert_eq(aclrtFreePhysical(h), ACL_SUCCESS);
    cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}
