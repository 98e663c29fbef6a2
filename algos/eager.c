/* Eager: small messages through the peers' inboxes (plan.h, INBOX). One stream, one round:
 *   PUBLISH; COPY my data into my box of every peer that needs it; SIGNAL{q, PUB} to every peer;
 *   FETCH every peer (its publication says its data is in my inbox, and checks its signature);
 *   then local COPY/REDUCE from my inbox into my OUT.
 * No peer ever touches my IN/OUT, so there is no completion handshake, and no address is
 * published for data to move. Every rank fetches every rank, rooted ops included: that makes
 * every eager plan end full (plan.h), which is what lets the next eager call reuse the inbox
 * without a credit. Broadcast and Scatter go one-way instead where the runtime allows it
 * (oneway_build below): their root waits for nobody's data and takes credits; and so does a small
 * Reduce the other way round (oneway_gather_build): its other ranks write and take credits.
 * Reductions fold in rank order, ((x0 op x1) op x2) ..., so every rank's result is bit-identical,
 * whatever the redop and dtype (and deterministic mode holds for free).
 * AllGatherV, ReduceScatterV and AlltoAllVC go eager too when every block of the call fits (the
 * runtime's choice from tables equal on every rank: algo_op.v_eager). Their plans serve every count
 * table: a block's size and its place in IN/OUT are V-table entries, its place in a box is fixed.
 * AlltoAllV, whose ranks know only their own row and column, chooses per block instead (a2av_finish
 * below): both ends of a pair know its size. */
#include "algos/algo_build.h"

/* Box `box` of `owner`'s inbox, `elem_off` elements in. */
static algo_ref box_ref(const algo_b *b, uint32_t owner, uint32_t box, uint64_t elem_off)
{
    algo_ref ref = algo_b_ref(b, ALGO_BUF_INBOX, owner, 0);
    ref.offset = (uint64_t)box * ALGO_EAGER_BOX + elem_off * b->esz;
    return ref;
}

/* A size in elements: a number, or an entry of this call's V tables. */
typedef struct elems {
    uint64_t n;
    algo_vsym v;
} elems;

static bool sym(const algo_b *b)
{
    return algo_counts_symbolic(b->op->coll);
}

static elems fixed(uint64_t n)
{
    elems e = {n, algo_vs(ALGO_VT_NONE, 0)};
    return e;
}

static elems entry(algo_vtab tab, uint32_t idx)
{
    elems e = {0, algo_vs(tab, idx)};
    return e;
}

static void copy_e(algo_b *b, algo_ref dst, algo_ref src, elems e)
{
    if (e.v.tab)
        algo_b_copy_v(b, 0, dst, src, e.v);
    else
        algo_b_copy(b, 0, dst, src, e.n);
}

/* What a rank writes into peer q's box r: the whole IN, or IN block q (ReduceScatter(V),
 * AlltoAll(VC), Scatter). */
static algo_ref send_src(const algo_b *b, uint32_t q)
{
    algo_coll c = b->op->coll;
    uint64_t off = 0;
    if (c == ALGO_COLL_REDUCE_SCATTERV)
        return algo_blk_ref(b, ALGO_BUF_IN, b->r, q);
    if (c == ALGO_COLL_ALLTOALLVC || c == ALGO_COLL_ALLTOALLV)
        return algo_ref_v(algo_b_ref(b, ALGO_BUF_IN, b->r, 0), algo_vs(ALGO_VT_DISPL, q));
    if (c == ALGO_COLL_REDUCE_SCATTER || c == ALGO_COLL_SCATTER)
        off = algo_blk_off(b->op, q);
    else if (c == ALGO_COLL_ALLTOALL)
        off = algo_a2a_send_off(b->op, b->r, q);
    return algo_b_ref(b, ALGO_BUF_IN, b->r, off);
}

/* How much of it: my block (AllGatherV), block q (ReduceScatterV, AlltoAllV(C)), else the count. */
static elems send_len(const algo_b *b, uint32_t q)
{
    if (!sym(b))
        return fixed(b->op->count);
    return entry(ALGO_VT_COUNT, b->op->coll == ALGO_COLL_ALLGATHERV ? b->r : q);
}

