/* Tests of the emulator's reduce kernels against an independent scalar reference.
 *
 * The reference never uses the kernels' conversion code: narrow floats are decoded with ldexp,
 * combined in double, and rounded back by searching the table of all finite values of the format
 * for the nearest one (ties to the even encoding). Double rounding through double is harmless for
 * these formats (53 >= 2p + 2). Where gcc offers _Float16 it checks that reference in turn. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hal/emu/emu_reduce.h"

/* ---- deterministic data ---- */

static uint64_t rng_s = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    rng_s ^= rng_s << 13;
    rng_s ^= rng_s >> 7;
    rng_s ^= rng_s << 17;
    return rng_s;
}

static void fill(unsigned char *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t r = rng();
        memcpy(p + i, &r, bytes - i < 8 ? bytes - i : 8);
    }
}

/* ---- narrow float reference ---- */

enum { F_FP16, F_BF16, F_E4M3, F_E5M2, F_N };

struct fmt {
    unsigned bits, mbits;
    int bias, ieee;          /* ieee: top exponent is inf/NaN; else (e4m3) only S.1111.111 is NaN */
    uint32_t maxfin, nan, ovf; /* largest finite code, a NaN code, code an overflow rounds to */
    double *vals;            /* vals[c] for codes 0..maxfin, built on first use */
};

static struct fmt fmts[F_N] = {
    [F_FP16] = {16, 10, 15, 1, 0x7bff, 0x7e00, 0x7c00, NULL},
    [F_BF16] = {16, 7, 127, 1, 0x7f7f, 0x7fc0, 0x7f80, NULL},
    [F_E4M3] = {8, 3, 7, 0, 0x7e, 0x7f, 0x7f, NULL},
    [F_E5M2] = {8, 2, 15, 1, 0x7b, 0x7e, 0x7c, NULL},
};

