/* SENDRECV (Send/Recv, BatchSendRecv, grouped p2p): a list of items, each matched on its own: the
 * k-th send from A to B meets the k-th receive at B from A, whatever the two ranks grouped. A plan
 * only names its items (refs with vdispl = item index), never their buffers, so one plan serves
 * every call of the same shape.
 *
 * Per item: a receive announces its buffer (PUBLISH, then SIGNAL{peer, PUB} for that item); a send
 * FETCHes the receiver's record for it, COPYs straight into the receiver's buffer and SIGNALs
 * {peer, P2P_DATA}; the receive WAITs for that signal. Order, so that no item waits on another of
 * the same plan: all receives are announced before anything waits; sends come before the receive
 * waits (a rank that sends to and receives from a peer never needs its receive done to send); and
 * sends to different peers run on different streams (one slow receiver does not hold the sends to
 * the others) — up to ALGO_MAX_STREAMS peers, beyond which peers share streams round robin.
 * The runtime may carry a small send through the receiver's inbox instead of its FETCH and COPY
 * (eager; runtime/stream/rt_prog_p2p.c): the plan stays the same. */
#include "algos/algo_build.h"
#include "common/oh_check.h"

static void push_sync(algo_b *b, uint32_t s, algo_step_kind kind, uint32_t peer, uint32_t slot, uint32_t item)
{
    algo_step st = {.kind = (uint8_t)kind};
    st.u.sync.peer = peer;
    st.u.sync.slot = slot;
    st.u.sync.item = item;
    algo_b_push(b, s, st);
}

static algo_ref item_ref(const algo_b *b, algo_buf buf, uint32_t owner, uint32_t item)
{
    algo_ref r = algo_b_ref(b, buf, owner, 0);
    r.vdispl = (int32_t)item;
    return r;
}

/* The n-th (0-based) item of one direction with peer, or -1. */
static int64_t nth_item(const algo_op *op, uint32_t peer, bool send, uint32_t n)
{
    for (uint32_t k = 0; k < op->nitems; k++)
        if (op->items[k].peer == peer && (bool)op->items[k].is_send == send && n-- == 0)
            return k;
    return -1;
}

/* Items to itself: the n-th send to self is copied into the n-th receive from self. */
static int p2p_self(algo_b *b)
{
    const algo_op *op = b->op;
    uint32_t n = 0;
    for (uint32_t k = 0; k < op->nitems; k++) {
        const algo_p2p_item *s = &op->items[k];
        if (!s->is_send || s->peer != b->r)
            continue;
        int64_t rk = nth_item(op, b->r, false, n++);
        CHECK_ARG(rk >= 0 && op->items[rk].count == s->count, HAL_E_PARAM, "algos",
                  "rank %u: send #%u to itself needs a receive from itself of the same size in the same call",
                  b->r, n);
        algo_b_copy(b, 0, item_ref(b, ALGO_BUF_OUT, b->r, (uint32_t)rk), item_ref(b, ALGO_BUF_IN, b->r, k), s->count);
    }
    CHECK_ARG(nth_item(op, b->r, false, n) < 0, HAL_E_PARAM, "algos",
              "rank %u: a receive from itself needs a send to itself in the same call", b->r);
    return 0;
}

/* Stream of each send peer, in first-use order: b->fetch[q] = stream + 1. */
static uint32_t assign_send_streams(algo_b *b)
{
    const algo_op *op = b->op;
    uint32_t used = 0;
    for (uint32_t k = 0; k < op->nitems; k++) {
        const algo_p2p_item *it = &op->items[k];
        if (it->is_send && it->peer != b->r && !b->fetch[it->peer])
            b->fetch[it->peer] = (uint8_t)(used++ % ALGO_MAX_STREAMS + 1);
    }
    return used < ALGO_MAX_STREAMS ? used : ALGO_MAX_STREAMS;
}

static void emit_send(algo_b *b, uint32_t s, uint32_t k)
{
    const algo_p2p_item *it = &b->op->items[k];
    algo_step f = {.kind = ALGO_STEP_FETCH};
    f.u.fetch.peer = it->peer;
    f.u.fetch.item = k;
    algo_b_push(b, s, f);
    algo_b_copy(b, s, item_ref(b, ALGO_BUF_OUT, it->peer, k), item_ref(b, ALGO_BUF_IN, b->r, k), it->count);
    push_sync(b, s, ALGO_STEP_SIGNAL, it->peer, ALGO_SLOT_P2P_DATA, k);
}

int algo_p2p_build(algo_b *b)
{
    const algo_op *op = b->op;
    if (op->coll != ALGO_COLL_SENDRECV)
        return HAL_E_NOT_SUPPORTED;
    b->no_ring_check = true;
    b->p->nslots = ALGO_MAX_SLOTS;
    algo_step pub = {.kind = ALGO_STEP_PUBLISH};
    algo_b_push(b, 0, pub);
    for (uint32_t k = 0; k < op->nitems; k++)
        if (!op->items[k].is_send && op->items[k].peer != b->r)
            push_sync(b, 0, ALGO_STEP_SIGNAL, op->items[k].peer, ALGO_SLOT_PUB, k);
    CHECK(p2p_self(b));
    uint32_t nstreams = assign_send_streams(b);
    for (uint32_t s = 1; s < nstreams; s++)
        algo_b_fork(b, s);
    for (uint32_t k = 0; k < op->nitems; k++)
        if (op->items[k].is_send && op->items[k].peer != b->r)
            emit_send(b, b->fetch[op->items[k].peer] - 1u, k);
    for (uint32_t k = 0; k < op->nitems; k++)
        if (!op->items[k].is_send && op->items[k].peer != b->r)
            push_sync(b, 0, ALGO_STEP_WAIT, op->items[k].peer, ALGO_SLOT_P2P_DATA, k);
    for (uint32_t s = 1; s < nstreams; s++)
        algo_b_join(b, s);
    return 0;
}
