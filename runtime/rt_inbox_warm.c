/* Init, peers connected: this process's first touch of the parts of its own and its peers' eager
 * inboxes it will use, so that a loop's first calls take no page faults (docs/runtime.md, "Eager header
 * mode"). A page fault costs ~10 us on a VM (docs/perf-history.md). On the 2-CPU VM (a PVM guest) a
 * mapped page still costs about 7 us at its first use in a process, which the guest does not count
 * as a fault (likely the hypervisor filling its shadow page table): with the prefault alone the
 * first 1000 8 B Broadcasts at 4 ranks took 11-15 us a call, with half the one-way slots' pages
 * read 6.5, with all 0.6-1.0 (measured when Broadcast roots wrote their receivers' slots too).
 * Reads, because the boxes' headers are the inbox owner's to clear (rt_inbox_acquire) and a peer
 * may write them once this rank's peers are past init. */
#include <unistd.h>

#include "runtime/rt_internal.h"

/* The slots of one kind of a peer's inbox, up to 528 pages: a Scatter root writes its receivers'
 * one-way slots, a Broadcast's receivers (and a small Scatter's) read their root's. They are side
 * by side (rt_inbox_slot): mapped in one call per peer (hal_ops.mem_prefault), then read once a
 * page. */
static void warm_slots(rt_comm *c, uint32_t q, rt_slot_kind kind, size_t page)
{
    const char *slots = rt_inbox_slot(c, c->peers[q].inbox, rt_slot_first(c, kind));
    rt_warm_range(c, slots, slots + (size_t)c->ow_slots * rt_kind_slot_bytes(c, kind), page);
}

/* The gather slots are as many: only where a Reduce's writer is about to write them. */
void rt_gather_warm(rt_comm *c, uint32_t root)
{
    if (root == c->rank || root >= 32 || (c->gather_warm & (1u << root)) || c->peers[root].remote)
        return;
    c->gather_warm |= 1u << root;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    warm_slots(c, root, RT_SLOT_GATHER, page);
    warm_slots(c, root, RT_SLOT_GATHER_SMALL, page);
}

/* One eager box as far as a call of the default crossover where ranks share CPUs fills it: its
 * header and 8 KiB, 3 pages. */
static void warm_box(const void *at, size_t page)
{
    volatile const char *box = at;
    size_t end = RT_BOX_HDR + ALGO_EAGER_SHARED_BYTES;
    for (size_t off = 0; off < end; off += page)
        (void)box[off];
    (void)box[end - 1];
}

/* The calls that end full take the ALGO_EAGER_SLOTS slots in turn, and run ahead, so without this
 * a loop's first 16 calls at 8 ranks would each start up to 7 pages of peers' inboxes and 24 of
 * this rank's (100-call loops of 8 B AllReduce at 8 ranks: 40.9 -> 59.9 us a call with 16 slots
 * and no warm-up; of 64 KiB AllGather, 8 KiB blocks, 106-115 us with mesh and 125-147 eager with
 * only the peers' boxes warmed: docs/perf-history.md). Every box of this rank's inbox, which it reads, and
 * its own box in every local peer's. */
static void warm_eager(rt_comm *c, size_t page)
{
    for (uint32_t s = 0; s < ALGO_EAGER_SLOTS; s++)
        for (uint32_t q = 0; q < c->nranks; q++) {
            warm_box(rt_inbox_box(c, c->inbox, s, q), page);
            if (q != c->rank && !c->peers[q].remote)
                warm_box(rt_inbox_box(c, c->peers[q].inbox, s, c->rank), page);
        }
}

void rt_inbox_warm(rt_comm *c)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!c->eager_hdr)
        return;
    if (c->nranks <= ALGO_MESH_MAX_RANKS) /* where eager plans may run (algo_select) */
        warm_eager(c, page);
    for (uint32_t q = 0; c->oneway && q < c->nranks; q++)
        if (q != c->rank && !c->peers[q].remote) {
            warm_slots(c, q, RT_SLOT_OW, page);
            warm_slots(c, q, RT_SLOT_OW_SMALL, page);
        }
}
