/* ACL data-type helpers: aclDataTypeSize, fp16 <-> fp32 (CANN's saturating conversions),
 * aclDataBuffer. No device needed. Written only against <acl/acl.h>. */
#include <criterion/criterion.h>
#include <math.h>

#include <acl/acl.h>

Test(acl_dtype, sizes)
{
    cr_expect_eq(aclDataTypeSize(ACL_FLOAT), sizeof(float));
    cr_expect_eq(aclDataTypeSize(ACL_DOUBLE), sizeof(double));
    cr_expect_eq(aclDataTypeSize(ACL_INT64), sizeof(int64_t));
    cr_expect_eq(aclDataTypeSize(ACL_FLOAT16), sizeof(aclFloat16));
    cr_expect_eq(aclDataTypeSize(ACL_BF16), 2);
    cr_expect_eq(aclDataTypeSize(ACL_INT8), sizeof(int8_t));
    cr_expect_eq(aclDataTypeSize(ACL_FLOAT8_E4M3FN), 1);
    cr_expect_eq(aclDataTypeSize(ACL_INT4), 1, "sub-byte types report one byte");
    cr_expect_eq(aclDataTypeSize(ACL_COMPLEX128), 2 * sizeof(double));
    cr_expect_eq(aclDataTypeSize(ACL_STRING), 0);
    cr_expect_eq(aclDataTypeSize(ACL_DT_UNDEFINED), 0);
}

/* Every finite fp16 value converts to fp32 exactly and back to the same bits. */
Test(acl_dtype, fp16_round_trip_of_every_finite_value)
{
    for (uint32_t b = 0; b < 0x10000u; b++) {
        if ((b & 0x7C00u) == 0x7C00u)
            continue; /* Inf / NaN: saturated, below */
        float f = aclFloat16ToFloat((aclFloat16)b);
        cr_assert_eq(aclFloatToFloat16(f), (aclFloat16)b, "0x%04x -> %g -> 0x%04x", b, (double)f,
                     aclFloatToFloat16(f));
    }
    cr_expect_eq(aclFloat16ToFloat(0x3C00), 1.0f);
    cr_expect_eq(aclFloat16ToFloat(0xC000), -2.0f);
    cr_expect_eq(aclFloat16ToFloat(0x0001), ldexpf(1.0f, -24), "smallest subnormal");
}

Test(acl_dtype, fp32_to_fp16_rounds_to_nearest_even)
{
    cr_expect_eq(aclFloatToFloat16(1.0f + ldexpf(1.0f, -11)), 0x3C00, "a tie goes to the even neighbour");
    cr_expect_eq(aclFloatToFloat16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3C02, "a tie goes to the even neighbour");
    cr_expect_eq(aclFloatToFloat16(1.0f + ldexpf(1.0f, -11) + ldexpf(1.0f, -20)), 0x3C01, "above a tie");
    cr_expect_eq(aclFloatToFloat16(ldexpf(1.0f, -25)), 0x0000, "half the smallest subnormal: tie to zero");
    cr_expect_eq(aclFloatToFloat16(ldexpf(1.5f, -25)), 0x0001);
    cr_expect_eq(aclFloatToFloat16(-0.0f), 0x8000);
}

/* CANN's notes (acl_base_rt.h): both directions saturate instead of keeping Inf/NaN. */
Test(acl_dtype, saturating_special_values)
{
    cr_expect_eq(aclFloat16ToFloat(0x7C00), 65536.0f);
    cr_expect_eq(aclFloat16ToFloat(0xFC00), -65536.0f);
    cr_expect_eq(aclFloat16ToFloat(0x7E00), 98304.0f);
    cr_expect_eq(aclFloatToFloat16(INFINITY), 0x7BFF);
    cr_expect_eq(aclFloatToFloat16(-INFINITY), 0xFBFF);
    cr_expect_eq(aclFloatToFloat16(NAN), 0x7BFF);
    cr_expect_eq(aclFloatToFloat16(65520.0f), 0x7BFF, "rounds past the largest finite value: clamped");
    cr_expect_eq(aclFloatToFloat16(-1e30f), 0xFBFF);
}

Test(acl_dtype, data_buffer)
{
    char payload[32];
    aclDataBuffer *b = aclCreateDataBuffer(payload, sizeof payload);
    cr_assert_not_null(b);
    cr_expect_eq(aclGetDataBufferAddr(b), payload);
    cr_expect_eq(aclGetDataBufferSizeV2(b), sizeof payload);
    cr_expect_eq(aclDestroyDataBuffer(b), ACL_SUCCESS);
    cr_expect_eq(aclDestroyDataBuffer(NULL), ACL_ERROR_INVALID_PARAM);
    cr_expect_null(aclGetDataBufferAddr(NULL));
}
