/* Reduce kernels for the narrow float formats: fp16, bf16, OFP8 e4m3 / e5m2, and e8m0.
 *
 * fp16/bf16/fp8 are widened to fp32 a block at a time, combined, and rounded back to nearest-even.
 * Each step is its own loop over a fixed-size local buffer, written branch-free (compute every
 * case, then select), so gcc vectorizes decode, op and encode separately. Rounding fp32 results
 * back is correctly rounded for +, *, max, min: fp32 has p' = 24 >= 2p + 2 bits for every format
 * here (fp16 p = 11, bf16 p = 8, fp8 p <= 4), so rounding twice equals rounding the exact value. */
#include "emu_reduce.h"
#include "emu_reduce_impl.h"

#if EMU_X86_DISPATCH
#include <immintrin.h>
#endif

/* Elements per block: the two fp32 staging buffers stay in L1 (2 KiB). */
#define EMU_FBLK 256

/* c ? x : y as bit masks. With the default -ftrapping-math gcc will not if-convert a ternary whose
 * arm holds an fp operation it sank into the branch, which blocks vectorization; masks keep every
 * arm computed unconditionally. */
static inline uint32_t emu_sel(int c, uint32_t x, uint32_t y)
{
    uint32_t m = 0u - (uint32_t)(c != 0);
    return (x & m) | (y & ~m);
}

/* ---- fp16 (IEEE binary16) ---- */

static inline float emu_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13; /* exponent and mantissa at fp32 positions */
    uint32_t e = em & 0x0f800000u;
    uint32_t norm = em + (112u << 23);     /* rebias 15 -> 127 */
    uint32_t infnan = norm + (112u << 23); /* exponent 31 -> 255, payload kept */
    /* Subnormal m * 2^-24: build 2^-14 * (1 + m/1024) and subtract 2^-14, exact in fp32. */
    uint32_t sub = emu_f32_bits(emu_bits_f32(norm + (1u << 23)) - 0x1p-14f);
    uint32_t r = emu_sel(e == 0x0f800000u, infnan, norm);
    r = emu_sel(e == 0, sub, r);
    return emu_bits_f32(r | sign);
}

static inline uint16_t emu_f2h(float f)
{
    uint32_t x = emu_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    /* >= 2^16 after rounding is out of range: inf, or the canonical quiet NaN for a NaN. */
    uint32_t big = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    /* Below 2^-14 the result is subnormal: adding 0.5 makes the FPU round at 2^-24 (nearest-even),
     * and the low mantissa bits of the sum are the fp16 subnormal encoding. */
    uint32_t sub = emu_f32_bits(emu_bits_f32(x) + 0.5f) - 0x3f000000u;
    /* Normal: rebias, then round the 13 dropped bits to nearest-even; a carry ripples into the
     * exponent, and rounding up to 2^16 yields 0x7c00 (inf) as it should. */
    uint32_t odd = (x >> 13) & 1u;
    uint32_t norm = (x - (112u << 23) + 0xfffu + odd) >> 13;
    uint32_t r = emu_sel(x < (113u << 23), sub, norm);
    r = emu_sel(x >= (143u << 23), big, r);
    return (uint16_t)(r | sign);
}

/* ---- bf16: the top half of an fp32 ---- */

static inline float emu_b2f(uint16_t h)
{
    return emu_bits_f32((uint32_t)h << 16);
}