/* The size of box j in my inbox: rank j's block (AllGatherV), what j sends me (AlltoAllV(C)), my
 * block (ReduceScatterV), else the count. */
static elems recv_len(const algo_b *b, uint32_t j)
{
    switch (b->op->coll) {
    case ALGO_COLL_ALLGATHERV: return entry(ALGO_VT_COUNT, j);
    case ALGO_COLL_ALLTOALLV:
    case ALGO_COLL_ALLTOALLVC: return entry(ALGO_VT_RCOUNT, j);
    case ALGO_COLL_REDUCE_SCATTERV: return entry(ALGO_VT_COUNT, b->r);
    default: return fixed(b->op->count);
    }
}

/* Does this rank write into q's inbox? Rooted ops: only towards (Reduce) or from (Broadcast,
 * Scatter) the root. */
static bool sends_to(const algo_b *b, uint32_t q)
{
    uint32_t root = b->op->root;
    switch (b->op->coll) {
    case ALGO_COLL_BROADCAST:
    case ALGO_COLL_SCATTER: return b->r == root;
    case ALGO_COLL_REDUCE: return q == root;
    default: return true;
    }
}

/* In-place reductions whose own operand is overwritten by the fold before its turn: the operand
 * is parked in my own box first. */
static bool parks_own(const algo_b *b)
{
    algo_coll c = b->op->coll;
    if (!b->op->in_place || b->n == 1)
        return false;
    return c == ALGO_COLL_ALLREDUCE || c == ALGO_COLL_REDUCE_SCATTER || c == ALGO_COLL_REDUCE_SCATTERV ||
           (c == ALGO_COLL_REDUCE && b->r == b->op->root);
}

/* PUBLISH, the data writes, PUB signals to every peer, FETCH of every peer (left first: the
 * ring check, so a mismatch with a non-eager rank is found before anything blocks forever). */
static void eager_exchange(algo_b *b)
{
    uint32_t n = b->n, r = b->r;
    algo_step pub = {.kind = ALGO_STEP_PUBLISH};
    algo_b_push(b, 0, pub);
    if (parks_own(b))
        copy_e(b, box_ref(b, r, r, 0), send_src(b, r), send_len(b, r));
    bool per_block = b->op->coll == ALGO_COLL_ALLTOALLV; /* a2av_finish */
    for (uint32_t k = 1; k < n; k++) {
        uint32_t q = (r + k) % n;
        if (per_block)
            algo_b_when(b, ALGO_WHEN_SMALL, algo_vs(ALGO_VT_COUNT, q));
        if (sends_to(b, q))
            copy_e(b, box_ref(b, q, r, 0), send_src(b, q), send_len(b, q));
    }
    algo_b_when(b, ALGO_WHEN_ALWAYS, algo_vs(ALGO_VT_NONE, 0));
    for (uint32_t k = 1; k < n; k++)
        algo_b_signal(b, 0, (r + k) % n, ALGO_SLOT_PUB);
    for (uint32_t k = 1; k < n; k++) {
        algo_step st = {.kind = ALGO_STEP_FETCH};
        st.u.fetch.peer = (r + n - k) % n;
        algo_b_push(b, 0, st);
    }
}

/* Operand j of a reduction: my own data (IN at `own`, or parked in my box) or box j. */
static algo_ref operand(const algo_b *b, uint32_t j, algo_ref own)
{
    if (j != b->r)
        return box_ref(b, b->r, j, 0);
    return parks_own(b) ? box_ref(b, b->r, b->r, 0) : own;
}

/* dst op= src (src2 NULL) or dst = src op src2, over my block (ReduceScatterV) or the count. */
static void reduce_e(algo_b *b, algo_ref dst, algo_ref src, const algo_ref *src2)
{
    if (sym(b))
        algo_b_reduce_blk(b, 0, dst, src, src2, b->r);
    else if (src2)
        algo_b_reduce3(b, 0, dst, src, *src2, b->op->count);
    else
        algo_b_reduce(b, 0, dst, src, b->op->count);
}