static double ref_decode(const struct fmt *f, uint32_t c)
{
    uint32_t sign = 1u << (f->bits - 1), mag = c & (sign - 1);
    int e = (int)(mag >> f->mbits), m = (int)(mag & ((1u << f->mbits) - 1));
    int emax = (int)((sign - 1) >> f->mbits);
    double v;
    if (f->ieee && e == emax)
        v = m ? NAN : INFINITY;
    else if (!f->ieee && mag == sign - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp(m, 1 - f->bias - (int)f->mbits);
    else
        v = ldexp((1 << f->mbits) + m, e - f->bias - (int)f->mbits);
    return (c & sign) ? -v : v;
}

static const double *fmt_vals(struct fmt *f)
{
    if (!f->vals) {
        f->vals = malloc((f->maxfin + 1) * sizeof *f->vals);
        for (uint32_t c = 0; c <= f->maxfin; c++)
            f->vals[c] = ref_decode(f, c);
    }
    return f->vals;
}

static uint32_t ref_round(struct fmt *f, double v)
{
    if (isnan(v))
        return f->nan;
    const double *t = fmt_vals(f);
    uint32_t sign = signbit(v) ? 1u << (f->bits - 1) : 0, n = f->maxfin, c;
    double a = fabs(v);
    if (a >= t[n]) {
        /* Beyond the top: the next value would be max + ulp; ties go to the even code. */
        double mid = t[n] + (t[n] - t[n - 1]) / 2;
        c = a < mid ? n : a > mid ? f->ovf : (n & 1) ? f->ovf : n;
    } else {
        uint32_t lo = 0, hi = n; /* t[lo] <= a < t[hi] */
        while (hi - lo > 1) {
            uint32_t m = lo + (hi - lo) / 2;
            if (t[m] <= a)
                lo = m;
            else
                hi = m;
        }
        double mid = (t[lo] + t[hi]) / 2;
        c = a < mid ? lo : a > mid ? hi : (lo & 1) ? hi : lo;
    }
    return c | sign;
}

static int narrow_same(const struct fmt *f, uint32_t got, uint32_t want)
{
    if (isnan(ref_decode(f, want)))
        return isnan(ref_decode(f, got));
    return got == want;
}

static uint32_t ref_narrow(struct fmt *f, hal_redop op, uint32_t x, uint32_t y)
{
    double a = ref_decode(f, x), b = ref_decode(f, y);
    if (op == HAL_OP_SUM)
        return ref_round(f, a + b);
    if (op == HAL_OP_PROD)
        return ref_round(f, a * b);
    if (isnan(a) || isnan(b))
        return f->nan;
    if (op == HAL_OP_MAX)
        return b > a ? y : x;
    return b < a ? y : x;
}

/* e8m0: 2^(c-127), 0xFF NaN. */
static uint8_t ref_e8m0(hal_redop op, uint8_t x, uint8_t y)
{
    if (x == 0xff || y == 0xff)
        return 0xff;
    double a = ldexp(1, x - 127), b = ldexp(1, y - 127);
    if (op == HAL_OP_MAX)
        return b > a ? y : x;
    if (op == HAL_OP_MIN)
        return b < a ? y : x;
    int e;
    frexp(a * b, &e); /* a * b = 0.5 * 2^e */
    e = e - 1 + 127;
    return e > 254 ? 0xff : e < 0 ? 0 : (uint8_t)e;
}

/* ---- integer reference (little-endian host) ---- */

static void ref_int_small(size_t w, int sgn, hal_redop op, const void *x, const void *y, void *out)
{
    uint64_t a = 0, b = 0, r;
    memcpy(&a, x, w);
    memcpy(&b, y, w);
    unsigned sh = (unsigned)(64 - 8 * w);
    int64_t sa = (int64_t)(a << sh) >> sh, sb = (int64_t)(b << sh) >> sh;
    switch (op) {
    case HAL_OP_SUM: r = a + b; break;
    case HAL_OP_PROD: r = a * b; break;
    case HAL_OP_MAX: r = (sgn ? sb > sa : b > a) ? b : a; break;
    default: r = (sgn ? sb < sa : b < a) ? b : a; break;
    }
    memcpy(out, &r, w);
}

/* int128 as four 32-bit limbs, least significant first. */
static void ref_int128(hal_redop op, const void *x, const void *y, void *out)
{
    uint32_t a[4], b[4], r[4] = {0, 0, 0, 0};
    memcpy(a, x, 16);
    memcpy(b, y, 16);
    if (op == HAL_OP_SUM) {
        uint64_t carry = 0;
        for (int i = 0; i < 4; i++) {
            carry += (uint64_t)a[i] + b[i];
            r[i] = (uint32_t)carry;
            carry >>= 32;
        }
    } else if (op == HAL_OP_PROD) {
        for (int i = 0; i < 4; i++) {
            uint64_t carry = 0;
            for (int j = 0; i + j < 4; j++) {
                carry += (uint64_t)a[i] * b[j] + r[i + j];
                r[i + j] = (uint32_t)carry;
                carry >>= 32;
            }
        }
    } else {
        int cmp = 0; /* sign of b - a */
        if ((int32_t)a[3] != (int32_t)b[3])
            cmp = (int32_t)b[3] > (int32_t)a[3] ? 1 : -1;
        for (int i = 2; i >= 0 && !cmp; i--)
            if (a[i] != b[i])
                cmp = b[i] > a[i] ? 1 : -1;
        int take_b = op == HAL_OP_MAX ? cmp > 0 : cmp < 0;
        memcpy(r, take_b ? b : a, 16);
    }
    memcpy(out, r, 16);
}

/* ---- one element of any dtype: returns 1 if got matches a op b ---- */

static int fmt_of(hal_dtype dt)
{
    switch (dt) {
    case HAL_DT_FP16: return F_FP16;
    case HAL_DT_BF16: return F_BF16;
    case HAL_DT_FP8E4M3: return F_E4M3;
    case HAL_DT_FP8E5M2: return F_E5M2;
    default: return -1;
    }
}

#define REF_FLOAT(T, a, b, op, got)                                                            \
    do {                                                                                       \
        T x_, y_, g_, w_;                                                                      \
        memcpy(&x_, a, sizeof x_);                                                             \
        memcpy(&y_, b, sizeof y_);                                                             \
        memcpy(&g_, got, sizeof g_);                                                           \
        if (op == HAL_OP_SUM)                                                                  \
            w_ = x_ + y_;                                                                      \
        else if (op == HAL_OP_PROD)                                                            \
            w_ = x_ * y_;                                                                      \
        else if (isnan(x_) || isnan(y_))                                                       \
            return isnan(g_);                                                                  \
        else if (op == HAL_OP_MAX)                                                             \
            w_ = y_ > x_ ? y_ : x_;                                                            \
        else                                                                                   \
            w_ = y_ < x_ ? y_ : x_;                                                            \
        if (isnan(w_))                                                                         \
            return isnan(g_);                                                                  \
        return memcmp(&g_, &w_, sizeof g_) == 0;                                               \
    } while (0)

static int elem_ok(hal_dtype dt, hal_redop op, const void *a, const void *b, const void *got)
{
    int fi = fmt_of(dt);
    if (fi >= 0) {
        uint32_t x = 0, y = 0, g = 0;
        size_t w = fmts[fi].bits / 8;
        memcpy(&x, a, w);
        memcpy(&y, b, w);
        memcpy(&g, got, w);
        return narrow_same(&fmts[fi], g, ref_narrow(&fmts[fi], op, x, y));
    }
    unsigned char want[16];
    switch (dt) {
    case HAL_DT_FP32: REF_FLOAT(float, a, b, op, got);
    case HAL_DT_FP64: REF_FLOAT(double, a, b, op, got);
    case HAL_DT_FP8E8M0: {
        uint8_t x = *(const uint8_t *)a, y = *(const uint8_t *)b;
        return *(const uint8_t *)got == ref_e8m0(op, x, y);
    }
    case HAL_DT_INT128: ref_int128(op, a, b, want); break;
    default: {
        int sgn = dt == HAL_DT_INT8 || dt == HAL_DT_INT16 || dt == HAL_DT_INT32 || dt == HAL_DT_INT64;
        ref_int_small(hal_dtype_size(dt), sgn, op, a, b, want);
    }
    }
    return memcmp(got, want, hal_dtype_size(dt)) == 0;
}

/* ---- the matrix driver ---- */

enum mode { M_IP, M_IP_SELF, M_3, M_3_DA, M_3_DB, M_3_ALL, M_N };
static const char *const mode_names[M_N] = {"ip", "ip dst==src", "3op", "3op dst==a",
                                            "3op dst==b", "3op dst==a==b"};
#define GUARD 32

static void check_case(hal_dtype dt, hal_redop op, size_t count, size_t off, enum mode md)
{
    size_t es = hal_dtype_size(dt), bytes = count * es, total = bytes + off + 2 * GUARD;
    unsigned char *d = malloc(total), *s = malloc(total), *a0 = malloc(bytes + 1),
                  *b0 = malloc(bytes + 1), *dsave = malloc(total);
    cr_assert(d && s && a0 && b0 && dsave);
    fill(d, total);
    fill(s, total);
    memcpy(dsave, d, total);
    unsigned char *pd = d + GUARD + off, *ps = s + GUARD + off;
    int self = md == M_IP_SELF || md == M_3_ALL;
    memcpy(a0, pd, bytes);
    memcpy(b0, self ? pd : ps, bytes);
    hal_result rc;
    switch (md) {
    case M_IP: rc = emu_reduce(pd, ps, count, dt, op); break;
    case M_IP_SELF: rc = emu_reduce(pd, pd, count, dt, op); break;
    case M_3: /* the result lands in s's buffer, a = d, b = a copy of s */
        memcpy(b0, ps, bytes);
        rc = emu_reduce3(ps, pd, b0, count, dt, op);
        memcpy(dsave, s, total); /* s's guards must survive */
        memcpy(d, s, total);
        break;
    case M_3_DA: rc = emu_reduce3(pd, pd, ps, count, dt, op); break;
    case M_3_DB: /* dst == b: a is s, b is d, so the expected value is s op d */
        memcpy(a0, ps, bytes);
        memcpy(b0, pd, bytes);
        rc = emu_reduce3(pd, ps, pd, count, dt, op);
        break;
    default: rc = emu_reduce3(pd, pd, pd, count, dt, op); break;
    }
    cr_assert_eq(rc, HAL_OK, "%s %s n=%zu %s: rc %d", hal_dtype_name(dt), hal_redop_name(op),
                 count, mode_names[md], rc);
    cr_assert(memcmp(d, dsave, GUARD + off) == 0 && memcmp(pd + bytes, dsave + GUARD + off + bytes, GUARD) == 0,
              "%s %s n=%zu %s: wrote outside dst", hal_dtype_name(dt), hal_redop_name(op), count,
              mode_names[md]);
    for (size_t i = 0; i < count; i++)
        if (!elem_ok(dt, op, a0 + i * es, b0 + i * es, pd + i * es))
            cr_assert_fail("%s %s n=%zu off=%zu %s: element %zu wrong", hal_dtype_name(dt),
                           hal_redop_name(op), count, off, mode_names[md], i);
    free(d), free(s), free(a0), free(b0), free(dsave);
}

static const hal_dtype all_dts[] = {
    HAL_DT_INT8,   HAL_DT_INT16,  HAL_DT_INT32, HAL_DT_INT64,   HAL_DT_UINT8,   HAL_DT_UINT16,
    HAL_DT_UINT32, HAL_DT_UINT64, HAL_DT_INT128, HAL_DT_FP16,   HAL_DT_BF16,    HAL_DT_FP32,
    HAL_DT_FP64,   HAL_DT_FP8E4M3, HAL_DT_FP8E5M2, HAL_DT_FP8E8M0,
};
#define N_DTS (sizeof all_dts / sizeof all_dts[0])

Test(reduce, matrix_small_counts)
{
    static const size_t counts[] = {0, 1, 7, 63, 64, 65, 255, 256, 257, 4099};
    static const size_t offs[] = {0, 1, 3};
    for (size_t t = 0; t < N_DTS; t++)
        for (int op = 0; op < HAL_OP_COUNT; op++) {
            if (!hal_reduce_supported(all_dts[t], (hal_redop)op))
                continue;
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
                    for (int md = 0; md < M_N; md++)
                        check_case(all_dts[t], (hal_redop)op, counts[c], offs[o], (enum mode)md);
        }
}

static void check_large(int narrow)
{
    for (size_t t = 0; t < N_DTS; t++)
        for (int op = 0; op < HAL_OP_COUNT; op++) {
            hal_dtype dt = all_dts[t];
            if (!hal_reduce_supported(dt, (hal_redop)op) || (fmt_of(dt) >= 0) != narrow)
                continue;
            check_case(dt, (hal_redop)op, 1000003, 1, M_IP);
            check_case(dt, (hal_redop)op, 1000003, 5, M_3);
        }
}

Test(reduce, matrix_large_native) { check_large(0); }
Test(reduce, matrix_large_narrow) { check_large(1); }

/* ---- conversions: every code, and every midpoint between neighbours ---- */

static void check_format(int fi, float (*dec)(uint32_t), uint32_t (*enc)(float))
{
    struct fmt *f = &fmts[fi];
    uint32_t ncodes = 1u << f->bits;
    for (uint32_t c = 0; c < ncodes; c++) {
        double want = ref_decode(f, c);
        float got = dec(c);
        if (isnan(want))
            cr_assert(isnan(got), "fmt %d code %#x: want NaN", fi, c);
        else
            cr_assert((double)got == want && !!signbit(got) == !!signbit(want),
                      "fmt %d code %#x: got %a want %a", fi, c, (double)got, want);
        if (!isnan(want))
            cr_assert(narrow_same(f, enc(got), c), "fmt %d code %#x: roundtrip %#x", fi, c, enc(got));
    }
    const double *t = fmt_vals(f);
    for (uint32_t c = 0; c < f->maxfin; c++)
        for (int neg = 0; neg < 2; neg++) {
            float mid = (float)((t[c] + t[c + 1]) / 2); /* exact in fp32 */
            float probes[3] = {nextafterf(mid, -INFINITY), mid, nextafterf(mid, INFINITY)};
            for (int k = 0; k < 3; k++) {
                float v = neg ? -probes[k] : probes[k];
                uint32_t want = ref_round(f, v), got = enc(v);
                cr_assert(narrow_same(f, got, want), "fmt %d: %a -> %#x want %#x", fi, (double)v, got, want);
            }
        }
    /* Overflow edge, infinities, NaN. */
    float top = (float)(t[f->maxfin] + (t[f->maxfin] - t[f->maxfin - 1]) / 2);
    float specials[] = {top, nextafterf(top, 0), nextafterf(top, INFINITY), INFINITY, -INFINITY,
                        NAN, -NAN, 1e30f, 0x1p-140f, -0.0f, 0.0f};
    for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
        uint32_t want = ref_round(f, specials[k]), got = enc(specials[k]);
        cr_assert(narrow_same(f, got, want), "fmt %d: %a -> %#x want %#x", fi, (double)specials[k], got, want);
    }
}

