/* Internals shared by the emu_reduce*.c files; not for use outside hal/emu. */
#ifndef EMU_REDUCE_IMPL_H
#define EMU_REDUCE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hal/hal_types.h"

/* The build is portable (no -march=native), so hot loops get an AVX2 clone picked at load time,
 * and fp16 uses F16C conversions when the CPU has them. Building with -DEMU_NO_DISPATCH compiles
 * only the baseline code, to test it on a machine that has AVX2. */
#if defined(__x86_64__) && !defined(EMU_NO_DISPATCH)
#define EMU_HOT __attribute__((target_clones("avx2", "default")))
#define EMU_X86_DISPATCH 1
#else
#define EMU_HOT
#define EMU_X86_DISPATCH 0
#endif

/* Element types with alignment 1 and may_alias: user buffers may sit at any byte offset and hold
 * any effective type, so every load and store of payload goes through these. */
typedef int8_t emu_i8 __attribute__((aligned(1), may_alias));
typedef uint8_t emu_u8 __attribute__((aligned(1), may_alias));
typedef int16_t emu_i16 __attribute__((aligned(1), may_alias));
typedef uint16_t emu_u16 __attribute__((aligned(1), may_alias));
typedef int32_t emu_i32 __attribute__((aligned(1), may_alias));
typedef uint32_t emu_u32 __attribute__((aligned(1), may_alias));
typedef int64_t emu_i64 __attribute__((aligned(1), may_alias));
typedef uint64_t emu_u64 __attribute__((aligned(1), may_alias));
__extension__ typedef __int128 emu_i128 __attribute__((aligned(1), may_alias));
__extension__ typedef unsigned __int128 emu_u128 __attribute__((aligned(1), may_alias));
typedef float emu_f32 __attribute__((aligned(1), may_alias));
typedef double emu_f64 __attribute__((aligned(1), may_alias));

/* Kernels for types computed natively (integers, fp32, fp64). Both need non-overlapping buffers:
 * ip: d = d op s; op3: d = a op b (a and b may overlap each other, they are only read). */
typedef void (*emu_ip_fn)(void *restrict d, const void *restrict s, size_t n);
typedef void (*emu_op3_fn)(void *restrict d, const void *restrict a, const void *restrict b,
                           size_t n);
struct emu_kern {
    emu_ip_fn ip;
    emu_op3_fn op3;
};

/* The native kernel pair for dt/op, or NULL if dt is not computed natively. */
const struct emu_kern *emu_native_kern(hal_dtype dt, hal_redop op);

/* Narrow floats (fp16, bf16, fp8e4m3, fp8e5m2, fp8e8m0): d = a op b, element-wise, where d may
 * equal a and/or b exactly (blocks are loaded before they are stored). dt/op are valid and
 * supported. */
void emu_reduce_narrow(void *d, const void *a, const void *b, size_t n, hal_dtype dt,
                       hal_redop op);

static inline float emu_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t emu_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Max/min with NaN propagation: a NaN in either operand wins; ties return x (the first operand).
 * Written as compare + select so the loops vectorize (vcmpps/vblendvps). */
#define EMU_FMAX(x, y) (((y) > (x) || (y) != (y)) ? (y) : (x))
#define EMU_FMIN(x, y) (((y) < (x) || (y) != (y)) ? (y) : (x))

#endif
