/* ACL data-type helpers: aclDataTypeSize, fp16 <-> fp32 conversion, aclDataBuffer.
 *
 * Sizes follow CANN's ACL layer (hicann/runtime src/acl/aclrt_impl/data_buffer.cpp): 0 for
 * ACL_STRING and ACL_DT_UNDEFINED, 1 for the sub-byte ACL_INT4 / ACL_UINT1, 16 for COMPLEX128,
 * and 8 for every other value it does not list (including the fp6/fp4 types and unknown values).
 *
 * Conversions follow the notes of CANN's acl_base_rt.h, which make both saturating:
 *   aclFloat16ToFloat reads exponent 31 as an ordinary exponent, so +-Inf (0x7C00) -> +-65536.0f
 *   and the canonical NaN (0x7E00) -> 98304.0f;
 *   aclFloatToFloat16 rounds to nearest even and clamps: NaN and +Inf -> 65504 (0x7BFF), -Inf
 *   -> -65504 (0xFBFF), and so does any finite value whose rounding would overflow.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hal/emu/acl_internal.h"

size_t aclDataTypeSize(aclDataType dataType)
{
    switch (dataType) {
    case ACL_STRING:
    case ACL_DT_UNDEFINED:
        return 0;
    case ACL_UINT1: case ACL_INT4: case ACL_BOOL: case ACL_INT8: case ACL_UINT8:
    case ACL_HIFLOAT8: case ACL_FLOAT8_E5M2: case ACL_FLOAT8_E4M3FN: case ACL_FLOAT8_E8M0:
        return 1;
    case ACL_FLOAT16: case ACL_INT16: case ACL_UINT16: case ACL_BF16:
        return 2;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: case ACL_COMPLEX32:
        return 4;
    case ACL_COMPLEX128:
        return 16;
    default:
        return 8;
    }
}

float aclFloat16ToFloat(aclFloat16 value)
{
    int sign = value >> 15, exp = (value >> 10) & 0x1F, man = value & 0x3FF;
    float mag = exp == 0 ? ldexpf((float)man, -24) : ldexpf(1.0f + (float)man / 1024.0f, exp - 15);
    return sign ? -mag : mag;
}

aclFloat16 aclFloatToFloat16(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    if (isnan(value))
        return 0x7BFF;
    uint32_t abs = bits & 0x7FFFFFFFu;
    int32_t exp = (int32_t)(abs >> 23) - 127;
    if (exp > 15) /* >= 65536, or Inf: saturate */
        return (uint16_t)(sign | 0x7BFF);
    if (exp < -25) /* below half the smallest subnormal: rounds to zero */
        return sign;
    uint32_t man = (abs & 0x7FFFFFu) | 0x800000u; /* 24-bit significand with the hidden bit */
    /* fp16 keeps 11 significant bits when normal (exp >= -14), fewer when subnormal. */
    int shift = exp >= -14 ? 13 : 13 + (-14 - exp);
    uint32_t kept = man >> shift, rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    uint32_t out = exp >= -14 ? ((uint32_t)(exp + 15) << 10) + (kept - 0x400u) : kept; /* carry may bump exp */
    if (out >= 0x7C00u)
        return (uint16_t)(sign | 0x7BFF);
    return (uint16_t)(sign | out);
}

struct aclDataBuffer {
    void *data;
    size_t size;
};

aclDataBuffer *aclCreateDataBuffer(void *data, size_t size)
{
    aclDataBuffer *b = malloc(sizeof *b);
    if (!b) {
        acl_fail(ACL_ERROR_BAD_ALLOC, __func__, "out of host memory");
        return NULL;
    }
    b->data = data;
    b->size = size;
    return b;
}

aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer)
{
    if (!dataBuffer)
        return acl_fail(ACL_ERROR_INVALID_PARAM, __func__, "dataBuffer is NULL");
    free((void *)dataBuffer);
    return ACL_SUCCESS;
}

void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer)
{
    return dataBuffer ? dataBuffer->data : NULL;
}

size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer)
{
    return dataBuffer ? dataBuffer->size : 0;
}