/* dst = ((x0 op x1) op x2) ... op x(n-1). */
static void fold(algo_b *b, algo_ref dst, algo_ref own)
{
    if (b->n == 1) {
        if (!b->op->in_place)
            copy_e(b, dst, own, recv_len(b, b->r));
        return;
    }
    algo_ref x1 = operand(b, 1, own);
    reduce_e(b, dst, operand(b, 0, own), &x1);
    for (uint32_t j = 2; j < b->n; j++)
        reduce_e(b, dst, operand(b, j, own), NULL);
}

/* Where block j lands in my OUT: block j (AllGather(V)), what j sent me (AlltoAll(VC)). */
static algo_ref gather_dst(const algo_b *b, uint32_t j)
{
    const algo_op *op = b->op;
    switch (op->coll) {
    case ALGO_COLL_ALLGATHERV: return algo_blk_ref(b, ALGO_BUF_OUT, b->r, j);
    case ALGO_COLL_ALLTOALLV:
    case ALGO_COLL_ALLTOALLVC: return algo_ref_v(algo_b_ref(b, ALGO_BUF_OUT, b->r, 0), algo_vs(ALGO_VT_RDISPL, j));
    case ALGO_COLL_ALLTOALL: return algo_b_ref(b, ALGO_BUF_OUT, b->r, algo_a2a_recv_off(op, j, b->r));
    default: return algo_b_ref(b, ALGO_BUF_OUT, b->r, algo_blk_off(op, j));
    }
}

/* Gathers: OUT block j <- box j for every peer j; my own block from IN unless it is in place. */
static void gather(algo_b *b)
{
    for (uint32_t j = 0; j < b->n; j++) {
        if (j != b->r)
            copy_e(b, gather_dst(b, j), box_ref(b, b->r, j, 0), recv_len(b, j));
        else if (!b->op->in_place)
            copy_e(b, gather_dst(b, j), send_src(b, b->r), send_len(b, b->r));
    }
}

/* AlltoAllV after the exchange (whose inbox writes ran only for small blocks): a block past the
 * crossover (v_small_bytes) goes straight into its receiver's OUT, at the displacement the
 * receiver published for this rank, which FETCH checked, then SIGNAL{DATA}; a small one comes out
 * of the inbox. Sender and receiver see the same size (the sender's count, the receiver's expected
 * count: FETCH fails the call where they differ, before either path moves data), so both take the
 * same path. Every rank fetches every rank, so the plan ends full whatever the sizes. */
static void a2av_finish(algo_b *b)
{
    uint32_t n = b->n, r = b->r;
    algo_a2a_self(b, 0);
    for (uint32_t k = 1; k < n; k++) {
        uint32_t q = (r + k) % n;
        algo_b_when(b, ALGO_WHEN_LARGE, algo_vs(ALGO_VT_COUNT, q));
        algo_a2a_send(b, 0, q);
    }
    for (uint32_t k = 1; k < n; k++) {
        uint32_t j = (r + n - k) % n;
        algo_b_when(b, ALGO_WHEN_SMALL, algo_vs(ALGO_VT_RCOUNT, j));
        copy_e(b, gather_dst(b, j), box_ref(b, r, j, 0), recv_len(b, j));
    }
    for (uint32_t k = 1; k < n; k++) {
        uint32_t j = (r + n - k) % n;
        algo_b_when(b, ALGO_WHEN_LARGE, algo_vs(ALGO_VT_RCOUNT, j));
        algo_b_wait(b, 0, j, ALGO_SLOT_DATA);
    }
    algo_b_when(b, ALGO_WHEN_ALWAYS, algo_vs(ALGO_VT_NONE, 0));
}

