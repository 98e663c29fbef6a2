/* The eager inbox's layout: boxes and their headers, the kinds of slot, where a slot, a box or a
 * writer's part lies in any rank's inbox (docs/runtime.md, "Publication, zero copy and mismatch
 * detection"). Inline: every launch binds its slot through these. Included by rt_internal.h after the
 * communicator's definition. */
#ifndef RT_INBOX_H
#define RT_INBOX_H

#include "runtime/rt_internal.h"

/* A box as laid out in an inbox slot: RT_BOX_HDR bytes of header (header mode, rt_publish.c: the
 * writer's signature of the call), then the box's bytes, which start in the header's cache line,
 * so a small message and its header travel as one line. The ALGO_EAGER_SLOTS eager slots hold
 * boxes of ALGO_EAGER_BOX bytes, RT_BOX_STRIDE apart, one per writer. The one-way slots after them
 * hold one box of ALGO_ONEWAY_MAX_BYTES each, RT_OW_BOX_STRIDE apart, which a one-way root writes:
 * a Broadcast root its own inbox's, which its receivers read there, a Scatter root its own too
 * where the n blocks fit the box, else every receiver's (algos/plan.h, INBOX). A run of one-way
 * calls has one root, and that root waits for all its credits before any call of another root
 * (rt_oneway.c), so two roots never have a one-way slot of the same inbox in use at once. The
 * gather slots after them (one-way Reduce) are as large, and every writer owns rt_gather_stride
 * bytes of each: its header, then its bytes. They are apart from the one-way slots so that no
 * header a root waits for can be a Broadcast's data. Then as many small one-way slots, boxes of
 * RT_OW_SMALL_STRIDE, and small gather slots, a line per writer, for the one-way calls whose box
 * holds at most RT_OW_SMALL_BYTES (a writer's part RT_GATHER_SMALL_BYTES; rt_plan_slot_kind):
 * a loop of 1024 such calls touches 48 pages of one-way boxes instead of 528, and a root that
 * runs a loop ahead of its receivers (or a gather's root behind its writers) takes a TLB and a
 * cache miss every call or two in the large ones (64 B Scatter at 4 ranks on 2 CPUs, loops of
 * 1000: 0.51 -> 0.38 us a call, docs/perf-history.md, thirty-fifth pass). Call k of a run takes run
 * position k in whichever kind its size picks: the root reuses a position only once its
 * receivers (writers) gave back the credits of that position's last call, which covers the
 * position in every kind. */
#define RT_BOX_HDR 48u
#define RT_BOX_STRIDE ((uint64_t)ALGO_EAGER_BOX + 64u)
#define RT_OW_BOX_STRIDE ((uint64_t)ALGO_ONEWAY_MAX_BYTES + 64u)
#define RT_OW_SMALL_STRIDE 192u /* three lines: a 16 B block for each of 8 ranks and the header */
#define RT_OW_SMALL_BYTES (RT_OW_SMALL_STRIDE - RT_BOX_HDR)
_Static_assert(sizeof(rt_sig) <= RT_BOX_HDR, "an eager box header holds one rt_sig");
_Static_assert(RT_BOX_HDR + ALGO_ONEWAY_MAX_BYTES <= RT_OW_BOX_STRIDE, "a one-way box holds its bytes");
_Static_assert(RT_OW_SMALL_STRIDE % 64 == 0, "small one-way boxes start on a line");
/* The kinds of slot, in the inbox in this order: the eager slots, then ow_slots of each kind
 * after them (algos/plan.h, INBOX; rt_oneway_slot_offset picks a one-way call's kind). */
typedef enum rt_slot_kind {
    RT_SLOT_EAGER,
    RT_SLOT_OW,           /* one box of RT_OW_BOX_STRIDE */
    RT_SLOT_GATHER,       /* a part of rt_gather_stride per writer, RT_OW_BOX_STRIDE in all */
    RT_SLOT_OW_SMALL,     /* one box of RT_OW_SMALL_STRIDE */
    RT_SLOT_GATHER_SMALL, /* a line per writer: its header and at most RT_GATHER_SMALL_BYTES */
    RT_SLOT_KINDS
} rt_slot_kind;
_Static_assert(RT_SLOT_KINDS == RT_INBOX_KINDS, "rt_comm.inbox_kind_at has a start per kind");
#define RT_GATHER_SMALL_PART 64u /* a small gather slot's part per writer: one line */
#define RT_GATHER_SMALL_BYTES (RT_GATHER_SMALL_PART - RT_BOX_HDR)
static inline uint32_t rt_inbox_slots(const rt_comm *c)
{
    return ALGO_EAGER_SLOTS + (RT_SLOT_KINDS - 1) * c->ow_slots;
}
/* Run position x modulo the one-way slots: a mask, as ow_slots is a power of two (a 64-bit
 * division on every one-way call showed in its samples). */
