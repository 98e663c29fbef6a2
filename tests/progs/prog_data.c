/* Deterministic inputs and the independent host reference for reductions.
 *
 * Exactness: integer types use arbitrary bit patterns and the reference wraps in the same width
 * (sum and prod are exact mod 2^w in any order). Floating types use small integers: for sum
 * |v| <= 240/nranks (every partial sum is an integer <= 240, exact even in bf16), for prod
 * v in {1,-1,2,1} (powers of two), for max/min integers exact in the type. No zeros are produced
 * for prod and no negative zeros anywhere, so results are bit-exact whatever the order. */
#include "prog_common.h"

#include <math.h>
#include <string.h>

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t elem_hash(uint32_t salt, uint32_t rank, uint64_t i, uint32_t part)
{
    return mix64(i * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)rank << 40) ^ ((uint64_t)salt << 20) ^ part);
}

static uint16_t f64_to_fp16(double v)
{
    uint16_t s = signbit(v) ? 0x8000 : 0;
    v = fabs(v);
    if (v == 0)
        return s;
    int e;
    double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
    int E = e + 14;
    if (E >= 31)
        return s | 0x7c00;
    if (E <= 0)
        return s | (uint16_t)lrint(v * 16777216.0);
    /* + not |: a mantissa that rounds up to 1024 carries into the exponent */
    return s | (uint16_t)((E << 10) + lrint((m * 2.0 - 1.0) * 1024.0));
}

