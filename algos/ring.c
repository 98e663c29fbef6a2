/* Ring: every collective with neighbour-to-neighbour pushes (or, where a chunk would have to
 * transit a rank that has no buffer for it, direct writes issued in ring order). All data moves
 * by writes into the receiver's memory, so the same plans work over one-sided network links.
 *
 * Ring order is rank order: left = r-1, right = r+1 (mod n). */
#include "algos/algo_build.h"

#define LEFT(b) (((b)->r + (b)->n - 1) % (b)->n)
#define RIGHT(b) (((b)->r + 1) % (b)->n)

/* Reduce-scatter then allgather, both in OUT. Out of place, each rank first copies IN to OUT and
 * tells its left neighbour (READY) that its OUT may now be reduced into. RS step s: reduce my
 * chunk r-1-s into right's OUT; AG step t: copy my chunk r-t into right's OUT. Every step but the
 * first waits for the left neighbour's previous step (DATA), the last DATA is waited at the end. */
static void ring_allreduce(algo_b *b)
{
    uint32_t n = b->n, r = b->r, L = LEFT(b), R = RIGHT(b);
    uint64_t c = b->op->count;
    bool inp = b->op->in_place;
    algo_b_ring_neighbours(b);
    algo_b_prologue(b);
    if (!inp)
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), c);
    if (n == 1)
        return;
    if (!inp) {
        algo_b_signal(b, 0, L, ALGO_SLOT_READY);
        algo_b_wait(b, 0, R, ALGO_SLOT_READY);
    }
    for (uint32_t s = 0; s + 1 < n; s++) {
        uint32_t j = algo_mod((int64_t)r - 1 - s, n);
        uint64_t off = algo_chunk_off(c, n, j), len = algo_chunk_len(c, n, j);
        if (s > 0)
            algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
        algo_b_reduce(b, 0, algo_b_ref(b, ALGO_BUF_OUT, R, off), algo_b_ref(b, ALGO_BUF_OUT, r, off), len);
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
    for (uint32_t t = 0; t + 1 < n; t++) {
        uint32_t k = algo_mod((int64_t)r - t, n);
        uint64_t off = algo_chunk_off(c, n, k), len = algo_chunk_len(c, n, k);
        algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, R, off), algo_b_ref(b, ALGO_BUF_OUT, r, off), len);
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
    algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
}

/* AllGather(V): my block into my OUT (in place it already is), then n-1 forwarding steps (block
 * refs symbolic for AllGatherV: one plan for every count table). AllGatherV needs no fetch of
 * every peer for its count check: a rank writes only into its right neighbour, which it fetches
 * (and whose tables it compares) first. */
static void ring_allgather(algo_b *b)
{
    uint32_t n = b->n, r = b->r, L = LEFT(b), R = RIGHT(b);
    const algo_op *op = b->op;
    algo_b_ring_neighbours(b);
    algo_b_prologue(b);
    if (!op->in_place)
        algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_OUT, r, r), algo_b_ref(b, ALGO_BUF_IN, r, 0), r);
    if (n == 1)
        return;
    for (uint32_t t = 0; t + 1 < n; t++) {
        uint32_t k = algo_mod((int64_t)r - t, n);
        if (t > 0)
            algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
        algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_OUT, R, k), algo_blk_ref(b, ALGO_BUF_OUT, r, k), k);
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
    algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
}

/* ReduceScatter(V) without scratch: at step s rank r reduces its IN block for d = r+s straight
 * into d's OUT, after its right neighbour did the same at step s-1 (so d's OUT is reduced into by
 * d, d-1, d-2, ... one at a time). Step 0 is the rank's own block copied into its OUT. Every step is
 * a shift permutation: bandwidth-optimal like the classic ring, with no transit copies. One step
 * per block, so ReduceScatterV's blocks are symbolic (algo_blk_ref): one plan for every count
 * table (a zero block moves nothing, its signals still go). */
static void ring_reduce_scatter(algo_b *b)
{
    uint32_t n = b->n, r = b->r, L = LEFT(b), R = RIGHT(b);
    const algo_op *op = b->op;
    algo_b_fetch_all(b);
    algo_b_prologue(b);
    if (!op->in_place)
        algo_b_copy_blk(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_blk_ref(b, ALGO_BUF_IN, r, r), r);
    if (n == 1)
        return;
    algo_b_signal(b, 0, L, ALGO_SLOT_DATA);
    for (uint32_t s = 1; s < n; s++) {
        uint32_t d = (r + s) % n;
        algo_b_wait(b, 0, R, ALGO_SLOT_DATA);
        algo_b_reduce_blk(b, 0, algo_b_ref(b, ALGO_BUF_OUT, d, 0), algo_blk_ref(b, ALGO_BUF_IN, r, d), NULL, d);
        algo_b_signal(b, 0, L, ALGO_SLOT_DATA);
    }
    algo_b_wait(b, 0, R, ALGO_SLOT_DATA);
    /* I read nobody's buffers and my writers are ordered by the DATA chain, but a peer that only
     * fetched me for the check (everyone, here) must have done so before I finish. */
    algo_b_epilogue(b, 0);
}