/* Rooted distribution: the root keeps (or copies) its part, the others take box root. */
static void take_from_root(algo_b *b)
{
    const algo_op *op = b->op;
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, b->r, 0);
    if (b->r != op->root)
        algo_b_copy(b, 0, out, box_ref(b, b->r, op->root, 0), op->count);
    else if (op->coll == ALGO_COLL_SCATTER && !op->in_place)
        algo_b_copy(b, 0, out, send_src(b, b->r), op->count);
}

/* One-way rooted distribution (plan.h, INBOX): Broadcast and Scatter where the runtime allows it
 * and expects a run of them (op->oneway_run). The root takes one credit from every receiver (the
 * one-way slot it is about to write was read S of its calls ago, algo_oneway_slots), then PUBLISHes
 * (the header goes with the data), writes the data and signals PUB: it waits for nobody's data, so
 * a loop of calls runs ahead and its receivers drain several per wake-up. A Broadcast root writes
 * its IN once, into its own box (oneway_pull): every receiver reads the same bytes, and its own
 * memory is what a root writes fastest (8 B Broadcast at 4 ranks on 2 CPUs, loops of 1000 calls:
 * 0.41 us a call instead of 0.79, and at 8 ranks 1.20 instead of 2.10, where the root wrote into
 * every receiver's box; docs/perf-history.md, "One-way Broadcast roots write their own box"). So does a
 * Scatter root whose n blocks fit its box (oneway_pulls); a larger Scatter's root writes each
 * receiver's block into its box of that receiver's slot: all blocks in the root's box would make
 * one-way Scatters n times smaller. A receiver PUBLISHes (its own record, for the
 * checks only a root could make: runtime/rt_oneway.c), FETCHes the root, copies its data out and
 * gives the credit back; it signals no PUB and writes no one's inbox. */
static bool oneway_able(const algo_b *b)
{
    if (!b->topo || !b->topo->oneway || b->n < ALGO_ONEWAY_MIN_RANKS)
        return false;
    if (b->op->coll == ALGO_COLL_REDUCE)
        return algo_eager_bytes(b->op) <= algo_oneway_gather_bytes(b->n);
    return algo_coll_rooted_put(b->op->coll) && algo_eager_bytes(b->op) <= ALGO_ONEWAY_MAX_BYTES;
}

/* One-way Reduce (plan.h, INBOX): a writer takes a credit from the root, PUBLISHes (its header goes
 * with its data), writes its IN into its box of the root's gather slot and signals PUB: it waits
 * for nobody's data, as an MPI eager send. The root publishes its own record (its view, for the
 * checks only a writer could make: runtime/rt_oneway.c), FETCHes every writer (its header is the
 * signal), folds in rank order as the full exchange does (bit-identical results), and gives every
 * writer its credit back. */
static void oneway_gather_build(algo_b *b)
{
    const algo_op *op = b->op;
    uint32_t n = b->n, r = b->r, root = op->root;
    algo_step pub = {.kind = ALGO_STEP_PUBLISH};
    b->p->oneway_gather = true;
    if (r != root) {
        algo_b_wait(b, 0, root, ALGO_SLOT_CREDIT);
        algo_b_push(b, 0, pub);
        algo_b_copy(b, 0, box_ref(b, root, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), op->count);
        algo_b_signal(b, 0, root, ALGO_SLOT_PUB);
        return;
    }
    algo_b_push(b, 0, pub);
    if (parks_own(b)) /* in place: my operand into my own box before the fold overwrites it */
        algo_b_copy(b, 0, box_ref(b, r, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), op->count);
    for (uint32_t k = 1; k < n; k++) {
        algo_step st = {.kind = ALGO_STEP_FETCH};
        st.u.fetch.peer = (r + n - k) % n;
        algo_b_push(b, 0, st);
    }
    fold(b, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0));
    for (uint32_t k = 1; k < n; k++)
        algo_b_signal(b, 0, (r + k) % n, ALGO_SLOT_CREDIT);
}

/* Receivers read the root's own box where it holds what they all need: Broadcast's one buffer, or
 * a Scatter's n blocks when they fit the box (16 B blocks at 4 ranks on 2 CPUs, loops of 1000
 * calls: 0.59 us a call against 0.68 where the root wrote a box in every receiver's inbox,
 * docs/perf-history.md, thirtieth pass). The count is the same on
 * every rank, so every rank decides the same. */
