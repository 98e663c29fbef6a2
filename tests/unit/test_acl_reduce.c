/* ACL front: aclrtReduceAsync for SUM/MAX/MIN x int8/int16/int32/fp16/fp32/bf16, and its errors
 * (EQUAL, dtypes outside the SDMA set, byte counts, devices). Written only against <acl/acl.h>. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include <acl/acl.h>
#include "common/acl_fixture.h"


TestSuite(acl_reduce, .init = acl_fixture_setup, .fini = acl_fixture_teardown);

enum { COUNT = 37 };

/* Small integers, exact in every tested type: dst = i % 7 - 3, src = 2 - i % 5. */
static double dst_val(int i) { return i % 7 - 3; }
static double src_val(int i) { return 2 - i % 5; }

static double expect(aclrtReduceKind k, double a, double b)
{
    if (k == ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM)
        return a + b;
    if (k == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX)
        return a > b ? a : b;
    return a < b ? a : b;
}

/* fp16 and bf16 encodings of small integers (|v| <= 16). */
static uint16_t to_fp16(double v)
{
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    int m = (int)(v < 0 ? -v : v), e = 0;
    while ((m >> e) > 1)
        e++;
    uint16_t frac = (uint16_t)(((m << 10) >> e) & 0x3FF);
    return (uint16_t)(sign | ((e + 15) << 10) | frac);
}

static uint16_t to_bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static size_t type_size(aclDataType t)
{
    return t == ACL_INT8 ? 1 : (t == ACL_INT16 || t == ACL_FLOAT16 || t == ACL_BF16) ? 2 : 4;
}

static void encode(aclDataType t, void *buf, int i, double v)
{
    switch (t) {
    case ACL_INT8:    ((int8_t *)buf)[i] = (int8_t)v; break;
    case ACL_INT16:   ((int16_t *)buf)[i] = (int16_t)v; break;
    case ACL_INT32:   ((int32_t *)buf)[i] = (int32_t)v; break;
    case ACL_FLOAT:   ((float *)buf)[i] = (float)v; break;
    case ACL_FLOAT16: ((uint16_t *)buf)[i] = to_fp16(v); break;
    case ACL_BF16:    ((uint16_t *)buf)[i] = to_bf16(v); break;
    default:          cr_assert_fail("untested type %d", (int)t);
    }
}

static void check_reduce(aclrtReduceKind kind, aclDataType type)
{
    size_t es = type_size(type), bytes = COUNT * es;
    unsigned char hd[COUNT * 4], hs[COUNT * 4], want[COUNT * 4], got[COUNT * 4];
    for (int i = 0; i < COUNT; i++) {
        encode(type, hd, i, dst_val(i));
        encode(type, hs, i, src_val(i));
        encode(type, want, i, expect(kind, dst_val(i), src_val(i)));
    }
    void *dd, *ds;
    aclrtStream s;
    cr_assert_eq(aclrtMalloc(&dd, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&ds, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(dd, bytes, hd, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(ds, bytes, hs, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    cr_assert_eq(aclrtReduceAsync(dd, ds, bytes, kind, type, s, NULL), ACL_SUCCESS, "kind %d type %d", kind, type);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(got, bytes, dd, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    cr_assert(memcmp(got, want, bytes) == 0, "kind %d type %d: wrong result", (int)kind, (int)type);
    aclrtDestroyStream(s);
    aclrtFree(dd);
    aclrtFree(ds);
}

Test(acl_reduce, every_kind_and_sdma_dtype)
{
    const aclrtReduceKind kinds[] = {ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX,
                                     ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN};
    const aclDataType types[] = {ACL_INT8, ACL_INT16, ACL_INT32, ACL_FLOAT16, ACL_FLOAT, ACL_BF16};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t t = 0; t < sizeof types / sizeof *types; t++)
            check_reduce(kinds[k], types[t]);
}

Test(acl_reduce, errors)
{
    void *a, *b;
    aclrtStream s;
    int dummy = 0;
    cr_assert_eq(aclrtMalloc(&a, 1024, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&b, 1024, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    const aclrtReduceKind sum = ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM;
    cr_assert_eq(aclrtReduceAsync(a, b, 64, ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL, ACL_FLOAT, s, NULL),
                 ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_assert_eq(aclrtReduceAsync(a, b, 64, (aclrtReduceKind)1, ACL_FLOAT, s, NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtReduceAsync(a, b, 64, sum, ACL_DOUBLE, s, NULL), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_assert_eq(aclrtReduceAsync(a, b, 64, sum, ACL_INT64, s, NULL), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_assert_eq(aclrtReduceAsync(a, b, 64, sum, ACL_BOOL, s, NULL), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    cr_assert_eq(aclrtReduceAsync(a, b, 64, sum, (aclDataType)99, s, NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtReduceAsync(a, b, 6, sum, ACL_FLOAT, s, NULL), ACL_ERROR_INVALID_PARAM); /* bytes % 4 */
    cr_assert_eq(aclrtReduceAsync(a, b, 64, sum, ACL_FLOAT, s, &dummy), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtReduceAsync(NULL, b, 64, sum, ACL_FLOAT, s, NULL), ACL_ERROR_INVALID_PARAM);
    cr_assert_eq(aclrtReduceAsync(&dummy, b, 4, sum, ACL_FLOAT, s, NULL), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtReduceAsync(a, b, 4096, sum, ACL_FLOAT, s, NULL), ACL_ERROR_RT_PARAM_INVALID);
    /* Operands must be on the stream's device. */
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    aclrtStream s1;
    cr_assert_eq(aclrtCreateStream(&s1), ACL_SUCCESS);
    cr_assert_eq(aclrtReduceAsync(a, b, 64, sum, ACL_FLOAT, s1, NULL), ACL_ERROR_RT_PARAM_INVALID);
    cr_assert_eq(aclrtDestroyStream(s1), ACL_SUCCESS);
    cr_assert_eq(aclrtResetDevice(1), ACL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
    aclrtDestroyStream(s);
    aclrtFree(a);
    aclrtFree(b);
}
