/* The emulated DMA's copy kernels (hal/emu/emu_copy.c): every byte copied, nothing written outside
 * [dst, dst + n), for every alignment of source and destination, sizes around the 64-byte streaming
 * loop's edges, and a copy larger than the caches; the copy to several destinations (emu_copy_fanout)
 * the same way, with destinations aligned alike (streamed together) and not (block by block). */
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

/* emu_copy_fanout of n bytes from src + so to k destinations in dst: destination j at phase
 * off[j] past the end of destination j - 1's copy and guards. */
static void check_fanout(unsigned char *src, unsigned char *dst, size_t so, const size_t *off, uint32_t k, size_t n,
                         bool nt)
{
    char *d[EMU_COPY_FANOUT_MAX] = {0};
    size_t at[EMU_COPY_FANOUT_MAX] = {0}, end = 0;
    for (uint32_t j = 0; j < k; j++) {
        at[j] = end + GUARD + off[j];
        d[j] = (char *)dst + at[j];
        end = at[j] + n + GUARD;
    }
    memset(dst, 0xa5, end);
    emu_copy_fanout(d, k, src + so, n, nt);
    for (size_t i = 0, j = 0; i < end; i++) {
        while (j + 1 < k && i >= at[j + 1])
            j++;
        bool in = i >= at[j] && i < at[j] + n;
        unsigned char want = in ? src[so + i - at[j]] : 0xa5;
        cr_assert_eq(dst[i], want, "byte %zu (destination %zu of %u, src off %zu, n %zu, nt %d)", i, j, k, so, n, nt);
    }
}

Test(emu_copy, fanout_every_alignment)
{
    static const size_t sizes[] = {0, 1, 63, 64, 65, 129, 1000, 4096 + 17};
    unsigned char *src = malloc(8192), *dst = malloc(EMU_COPY_FANOUT_MAX * (8192 + 256));
    cr_assert(src && dst);
    fill(src, 8192, 23);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t so = 0; so < 64; so += 13)
            for (size_t d1 = 0; d1 < 64; d1 += 5)
                for (uint32_t k = 2; k <= EMU_COPY_FANOUT_MAX; k += 3)
                    for (int nt = 0; nt < 2; nt++) {
                        size_t off[EMU_COPY_FANOUT_MAX];
                        for (uint32_t j = 0; j < k; j++) /* the same 16-byte phase as the first */
                            off[j] = (d1 + 16 * j) % 64;
                        check_fanout(src, dst, so, off, k, sizes[si], nt);
                    }
    for (size_t ph = 1; ph < 16; ph++) { /* one destination at another phase: block by block */
        size_t off[3] = {0, ph, 0};
        check_fanout(src, dst, 3, off, 3, 4096 + 17, true);
    }
    free(src);
    free(dst);
}

Test(emu_copy, fanout_over_several_blocks)
{
    size_t n = 3 * EMU_COPY_FANOUT_BLOCK + 77;
    unsigned char *src = malloc(n + 64), *dst = malloc(EMU_COPY_FANOUT_MAX * (n + 256));
    cr_assert(src && dst);
    fill(src, n + 64, 5);
    size_t alike[EMU_COPY_FANOUT_MAX] = {0}, unlike[4] = {0, 8, 0, 4};
    for (int nt = 0; nt < 2; nt++) {
        check_fanout(src, dst, 1, alike, 2, n, nt);
        check_fanout(src, dst, 1, alike, EMU_COPY_FANOUT_MAX, n, nt);
        check_fanout(src, dst, 1, unlike, 4, n, nt);
    }
    free(src);
    free(dst);
}