static inline uint16_t emu_f2b(float f)
{
    uint32_t x = emu_f32_bits(f);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16; /* overflow carries into inf */
    uint32_t quiet = (x >> 16) | 0x40u; /* rounding could turn a NaN into inf: quiet it instead */
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

/* ---- OFP8: e4m3 (bias 7, no inf, NaN = S.1111.111) and e5m2 (bias 15, IEEE-like) ---- */

static inline float emu_fp8_dec(uint8_t v, unsigned mbits, unsigned bias, int ieee)
{
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t em = v & 0x7fu;
    uint32_t e = em >> mbits, m = em & ((1u << mbits) - 1u);
    uint32_t norm = ((e + 127u - bias) << 23) | (m << (23 - mbits));
    /* Subnormal: m quanta of 2^(1 - bias - mbits), exact in fp32. */
    uint32_t sub = emu_f32_bits((float)m * emu_bits_f32((128u - bias - mbits) << 23));
    uint32_t r = emu_sel(e == 0, sub, norm);
    if (ieee)
        r = emu_sel(e == (0x7fu >> mbits), 0x7f800000u | (m << (23 - mbits)), r);
    else
        r = emu_sel(em == 0x7fu, 0x7fc00000u, r);
    return emu_bits_f32(r | sign);
}

/* Non-saturating OFP8 conversion: beyond the largest finite value, e5m2 gives inf, e4m3 NaN. */
static inline uint8_t emu_fp8_enc(float f, unsigned mbits, unsigned bias, int ieee)
{
    uint32_t x = emu_f32_bits(f);
    uint32_t sign = (x >> 24) & 0x80u;
    x &= 0x7fffffffu;
    unsigned sh = 23 - mbits;
    /* Subnormal range: scale to units of the smallest quantum (exact) and round to an integer
     * with the 2^23 trick; an integer of 2^mbits is the smallest normal's encoding, as wanted. */
    float q = emu_bits_f32(x) * emu_bits_f32((126u + bias + mbits) << 23);
    uint32_t sub = emu_f32_bits(q + 0x1p23f) - 0x4b000000u;
    /* Normal range: round the dropped bits to nearest-even on the fp32 encoding, then rebias. */
    uint32_t rounded = (x + ((1u << (sh - 1)) - 1u) + ((x >> sh) & 1u)) >> sh;
    uint32_t norm = rounded - ((127u - bias) << mbits);
    uint32_t r = emu_sel(x < ((128u - bias) << 23), sub, norm);
    uint32_t maxfin = ieee ? 0x7bu : 0x7eu;
    r = emu_sel(r > maxfin, ieee ? 0x7cu : 0x7fu, r);
    r = emu_sel(x > 0x7f800000u, ieee ? 0x7eu : 0x7fu, r);
    return (uint8_t)(r | sign);
}

#define EMU_E4M3 3, 7, 0
#define EMU_E5M2 2, 15, 1

/* ---- block kernels ---- */

/* x[i] = x[i] op y[i] in fp32 over one whole block (padding lanes are computed and dropped). */
static inline void emu_f32_apply(float *restrict x, const float *restrict y, hal_redop op)
{
    switch (op) {
    case HAL_OP_SUM:
        for (size_t i = 0; i < EMU_FBLK; i++)
            x[i] = x[i] + y[i];
        break;
    case HAL_OP_PROD:
        for (size_t i = 0; i < EMU_FBLK; i++)
            x[i] = x[i] * y[i];
        break;
    case HAL_OP_MAX:
        for (size_t i = 0; i < EMU_FBLK; i++)
            x[i] = EMU_FMAX(x[i], y[i]);
        break;
    default:
        for (size_t i = 0; i < EMU_FBLK; i++)
            x[i] = EMU_FMIN(x[i], y[i]);
        break;
    }
}

/* One kernel per 16-bit / 8-bit format. A short last block is staged through a zero-padded copy
 * so every loop keeps the constant trip count gcc needs to vectorize at -O2. d may equal a or b:
 * each block is fully loaded before it is stored. */
#define EMU_NARROW_KERNEL(NAME, ST, DEC, ENC)                                                  \
    EMU_HOT static void NAME(void *d, const void *a, const void *b, size_t n, hal_redop op)    \
    {                                                                                          \
        float fa[EMU_FBLK], fb[EMU_FBLK];                                                      \
        ST ta[EMU_FBLK], tb[EMU_FBLK];                                                         \
        for (size_t i = 0; i < n; i += EMU_FBLK) {                                             \
            size_t m = n - i < EMU_FBLK ? n - i : EMU_FBLK;                                    \
            const ST *pa = (const ST *)a + i, *pb = (const ST *)b + i;                         \
            if (m < EMU_FBLK) {                                                                \
                memset(ta, 0, sizeof ta);                                                      \
                memset(tb, 0, sizeof tb);                                                      \
                memcpy(ta, pa, m * sizeof *ta);                                                \
                memcpy(tb, pb, m * sizeof *tb);                                                \
                pa = ta;                                                                       \
                pb = tb;                                                                       \
            }                                                                                  \
            for (size_t j = 0; j < EMU_FBLK; j++)                                              \
                fa[j] = DEC(pa[j]);                                                            \
            for (size_t j = 0; j < EMU_FBLK; j++)                                              \
                fb[j] = DEC(pb[j]);                                                            \
            emu_f32_apply(fa, fb, op);                                                         \
            if (m == EMU_FBLK) {                                                               \
                ST *pd = (ST *)d + i;                                                          \
                for (size_t j = 0; j < EMU_FBLK; j++)                                          \
                    pd[j] = ENC(fa[j]);                                                        \
            } else {                                                                           \
                for (size_t j = 0; j < EMU_FBLK; j++)                                          \
                    ta[j] = ENC(fa[j]);                                                        \
                memcpy((ST *)d + i, ta, m * sizeof *ta);                                       \
            }                                                                                  \
        }                                                                                      \
    }

static inline float emu_e4m3_dec(uint8_t v) { return emu_fp8_dec(v, EMU_E4M3); }
static inline uint8_t emu_e4m3_enc(float f) { return emu_fp8_enc(f, EMU_E4M3); }
static inline float emu_e5m2_dec(uint8_t v) { return emu_fp8_dec(v, EMU_E5M2); }
static inline uint8_t emu_e5m2_enc(float f) { return emu_fp8_enc(f, EMU_E5M2); }

EMU_NARROW_KERNEL(emu_fp16_kernel, emu_u16, emu_h2f, emu_f2h)
EMU_NARROW_KERNEL(emu_bf16_kernel, emu_u16, emu_b2f, emu_f2b)
EMU_NARROW_KERNEL(emu_e4m3_kernel, emu_u8, emu_e4m3_dec, emu_e4m3_enc)
EMU_NARROW_KERNEL(emu_e5m2_kernel, emu_u8, emu_e5m2_dec, emu_e5m2_enc)

#if EMU_X86_DISPATCH
/* fp16 with the F16C instructions: same blocks, same fp32 op loop, conversions in hardware
 * (vcvtph2ps is exact; vcvtps2ph with imm 0 rounds to nearest-even, overflows to inf and keeps
 * NaNs NaN), which is several times faster than the bit-twiddled conversions. */
__attribute__((target("avx2,f16c"))) static void emu_fp16_kernel_f16c(void *d, const void *a,
                                                                     const void *b, size_t n,
                                                                     hal_redop op)
{
    float fa[EMU_FBLK], fb[EMU_FBLK];
    uint16_t ta[EMU_FBLK], tb[EMU_FBLK];
    for (size_t i = 0; i < n; i += EMU_FBLK) {
        size_t m = n - i < EMU_FBLK ? n - i : EMU_FBLK;
        const unsigned char *pa = (const unsigned char *)a + 2 * i;
        const unsigned char *pb = (const unsigned char *)b + 2 * i;
        unsigned char *pd = (unsigned char *)d + 2 * i;
        if (m < EMU_FBLK) {
            memset(ta, 0, sizeof ta);
            memset(tb, 0, sizeof tb);
            memcpy(ta, pa, 2 * m);
            memcpy(tb, pb, 2 * m);
            pa = (const unsigned char *)ta;
            pb = (const unsigned char *)tb;
        }
        for (size_t j = 0; j < EMU_FBLK; j += 8) {
            _mm256_storeu_ps(fa + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i_u *)(pa + 2 * j))));
            _mm256_storeu_ps(fb + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i_u *)(pb + 2 * j))));
        }
        emu_f32_apply(fa, fb, op);
        unsigned char *out = m == EMU_FBLK ? pd : (unsigned char *)ta;
        for (size_t j = 0; j < EMU_FBLK; j += 8)
            _mm_storeu_si128((__m128i_u *)(out + 2 * j),
                             _mm256_cvtps_ph(_mm256_loadu_ps(fa + j), _MM_FROUND_TO_NEAREST_INT));
        if (m < EMU_FBLK)
            memcpy(pd, ta, 2 * m);
    }
}

