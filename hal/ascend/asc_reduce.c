/* Which reductions the SDMA engine does (aclrtReduceAsync) and the host fallback for the rest.
 * CANN documents aclrtReduceAsync for SUM/MAX/MIN of int8, int16, int32, fp16, fp32 and bf16 on
 * Atlas A2/A3; PROD has no SDMA kind. The fallback (asc_task.c) copies the operands to the host,
 * reduces here and copies back: correct on any NPU, slow, logged once per process. It covers every
 * HAL reduction, the 8-bit floats (fp8e4m3, fp8e5m2, fp8e8m0) included. */
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

/* OFP8 (OCP 8-bit floats): e4m3 (bias 7, no infinities, S.1111.111 is NaN) and e5m2 (bias 15,
 * IEEE-like). Widened to float exactly; results rounded back to nearest-even, non-saturating
 * (past the largest finite value e5m2 gives inf and e4m3 NaN), as hal/emu's SDMA model does: a
 * float has more than 2 x 4 + 2 significant bits, so rounding the float result again is exact. */
static float fp8_to_float(uint8_t v, int mbits, int bias, int ieee)
{
    int e = (v & 0x7f) >> mbits, m = v & ((1 << mbits) - 1);
    float f;
    if (ieee && e == (0x7f >> mbits))
        f = m ? NAN : INFINITY;
    else if (!ieee && (v & 0x7f) == 0x7f)
        f = NAN;
    else if (e == 0)
        f = ldexpf((float)m, 1 - bias - mbits);
    else
        f = ldexpf((float)((1 << mbits) | m), e - bias - mbits);
    return (v & 0x80) ? -f : f;
}

static uint8_t float_to_fp8(float f, int mbits, int bias, int ieee)
{
    uint8_t sign = signbit(f) ? 0x80 : 0, maxfin = ieee ? 0x7b : 0x7e, over = ieee ? 0x7c : 0x7f;
    if (isnan(f))
        return sign | (ieee ? 0x7e : 0x7f);
    float a = fabsf(f);
    if (isinf(a))
        return sign | over;
    if (a < ldexpf(1.0f, 1 - bias)) /* subnormal: multiples of the smallest quantum, nearest even */
        return sign | (uint8_t)nearbyintf(ldexpf(a, bias + mbits - 1)); /* 2^mbits: the smallest normal */
    int e;
    float mm = frexpf(a, &e); /* a = mm * 2^e, mm in [0.5, 1) */
    uint32_t q = (uint32_t)nearbyintf(ldexpf(mm, mbits + 1)); /* mbits + 1 significant bits */
    if (q == 1u << (mbits + 1)) {
        q >>= 1;
        e++;
    }
    uint32_t r = ((uint32_t)(e - 1 + bias) << mbits) | (q & ((1u << mbits) - 1));
    return sign | (r > maxfin ? over : (uint8_t)r);
}

static float e4m3_to_float(uint8_t v) { return fp8_to_float(v, 3, 7, 0); }
static uint8_t float_to_e4m3(float f) { return float_to_fp8(f, 3, 7, 0); }
static float e5m2_to_float(uint8_t v) { return fp8_to_float(v, 2, 15, 1); }
static uint8_t float_to_e5m2(float f) { return float_to_fp8(f, 2, 15, 1); }

/* e8m0: 2^(v - 127), 0xff = NaN; no sign, zero or infinity. Max/min order the exponents; a product
 * adds them (past 2^127 NaN, below 2^-127 the smallest value); a sum has no e8m0 rounding, and
 * hal_reduce_supported refuses it on every backend. */
static uint8_t e8m0_red(uint8_t x, uint8_t y, hal_redop op)
{
    if (x == 0xff || y == 0xff)
        return 0xff;
    if (op == HAL_OP_MAX)
        return x > y ? x : y;
    if (op == HAL_OP_MIN)
        return x < y ? x : y;
    int e = (int)x + (int)y - 127;
    return e > 254 ? 0xff : e < 0 ? 0 : (uint8_t)e;
}

/* max/min keep x unless y wins or is NaN: NaN propagates from either side and max(+0, -0) is the
 * first operand, as hal/emu does (y != y is never true for integers). */
#define RED(x, y, op) ((op) == HAL_OP_SUM ? (x) + (y) : (op) == HAL_OP_PROD ? (x) * (y) \
                       : (op) == HAL_OP_MAX ? (((y) > (x) || (y) != (y)) ? (y) : (x))     \
                       : (((y) < (x) || (y) != (y)) ? (y) : (x)))
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
#define RED_CONV(to_f, from_f) RED_CONV_T(uint16_t, to_f, from_f)
#define RED_CONV_T(T, to_f, from_f)                                       \
    do {                                                                  \
        T *o = dst;                                                       \
        const T *p = a, *q = b;                                           \
        for (uint64_t i = 0; i < n; i++) {                                \
            float x = to_f(p[i]), y = to_f(q[i]);                         \
            o[i] = from_f(RED(x, y, op));                                 \
        }                                                                 \
    } while (0)

/* HiFloat8 has no reduction on any backend (hal_reduce_supported): movement only. */
int asc_host_reduce_supported(hal_dtype dt)
{
    return dt != HAL_DT_HIF8;
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
    case HAL_DT_FP8E4M3: RED_CONV_T(uint8_t, e4m3_to_float, float_to_e4m3); break;
    case HAL_DT_FP8E5M2: RED_CONV_T(uint8_t, e5m2_to_float, float_to_e5m2); break;
    case HAL_DT_FP8E8M0: {
        uint8_t *o = dst;
        const uint8_t *p = a, *q = b;
        for (uint64_t i = 0; i < n; i++)
            o[i] = e8m0_red(p[i], q[i], op);
        break;
    }
    default:
        OH_ERR("hal", "ascend: no reduction of %s (%s) on this backend", hal_dtype_name(dt), hal_redop_name(op));
        return HAL_E_NOT_SUPPORTED;
    }
    return HAL_OK;
}