static double fp16_to_f64(uint16_t h)
{
    int E = (h >> 10) & 0x1f, f = h & 0x3ff;
    double v;
    if (E == 0)
        v = ldexp(f, -24);
    else if (E == 31)
        v = f ? NAN : INFINITY;
    else
        v = ldexp(1024 + f, E - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t f64_to_bf16(double v)
{
    float f = (float)v; /* innocuous double rounding: fp32 has more than 2 x 8 + 2 bits */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
    u += 0x7fffu + ((u >> 16) & 1); /* round to nearest even, as the device does */
    return (uint16_t)(u >> 16);
}

static double bf16_to_f64(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static bool is_float(HcclDataType dt)
{
    return dt == HCCL_DATA_TYPE_FP16 || dt == HCCL_DATA_TYPE_BFP16 || dt == HCCL_DATA_TYPE_FP32 ||
           dt == HCCL_DATA_TYPE_FP64;
}

static double load_f(HcclDataType dt, const void *buf, uint64_t i)
{
    switch (dt) {
    case HCCL_DATA_TYPE_FP16: return fp16_to_f64(((const uint16_t *)buf)[i]);
    case HCCL_DATA_TYPE_BFP16: return bf16_to_f64(((const uint16_t *)buf)[i]);
    case HCCL_DATA_TYPE_FP32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

static void store_f(HcclDataType dt, void *buf, uint64_t i, double v)
{
    switch (dt) {
    case HCCL_DATA_TYPE_FP16: ((uint16_t *)buf)[i] = f64_to_fp16(v); break;
    case HCCL_DATA_TYPE_BFP16: ((uint16_t *)buf)[i] = f64_to_bf16(v); break;
    case HCCL_DATA_TYPE_FP32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

/* Largest magnitude for max/min inputs: integers exactly representable in dt. */
static int64_t maxmin_range(HcclDataType dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_FP16: return 2048;
    case HCCL_DATA_TYPE_BFP16: return 256;
    case HCCL_DATA_TYPE_FP32: return 1 << 24;
    default: return (int64_t)1 << 52;
    }
}

/* The inputs of float reductions: products of {1, -1, 2, 1}, else integers in [-r, r]. */
typedef struct float_pick {
    bool prod;
    int64_t r;
} float_pick;

static float_pick float_pick_of(const gen_spec *g)
{
    int64_t r = g->op == HCCL_REDUCE_SUM ? 240 / (int64_t)(g->nranks ? g->nranks : 1) : maxmin_range(g->dt);
    return (float_pick){g->op == HCCL_REDUCE_PROD, r < 1 ? 1 : r};
}

static inline double float_value(const float_pick *f, uint64_t h)
{
    static const double prod_vals[4] = {1, -1, 2, 1};
    if (f->prod)
        return prod_vals[h & 3];
    return (double)((int64_t)(h % (uint64_t)(2 * f->r + 1)) - f->r);
}

/* One loop per element type, the type fixed inside it: the large cases fill hundreds of MB per
 * rank, and a conversion chosen per element (or a libc copy of a runtime size) took a third of an
 * 8-rank coll_check. `value` is an expression of the element's hash h; g, rank, first, n and buf
 * are gen_fill's. Integers take the hash's low bytes (the little-endian layout). */
#define GEN_LOOP(T, value)                                                                       \
    do {                                                                                         \
        T *o = buf;                                                                              \
        for (uint64_t k = 0; k < n; k++) {                                                       \
            uint64_t h = elem_hash(g->salt, rank, first + k, 0);                                 \
            o[k] = value;                                                                        \
        }                                                                                        \
    } while (0)

static void gen_fill_float(const gen_spec *g, uint32_t rank, uint64_t first, uint64_t n, void *buf)
{
    float_pick f = float_pick_of(g);
    switch (g->dt) {
    case HCCL_DATA_TYPE_FP16: GEN_LOOP(uint16_t, f64_to_fp16(float_value(&f, h))); break;
    case HCCL_DATA_TYPE_BFP16: GEN_LOOP(uint16_t, f64_to_bf16(float_value(&f, h))); break;
    case HCCL_DATA_TYPE_FP32: GEN_LOOP(float, (float)float_value(&f, h)); break;
    default: GEN_LOOP(double, float_value(&f, h)); break;
    }
}

void gen_fill(const gen_spec *g, uint32_t rank, uint64_t first, uint64_t n, void *buf)
{
    if (g->kind == GEN_REDUCE && is_float(g->dt)) {
        gen_fill_float(g, rank, first, n, buf);
        return;
    }
    switch (dt_size(g->dt)) {
    case 1: GEN_LOOP(uint8_t, (uint8_t)h); break;
    case 2: GEN_LOOP(uint16_t, (uint16_t)h); break;
    case 4: GEN_LOOP(uint32_t, (uint32_t)h); break;
    case 8: GEN_LOOP(uint64_t, h); break;
    case 16: { /* a second hash for the high half */
        uint64_t *o = buf;
        for (uint64_t k = 0; k < n; k++) {
            o[2 * k] = elem_hash(g->salt, rank, first + k, 0);
            o[2 * k + 1] = elem_hash(g->salt, rank, first + k, 1);
        }
        break;
    }
    default: break; /* not a type: nothing to write */
    }
}

void gen_mixed(HcclDataType dt, uint32_t seed, uint32_t rank, uint64_t first, uint64_t n, void *buf)
{
    for (uint64_t k = 0; k < n; k++) {
        uint64_t h = elem_hash(seed, rank, first + k, 7);
        double mant = 1.0 + (double)(h & 0xffffff) / 16777216.0;
        int e = (int)((h >> 24) % 25) - 12; /* 2^-12 .. 2^12: sums of a few stay finite in fp16 */
        double v = ldexp(mant, e);
        store_f(dt, buf, k, (h >> 40) & 1 ? -v : v);
    }
}

void fill_sentinel(void *buf, size_t bytes)
{
    memset(buf, 0xA5, bytes);
}

/* Integer reduction in width T, wrapping through the unsigned type U, products in W. */
#define INT_REDUCE(T, U, W)                                                                      \
    do {                                                                                         \
        T *a = acc;                                                                              \
        const T *b = in;                                                                         \
        for (uint64_t i = 0; i < n; i++) {                                                       \
            switch (op) {                                                                        \
            case HCCL_REDUCE_SUM: a[i] = (T)(U)((W)(U)a[i] + (W)(U)b[i]); break;                 \
            case HCCL_REDUCE_PROD: a[i] = (T)(U)((W)(U)a[i] * (W)(U)b[i]); break;                \
            case HCCL_REDUCE_MAX: a[i] = b[i] > a[i] ? b[i] : a[i]; break;                       \
            default: a[i] = b[i] < a[i] ? b[i] : a[i]; break;                                    \
            }                                                                                    \
        }                                                                                        \
    } while (0)

typedef unsigned __int128 u128;
typedef __int128 i128;

static void float_reduce(void *acc, const void *in, HcclDataType dt, HcclReduceOp op, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        double a = load_f(dt, acc, i), b = load_f(dt, in, i), r;
        switch (op) {
        case HCCL_REDUCE_SUM: r = a + b; break;
        case HCCL_REDUCE_PROD: r = a * b; break;
        case HCCL_REDUCE_MAX: r = b > a ? b : a; break;
        default: r = b < a ? b : a; break;
        }
        store_f(dt, acc, i, r);
    }
}

void ref_reduce(void *acc, const void *in, HcclDataType dt, HcclReduceOp op, uint64_t n)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: INT_REDUCE(int8_t, uint8_t, uint64_t); break;
    case HCCL_DATA_TYPE_INT16: INT_REDUCE(int16_t, uint16_t, uint64_t); break;
    case HCCL_DATA_TYPE_INT32: INT_REDUCE(int32_t, uint32_t, uint64_t); break;
    case HCCL_DATA_TYPE_INT64: INT_REDUCE(int64_t, uint64_t, uint64_t); break;
    case HCCL_DATA_TYPE_UINT8: INT_REDUCE(uint8_t, uint8_t, uint64_t); break;
    case HCCL_DATA_TYPE_UINT16: INT_REDUCE(uint16_t, uint16_t, uint64_t); break;
    case HCCL_DATA_TYPE_UINT32: INT_REDUCE(uint32_t, uint32_t, uint64_t); break;
    case HCCL_DATA_TYPE_UINT64: INT_REDUCE(uint64_t, uint64_t, uint64_t); break;
    case HCCL_DATA_TYPE_INT128: INT_REDUCE(i128, u128, u128); break;
    default: float_reduce(acc, in, dt, op, n); break;
    }
}

void dt_format(char *out, size_t len, HcclDataType dt, const void *buf, uint64_t i)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: snprintf(out, len, "%d", ((const int8_t *)buf)[i]); return;
    case HCCL_DATA_TYPE_INT16: snprintf(out, len, "%d", ((const int16_t *)buf)[i]); return;
    case HCCL_DATA_TYPE_INT32: snprintf(out, len, "%d", ((const int32_t *)buf)[i]); return;
    case HCCL_DATA_TYPE_INT64: snprintf(out, len, "%lld", (long long)((const int64_t *)buf)[i]); return;
    case HCCL_DATA_TYPE_UINT8: snprintf(out, len, "%u", ((const uint8_t *)buf)[i]); return;
    case HCCL_DATA_TYPE_UINT16: snprintf(out, len, "%u", ((const uint16_t *)buf)[i]); return;
    case HCCL_DATA_TYPE_UINT32: snprintf(out, len, "%u", ((const uint32_t *)buf)[i]); return;
    case HCCL_DATA_TYPE_UINT64:
        snprintf(out, len, "%llu", (unsigned long long)((const uint64_t *)buf)[i]);
        return;
    default: break;
    }
    if (is_float(dt)) {
        snprintf(out, len, "%.17g", load_f(dt, buf, i));
        return;
    }
    size_t es = dt_size(dt), o = 0;
    const unsigned char *p = (const unsigned char *)buf + i * es;
    o += (size_t)snprintf(out, len, "0x");
    for (size_t b = es; b-- > 0 && o + 3 < len;)
        o += (size_t)snprintf(out + o, len - o, "%02x", p[b]);
}