static int emu_have_f16c(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
#endif

/* ---- e8m0: 2^(e - 127), 0xFF = NaN; no sign, no zero, no inf ---- */

static uint8_t emu_e8m0_op(uint8_t x, uint8_t y, hal_redop op)
{
    if (x == 0xffu || y == 0xffu)
        return 0xffu;
    switch (op) {
    case HAL_OP_MAX:
        return x > y ? x : y;
    case HAL_OP_MIN:
        return x < y ? x : y;
    default: { /* PROD: exponents add. Past 2^127 there is no inf, so NaN; below 2^-127 there is
                * no zero, and 2^-127 is the nearest representable value. */
        int e = (int)x + (int)y - 127;
        return e > 254 ? 0xffu : e < 0 ? 0u : (uint8_t)e;
    }
    }
}

static void emu_e8m0_kernel(void *d, const void *a, const void *b, size_t n, hal_redop op)
{
    emu_u8 *pd = d;
    const emu_u8 *pa = a, *pb = b;
    for (size_t i = 0; i < n; i++)
        pd[i] = emu_e8m0_op(pa[i], pb[i], op);
}

void emu_reduce_narrow(void *d, const void *a, const void *b, size_t n, hal_dtype dt,
                       hal_redop op)
{
    switch (dt) {
    case HAL_DT_FP16:
#if EMU_X86_DISPATCH
        if (emu_have_f16c()) {
            emu_fp16_kernel_f16c(d, a, b, n, op);
            break;
        }
#endif
        emu_fp16_kernel(d, a, b, n, op);
        break;
    case HAL_DT_BF16:
        emu_bf16_kernel(d, a, b, n, op);
        break;
    case HAL_DT_FP8E4M3:
        emu_e4m3_kernel(d, a, b, n, op);
        break;
    case HAL_DT_FP8E5M2:
        emu_e5m2_kernel(d, a, b, n, op);
        break;
    case HAL_DT_FP8E8M0:
        emu_e8m0_kernel(d, a, b, n, op);
        break;
    default: /* callers check hal_reduce_supported first */
        break;
    }
}

/* ---- exported scalar conversions ---- */

float emu_fp16_to_fp32(uint16_t h) { return emu_h2f(h); }
uint16_t emu_fp32_to_fp16(float f) { return emu_f2h(f); }
float emu_bf16_to_fp32(uint16_t h) { return emu_b2f(h); }
uint16_t emu_fp32_to_bf16(float f) { return emu_f2b(f); }
float emu_fp8e4m3_to_fp32(uint8_t v) { return emu_e4m3_dec(v); }
uint8_t emu_fp32_to_fp8e4m3(float f) { return emu_e4m3_enc(f); }
float emu_fp8e5m2_to_fp32(uint8_t v) { return emu_e5m2_dec(v); }
uint8_t emu_fp32_to_fp8e5m2(float f) { return emu_e5m2_enc(f); }
