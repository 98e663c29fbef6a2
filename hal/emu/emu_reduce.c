/* Entry points of the emulator's reduce kernels: argument checks, aliasing, dispatch.
 *
 * The native kernels are restrict-qualified so they vectorize; the aliasing the API allows
 * (dst == src, dst == a, dst == b) is mapped here onto calls whose buffers do not overlap,
 * staging through a small stack buffer when needed. The narrow-float kernels load a block before
 * storing it and take exact aliasing as is. */
#include "emu_reduce.h"

#include "common/oh_check.h"
#include "emu_reduce_impl.h"

#define EMU_MOD "emu_reduce"

/* Bytes staged per step when an operand must be copied out of dst's way. */
#define EMU_STAGE_BYTES 4096

/* 1 if [p, p+len) and [q, q+len) share a byte. Compared as integers: relational operators on
 * pointers into different objects are undefined. */
static int emu_overlap(const void *p, const void *q, size_t len)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return a < b ? b - a < len : a - b < len;
}

/* Checks shared by both entry points; *bytes gets count * element size. */
static hal_result emu_check(size_t count, hal_dtype dt, hal_redop op, size_t *bytes)
{
    size_t es = hal_dtype_size(dt);
    CHECK_ARG(es != 0, HAL_E_PARAM, EMU_MOD, "unknown dtype %d", (int)dt);
    CHECK_ARG((unsigned)op < HAL_OP_COUNT, HAL_E_PARAM, EMU_MOD, "unknown reduce op %d", (int)op);
    CHECK_ARG(hal_reduce_supported(dt, op), HAL_E_NOT_SUPPORTED, EMU_MOD,
              "reduce %s is not supported for %s", hal_redop_name(op), hal_dtype_name(dt));
    CHECK_ARG(count <= SIZE_MAX / es, HAL_E_PARAM, EMU_MOD, "count %zu of %s overflows", count,
              hal_dtype_name(dt));
    *bytes = count * es;
    return HAL_OK;
}

/* d = d op s where d == s: the kernels need distinct buffers, so copy s out a piece at a time. */
static void emu_native_self(const struct emu_kern *k, unsigned char *d, size_t bytes, size_t es)
{
    unsigned char buf[EMU_STAGE_BYTES] __attribute__((aligned(64)));
    size_t step = sizeof buf / es * es;
    for (size_t off = 0; off < bytes; off += step) {
        size_t len = bytes - off < step ? bytes - off : step;
        memcpy(buf, d + off, len);
        k->ip(d + off, buf, len / es);
    }
}

/* d = a op b where d == b but not a: copy b out of d's way a piece at a time. */
static void emu_native_rev(const struct emu_kern *k, unsigned char *d, const unsigned char *a,
                           size_t bytes, size_t es)
{
    unsigned char buf[EMU_STAGE_BYTES] __attribute__((aligned(64)));
    size_t step = sizeof buf / es * es;
    for (size_t off = 0; off < bytes; off += step) {
        size_t len = bytes - off < step ? bytes - off : step;
        memcpy(buf, d + off, len);
        k->op3(d + off, a + off, buf, len / es);
    }
}

hal_result emu_reduce(void *dst, const void *src, size_t count, hal_dtype dt, hal_redop op)
{
    size_t bytes = 0;
    CHECK(emu_check(count, dt, op, &bytes));
    if (count == 0)
        return HAL_OK;
    CHECK_ARG(dst && src, HAL_E_PARAM, EMU_MOD, "null buffer (dst %p, src %p)", dst, src);
    CHECK_ARG(dst == src || !emu_overlap(dst, src, bytes), HAL_E_PARAM, EMU_MOD,
              "dst %p and src %p partially overlap (%zu bytes)", dst, src, bytes);
    const struct emu_kern *k = emu_native_kern(dt, op);
    if (!k)
        emu_reduce_narrow(dst, dst, src, count, dt, op);
    else if (dst == src)
        emu_native_self(k, dst, bytes, hal_dtype_size(dt));
    else
        k->ip(dst, src, count);
    return HAL_OK;
}

hal_result emu_reduce3(void *dst, const void *a, const void *b, size_t count, hal_dtype dt,
                       hal_redop op)
{
    size_t bytes = 0;
    CHECK(emu_check(count, dt, op, &bytes));
    if (count == 0)
        return HAL_OK;
    CHECK_ARG(dst && a && b, HAL_E_PARAM, EMU_MOD, "null buffer (dst %p, a %p, b %p)", dst, a, b);
    CHECK_ARG((dst == a || !emu_overlap(dst, a, bytes)) && (dst == b || !emu_overlap(dst, b, bytes)),
              HAL_E_PARAM, EMU_MOD, "dst %p partially overlaps a %p or b %p (%zu bytes)", dst, a,
              b, bytes);
    const struct emu_kern *k = emu_native_kern(dt, op);
    if (!k)
        emu_reduce_narrow(dst, a, b, count, dt, op);
    else if (dst == a)
        return emu_reduce(dst, b, count, dt, op); /* covers a == b too */
    else if (dst == b)
        emu_native_rev(k, dst, a, bytes, hal_dtype_size(dt));
    else
        k->op3(dst, a, b, count);
    return HAL_OK;
}

const char *emu_reduce_isa(void)
{
#if EMU_X86_DISPATCH
    /* Mirrors the target_clones resolvers' choice (and the F16C check for fp16). */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return __builtin_cpu_supports("f16c") ? "avx2+f16c" : "avx2";
#endif
    return "default";
}
