/* hal/ascend's host reduce fallback (hal/ascend/asc_reduce.c) for the 8-bit floats, PROD and the
 * types SDMA cannot reduce: every pair of 8-bit values, and a sample of the wider types, give the
 * same bytes as the emulator's kernels, which test_reduce.c checks against an independent
 * reference. NaN results compare equal whatever their payload (both backends only promise NaN). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hal/ascend/asc_internal.h"
#include "hal/emu/emu_reduce.h"

static int fp8_nan(hal_dtype dt, uint8_t v)
{
    switch (dt) {
    case HAL_DT_FP8E4M3: return (v & 0x7f) == 0x7f;
    case HAL_DT_FP8E5M2: return (v & 0x7c) == 0x7c && (v & 3);
    default: return v == 0xff; /* e8m0 */
    }
}

static void all_pairs(hal_dtype dt, hal_redop op)
{
    enum { N = 256 * 256 };
    uint8_t *a = malloc(N), *b = malloc(N), *want = malloc(N), *got = malloc(N);
    cr_assert(a && b && want && got);
    for (size_t i = 0; i < N; i++) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)i;
    }
    cr_assert_eq(emu_reduce3(want, a, b, N, dt, op), HAL_OK);
    cr_assert_eq(asc_host_reduce(got, a, b, N, dt, op), HAL_OK, "%s %s refused", hal_dtype_name(dt),
                 hal_redop_name(op));
    size_t bad = 0;
    for (size_t i = 0; i < N; i++)
        if (got[i] != want[i] && !(fp8_nan(dt, got[i]) && fp8_nan(dt, want[i])) && bad++ < 5)
            cr_log_error("%s %s: 0x%02x op 0x%02x = 0x%02x, emulator 0x%02x", hal_dtype_name(dt), hal_redop_name(op),
                         a[i], b[i], got[i], want[i]);
    cr_expect_eq(bad, 0, "%s %s: %zu of 65536 pairs differ", hal_dtype_name(dt), hal_redop_name(op), bad);
    free(a);
    free(b);
    free(want);
    free(got);
}

Test(asc_reduce, fp8_every_pair_matches_the_emulator)
{
    static const hal_dtype dts[] = {HAL_DT_FP8E4M3, HAL_DT_FP8E5M2, HAL_DT_FP8E8M0};
    int checked = 0;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int op = 0; op < HAL_OP_COUNT; op++)
            if (hal_reduce_supported(dts[d], (hal_redop)op)) {
                all_pairs(dts[d], (hal_redop)op);
                checked++;
            }
    cr_assert_eq(checked, 4 + 4 + 3, "e4m3 and e5m2 with 4 ops, e8m0 without sum");
}

Test(asc_reduce, hif8_is_refused)
{
    uint8_t x = 0x38, y = 0x38;
    cr_assert(!asc_host_reduce_supported(HAL_DT_HIF8));
    cr_assert_eq(asc_host_reduce(&x, &x, &y, 1, HAL_DT_HIF8, HAL_OP_SUM), HAL_E_NOT_SUPPORTED);
}

/* PROD and the fallback types (not NaN-producing: integers wrap, floats are finite samples). */
Test(asc_reduce, wide_types_match_the_emulator)
{
    static const hal_dtype dts[] = {HAL_DT_INT8,  HAL_DT_INT16, HAL_DT_INT32, HAL_DT_INT64, HAL_DT_UINT8,
                                    HAL_DT_UINT16, HAL_DT_UINT32, HAL_DT_UINT64, HAL_DT_INT128, HAL_DT_FP16,
                                    HAL_DT_BF16,  HAL_DT_FP32,  HAL_DT_FP64};
    enum { N = 4099 };
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        size_t es = hal_dtype_size(dts[d]);
        unsigned char *a = malloc(N * es), *b = malloc(N * es), *want = malloc(N * es), *got = malloc(N * es);
        cr_assert(a && b && want && got);
        uint64_t s = 0x9e3779b97f4a7c15ull + d;
        for (size_t i = 0; i < N * es; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            a[i] = (unsigned char)s;
            b[i] = (unsigned char)(s >> 8);
        }
        if (dts[d] == HAL_DT_FP16 || dts[d] == HAL_DT_BF16)
            for (size_t i = 1; i < N * es; i += 2) { /* clear the top exponent bit: finite, no NaN */
                a[i] &= 0xbf;
                b[i] &= 0xbf;
            }
        if (dts[d] == HAL_DT_FP32 || dts[d] == HAL_DT_FP64)
            for (size_t i = 0; i < N; i++) { /* finite values of mixed sign */
                double v = ldexp((double)(i % 97) + 0.5, (int)(i % 13) - 6) * ((i & 1) ? -1 : 1);
                double w = ldexp((double)(i % 89) + 0.25, (int)(i % 11) - 5);
                if (dts[d] == HAL_DT_FP32) {
                    ((float *)a)[i] = (float)v;
                    ((float *)b)[i] = (float)w;
                } else {
                    ((double *)a)[i] = v;
                    ((double *)b)[i] = w;
                }
            }
        for (int op = 0; op < HAL_OP_COUNT; op++) {
            cr_assert_eq(emu_reduce3(want, a, b, N, dts[d], (hal_redop)op), HAL_OK);
            cr_assert_eq(asc_host_reduce(got, a, b, N, dts[d], (hal_redop)op), HAL_OK);
            cr_expect(memcmp(got, want, N * es) == 0, "%s %s differs from the emulator", hal_dtype_name(dts[d]),
                      hal_redop_name((hal_redop)op));
        }
        free(a);
        free(b);
        free(want);
        free(got);
    }
}
