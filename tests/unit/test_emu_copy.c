/* The emulated DMA's copy kernels (hal/emu/emu_copy.c): every byte copied, nothing written outside
 * [dst, dst + n), for every alignment of source and destination, sizes around the 64-byte streaming
 * loop's edges, and a copy larger than the caches; the two-destination copy (emu_copy2) the same
 * way, with destinations aligned alike (streamed together) and not (block by block). */
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

/* emu_copy2 of n bytes from src + so to dst + d1 and dst + d2 (d2 past d1's copy and guards). */
static void check_two(unsigned char *src, unsigned char *dst, size_t so, size_t d1, size_t d2, size_t n, bool nt)
{
    size_t second = d1 + n + 2 * GUARD + d2; /* where the second destination starts */
    memset(dst, 0xa5, second + n + 2 * GUARD);
    emu_copy2(dst + GUARD + d1, dst + GUARD + second, src + so, n, nt);
    for (size_t i = 0; i < second + n + 2 * GUARD; i++) {
        bool in1 = i >= GUARD + d1 && i < GUARD + d1 + n, in2 = i >= GUARD + second && i < GUARD + second + n;
        unsigned char want = in1 ? src[so + i - GUARD - d1] : in2 ? src[so + i - GUARD - second] : 0xa5;
        cr_assert_eq(dst[i], want, "byte %zu (src off %zu, dst offs %zu and %zu, n %zu, nt %d)", i, so, d1, d2, n, nt);
    }
}

Test(emu_copy, two_destinations_every_alignment)
{
    static const size_t sizes[] = {0, 1, 63, 64, 65, 129, 1000, 4096 + 17};
    unsigned char *src = malloc(8192), *dst = malloc(3 * 8192);
    cr_assert(src && dst);
    fill(src, 8192, 23);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t so = 0; so < 64; so += 13)
            for (size_t d1 = 0; d1 < 64; d1 += 5)
                for (size_t d2 = 0; d2 < 64; d2 += 8) /* 0 / 16 / 32 / 48: the same 16-byte phase if d1 is */
                    for (int nt = 0; nt < 2; nt++)
                        check_two(src, dst, so, d1, d2 + d1 % 16, sizes[si], nt);
    for (size_t d2 = 1; d2 < 16; d2++) /* a different phase */
        check_two(src, dst, 3, 0, d2, 4096 + 17, true);
    free(src);
    free(dst);
}

Test(emu_copy, two_destinations_over_several_blocks)
{
    size_t n = 3 * EMU_COPY2_BLOCK + 77, span = 2 * n + 8 * GUARD;
    unsigned char *src = malloc(n + 64), *dst = malloc(span);
    cr_assert(src && dst);
    fill(src, n + 64, 5);
    for (int nt = 0; nt < 2; nt++) {
        check_two(src, dst, 1, 0, 0, n, nt); /* alike: streamed together */
        check_two(src, dst, 1, 0, 8, n, nt); /* not alike: block by block */
    }
    free(src);
    free(dst);
}