static bool oneway_pulls(const algo_b *b)
{
    return b->op->coll == ALGO_COLL_BROADCAST || b->op->count * b->esz * b->n <= ALGO_ONEWAY_MAX_BYTES;
}

static void oneway_build(algo_b *b)
{
    const algo_op *op = b->op;
    uint32_t n = b->n, r = b->r, root = op->root;
    bool pull = oneway_pulls(b), scatter = op->coll == ALGO_COLL_SCATTER;
    uint64_t box_elems = pull && scatter ? op->count * n : op->count; /* what a box holds */
    b->p->inbox_bytes = box_elems * b->esz;
    b->p->oneway = true;
    b->p->nslots = ALGO_SLOT_CREDIT + 1;
    if (op->coll == ALGO_COLL_REDUCE) {
        oneway_gather_build(b);
        return;
    }
    b->p->oneway_pull = pull;
    algo_step pub = {.kind = ALGO_STEP_PUBLISH};
    if (r != root) {
        algo_b_push(b, 0, pub);
        algo_step st = {.kind = ALGO_STEP_FETCH};
        st.u.fetch.peer = root;
        algo_b_push(b, 0, st);
        /* the root's box in the root's slot (a pulled Scatter's block r of it), or in mine */
        algo_ref box = pull ? box_ref(b, root, root, scatter ? algo_blk_off(op, r) : 0) : box_ref(b, r, root, 0);
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), box, op->count);
        algo_b_signal(b, 0, root, ALGO_SLOT_CREDIT);
        return;
    }
    for (uint32_t k = 1; k < n; k++)
        algo_b_wait(b, 0, (r + k) % n, ALGO_SLOT_CREDIT);
    algo_b_push(b, 0, pub);
    if (pull) {
        algo_b_copy(b, 0, box_ref(b, r, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), box_elems);
    } else {
        for (uint32_t k = 1; k < n; k++)
            algo_b_copy(b, 0, box_ref(b, (r + k) % n, r, 0), send_src(b, (r + k) % n), op->count);
    }
    for (uint32_t k = 1; k < n; k++)
        algo_b_signal(b, 0, (r + k) % n, ALGO_SLOT_PUB);
    take_from_root(b);
}

int algo_eager_build(algo_b *b)
{
    const algo_op *op = b->op;
    if (!algo_eager_supports(op))
        return HAL_E_NOT_SUPPORTED;
    /* A plan for any count table may fill a box (the runtime chose it for blocks that fit, or, for
     * AlltoAllV, sends the others directly). */
    b->p->inbox_bytes = sym(b) && (!op->counts || op->coll == ALGO_COLL_ALLTOALLV) ? ALGO_EAGER_BOX
                                                                                    : algo_eager_bytes(op);
    if (op->coll == ALGO_COLL_ALLTOALLV)
        b->p->v_small_bytes = algo_eager_crossover(op, b->topo);
    b->p->oneway_able = oneway_able(b);
    if (b->p->oneway_able && op->oneway_run) {
        oneway_build(b);
        return 0;
    }
    eager_exchange(b);
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, b->r, 0);
    switch (op->coll) {
    case ALGO_COLL_ALLREDUCE: fold(b, out, algo_b_ref(b, ALGO_BUF_IN, b->r, 0)); break;
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE_SCATTERV: fold(b, out, send_src(b, b->r)); break;
    case ALGO_COLL_REDUCE:
        if (b->r == op->root)
            fold(b, out, algo_b_ref(b, ALGO_BUF_IN, b->r, 0));
        break;
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_ALLGATHERV:
    case ALGO_COLL_ALLTOALL:
    case ALGO_COLL_ALLTOALLVC: gather(b); break;
    case ALGO_COLL_ALLTOALLV: a2av_finish(b); break;
    default: take_from_root(b); break; /* BROADCAST, SCATTER */
    }
    return 0;
}
