/* HAL conformance: DMA reduce-copy into a peer device's memory (dst = dst op src) for every
 * supported dtype x op, against scalar references written here. Integers wrap; fp32/fp64 are
 * exact; fp16 uses the compiler's _Float16 and bf16 a bit-level round-to-nearest-even as
 * independent references; fp8 formats are checked against a same-device reduce plus exact known
 * values. */
#include <math.h>

#include "common/hal_testutil.h"

enum { COUNT = 1031 }; /* odd: exercises vector tails */

typedef struct rig {
    const hal_ops *h;
    hal_device *d0, *d1;
    hal_stream *s;
    void *src, *dst, *local; /* src on d0, dst on d1 (peer), local on d0 */
} rig;

static rig rig_open(void)
{
    rig r = {.h = ht_hal()};
    const hal_ops *h = r.h;
    r.d0 = ht_open(h, 0);
    r.d1 = ht_open(h, 1);
    hal_device_info i1;
    HT_OK(h->device_info(r.d1, &i1));
    HT_OK(h->mem_import(r.d0, &i1.handle));
    HT_OK(h->stream_create(r.d0, &r.s));
    HT_OK(h->mem_alloc(r.d0, COUNT * 16, &r.src));
    HT_OK(h->mem_alloc(r.d1, COUNT * 16, &r.dst));
    HT_OK(h->mem_alloc(r.d0, COUNT * 16, &r.local));
    return r;
}

static void rig_close(rig *r)
{
    HT_OK(r->h->stream_destroy(r->s));
    HT_OK(r->h->device_close(r->d1));
    HT_OK(r->h->device_close(r->d0));
}

static void reduce(rig *r, void *dst, const void *src, size_t count, hal_dtype dt, hal_redop op)
{
    hal_dma_desc d = {.kind = HAL_DMA_REDUCE, .dst = hal_ref_ptr(dst), .src = hal_ref_ptr((void *)src),
                      .count = count, .dtype = dt, .op = op};
    HT_OK(r->h->dma_batch(r->s, &d, 1));
    hal_result rc = r->h->stream_sync(r->s, -1);
    cr_assert_eq(rc, HAL_OK, "%s %s: %s", hal_dtype_name(dt), hal_redop_name(op), r->h->stream_error_msg(r->s));
}

/* --- integer references (wrap-around via unsigned arithmetic) --- */
#define INT_REF(T, UT)                                                                               \
    static T ref_##T(T a, T b, hal_redop op)                                                         \
    {                                                                                                \
        switch (op) {                                                                                \
        case HAL_OP_SUM: return (T)((UT)a + (UT)b);                                                  \
        case HAL_OP_PROD: return (T)((UT)a * (UT)b);                                                 \
        case HAL_OP_MAX: return a > b ? a : b;                                                       \
        default: return a < b ? a : b;                                                               \
        }                                                                                            \
    }
INT_REF(int8_t, uint8_t)
INT_REF(int16_t, uint16_t)
INT_REF(int32_t, uint32_t)
INT_REF(int64_t, uint64_t)
INT_REF(uint8_t, uint8_t)
INT_REF(uint16_t, uint16_t)
INT_REF(uint32_t, uint32_t)
INT_REF(uint64_t, uint64_t)
typedef __int128 i128;
typedef unsigned __int128 u128;
INT_REF(i128, u128)

