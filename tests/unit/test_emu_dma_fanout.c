/* DMA instructions in a row that copy one set of sources run as one batch reading each source
 * once for all their destinations (hal/emu/emu_dma.c, emu_dma_run_fanout: a mesh AllGather's own
 * block into its output and then into every peer's). The result must be the copies run in
 * order: a run stops before a copy whose order matters (its destination overlaps a source or an
 * earlier destination) or that copies another source, and small copies never fuse. From 4
 * copies on a fan-out's pieces count as large (a kernel that streams past the caches may copy
 * them) by all they write, unless a copy is marked reread. emu_dma_test_fanouts and
 * emu_dma_test_fanouts_streamed tell how a program ran. */
#include "common/hal_testutil.h"
#include "hal/emu/emu_copy.h"
#include "hal/emu/emu_internal.h"

#define BIG (4u << 20) /* above the emulator's default split size (2 MiB): copies may fuse */
#define SHIFT 4096u
#define MAXK 10u /* more instructions than one fan-out takes (EMU_COPY_FANOUT_MAX) */

typedef struct fan_case {
    uint32_t k;            /* instructions */
    size_t src[MAXK];      /* instruction j copies src[j] -> dst[j] (offsets into one buffer) */
    size_t dst[MAXK];
    size_t bytes;
    uint32_t pieces;       /* descriptors per instruction (the runtime splits across engines) */
    uint32_t fanouts;      /* fan-outs expected */
    uint32_t reread;       /* instructions from this one on are marked reread (0: none) */
} fan_case;

/* One instruction copying bytes from src to dst as `pieces` descriptors. */
static void fill_copy(hal_dma_desc *d, uint32_t pieces, char *dst, const char *src, size_t bytes, bool reread)
{
    size_t per = bytes / pieces;
    for (uint32_t i = 0; i < pieces; i++) {
        size_t at = per * i, n = i + 1 == pieces ? bytes - at : per;
        d[i] = (hal_dma_desc){.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(dst + at),
                              .src = hal_ref_ptr((void *)(src + at)), .bytes = n, .reread = reread};
    }
}

/* Runs the k copies as one program and compares with the same copies done in order on the host
 * (memmove: what a DMA of overlapping ranges does). */
static void run_case(fan_case c)
{
    const hal_ops *h = ht_hal();
    cr_assert_not_null(h->prog_launch, "the emulator offers prog_launch (is HCCL_EMU_NO_PROG set?)");
    hal_device *dev = ht_open(h, 0);
    hal_stream *s;
    HT_OK(h->stream_create(dev, &s));
    size_t span = (MAXK + 2) * BIG;
    char *buf, *want = malloc(span);
    cr_assert_not_null(want);
    HT_OK(h->mem_alloc(dev, span, (void **)&buf));
    ht_fill(buf, span, 41);
    memcpy(want, buf, span);
    static hal_dma_desc descs[MAXK][8];
    hal_insn prog[MAXK];
    for (uint32_t j = 0; j < c.k; j++) {
        memmove(want + c.dst[j], want + c.src[j], c.bytes);
        fill_copy(descs[j], c.pieces, buf + c.dst[j], buf + c.src[j], c.bytes, c.reread && j + 1 >= c.reread);
        prog[j] = (hal_insn){.kind = HAL_INSN_DMA};
        prog[j].u.dma.descs = descs[j];
        prog[j].u.dma.n = c.pieces;
    }
    uint64_t fanouts = emu_dma_test_fanouts();
    HT_OK(h->prog_launch(s, prog, c.k));
    HT_OK(h->stream_sync(s, 30000));
    cr_expect_eq(emu_dma_test_fanouts() - fanouts, c.fanouts, "fan-outs run");
    size_t i = 0;
    while (i < span && buf[i] == want[i])
        i++;
    cr_expect_eq(i, span, "byte %zu differs from the %u copies in order (%zu B, %u pieces each)", i, c.k, c.bytes,
                 c.pieces);
    HT_OK(h->mem_free(dev, buf));
    free(want);
    HT_OK(h->stream_destroy(s));
    HT_OK(h->device_close(dev));
}

