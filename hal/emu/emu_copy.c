/* Non-temporal copy (emu_copy.h). glibc's memcpy switches to non-temporal stores only above a
 * threshold derived from the reported cache size; a VM that reports the host's large L3 never
 * reaches it, and a copy split into engine-sized pieces never does either (docs/emulator.md,
 * "Copy kernel"). */
#include "hal/emu/emu_copy.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>

/* Streams whole 64-byte lines from s to d and, when set, to d2 (both 16-byte aligned): one read of
 * the source for both destinations. */
static inline void stream_lines(char *d, char *d2, const char *s, size_t lines)
{
    for (; lines; d += 64, s += 64, lines--) {
        _mm_prefetch(s + 512, _MM_HINT_T0); /* a prefetch past the end is harmless (no fault) */
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
        if (d2) {
            _mm_stream_si128((__m128i *)d2, a);
            _mm_stream_si128((__m128i *)(d2 + 16), b);
            _mm_stream_si128((__m128i *)(d2 + 32), c);
            _mm_stream_si128((__m128i *)(d2 + 48), e);
            d2 += 64;
        }
    }
}

/* The copy to d (and d2, at the same alignment): plain head and tail around whole streamed lines. */
static void copy_nt(char *d, char *d2, const char *s, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)d & 63u); /* to a cache line: whole-line streaming stores */
    if (n < head + 64) {
        memcpy(d, s, n);
        if (d2)
            memcpy(d2, s, n);
        return;
    }
    memcpy(d, s, head);
    if (d2)
        memcpy(d2, s, head), d2 += head;
    d += head, s += head, n -= head;
    stream_lines(d, d2, s, n / 64);
    size_t done = n / 64 * 64;
    memcpy(d + done, s + done, n - done);
    if (d2)
        memcpy(d2 + done, s + done, n - done);
    _mm_sfence(); /* streaming stores are weakly ordered: fence before whatever signals them */
}

static bool same_alignment(const void *a, const void *b)
{
    return (((uintptr_t)a ^ (uintptr_t)b) & 15u) == 0;
}

#else

static void copy_nt(char *d, char *d2, const char *s, size_t n)
{
    memcpy(d, s, n);
    if (d2)
        memcpy(d2, s, n);
}

static bool same_alignment(const void *a, const void *b)
{
    (void)a, (void)b;
    return true;
}

#endif

void emu_copy_nt(void *dst, const void *src, size_t n)
{
    copy_nt(dst, NULL, src, n);
}

static void *copy_nt_ret(void *dst, const void *src, size_t n) /* memcpy's signature */
{
    copy_nt(dst, NULL, src, n);
    return dst;
}

void emu_copy2(void *dst, void *dst2, const void *src, size_t n, bool nt)
{
    if (nt && same_alignment(dst, dst2)) {
        copy_nt(dst, dst2, src, n);
        return;
    }
    /* Block by block: the second copy reads the block from the cache the first brought it into. */
    void *(*copy)(void *, const void *, size_t) = nt ? copy_nt_ret : memcpy;
    for (size_t at = 0; at < n; at += EMU_COPY2_BLOCK) {
        size_t b = n - at < EMU_COPY2_BLOCK ? n - at : EMU_COPY2_BLOCK;
        copy((char *)dst + at, (const char *)src + at, b);
        copy((char *)dst2 + at, (const char *)src + at, b);
    }
}