_Static_assert((ALGO_ONEWAY_SLOTS_FIT & (ALGO_ONEWAY_SLOTS_FIT - 1)) == 0 &&
                   (ALGO_ONEWAY_SLOTS_MAX & (ALGO_ONEWAY_SLOTS_MAX - 1)) == 0,
               "one-way slots come in powers of two");
static inline uint32_t rt_ow_pos(const rt_comm *c, uint64_t x)
{
    return (uint32_t)(x & (c->ow_slots - 1));
}
/* The first slot of a kind past the eager ones. */
static inline uint32_t rt_slot_first(const rt_comm *c, rt_slot_kind kind)
{
    return ALGO_EAGER_SLOTS + ((uint32_t)kind - 1) * c->ow_slots;
}
/* Compared, not divided: it runs for every rank's inbox at every one-way call (rt_launch.c). */
static inline rt_slot_kind rt_slot_kind_of(const rt_comm *c, uint32_t slot)
{
    uint32_t k = RT_SLOT_EAGER;
    while (k + 1 < RT_SLOT_KINDS && slot >= rt_slot_first(c, (rt_slot_kind)(k + 1)))
        k++;
    return (rt_slot_kind)k;
}
static inline bool rt_slot_oneway(uint32_t slot)
{
    return slot >= ALGO_EAGER_SLOTS;
}
static inline bool rt_kind_gather(rt_slot_kind kind)
{
    return kind == RT_SLOT_GATHER || kind == RT_SLOT_GATHER_SMALL;
}
static inline bool rt_slot_gather(const rt_comm *c, uint32_t slot)
{
    return rt_kind_gather(rt_slot_kind_of(c, slot));
}
/* A gather writer's part of a slot: whole lines, the first holding its header (algos/plan.h,
 * algo_oneway_gather_bytes: the bytes after that line). */
static inline uint64_t rt_gather_stride(uint32_t nranks)
{
    return algo_oneway_gather_part(nranks);
}
_Static_assert(RT_BOX_HDR <= 64, "a gather writer's header fits the first line of its part");
/* From one writer's box to the next within a slot of its kind: eager slots have a box per writer,
 * one-way slots one box, every writer's, gather slots a part per writer (a line in the small ones). */
static inline uint64_t rt_kind_writer_stride(const rt_comm *c, rt_slot_kind kind)
{
    switch (kind) {
    case RT_SLOT_EAGER: return RT_BOX_STRIDE;
    case RT_SLOT_GATHER: return rt_gather_stride(c->nranks);
    case RT_SLOT_GATHER_SMALL: return RT_GATHER_SMALL_PART;
    default: return 0;
    }
}
/* ... within slot `slot`. */
static inline uint64_t rt_slot_stride(const rt_comm *c, uint32_t slot)
{
    return rt_kind_writer_stride(c, rt_slot_kind_of(c, slot));
}
/* The kind of slot a plan binds: a one-way plan's by what its box holds (rt_oneway_slot_offset). */
static inline rt_slot_kind rt_plan_slot_kind(const algo_plan *plan)
{
    if (!plan->oneway)
        return RT_SLOT_EAGER;
    if (plan->oneway_gather)
        return plan->inbox_bytes <= RT_GATHER_SMALL_BYTES ? RT_SLOT_GATHER_SMALL : RT_SLOT_GATHER;
    return plan->inbox_bytes <= RT_OW_SMALL_BYTES ? RT_SLOT_OW_SMALL : RT_SLOT_OW;
}
/* ... and its writers' stride there. */
static inline uint64_t rt_plan_stride(const rt_comm *c, const algo_plan *plan)
{
    return rt_kind_writer_stride(c, rt_plan_slot_kind(plan));
}
/* Where a plan's INBOX offset (algos/plan.h: box * ALGO_EAGER_BOX + bytes in) lies in a slot whose
 * writers are `stride` apart. */
