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

/* Streams whole 64-byte lines from s to d[j] + at for each of the k destinations (all 16-byte
 * aligned there): one read of the source for all of them. No software prefetch: the hardware's
 * follows a linear read, and one 512 B ahead made 64 MiB copies 1.2x slower (docs/emulator.md). */
static inline void stream_lines(char *const *d, uint32_t k, size_t at, const char *s, size_t lines)
{
    for (; lines; at += 64, s += 64, lines--) {
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        for (uint32_t j = 0; j < k; j++) {
            char *p = d[j] + at;
            _mm_stream_si128((__m128i *)p, a);
            _mm_stream_si128((__m128i *)(p + 16), b);
            _mm_stream_si128((__m128i *)(p + 32), c);
            _mm_stream_si128((__m128i *)(p + 48), e);
        }
    }
}

static void copy_each(char *const *d, uint32_t k, size_t at, const char *s, size_t n)
{
    for (uint32_t j = 0; j < k; j++)
        memcpy(d[j] + at, s, n);
}

/* The copy to the k destinations (sharing d[0]'s 16-byte phase): plain head and tail around
 * whole streamed lines. */
static void copy_nt(char *const *d, uint32_t k, const char *s, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)d[0] & 63u); /* to a cache line: whole-line streaming stores */
    if (n < head + 64) {
        copy_each(d, k, 0, s, n);
        return;
    }
    copy_each(d, k, 0, s, head);
    size_t lines = (n - head) / 64, done = head + lines * 64;
    stream_lines(d, k, head, s + head, lines);
    copy_each(d, k, done, s + done, n - done);
    _mm_sfence(); /* streaming stores are weakly ordered: fence before whatever signals them */
}

static bool same_phase(char *const *d, uint32_t k)
{
    for (uint32_t j = 1; j < k; j++)
        if ((((uintptr_t)d[j] ^ (uintptr_t)d[0]) & 15u) != 0)
            return false;
    return true;
}

#else

static void copy_nt(char *const *d, uint32_t k, const char *s, size_t n)
{
    for (uint32_t j = 0; j < k; j++)
        memcpy(d[j], s, n);
}

static bool same_phase(char *const *d, uint32_t k)
{
    (void)d, (void)k;
    return true;
}

#endif

void emu_copy_nt(void *dst, const void *src, size_t n)
{
    char *d[1] = {dst};
    copy_nt(d, 1, src, n);
}

void emu_copy_fanout(char *const *dst, uint32_t k, const void *src, size_t n, bool nt)
{
    if (nt && same_phase(dst, k)) {
        copy_nt(dst, k, src, n);
        return;
    }
    /* Block by block: the later copies read the block from the cache the first brought it into. */
    for (size_t at = 0; at < n; at += EMU_COPY_FANOUT_BLOCK) {
        size_t b = n - at < EMU_COPY_FANOUT_BLOCK ? n - at : EMU_COPY_FANOUT_BLOCK;
        for (uint32_t j = 0; j < k; j++) {
            if (nt)
                emu_copy_nt(dst[j] + at, (const char *)src + at, b);
            else
                memcpy(dst[j] + at, (const char *)src + at, b);
        }
    }
}
