/* The emulated DMA's copy kernel choice (hal/emu/emu_copy_pick.c): the first batch untimed, each
 * kernel timed twice in turn with its best sample counting (a first sample slowed by first-touch
 * faults does not decide), then the faster one (streaming stores only when more than 10% faster),
 * the other re-timed every EMU_COPY_PICK_REPROBE batches, and a choice that follows the rates
 * when the machine changes. */
#include <criterion/criterion.h>

#include "hal/emu/emu_copy_pick.h"

#define MIB (1ull << 20)

/* Picks the next kernel, checks it and whether it is timed. */
static bool expect_next(emu_copy_pick *p, bool nt, bool timed, const char *what)
{
    bool t = !timed;
    bool got = emu_copy_pick_next(p, &t);
    cr_assert_eq(got, nt, "%s: picked %s", what, got ? "non-temporal" : "memcpy");
    cr_assert_eq(t, timed, "%s: timed %d", what, t);
    return got;
}

#define PROBED (1 + 2 * EMU_COPY_PICK_SAMPLES) /* batches before the first choice */

/* The untimed first batch, then the samples in turn: 64 MiB in nt_ns[k] and in mem_ns[k]. */
static void probe_each(emu_copy_pick *p, const uint64_t *nt_ns, const uint64_t *mem_ns)
{
    bool t;
    emu_copy_pick_next(p, &t);
    for (uint32_t k = 0; k < EMU_COPY_PICK_SAMPLES; k++) {
        cr_assert(emu_copy_pick_next(p, &t) && t, "sample %u times streaming stores", 2 * k + 1);
        emu_copy_pick_record(p, true, 64 * MIB, nt_ns[k]);
        cr_assert(!emu_copy_pick_next(p, &t) && t, "sample %u times memcpy", 2 * k + 2);
        emu_copy_pick_record(p, false, 64 * MIB, mem_ns[k]);
    }
}

/* Every sample of a kernel the same. */
static void probe_both(emu_copy_pick *p, uint64_t nt_ns, uint64_t mem_ns)
{
    uint64_t nt[EMU_COPY_PICK_SAMPLES], mem[EMU_COPY_PICK_SAMPLES];
    for (uint32_t k = 0; k < EMU_COPY_PICK_SAMPLES; k++) {
        nt[k] = nt_ns;
        mem[k] = mem_ns;
    }
    probe_each(p, nt, mem);
}

Test(emu_copy_pick, measures_each_then_keeps_the_faster)
{
    emu_copy_pick p = {0};
    expect_next(&p, false, false, "first batch (first-touch faults)");
    for (uint32_t k = 0; k < EMU_COPY_PICK_SAMPLES; k++) {
        expect_next(&p, true, true, "a sample of non-temporal");
        emu_copy_pick_record(&p, true, 64 * MIB, 6000000); /* ~11 GB/s */
        expect_next(&p, false, true, "a sample of memcpy");
        emu_copy_pick_record(&p, false, 64 * MIB, 4000000); /* ~17 GB/s */
    }
    for (uint32_t i = PROBED; i < 3 * EMU_COPY_PICK_REPROBE; i++)
        expect_next(&p, i % EMU_COPY_PICK_REPROBE == 0, true, "memcpy is faster; the other re-timed at each re-probe");
}

/* The first sample of streaming stores wrote pages never touched (50 ms); its second is the faster. */
_Static_assert(EMU_COPY_PICK_SAMPLES == 2, "the case below gives two samples of each kernel");
Test(emu_copy_pick, a_sample_slowed_by_first_touch_does_not_decide)
{
    emu_copy_pick p = {0};
    const uint64_t nt[EMU_COPY_PICK_SAMPLES] = {50000000, 3000000}, mem[EMU_COPY_PICK_SAMPLES] = {4000000, 4000000};
    probe_each(&p, nt, mem);
    expect_next(&p, true, true, "non-temporal's best sample is the faster");
}

Test(emu_copy_pick, prefers_streaming_stores_where_they_win)
{
    emu_copy_pick p = {0};
    probe_both(&p, 3000000, 5000000);
    expect_next(&p, true, true, "non-temporal is faster");
}

/* After the probes: records 64 MiB in slow_ns for the kernel in use until the choice turns to the
 * other one; returns how many slow samples that took (0: it never turned within 64 batches).
 * Re-probes of the other kernel get fast_ns. */
static uint32_t samples_until_switch(emu_copy_pick *p, bool from_nt, uint64_t slow_ns, uint64_t fast_ns)
{
    bool t;
    uint32_t slow = 0;
    for (uint32_t k = 0; k < 64; k++) {
        uint64_t i = atomic_load(&p->batches); /* this batch's index */
        bool nt = emu_copy_pick_next(p, &t);
        if (i % EMU_COPY_PICK_REPROBE == 0) {
            cr_assert_eq(nt, !from_nt, "batch %lu re-probes the other kernel", (unsigned long)i);
            emu_copy_pick_record(p, nt, 64 * MIB, fast_ns);
            continue;
        }
        if (nt != from_nt)
            return slow;
        emu_copy_pick_record(p, nt, 64 * MIB, slow_ns);
        slow++;
    }
    return 0;
}

/* The kernel in use slows down: the choice follows within some samples, not at the first slow one
 * (a sample beside other ranks' copies is slow too). */
Test(emu_copy_pick, follows_the_machine)
{
    emu_copy_pick p = {0};
    probe_both(&p, 3000000, 5000000); /* non-temporal first faster */
    uint32_t slow = samples_until_switch(&p, true, 10000000, 5000000); /* then ~7 GB/s */
    cr_assert(slow >= 2 && slow <= 20, "switched to memcpy after %u slower batches (0: never)", slow);
}

Test(emu_copy_pick, empty_samples_count_for_nothing)
{
    emu_copy_pick p = {0};
    bool t;
    emu_copy_pick_next(&p, &t);
    for (uint32_t k = 0; k < EMU_COPY_PICK_SAMPLES; k++) {
        emu_copy_pick_next(&p, &t);
        emu_copy_pick_record(&p, true, 0, 1000); /* nothing copied: no rate */
        emu_copy_pick_next(&p, &t);
        emu_copy_pick_record(&p, false, 64 * MIB, 4000000);
    }
    expect_next(&p, true, true, "non-temporal still unmeasured");
    emu_copy_pick_record(&p, true, 1, 1000000000); /* a rate rounding to 0 still counts as measured */
    expect_next(&p, false, true, "memcpy next");
}

Test(emu_copy_pick, memcpy_unless_streaming_is_clearly_faster)
{
    emu_copy_pick p = {0};
    probe_both(&p, 4000000, 4200000); /* streaming 5% faster: within the noise */
    expect_next(&p, false, true, "streaming stores 5% faster");
    /* memcpy's rate falls to 4.8 ms (streaming 20% faster): streaming stores once it is more than 10% */
    uint32_t slow = samples_until_switch(&p, false, 4800000, 4000000);
    cr_assert(slow >= 1 && slow <= 20, "switched to streaming stores after %u slower batches (0: never)", slow);
}