Test(emu_dma_fanout, one_source_to_several_destinations)
{
    run_case((fan_case){2, {0, 0}, {BIG, 2 * BIG}, BIG, 1, 1, 0});
    run_case((fan_case){2, {0, 0}, {BIG, 2 * BIG}, BIG, 2, 1, 0});
    run_case((fan_case){4, {0, 0, 0, 0}, {BIG, 2 * BIG, 3 * BIG, 4 * BIG}, BIG, 2, 1, 0});
    /* Destinations at different 16-byte phases: block by block. */
    run_case((fan_case){3, {8, 8, 8}, {BIG + 16, 3 * BIG - 40, 4 * BIG + 3}, BIG - 1000, 4, 1, 0});
    /* Ten copies of one source: the first eight fuse, then the last two. */
    fan_case ten = {MAXK, {0}, {0}, BIG - 4096, 2, 2, 0};
    for (uint32_t j = 0; j < MAXK; j++)
        ten.dst[j] = (j + 1) * BIG;
    run_case(ten);
}

Test(emu_dma_fanout, order_that_matters_runs_in_order)
{
    /* The second destination overlaps the first: the second copy's bytes must win. */
    run_case((fan_case){2, {0, 0}, {BIG, BIG + SHIFT}, BIG, 2, 0, 0});
    /* The third overlaps the first: the first two fuse, the third runs after them. */
    run_case((fan_case){3, {0, 0, 0}, {BIG, 3 * BIG, BIG + SHIFT}, BIG, 2, 1, 0});
    /* The second destination overlaps the source the first copy read (one descriptor: a batch's
     * descriptors run in parallel, so pieces of one overlapping move would race each other). */
    run_case((fan_case){2, {0, 0}, {2 * BIG, SHIFT}, BIG, 1, 0, 0});
    /* The first destination overlaps the source the second copy reads. */
    run_case((fan_case){2, {SHIFT, SHIFT}, {0, 2 * BIG}, BIG, 1, 0, 0});
}

Test(emu_dma_fanout, other_sources_and_small_copies_do_not_fuse)
{
    run_case((fan_case){2, {0, 3 * BIG}, {BIG, 2 * BIG}, BIG, 2, 0, 0});      /* another source */
    run_case((fan_case){3, {0, 0, 5 * BIG}, {BIG, 2 * BIG, 3 * BIG}, BIG, 2, 1, 0}); /* the third's is another */
    run_case((fan_case){2, {0, 0}, {BIG, 2 * BIG}, 64u << 10, 1, 0, 0});      /* below the split size */
}

/* With streaming stores forced from 4 MiB (HCCL_EMU_COPY_NT_BYTES, so no timing decides), a
 * fan-out's 1 MiB pieces stream by all they write from 4 copies on (4 MiB), not with 3, and not
 * where a copy writes what its writer reads again (hal_dma_desc.reread: a mesh AllReduce's slices). */
Test(emu_dma_fanout, many_copies_stream_by_what_they_write)
{
    cr_assert_eq(setenv("HCCL_EMU_COPY_NT_BYTES", "4194304", 1), 0);
    const size_t two = 2u << 20; /* two pieces of 1 MiB */
    uint64_t streamed = emu_dma_test_fanouts_streamed();
    run_case((fan_case){4, {0, 0, 0, 0}, {BIG, 2 * BIG, 3 * BIG, 4 * BIG}, two, 2, 1, 0});
    cr_expect_eq(emu_dma_test_fanouts_streamed() - streamed, 1, "4 copies of 1 MiB pieces write 4 MiB each: stream");
    streamed = emu_dma_test_fanouts_streamed();
    run_case((fan_case){3, {0, 0, 0}, {BIG, 2 * BIG, 3 * BIG}, two, 2, 1, 0});
    cr_expect_eq(emu_dma_test_fanouts_streamed() - streamed, 0, "3 copies: by the piece's own 1 MiB, cached");
    streamed = emu_dma_test_fanouts_streamed();
    run_case((fan_case){4, {0, 0, 0, 0}, {BIG, 2 * BIG, 3 * BIG, 4 * BIG}, two, 2, 1, 4});
    cr_expect_eq(emu_dma_test_fanouts_streamed() - streamed, 0, "a copy read again by its writer: cached");
    streamed = emu_dma_test_fanouts_streamed();
    run_case((fan_case){2, {0, 0}, {BIG, 2 * BIG}, BIG, 1, 1, 0});
    cr_expect_eq(emu_dma_test_fanouts_streamed() - streamed, 1, "a 4 MiB piece streams on its own");
}