static double ref_fp(double a, double b, hal_redop op)
{
    switch (op) {
    case HAL_OP_SUM: return a + b;
    case HAL_OP_PROD: return a * b;
    case HAL_OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

static float ref_f32(float a, float b, hal_redop op)
{
    switch (op) {
    case HAL_OP_SUM: return a + b;
    case HAL_OP_PROD: return a * b;
    case HAL_OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

static uint16_t bf16_from(float f) /* round to nearest even; inputs here are never NaN */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Fills a and b with dtype-appropriate values (no NaNs for float types). */
static void fill(hal_dtype dt, void *a, void *b, uint32_t seed)
{
    size_t es = hal_dtype_size(dt);
    ht_fill(a, COUNT * es, seed);
    ht_fill(b, COUNT * es, seed + 1000);
    for (size_t i = 0; i < COUNT; i++) {
        float fa = (float)((int)(((uint8_t *)a)[i * es]) - 128) / 8.0f;
        float fb = (float)((int)(((uint8_t *)b)[i * es]) - 128) / 8.0f;
        if (dt == HAL_DT_FP32) {
            ((float *)a)[i] = fa * 1.37f;
            ((float *)b)[i] = fb * 0.91f;
        } else if (dt == HAL_DT_FP64) {
            ((double *)a)[i] = fa * 1.37;
            ((double *)b)[i] = fb * 0.91;
        } else if (dt == HAL_DT_FP16) {
            ((_Float16 *)a)[i] = (_Float16)(fa * 1.37f);
            ((_Float16 *)b)[i] = (_Float16)(fb * 0.91f);
        } else if (dt == HAL_DT_BF16) {
            ((uint16_t *)a)[i] = bf16_from(fa * 1.37f);
            ((uint16_t *)b)[i] = bf16_from(fb * 0.91f);
        }
    }
}

/* Expected dst after dst = dst op src, element i; returns 1 if got matches. */
static int check_elem(hal_dtype dt, hal_redop op, const void *dst0, const void *src, const void *got, size_t i)
{
#define CASE_INT(DT, T)                                                                              \
    case DT: return ref_##T(((const T *)dst0)[i], ((const T *)src)[i], op) == ((const T *)got)[i];
    switch (dt) {
        CASE_INT(HAL_DT_INT8, int8_t)
        CASE_INT(HAL_DT_INT16, int16_t)
        CASE_INT(HAL_DT_INT32, int32_t)
        CASE_INT(HAL_DT_INT64, int64_t)
        CASE_INT(HAL_DT_UINT8, uint8_t)
        CASE_INT(HAL_DT_UINT16, uint16_t)
        CASE_INT(HAL_DT_UINT32, uint32_t)
        CASE_INT(HAL_DT_UINT64, uint64_t)
        CASE_INT(HAL_DT_INT128, i128)
    case HAL_DT_FP32: {
        float want = ref_f32(((const float *)dst0)[i], ((const float *)src)[i], op);
        return memcmp(&want, (const float *)got + i, 4) == 0;
    }
    case HAL_DT_FP64: {
        double want = ref_fp(((const double *)dst0)[i], ((const double *)src)[i], op);
        return memcmp(&want, (const double *)got + i, 8) == 0;
    }
    case HAL_DT_FP16: {
        _Float16 want = (_Float16)ref_f32((float)((const _Float16 *)dst0)[i], (float)((const _Float16 *)src)[i], op);
        return memcmp(&want, (const _Float16 *)got + i, 2) == 0;
    }
    case HAL_DT_BF16: {
        uint16_t want = bf16_from(ref_f32(bf16_to(((const uint16_t *)dst0)[i]), bf16_to(((const uint16_t *)src)[i]), op));
        return want == ((const uint16_t *)got)[i];
    }
    default:
        return -1; /* no scalar reference here */
    }
#undef CASE_INT
}

static void check_one(rig *r, hal_dtype dt, hal_redop op)
{
    size_t es = hal_dtype_size(dt), n = COUNT * es;
    unsigned char *a = malloc(n), *b = malloc(n);
    fill(dt, a, b, (uint32_t)(dt * 10 + op));
    memcpy(r->src, a, n);
    memcpy(r->dst, b, n);
    memcpy(r->local, b, n);
    reduce(r, r->dst, r->src, COUNT, dt, op);
    if (check_elem(dt, op, b, a, r->dst, 0) < 0) {
        /* fp8 formats: the peer result equals the same reduce done on the device itself. */
        reduce(r, r->local, r->src, COUNT, dt, op);
        cr_assert(memcmp(r->local, r->dst, n) == 0, "%s %s: peer and local reduce differ", hal_dtype_name(dt),
                  hal_redop_name(op));
    } else {
        for (size_t i = 0; i < COUNT; i++)
            cr_assert(check_elem(dt, op, b, a, r->dst, i) == 1, "%s %s: element %zu differs", hal_dtype_name(dt),
                      hal_redop_name(op), i);
    }
    free(a);
    free(b);
}

Test(hal_reduce, every_dtype_and_op_into_peer, .timeout = 120)
{
    rig r = rig_open();
    int checked = 0;
    for (int dt = 0; dt < HAL_DT_COUNT; dt++)
        for (int op = 0; op < HAL_OP_COUNT; op++)
            if (hal_dtype_size((hal_dtype)dt) && ht_reduce_supported(r.h, (hal_dtype)dt, (hal_redop)op)) {
                check_one(&r, (hal_dtype)dt, (hal_redop)op);
                checked++;
            }
    cr_assert_geq(checked, 13 * 4, "the HCCL types with all four ops at least");
    rig_close(&r);
}

/* Exact values the reduce must produce, byte by byte. */
Test(hal_reduce, known_values)
{
    rig r = rig_open();
    static const struct {
        hal_dtype dt;
        hal_redop op;
        uint8_t a, b, want;
    } k8[] = {
        {HAL_DT_FP8E5M2, HAL_OP_SUM, 0x3c, 0x3c, 0x40},  /* 1 + 1 = 2 */
        {HAL_DT_FP8E5M2, HAL_OP_PROD, 0x40, 0x40, 0x44}, /* 2 * 2 = 4 */
        {HAL_DT_FP8E5M2, HAL_OP_MAX, 0x3c, 0xbc, 0x3c},  /* max(1, -1) */
        {HAL_DT_FP8E4M3, HAL_OP_SUM, 0x38, 0x38, 0x40},  /* 1 + 1 = 2 */
        {HAL_DT_FP8E4M3, HAL_OP_PROD, 0x40, 0x40, 0x48}, /* 2 * 2 = 4 */
        {HAL_DT_FP8E4M3, HAL_OP_MIN, 0x38, 0xb8, 0xb8},  /* min(1, -1) */
        {HAL_DT_FP8E8M0, HAL_OP_PROD, 128, 128, 129},    /* 2 * 2 = 4 */
        {HAL_DT_FP8E8M0, HAL_OP_MAX, 127, 128, 128},
        {HAL_DT_FP8E8M0, HAL_OP_MIN, 127, 128, 127},
    };
    for (size_t i = 0; i < sizeof k8 / sizeof k8[0]; i++) {
        if (!ht_reduce_supported(r.h, k8[i].dt, k8[i].op))
            continue;
        *(uint8_t *)r.dst = k8[i].a;
        *(uint8_t *)r.src = k8[i].b;
        reduce(&r, r.dst, r.src, 1, k8[i].dt, k8[i].op);
        cr_assert_eq(*(uint8_t *)r.dst, k8[i].want, "%s %s: 0x%02x op 0x%02x = 0x%02x, want 0x%02x",
                     hal_dtype_name(k8[i].dt), hal_redop_name(k8[i].op), k8[i].a, k8[i].b, *(uint8_t *)r.dst,
                     k8[i].want);
    }
    /* fp16: 1.5 * 2.25 = 3.375 (0x42c0); bf16: 1 + 2^-8 rounds to even (1.0). */
    uint16_t *d16 = r.dst, *s16 = r.src;
    d16[0] = 0x3e00, s16[0] = 0x4080;
    reduce(&r, r.dst, r.src, 1, HAL_DT_FP16, HAL_OP_PROD);
    cr_assert_eq(d16[0], 0x42c0);
    d16[0] = 0x3f80, s16[0] = 0x3b80; /* 1.0 + 2^-8 */
    reduce(&r, r.dst, r.src, 1, HAL_DT_BF16, HAL_OP_SUM);
    cr_assert_eq(d16[0], 0x3f80);
    d16[0] = 0x3f81, s16[0] = 0x3b80; /* (1 + 2^-7) + 2^-8 -> ties to even: 1 + 2^-6 */
    reduce(&r, r.dst, r.src, 1, HAL_DT_BF16, HAL_OP_SUM);
    cr_assert_eq(d16[0], 0x3f82);
    rig_close(&r);
}

/* A large reduce is split across the DMA engines; every element is still right. */
Test(hal_reduce, large_fp32_sum_split, .timeout = 120)
{
    rig r = rig_open();
    size_t count = (32u << 20) / 4;
    float *src, *dst;
    HT_OK(r.h->mem_alloc(r.d0, count * 4, (void **)&src));
    HT_OK(r.h->mem_alloc(r.d1, count * 4, (void **)&dst));
    for (size_t i = 0; i < count; i++) {
        src[i] = (float)(i % 1000);
        dst[i] = (float)(i % 7);
    }
    reduce(&r, dst, src, count, HAL_DT_FP32, HAL_OP_SUM);
    for (size_t i = 0; i < count; i++)
        cr_assert_eq(dst[i], (float)(i % 1000) + (float)(i % 7), "element %zu", i);
    rig_close(&r);
}

/* Three operands: dst = src op src2 into the peer, large enough to be split over the engines;
 * dst's old contents must not take part. */
Test(hal_reduce, three_operand_into_peer)
{
    rig r = rig_open();
    enum { N = (3u << 20) / 4 + 5 }; /* 3 MiB + 20 B of int32 */
    void *a, *b, *d;
    HT_OK(r.h->mem_alloc(r.d0, N * 4, &a));
    HT_OK(r.h->mem_alloc(r.d0, N * 4, &b));
    HT_OK(r.h->mem_alloc(r.d1, N * 4, &d));
    int32_t *pa = a, *pb = b, *pd = d;
    for (int32_t i = 0; i < (int32_t)N; i++) {
        pa[i] = i;
        pb[i] = 3 * i + 1;
        pd[i] = 0x55555555; /* garbage a two-operand reduce would fold in */
    }
    hal_dma_desc desc = {.kind = HAL_DMA_REDUCE, .dst = hal_ref_ptr(d), .src = hal_ref_ptr(a),
                         .src2 = hal_ref_ptr(b), .count = N, .dtype = HAL_DT_INT32, .op = HAL_OP_SUM};
    HT_OK(r.h->dma_batch(r.s, &desc, 1));
    cr_assert_eq(r.h->stream_sync(r.s, -1), HAL_OK, "%s", r.h->stream_error_msg(r.s));
    for (int32_t i = 0; i < (int32_t)N; i++)
        cr_assert_eq(pd[i], 4 * i + 1, "element %d: %d", i, pd[i]);
    rig_close(&r);
}