static float dec_h(uint32_t c) { return emu_fp16_to_fp32((uint16_t)c); }
static uint32_t enc_h(float f) { return emu_fp32_to_fp16(f); }
static float dec_b(uint32_t c) { return emu_bf16_to_fp32((uint16_t)c); }
static uint32_t enc_b(float f) { return emu_fp32_to_bf16(f); }
static float dec_4(uint32_t c) { return emu_fp8e4m3_to_fp32((uint8_t)c); }
static uint32_t enc_4(float f) { return emu_fp32_to_fp8e4m3(f); }
static float dec_5(uint32_t c) { return emu_fp8e5m2_to_fp32((uint8_t)c); }
static uint32_t enc_5(float f) { return emu_fp32_to_fp8e5m2(f); }

Test(convert, fp16) { check_format(F_FP16, dec_h, enc_h); }
Test(convert, bf16) { check_format(F_BF16, dec_b, enc_b); }
Test(convert, fp8e4m3) { check_format(F_E4M3, dec_4, enc_4); }
Test(convert, fp8e5m2) { check_format(F_E5M2, dec_5, enc_5); }

#ifdef __FLT16_MAX__
/* The reference rounding itself, against the compiler's binary16 conversion. */
Test(convert, reference_vs_Float16)
{
    for (int i = 0; i < 2000000; i++) {
        uint64_t r = rng();
        double v;
        if (i & 1)
            v = ldexp((double)(r >> 11), (int)(r & 63) - 90); /* wide range, many odd bits */
        else
            v = (double)dec_h((uint32_t)r & 0xffff) + ldexp((double)((r >> 16) & 0xff), -20);
        _Float16 h = (_Float16)v;
        uint16_t hb;
        memcpy(&hb, &h, 2);
        cr_assert(narrow_same(&fmts[F_FP16], hb, ref_round(&fmts[F_FP16], v)), "%a", v);
    }
}
#endif