/* Pipelined chain root -> root+1 -> ... -> root-1 in min(n, count) chunks, all in OUT (Broadcast
 * has one buffer: IN == OUT). */
static void ring_broadcast(algo_b *b)
{
    uint32_t n = b->n, r = b->r, L = LEFT(b), R = RIGHT(b);
    uint64_t c = b->op->count;
    uint32_t pos = algo_mod((int64_t)r - b->op->root, n);
    uint32_t K = c < n ? (uint32_t)c : n;
    algo_b_ring_neighbours(b);
    algo_b_prologue(b);
    if (n == 1)
        return;
    for (uint32_t k = 0; k < K; k++) {
        uint64_t off = algo_chunk_off(c, K, k), len = algo_chunk_len(c, K, k);
        if (pos > 0)
            algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
        if (pos + 1 < n) {
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, R, off), algo_b_ref(b, ALGO_BUF_OUT, r, off), len);
            algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
        }
    }
    algo_b_epilogue(b, 0);
}

/* Pipelined chain root+1 -> ... -> root-1 -> root in min(n, count) chunks. A rank that is not the
 * root has no OUT, so the ranks in the middle accumulate in SCRATCH (initialised from IN, then
 * READY to the left); the first rank reduces straight from its IN, the last into root's OUT. */
static void ring_reduce(algo_b *b)
{
    uint32_t n = b->n, r = b->r, L = LEFT(b), R = RIGHT(b), root = b->op->root;
    uint64_t c = b->op->count;
    uint32_t pos = algo_mod((int64_t)r - root - 1, n); /* root+1 is 0, root is n-1 */
    uint32_t K = c < n ? (uint32_t)c : n;
    algo_b_ring_neighbours(b);
    algo_b_prologue(b);
    bool root_me = r == root, middle = pos > 0 && !root_me;
    algo_buf acc = root_me ? ALGO_BUF_OUT : middle ? ALGO_BUF_SCRATCH : ALGO_BUF_IN;
    algo_buf racc = R == root ? ALGO_BUF_OUT : ALGO_BUF_SCRATCH;
    if (root_me && !b->op->in_place)
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), c);
    if (n == 1)
        return;
    if (middle) {
        b->p->scratch_bytes = c * b->esz;
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), c);
    }
    if (pos > 0)
        algo_b_signal(b, 0, L, ALGO_SLOT_READY);
    if (!root_me)
        algo_b_wait(b, 0, R, ALGO_SLOT_READY);
    for (uint32_t k = 0; k < K; k++) {
        uint64_t off = algo_chunk_off(c, K, k), len = algo_chunk_len(c, K, k);
        if (pos > 0)
            algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
        if (!root_me) {
            algo_b_reduce(b, 0, algo_b_ref(b, racc, R, off), algo_b_ref(b, acc, r, off), len);
            algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
        }
    }
    algo_b_epilogue(b, 0);
}

/* Direct writes from the root to every rank, one at a time in ring order (a chain would need
 * scratch on every rank in between and move more bytes). */
static void ring_scatter(algo_b *b)
{
    uint32_t n = b->n, r = b->r, root = b->op->root;
    const algo_op *op = b->op;
    algo_b_fetch_rooted(b);
    algo_b_prologue(b);
    if (r == root) {
        if (!op->in_place)
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, algo_blk_off(op, r)),
                        op->count);
        for (uint32_t k = 1; k < n; k++) {
            uint32_t p = (root + k) % n;
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, p, 0), algo_b_ref(b, ALGO_BUF_IN, r, algo_blk_off(op, p)),
                        op->count);
            algo_b_signal(b, 0, p, ALGO_SLOT_DATA);
        }
    } else {
        algo_b_wait(b, 0, root, ALGO_SLOT_DATA);
    }
    algo_b_epilogue(b, 0);
}

static bool reduces(algo_coll c)
{
    return c == ALGO_COLL_ALLREDUCE || c == ALGO_COLL_REDUCE || c == ALGO_COLL_REDUCE_SCATTER ||
           c == ALGO_COLL_REDUCE_SCATTERV;
}

int algo_ring_build(algo_b *b)
{
    const algo_op *op = b->op;
    if (op->deterministic && reduces(op->coll))
        return algo_ring_ordered_build(b); /* the ring's own orders differ per block */
    switch (op->coll) {
    case ALGO_COLL_ALLREDUCE: ring_allreduce(b); break;
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_ALLGATHERV: ring_allgather(b); break;
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE_SCATTERV: ring_reduce_scatter(b); break;
    case ALGO_COLL_BROADCAST: ring_broadcast(b); break;
    case ALGO_COLL_REDUCE: ring_reduce(b); break;
    case ALGO_COLL_SCATTER: ring_scatter(b); break;
    case ALGO_COLL_ALLTOALL:
    case ALGO_COLL_ALLTOALLV:
    case ALGO_COLL_ALLTOALLVC:
        if (op->in_place)
            return HAL_E_NOT_SUPPORTED;
        algo_a2a_pairwise_body(b); /* step k: send to rank+k, in ring order */
        break;
    default:
        return HAL_E_NOT_SUPPORTED;
    }
    return 0;
}
