/* The inbox's layout (runtime/rt_internal.h, rt_inbox_slot; docs/runtime.md, "Eager plans"): every
 * slot's boxes lie inside the inbox, before the p2p part, and no two slots' boxes share a byte;
 * a one-way call takes a small slot where its box holds at most RT_OW_SMALL_BYTES, a large one
 * above, a gather a small gather slot where a writer's bytes fit the line of its header, else a
 * large one, each at the run position of the call (rt_oneway_slot_offset). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runtime/stream/rt_launch.h"

/* A communicator with only what the layout reads. */
static rt_comm layout_comm(uint32_t nranks, uint32_t ow_slots)
{
    rt_comm c;
    memset(&c, 0, sizeof c);
    c.nranks = nranks;
    c.ow_slots = ow_slots;
    c.flag_waits = true;
    c.p2p_box_bytes = 4096;
    rt_inbox_layout_set(&c);
    return c;
}

/* Bytes from a slot's start its boxes take: every writer's box of an eager slot, a writer's part
 * of a gather slot per writer, one box of a one-way slot. */
static uint64_t slot_extent(const rt_comm *c, uint32_t s)
{
    switch (rt_slot_kind_of(c, s)) {
    case RT_SLOT_EAGER: return (uint64_t)c->nranks * RT_BOX_STRIDE;
    case RT_SLOT_GATHER: return (uint64_t)c->nranks * rt_gather_stride(c->nranks);
    case RT_SLOT_GATHER_SMALL: return (uint64_t)c->nranks * 64;
    case RT_SLOT_OW_SMALL: return RT_OW_SMALL_STRIDE;
    default: return RT_OW_BOX_STRIDE;
    }
}

Test(inbox_layout, slots_are_disjoint_and_inside)
{
    const uint32_t ranks[] = {2, 4, 8, 16}, slots[] = {ALGO_ONEWAY_SLOTS_FIT, ALGO_ONEWAY_SLOTS_MAX};
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++)
        for (size_t j = 0; j < sizeof slots / sizeof slots[0]; j++) {
            rt_comm c = layout_comm(ranks[i], slots[j]);
            char *inbox = malloc(rt_inbox_bytes(&c)); /* addresses only: nothing is read or written */
            cr_assert_not_null(inbox);
            uintptr_t base = (uintptr_t)inbox, end = base + rt_inbox_bytes(&c) - rt_inbox_p2p_bytes(&c);
            uintptr_t prev_end = base;
            for (uint32_t s = 0; s < rt_inbox_slots(&c); s++) {
                uintptr_t at = (uintptr_t)rt_inbox_slot(&c, inbox, s);
                cr_assert_geq(at, prev_end, "n=%u S=%u: slot %u starts inside the slot before", ranks[i], slots[j],
                              s);
                prev_end = at + slot_extent(&c, s);
                cr_assert_leq(prev_end, end, "n=%u S=%u: slot %u runs past the slots' part of the inbox", ranks[i],
                              slots[j], s);
                cr_assert_eq((at - base) % 64, 0, "n=%u S=%u: slot %u does not start on a line", ranks[i], slots[j],
                             s);
            }
            cr_expect_eq(prev_end, end, "n=%u S=%u: the last slot should end the slots' part", ranks[i], slots[j]);
            free(inbox);
        }
}

static uint64_t offset_of(rt_comm *c, bool gather, uint64_t box_bytes, uint64_t calls)
{
    algo_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.oneway = true;
    plan.oneway_gather = gather;
    plan.inbox_bytes = box_bytes;
    c->oneway_calls = calls;
    return rt_oneway_slot_offset(c, &plan);
}

Test(inbox_layout, oneway_calls_take_their_kind_of_slot)
{
    rt_comm c = layout_comm(8, ALGO_ONEWAY_SLOTS_MAX);
    uint32_t large = ALGO_EAGER_SLOTS, gather = ALGO_EAGER_SLOTS + c.ow_slots;
    uint32_t small = ALGO_EAGER_SLOTS + 2 * c.ow_slots, gather_small = ALGO_EAGER_SLOTS + 3 * c.ow_slots;
    /* each at the offset of the slot it should take */
    cr_expect_eq(offset_of(&c, false, 8, 5), rt_inbox_slot_offset(&c, small + 5), "an 8 B Broadcast");
    cr_expect_eq(offset_of(&c, false, RT_OW_SMALL_BYTES, 7), rt_inbox_slot_offset(&c, small + 7),
                 "a box the small slot holds exactly");
    cr_expect_eq(offset_of(&c, false, RT_OW_SMALL_BYTES + 1, 7), rt_inbox_slot_offset(&c, large + 7), "a byte more");
    cr_expect_eq(offset_of(&c, false, ALGO_ONEWAY_MAX_BYTES, c.ow_slots + 3), rt_inbox_slot_offset(&c, large + 3),
                 "the run position wraps");
    cr_expect_eq(offset_of(&c, false, 8, c.ow_slots + 3), rt_inbox_slot_offset(&c, small + 3),
                 "the same position in the small slots");
    cr_expect_eq(offset_of(&c, true, 8, 9), rt_inbox_slot_offset(&c, gather_small + 9),
                 "an 8 B Reduce's writers: a line each");
    cr_expect_eq(offset_of(&c, true, RT_GATHER_SMALL_BYTES + 1, 9), rt_inbox_slot_offset(&c, gather + 9),
                 "a writer's part past its line");
    cr_expect_eq(rt_slot_kind_of(&c, gather_small + c.ow_slots - 1), RT_SLOT_GATHER_SMALL, "the last slot");
    algo_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.oneway = plan.oneway_gather = true;
    plan.inbox_bytes = 8;
    cr_expect_eq(rt_plan_stride(&c, &plan), 64, "a small gather's writers a line apart");
    cr_expect_eq(rt_slot_stride(&c, gather_small), 64, "... as its slots say");
    plan.inbox_bytes = 100;
    cr_expect_eq(rt_plan_stride(&c, &plan), rt_gather_stride(c.nranks), "a larger gather's a part apart");
    char *inbox = malloc(rt_inbox_bytes(&c));
    cr_assert_not_null(inbox);
    cr_expect_eq((char *)rt_inbox_slot(&c, inbox, small + 1) - (char *)rt_inbox_slot(&c, inbox, small),
                 RT_OW_SMALL_STRIDE, "small boxes lie side by side");
    cr_expect_eq((char *)rt_inbox_slot(&c, inbox, gather_small + 1) - (char *)rt_inbox_slot(&c, inbox, gather_small),
                 64 * c.nranks, "small gather slots lie side by side");
    free(inbox);
    cr_expect_geq(RT_OW_SMALL_STRIDE, RT_BOX_HDR + RT_OW_SMALL_BYTES, "a small box holds its header and bytes");
}