/* ---- named cases ---- */

static uint32_t red16(hal_dtype dt, hal_redop op, uint16_t x, uint16_t y)
{
    cr_assert_eq(emu_reduce(&x, &y, 1, dt, op), HAL_OK);
    return x;
}

static uint32_t red8(hal_dtype dt, hal_redop op, uint8_t x, uint8_t y)
{
    cr_assert_eq(emu_reduce(&x, &y, 1, dt, op), HAL_OK);
    return x;
}

Test(cases, fp16_rounding_and_specials)
{
    hal_dtype h = HAL_DT_FP16;
    cr_expect_eq(red16(h, HAL_OP_SUM, 0x3c00, 0x1000), 0x3c00); /* 1 + 2^-11: tie -> even (1) */
    cr_expect_eq(red16(h, HAL_OP_SUM, 0x3c01, 0x1000), 0x3c02); /* 1+2^-10 + 2^-11: tie -> even */
    cr_expect_eq(red16(h, HAL_OP_SUM, 0x7bff, 0x4c00), 0x7c00); /* 65504 + 16 = 65520: tie -> inf */
    cr_expect_eq(red16(h, HAL_OP_SUM, 0x7bff, 0x4800), 0x7bff); /* 65504 + 8 rounds down */
    cr_expect_eq(red16(h, HAL_OP_SUM, 0x0001, 0x0001), 0x0002); /* subnormals add exactly */
    cr_expect_eq(red16(h, HAL_OP_PROD, 0x0001, 0x3800), 0x0000); /* 2^-25: tie -> even (0) */
    cr_expect_eq(red16(h, HAL_OP_PROD, 0x0003, 0x3800), 0x0002); /* 1.5 * 2^-24: tie -> 2 */
    cr_expect_eq(red16(h, HAL_OP_SUM, 0x7c00, 0x3c00), 0x7c00); /* inf + 1 */
    cr_expect_eq(red16(h, HAL_OP_SUM, 0x3c00, 0xbc00), 0x0000); /* 1 - 1 = +0 */
    cr_expect_eq(red16(h, HAL_OP_MAX, 0x0000, 0x8000), 0x0000); /* tie: first operand */
    cr_expect_eq(red16(h, HAL_OP_MIN, 0x8000, 0x0000), 0x8000);
    cr_expect_eq(red16(h, HAL_OP_MAX, 0xfc00, 0x3c00), 0x3c00);
    uint32_t nan_cases[][3] = {{HAL_OP_SUM, 0x7c00, 0xfc00}, {HAL_OP_PROD, 0x7c00, 0x0000},
                               {HAL_OP_MAX, 0x7e00, 0x3c00}, {HAL_OP_MAX, 0x3c00, 0x7e00},
                               {HAL_OP_MIN, 0xfe01, 0x3c00}, {HAL_OP_MIN, 0x3c00, 0x7d00}};
    for (size_t i = 0; i < sizeof nan_cases / sizeof nan_cases[0]; i++) {
        uint32_t r = red16(h, (hal_redop)nan_cases[i][0], (uint16_t)nan_cases[i][1], (uint16_t)nan_cases[i][2]);
        cr_expect((r & 0x7c00) == 0x7c00 && (r & 0x3ff), "case %zu: %#x is not NaN", i, r);
    }
}

