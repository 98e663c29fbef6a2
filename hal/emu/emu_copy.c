/* Non-temporal copy (emu_copy.h). glibc's memcpy switches to non-temporal stores only above a
 * threshold derived from the reported cache size; a VM that reports the host's large L3 never
 * reaches it, and a copy split into engine-sized pieces never does either (docs/emulator.md,
 * "Copy kernel"). */
#include "hal/emu/emu_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>

void emu_copy_nt(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63u); /* to a cache line: whole-line streaming stores */
    if (n < head + 64) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        _mm_prefetch(s + 512, _MM_HINT_T0); /* a prefetch past the end is harmless (no fault) */
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
    _mm_sfence(); /* streaming stores are weakly ordered: fence before whatever signals them */
}

#else

void emu_copy_nt(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

#endif