static inline uint64_t rt_box_offset(uint64_t algo_offset, uint64_t stride)
{
    return algo_offset / ALGO_EAGER_BOX * stride + RT_BOX_HDR + algo_offset % ALGO_EAGER_BOX;
}
/* The header of box `writer` in an inbox slot (rt_inbox_slot) whose writers are `stride` apart. */
static inline rt_sig *rt_box_hdr(void *slot, uint32_t writer, uint64_t stride)
{
    return (rt_sig *)(void *)((char *)slot + writer * stride);
}
static inline uint64_t rt_inbox_eager_bytes(const rt_comm *c)
{
    return ALGO_EAGER_SLOTS * (uint64_t)c->nranks * RT_BOX_STRIDE;
}
/* Point to point with a peer of this server (docs/runtime.md, "Point to point"): each receiver
 * keeps, per sender, a line with the ordinal of its last receive from that sender (`read`), one
 * with that of its last receive record published for that sender (`posted`), and
 * RT_P2P_BOXES boxes, one per ordinal modulo RT_P2P_BOXES. A send ends by writing its box's
 * header line (rt_sig, seq = its ordinal, stored last): with its bytes when they fit the box
 * (eager: it waited only for the box to be free), after its copy into the receive buffer
 * otherwise. The receiver waits for that header in the line it reads. Up to RT_P2P_INLINE_BYTES
 * the bytes ride in the header's line, beyond in the box's data, apart so that the headers of all
 * boxes are one page: a loop of small calls, direct or eager, touches one page of boxes. The eager
 * limit is the data's size
 * (rt_comm.p2p_box_bytes), as eager collectives' crossover: 1 KiB where this server's ranks fit its
 * CPUs (beyond, the direct copy costs less than the two copies, whose bytes cross between cores
 * twice), 8 KiB where they share them (a direct send waits for its receiver to get a CPU; eager ones
 * run ahead): docs/perf-history.md, "Eager Send/Recv". */
#define RT_P2P_EAGER_FIT 1024u
#define RT_P2P_EAGER_SHARED 8192u
#define RT_P2P_INLINE_BYTES (64u - RT_BOX_HDR)
#define RT_P2P_BOXES 64u
#define RT_P2P_POSTED_AT 64u                                  /* after `read` */
#define RT_P2P_HDRS_AT 128u                                   /* after `posted` */
#define RT_P2P_DATA_AT (RT_P2P_HDRS_AT + RT_P2P_BOXES * 64u)  /* after the header lines */
#define RT_P2P_EAGER_MAX_RANKS ALGO_MESH_MAX_RANKS /* boxes for every rank: bounded, as eager collectives */
/* A direct send waits for no box: the receive record of its ordinal is there only once every
 * launch before the receive's has ended, and a launch holds at most RT_P2P_RING receives per peer. */
_Static_assert(RT_P2P_BOXES >= RT_P2P_RING, "a direct send's box is free once its receive record is there");
/* Whether the inboxes have p2p boxes: the same on every rank (the backend, staging mode, nranks). */
static inline bool rt_p2p_boxes(const rt_comm *c)
{
    return c->flag_waits && c->nranks <= RT_P2P_EAGER_MAX_RANKS;
}
/* p2p with peer goes through the boxes (else: counted notifies, PUB and DATA). */
static inline bool rt_p2p_on_flags(const rt_comm *c, uint32_t peer)
{
    return rt_p2p_boxes(c) && !c->peers[peer].remote;
}
/* One writer's part of an inbox: `read`, the header lines, the data. */
static inline uint64_t rt_p2p_writer_bytes(const rt_comm *c)
{
    return RT_P2P_DATA_AT + (uint64_t)RT_P2P_BOXES * c->p2p_box_bytes;
}
static inline uint64_t rt_inbox_p2p_bytes(const rt_comm *c)
{
    return rt_p2p_boxes(c) ? (uint64_t)c->nranks * rt_p2p_writer_bytes(c) : 0;
}
/* Bytes of one slot of a kind past the eager ones. */
static inline uint64_t rt_kind_slot_bytes(const rt_comm *c, rt_slot_kind kind)
{
    switch (kind) {
    case RT_SLOT_OW_SMALL: return RT_OW_SMALL_STRIDE;
    case RT_SLOT_GATHER_SMALL: return RT_GATHER_SMALL_PART * (uint64_t)c->nranks;
    default: return RT_OW_BOX_STRIDE;
    }
}
/* The layout's offsets, from the communicator's nranks, ow_slots, flag_waits and p2p_box_bytes,
 * once per communicator: every launch binds its slot or box through them. The eager slots come
 * first, then ow_slots of each other kind, then the p2p part. */
