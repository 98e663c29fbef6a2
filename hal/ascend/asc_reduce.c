/* Which reductions the SDMA engine does (aclrtReduceAsync) and the host fallback for the rest.
 * CANN documents aclrtReduceAsync for SUM/MAX/MIN of int8, int16, int32, fp16, fp32 and bf16 on
 * Atlas A2/A3; PROD has no SDMA kind. The fallback (asc_task.c) copies the operands to the host,
 * reduces here and copies back: correct on any NPU, slow, logged once per process. */
#include <math.h>
#include <string.h>

#include "hal/ascend/asc_internal.h"

static atomic_int g_logged;

int asc_reduce_kind(hal_redop op, hal_dtype dt, int *kind, int *acl_type)
{
    int k = op == HAL_OP_SUM ? ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM
          : op == HAL_OP_MAX ? ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX
          : op == HAL_OP_MIN ? ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN : -1;
    int t = dt == HAL_DT_INT8 ? ACL_INT8 : dt == HAL_DT_INT16 ? ACL_INT16 : dt == HAL_DT_INT32 ? ACL_INT32
          : dt == HAL_DT_FP16 ? ACL_FLOAT16 : dt == HAL_DT_FP32 ? ACL_FLOAT : dt == HAL_DT_BF16 ? ACL_BF16 : -1;
    if (k >= 0 && t >= 0) {
        *kind = k;
        *acl_type = t;
        return 1;
    }
    if (!atomic_exchange(&g_logged, 1))
        OH_WARN("hal", "ascend: %s of %s has no SDMA reduce (aclrtReduceAsync): reducing on the host through a stream "
                "callback (D2H, reduce, H2D); slow, logged once", hal_redop_name(op), hal_dtype_name(dt));
    return 0;
}

static float half_to_float(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
    float f;
    if (e == 0)
        f = ldexpf((float)m, -24);
    else if (e == 31)
        f = m ? NAN : INFINITY;
    else
        f = ldexpf((float)(m | 1024), (int)e - 25);
    uint32_t b;
    memcpy(&b, &f, 4);
    b |= s;
    memcpy(&f, &b, 4);
    return f;
}

static uint16_t float_to_half(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    uint16_t s = (uint16_t)((b >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f))
        return s | 0x7e00;
    if (a >= 65520.0f)
        return s | 0x7c00;
    if (a < ldexpf(1.0f, -14)) /* subnormal: multiples of 2^-24, nearest even */
        return s | (uint16_t)nearbyintf(a * ldexpf(1.0f, 24));
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    uint32_t q = (uint32_t)nearbyintf(ldexpf(m, 11)); /* 11 significant bits */
    if (q == 2048) {
        q = 1024;
        e++;
    }
    return s | (uint16_t)(((uint32_t)(e + 14) << 10) | (q & 1023));
}

static float bf16_to_float(uint16_t v)
{
    uint32_t b = (uint32_t)v << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    if (isnan(f))
        return (uint16_t)((b >> 16) | 0x40);
    b += 0x7fff + ((b >> 16) & 1);
    return (uint16_t)(b >> 16);
}

#define RED(x, y, op) ((op) == HAL_OP_SUM ? (x) + (y) : (op) == HAL_OP_PROD ? (x) * (y) \
                       : (op) == HAL_OP_MAX ? ((x) > (y) ? (x) : (y)) : ((x) < (y) ? (x) : (y)))
#define RED_LOOP(T)                                                       \
    do {                                                                  \
        T *o = dst;                                                       \
        const T *p = a, *q = b;                                           \
        for (uint64_t i = 0; i < n; i++)                                  \
            o[i] = (T)RED(p[i], q[i], op);                                \
    } while (0)
/* Signed integers wrap on SUM/PROD (done in the unsigned type: no undefined overflow). */
#define RED_INT(T, UT)                                                    \
    do {                                                                  \
        T *o = dst;                                                       \
        const T *p = a, *q = b;                                           \
        for (uint64_t i = 0; i < n; i++)                                  \
            o[i] = op == HAL_OP_SUM || op == HAL_OP_PROD                  \
                       ? (T)(UT)RED((UT)p[i], (UT)q[i], op)               \
                       : (T)RED(p[i], q[i], op);                          \
    } while (0)
#define RED_CONV(to_f, from_f)                                            \
    do {                                                                  \
        uint16_t *o = dst;                                                \
        const uint16_t *p = a, *q = b;                                    \
        for (uint64_t i = 0; i < n; i++) {                                \
            float x = to_f(p[i]), y = to_f(q[i]);                         \
            o[i] = from_f(RED(x, y, op));                                 \
        }                                                                 \
    } while (0)

int asc_host_reduce_supported(hal_dtype dt)
{
    return dt != HAL_DT_HIF8 && dt != HAL_DT_FP8E4M3 && dt != HAL_DT_FP8E5M2 && dt != HAL_DT_FP8E8M0;
}

hal_result asc_host_reduce(void *dst, const void *a, const void *b, uint64_t n, hal_dtype dt, hal_redop op)
{
    switch (dt) {
    case HAL_DT_INT8: RED_INT(int8_t, uint8_t); break;
    case HAL_DT_INT16: RED_INT(int16_t, uint16_t); break;
    case HAL_DT_INT32: RED_INT(int32_t, uint32_t); break;
    case HAL_DT_INT64: RED_INT(int64_t, uint64_t); break;
    case HAL_DT_UINT8: RED_INT(uint8_t, uint32_t); break;
    case HAL_DT_UINT16: RED_INT(uint16_t, uint32_t); break;
    case HAL_DT_UINT32: RED_LOOP(uint32_t); break;
    case HAL_DT_UINT64: RED_LOOP(uint64_t); break;
    case HAL_DT_INT128: RED_INT(__int128, unsigned __int128); break;
    case HAL_DT_FP32: RED_LOOP(float); break;
    case HAL_DT_FP64: RED_LOOP(double); break;
    case HAL_DT_FP16: RED_CONV(half_to_float, float_to_half); break;
    case HAL_DT_BF16: RED_CONV(bf16_to_float, float_to_bf16); break;
    default:
        OH_ERR("hal", "ascend: no reduction of %s (%s) on this backend", hal_dtype_name(dt), hal_redop_name(op));
        return HAL_E_NOT_SUPPORTED;
    }
    return HAL_OK;
}
