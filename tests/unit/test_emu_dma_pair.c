/* Two DMA instructions in a row that copy one source twice run as one batch reading the source
 * once (hal/emu/emu_dma.c, emu_dma_run_pair; a mesh AllGather's own block into its output and the
 * peer's). The result must be the two copies run in order: pairs whose order matters (a
 * destination overlapping the source or the other destination) run one after the other, as do
 * copies of different sources and small ones. emu_dma_test_pairs tells which way a program ran. */
#include "common/hal_testutil.h"
#include "hal/emu/emu_internal.h"

#define BIG (8u << 20) /* above the emulator's default split size (2 MiB): a pair may fuse */
#define SHIFT 4096u

typedef struct pair_case {
    size_t src, dst1, dst2; /* offsets into one device buffer */
    size_t src2;            /* the second copy's source */
    size_t bytes;
    uint32_t pieces;        /* descriptors per instruction (the runtime splits across engines) */
    bool fuses;
} pair_case;

/* One instruction copying bytes from src to dst as `pieces` descriptors. */
static void fill_copy(hal_dma_desc *d, uint32_t pieces, char *dst, const char *src, size_t bytes)
{
    size_t per = bytes / pieces;
    for (uint32_t i = 0; i < pieces; i++) {
        size_t at = per * i, n = i + 1 == pieces ? bytes - at : per;
        d[i] = (hal_dma_desc){.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(dst + at), .src = hal_ref_ptr((void *)(src + at)),
                              .bytes = n};
    }
}

/* Runs [copy src -> dst1, copy src2 -> dst2] as a program and compares with the same two copies
 * done in order on the host (memmove: what a DMA of overlapping ranges does). */
static void run_case(pair_case k)
{
    const hal_ops *h = ht_hal();
    cr_assert_not_null(h->prog_launch, "the emulator offers prog_launch (is HCCL_EMU_NO_PROG set?)");
    hal_device *dev = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(dev, &s));
    size_t span = 4 * BIG;
    char *buf, *want = malloc(span);
    cr_assert_not_null(want);
    HT_OK(h->mem_alloc(dev, span, (void **)&buf));
    ht_fill(buf, span, 41);
    memcpy(want, buf, span);
    memmove(want + k.dst1, want + k.src, k.bytes);
    memmove(want + k.dst2, want + k.src2, k.bytes);
    hal_dma_desc a[8], b[8];
    fill_copy(a, k.pieces, buf + k.dst1, buf + k.src, k.bytes);
    fill_copy(b, k.pieces, buf + k.dst2, buf + k.src2, k.bytes);
    hal_insn prog[2] = {{.kind = HAL_INSN_DMA}, {.kind = HAL_INSN_DMA}};
    prog[0].u.dma.descs = a, prog[0].u.dma.n = k.pieces;
    prog[1].u.dma.descs = b, prog[1].u.dma.n = k.pieces;
    uint64_t pairs = emu_dma_test_pairs();
    HT_OK(h->prog_launch(s, prog, 2));
    HT_OK(h->stream_sync(s, 30000));
    cr_expect_eq(emu_dma_test_pairs() - pairs, k.fuses ? 1u : 0u, "pairs run as one");
    size_t i = 0;
    while (i < span && buf[i] == want[i])
        i++;
    cr_expect_eq(i, span, "byte %zu differs from the two copies in order (src %zu, dst %zu and %zu, src2 %zu, %zu B)",
                 i, k.src, k.dst1, k.dst2, k.src2, k.bytes);
    HT_OK(h->mem_free(dev, buf));
    free(want);
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(dev));
}

Test(emu_dma_pair, one_source_two_destinations_fuse)
{
    run_case((pair_case){0, BIG, 2 * BIG, 0, BIG, 1, true});
    run_case((pair_case){0, BIG, 2 * BIG, 0, BIG, 2, true});
    /* Destinations aligned differently in a 16-byte line: streamed block by block. */
    run_case((pair_case){8, BIG + 16, 3 * BIG - 40, 8, BIG - 1000, 4, true});
}

Test(emu_dma_pair, order_that_matters_runs_in_order)
{
    /* The second destination overlaps the first: the second copy's bytes must win. */
    run_case((pair_case){0, BIG, BIG + SHIFT, 0, BIG, 2, false});
    /* The second destination overlaps the source the first copy read (one descriptor: a batch's
     * descriptors run in parallel, so pieces of one overlapping move would race each other). */
    run_case((pair_case){0, 2 * BIG, SHIFT, 0, BIG, 1, false});
    /* The first destination overlaps the source the second copy reads. */
    run_case((pair_case){SHIFT, 0, 2 * BIG, SHIFT, BIG, 1, false});
}

Test(emu_dma_pair, other_sources_and_small_copies_do_not_fuse)
{
    run_case((pair_case){0, BIG, 2 * BIG, 3 * BIG, BIG, 2, false}); /* another source */
    run_case((pair_case){0, BIG, 2 * BIG, 0, 64u << 10, 1, false});  /* below the split size */
}