Test(cases, bf16_fp8_rounding_and_overflow)
{
    cr_expect_eq(red16(HAL_DT_BF16, HAL_OP_SUM, 0x3f80, 0x3b80), 0x3f80); /* 1 + 2^-8: tie -> 1 */
    cr_expect_eq(red16(HAL_DT_BF16, HAL_OP_SUM, 0x3f81, 0x3b80), 0x3f82);
    cr_expect_eq(red16(HAL_DT_BF16, HAL_OP_SUM, 0x7f7f, 0x7f7f), 0x7f80); /* overflow -> inf */
    cr_expect_eq(red16(HAL_DT_BF16, HAL_OP_PROD, 0xff7f, 0x4000), 0xff80); /* -> -inf */
    uint32_t nan = red16(HAL_DT_BF16, HAL_OP_MIN, 0x3f80, 0x7fc1);
    cr_expect((nan & 0x7f80) == 0x7f80 && (nan & 0x7f));
    cr_expect_eq(red8(HAL_DT_FP8E4M3, HAL_OP_SUM, 0x7e, 0x58), 0x7e); /* 448 + 16 = 464: tie -> 448 */
    cr_expect_eq(red8(HAL_DT_FP8E4M3, HAL_OP_SUM, 0x7e, 0x60) & 0x7f, 0x7f); /* 480 -> NaN */
    cr_expect_eq(red8(HAL_DT_FP8E4M3, HAL_OP_PROD, 0x7e, 0xc0) & 0x7f, 0x7f); /* -896 -> NaN */
    cr_expect_eq(red8(HAL_DT_FP8E5M2, HAL_OP_SUM, 0x7b, 0x6c), 0x7c); /* 57344+4096: tie -> inf */
    cr_expect_eq(red8(HAL_DT_FP8E5M2, HAL_OP_SUM, 0x7b, 0x68), 0x7b); /* +2048 rounds down */
    cr_expect_eq(red8(HAL_DT_FP8E5M2, HAL_OP_SUM, 0xfc, 0x3c), 0xfc); /* -inf + 1 */
    cr_expect_eq(red8(HAL_DT_FP8E8M0, HAL_OP_PROD, 127, 127), 127);   /* 1 * 1 */
    cr_expect_eq(red8(HAL_DT_FP8E8M0, HAL_OP_PROD, 200, 200), 0xff);  /* 2^146 -> NaN */
    cr_expect_eq(red8(HAL_DT_FP8E8M0, HAL_OP_PROD, 10, 20), 0);       /* 2^-224 -> 2^-127 */
    cr_expect_eq(red8(HAL_DT_FP8E8M0, HAL_OP_MIN, 10, 0xff), 0xff);
    cr_expect_eq(red8(HAL_DT_FP8E8M0, HAL_OP_MAX, 10, 20), 20);
}

