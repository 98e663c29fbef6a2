/* SENDRECV (Send/Recv, BatchSendRecv, grouped p2p): every send writes straight into the receiver's
 * OUT at the receiver's published recv displacement for this sender (vdispl = my rank; the runtime
 * publishes, per peer, the element offset of the recv item from that peer), then signals it; every
 * recv waits for that signal. Only the item peers take part, so there is no ring check: a rank
 * signals PUB to the peers it receives from and FETCHes the peers it sends to. All PUB signals
 * precede all FETCHes and all sends precede all recv waits, so two ranks sending to each other
 * (full duplex) cannot deadlock. */
#include "algos/algo_build.h"
#include "common/oh_check.h"

static const algo_p2p_item *find_item(const algo_op *op, uint32_t peer, bool send)
{
    for (uint32_t k = 0; k < op->nitems; k++)
        if (op->items[k].peer == peer && (bool)op->items[k].is_send == send)
            return &op->items[k];
    return NULL;
}

static int p2p_self(algo_b *b)
{
    const algo_op *op = b->op;
    const algo_p2p_item *s = find_item(op, b->r, true), *r = find_item(op, b->r, false);
    if (!s && !r)
        return 0;
    CHECK_ARG(s && r && s->count == r->count, HAL_E_PARAM, "algos",
              "rank %u: send/recv to itself must come as a pair with equal counts", b->r);
    algo_ref dst = algo_b_ref(b, ALGO_BUF_OUT, b->r, 0), src = algo_b_ref(b, ALGO_BUF_IN, b->r, 0);
    dst.offset = r->offset;
    src.offset = s->offset;
    algo_b_copy(b, 0, dst, src, s->count);
    return 0;
}

int algo_p2p_build(algo_b *b)
{
    const algo_op *op = b->op;
    if (op->coll != ALGO_COLL_SENDRECV)
        return HAL_E_NOT_SUPPORTED;
    b->no_ring_check = true;
    for (uint32_t k = 0; k < op->nitems; k++) {
        const algo_p2p_item *it = &op->items[k];
        if (it->peer != b->r)
            (it->is_send ? b->fetch : b->fetched_by)[it->peer] = 1;
    }
    algo_b_prologue(b);
    CHECK(p2p_self(b));
    for (uint32_t k = 0; k < op->nitems; k++) {
        const algo_p2p_item *it = &op->items[k];
        if (!it->is_send || it->peer == b->r)
            continue;
        algo_ref dst = algo_b_ref(b, ALGO_BUF_OUT, it->peer, 0), src = algo_b_ref(b, ALGO_BUF_IN, b->r, 0);
        dst.vdispl = (int32_t)b->r;
        src.offset = it->offset;
        algo_b_copy(b, 0, dst, src, it->count);
        algo_b_signal(b, 0, it->peer, ALGO_SLOT_DATA);
    }
    for (uint32_t k = 0; k < op->nitems; k++) {
        const algo_p2p_item *it = &op->items[k];
        if (!it->is_send && it->peer != b->r)
            algo_b_wait(b, 0, it->peer, ALGO_SLOT_DATA);
    }
    return 0;
}
