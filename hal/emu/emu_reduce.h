/* The emulator's reduce kernels: the CPU stand-in for an SDMA engine's inline reduce.
 *
 * Every call is element-wise; nothing is assumed about pointer alignment (odd offsets are fine).
 * Results:
 *   HAL_E_PARAM          unknown dtype or op, NULL data with count > 0, count * size overflowing,
 *                        or buffers that partially overlap (exact aliasing, described below, is fine)
 *   HAL_E_NOT_SUPPORTED  the reduction is not defined for the dtype (see hal_reduce_supported):
 *                        hif8 with any op, fp8e8m0 with sum
 *   HAL_OK               otherwise, including count 0 (pointers are then not looked at)
 *
 * Arithmetic (docs/emulator.md, "Reduce kernels", has the full matrix):
 * - integers: sum and prod wrap around (two's complement), max/min compare signed or unsigned
 *   according to the type; int128 is __int128.
 * - fp32/fp64: IEEE in the default rounding mode. fp16/bf16/fp8e4m3/fp8e5m2: widened to fp32,
 *   computed, rounded back to nearest-even (correctly rounded: fp32 has >= 2p+2 bits for all of
 *   them, so the double rounding is harmless). Overflow gives inf, except fp8e4m3 which has no inf
 *   and gives NaN (OFP8 non-saturating conversion). NaN results are quiet NaNs, payload unspecified.
 * - max/min: a NaN in either operand gives NaN. Operands that compare equal (+0 and -0) return
 *   the first operand (dst for emu_reduce, a for emu_reduce3).
 * - fp8e8m0 (2^(e-127), 0xFF = NaN, no zero, no sign): max/min order the values (NaN propagates);
 *   prod adds exponents, overflow gives NaN (no inf), underflow gives 2^-127 (no zero).
 */
#ifndef EMU_REDUCE_H
#define EMU_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "hal/hal_types.h"

/* dst[i] = dst[i] op src[i] for i < count. dst and src may be the same pointer. */
hal_result emu_reduce(void *dst, const void *src, size_t count, hal_dtype dt, hal_redop op);

/* dst[i] = a[i] op b[i]. dst may be the same pointer as a and/or b; a and b may overlap freely. */
hal_result emu_reduce3(void *dst, const void *a, const void *b, size_t count, hal_dtype dt,
                       hal_redop op);

/* SIMD level the vectorized kernels run at on this CPU, for bench reports: "avx2+f16c" (fp16 also
 * converts in hardware), "avx2" or "default". */
const char *emu_reduce_isa(void);

/* Scalar conversions with the kernels' exact semantics (round to nearest even, overflow as above),
 * for benchmarks and test data. */
float emu_fp16_to_fp32(uint16_t h);
uint16_t emu_fp32_to_fp16(float f);
float emu_bf16_to_fp32(uint16_t h);
uint16_t emu_fp32_to_bf16(float f);
float emu_fp8e4m3_to_fp32(uint8_t v);
uint8_t emu_fp32_to_fp8e4m3(float f);
float emu_fp8e5m2_to_fp32(uint8_t v);
uint8_t emu_fp32_to_fp8e5m2(float f);

#endif