Test(cases, integer_wraparound)
{
    int8_t i8[2] = {127, 1};
    emu_reduce(&i8[0], &i8[1], 1, HAL_DT_INT8, HAL_OP_SUM);
    cr_expect_eq(i8[0], -128);
    uint8_t u8[2] = {255, 255};
    emu_reduce(&u8[0], &u8[1], 1, HAL_DT_UINT8, HAL_OP_PROD);
    cr_expect_eq(u8[0], 1);
    int16_t i16[2] = {-32768, -1};
    emu_reduce(&i16[0], &i16[1], 1, HAL_DT_INT16, HAL_OP_PROD);
    cr_expect_eq(i16[0], -32768);
    uint16_t u16[2] = {65535, 65535};
    emu_reduce(&u16[0], &u16[1], 1, HAL_DT_UINT16, HAL_OP_PROD);
    cr_expect_eq(u16[0], 1);
    int32_t i32[2] = {INT32_MAX, INT32_MAX};
    emu_reduce(&i32[0], &i32[1], 1, HAL_DT_INT32, HAL_OP_SUM);
    cr_expect_eq(i32[0], -2);
    int64_t i64[2] = {INT64_MIN, -1};
    emu_reduce(&i64[0], &i64[1], 1, HAL_DT_INT64, HAL_OP_PROD);
    cr_expect_eq(i64[0], INT64_MIN);
    int64_t mx[2] = {-5, 3};
    emu_reduce(&mx[0], &mx[1], 1, HAL_DT_INT64, HAL_OP_MAX);
    cr_expect_eq(mx[0], 3);
    uint64_t umx[2] = {(uint64_t)-5, 3};
    emu_reduce(&umx[0], &umx[1], 1, HAL_DT_UINT64, HAL_OP_MAX);
    cr_expect_eq(umx[0], (uint64_t)-5);
    unsigned char big[32] = {0}; /* int128: (2^127 - 1) + 1 = -2^127 */
    memset(big, 0xff, 15);
    big[15] = 0x7f;
    big[16] = 1;
    emu_reduce(big, big + 16, 1, HAL_DT_INT128, HAL_OP_SUM);
    for (int i = 0; i < 15; i++)
        cr_expect_eq(big[i], 0);
    cr_expect_eq(big[15], 0x80);
}