static inline void rt_inbox_layout_set(rt_comm *c)
{
    uint64_t at = rt_inbox_eager_bytes(c);
    c->inbox_kind_at[RT_SLOT_EAGER] = 0;
    for (uint32_t k = RT_SLOT_OW; k < RT_SLOT_KINDS; k++) {
        c->inbox_kind_at[k] = at;
        at += c->ow_slots * rt_kind_slot_bytes(c, (rt_slot_kind)k);
    }
    c->inbox_p2p_at = at;
}
/* Where the pos-th slot of a kind past the eager ones lies in an inbox. */
static inline uint64_t rt_kind_slot_offset(const rt_comm *c, rt_slot_kind kind, uint32_t pos)
{
    return c->inbox_kind_at[kind] + pos * rt_kind_slot_bytes(c, kind);
}
/* Bytes of one rank's inbox. */
static inline uint64_t rt_inbox_bytes(const rt_comm *c)
{
    return c->inbox_p2p_at + rt_inbox_p2p_bytes(c);
}
/* writer's `read` line in an inbox, ours or a peer's. */
static inline _Atomic uint64_t *rt_p2p_read(const rt_comm *c, void *inbox, uint32_t writer)
{
    uint64_t at = c->inbox_p2p_at + (uint64_t)writer * rt_p2p_writer_bytes(c);
    return (_Atomic uint64_t *)(void *)((char *)inbox + at);
}
/* writer's `posted` line in an inbox: the ordinal of the last receive from writer whose record
 * is out, in a line of its own (a direct send polls it while the record's lines are written). */
static inline _Atomic uint64_t *rt_p2p_posted(const rt_comm *c, void *inbox, uint32_t writer)
{
    return (_Atomic uint64_t *)(void *)((char *)rt_p2p_read(c, inbox, writer) + RT_P2P_POSTED_AT);
}
/* The header of writer's box for its send `ordinal`. */
static inline rt_sig *rt_p2p_box(const rt_comm *c, void *inbox, uint32_t writer, uint64_t ordinal)
{
    return (rt_sig *)(void *)((char *)rt_p2p_read(c, inbox, writer) + RT_P2P_HDRS_AT + ordinal % RT_P2P_BOXES * 64u);
}
/* Where the bytes of a send of `bytes` go in its box: after the header in its line, or its data. */
static inline void *rt_p2p_box_bytes(const rt_comm *c, void *inbox, uint32_t writer, uint64_t ordinal,
                                     uint64_t bytes)
{
    if (bytes <= RT_P2P_INLINE_BYTES)
        return (char *)rt_p2p_box(c, inbox, writer, ordinal) + RT_BOX_HDR;
    return (char *)rt_p2p_read(c, inbox, writer) + RT_P2P_DATA_AT + ordinal % RT_P2P_BOXES * c->p2p_box_bytes;
}
/* Where slot `slot` (< rt_inbox_slots) starts in every rank's inbox (the same offset in each). */
static inline uint64_t rt_inbox_slot_offset(const rt_comm *c, uint32_t slot)
{
    rt_slot_kind kind = rt_slot_kind_of(c, slot);
    if (kind == RT_SLOT_EAGER)
        return slot * (uint64_t)c->nranks * RT_BOX_STRIDE;
    return rt_kind_slot_offset(c, kind, slot - rt_slot_first(c, kind));
}
/* Slot `slot` of an inbox, ours or a peer's. */
static inline void *rt_inbox_slot(const rt_comm *c, void *inbox, uint32_t slot)
{
    return (char *)inbox + rt_inbox_slot_offset(c, slot);
}
/* The header of writer's box in slot `slot` of an inbox. */
static inline rt_sig *rt_inbox_box(const rt_comm *c, void *inbox, uint32_t slot, uint32_t writer)
{
    return rt_box_hdr(rt_inbox_slot(c, inbox, slot), writer, rt_slot_stride(c, slot));
}

#endif
