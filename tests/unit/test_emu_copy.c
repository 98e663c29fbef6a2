/* The emulated DMA's non-temporal copy kernel (hal/emu/emu_copy.c): every byte copied, nothing
 * written outside [dst, dst + n), for every alignment of source and destination, sizes around the
 * 64-byte streaming loop's edges, and a copy larger than the caches. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hal/emu/emu_copy.h"

#define GUARD 64

static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
}

/* Copies n bytes from src + so to dst + doff and checks the copy and the guard bytes around it. */
static void check_one(unsigned char *src, unsigned char *dst, size_t so, size_t doff, size_t n)
{
    memset(dst, 0xa5, doff + n + 2 * GUARD);
    emu_copy_nt(dst + GUARD + doff, src + so, n);
    for (size_t i = 0; i < GUARD + doff; i++)
        cr_assert_eq(dst[i], 0xa5, "byte %zu before the copy changed (src off %zu, dst off %zu, n %zu)", i, so, doff, n);
    cr_assert(memcmp(dst + GUARD + doff, src + so, n) == 0, "copy differs (src off %zu, dst off %zu, n %zu)", so, doff,
              n);
    for (size_t i = 0; i < GUARD; i++)
        cr_assert_eq(dst[GUARD + doff + n + i], 0xa5, "byte %zu after the copy changed (src off %zu, dst off %zu, n %zu)",
                     i, so, doff, n);
}

Test(emu_copy, every_alignment_and_edge_size)
{
    static const size_t sizes[] = {0, 1, 15, 63, 64, 65, 127, 128, 129, 191, 255, 256, 1000, 4096 + 17};
    unsigned char *src = malloc(8192), *dst = malloc(8192 + 4 * GUARD);
    cr_assert(src && dst);
    fill(src, 8192, 17);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t so = 0; so < 64; so += 7)
            for (size_t doff = 0; doff < 64; doff++)
                check_one(src, dst, so, doff, sizes[si]);
    free(src);
    free(dst);
}

Test(emu_copy, larger_than_the_caches)
{
    size_t n = (64u << 20) + 33; /* an odd tail after the streaming loop */
    unsigned char *src = malloc(n + 64), *dst = malloc(n + 4 * GUARD);
    cr_assert(src && dst);
    fill(src, n + 64, 99);
    check_one(src, dst, 5, 3, n);
    free(src);
    free(dst);
}