/* ---- arguments and the type helpers ---- */

Test(args, errors)
{
    float a[8] = {0}, b[8] = {0};
    cr_expect_eq(emu_reduce(a, b, 1, (hal_dtype)13, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce(a, b, 1, HAL_DT_COUNT, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce(a, b, 1, (hal_dtype)-1, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce(a, b, 1, HAL_DT_FP32, HAL_OP_COUNT), HAL_E_PARAM);
    cr_expect_eq(emu_reduce3(a, a, b, 1, HAL_DT_FP32, (hal_redop)-1), HAL_E_PARAM);
    cr_expect_eq(emu_reduce(NULL, b, 1, HAL_DT_FP32, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce3(a, NULL, b, 1, HAL_DT_FP32, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce(NULL, NULL, 0, HAL_DT_FP32, HAL_OP_SUM), HAL_OK);
    cr_expect_eq(emu_reduce3(NULL, NULL, NULL, 0, HAL_DT_INT128, HAL_OP_MIN), HAL_OK);
    cr_expect_eq(emu_reduce(a, a + 1, 4, HAL_DT_FP32, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce3(a + 1, a, b, 4, HAL_DT_FP32, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce3(b, a, b + 2, 4, HAL_DT_FP32, HAL_OP_SUM), HAL_E_PARAM);
    cr_expect_eq(emu_reduce3(b, a, a + 1, 4, HAL_DT_FP32, HAL_OP_SUM), HAL_OK); /* a, b overlap */
    cr_expect_eq(emu_reduce(a, b, SIZE_MAX / 2, HAL_DT_FP32, HAL_OP_SUM), HAL_E_PARAM);
    for (int op = 0; op < HAL_OP_COUNT; op++) {
        cr_expect_eq(emu_reduce(a, b, 1, HAL_DT_HIF8, (hal_redop)op), HAL_E_NOT_SUPPORTED);
        cr_expect_eq(emu_reduce3(a, a, b, 1, HAL_DT_HIF8, (hal_redop)op), HAL_E_NOT_SUPPORTED);
    }
    cr_expect_eq(emu_reduce(a, b, 1, HAL_DT_FP8E8M0, HAL_OP_SUM), HAL_E_NOT_SUPPORTED);
}

Test(args, type_helpers)
{
    static const size_t sizes[HAL_DT_COUNT] = {1, 2, 4, 2, 4, 8, 8, 1, 2, 4, 8, 2, 16, 0, 1, 1, 1, 1};
    for (int dt = 0; dt < HAL_DT_COUNT; dt++)
        cr_expect_eq(hal_dtype_size((hal_dtype)dt), sizes[dt], "dtype %d", dt);
    cr_expect_eq(hal_dtype_size(HAL_DT_COUNT), 0);
    cr_expect_eq(hal_dtype_size((hal_dtype)-3), 0);
    cr_expect_str_eq(hal_dtype_name(HAL_DT_BF16), "bf16");
    cr_expect_str_eq(hal_dtype_name(HAL_DT_FP8E4M3), "fp8e4m3");
    cr_expect_str_eq(hal_dtype_name((hal_dtype)13), "unknown");
    cr_expect_str_eq(hal_dtype_name(HAL_DT_COUNT), "unknown");
    cr_expect_str_eq(hal_redop_name(HAL_OP_PROD), "prod");
    cr_expect_str_eq(hal_redop_name(HAL_OP_COUNT), "unknown");
    cr_expect_eq(hal_reduce_supported((hal_dtype)13, HAL_OP_SUM), 0);
    cr_expect_eq(hal_reduce_supported(HAL_DT_FP32, HAL_OP_COUNT), 0);
    cr_expect_eq(hal_reduce_supported(HAL_DT_FP8E8M0, HAL_OP_PROD), 1);
    cr_expect_eq(hal_reduce_supported(HAL_DT_HIF8, HAL_OP_MAX), 0);
    cr_expect_str_neq(emu_reduce_isa(), "");
}
