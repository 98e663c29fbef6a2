/* Ring with receive-side reduction ("ring_push"): the ring for ranks on several servers, where a
 * rank can only write into a peer's memory over a link, never reduce into it or read it. Every
 * step copies a partial result into the right neighbour's SCRATCH (a slot per step, so no slot is
 * reused within a call) and signals; the neighbour reduces it locally with its own data. The
 * gathering phases copy finished chunks into the neighbour's OUT. So every cross-rank step is a
 * COPY into a peer's SCRATCH or OUT, which runtime/net carries as a one-sided write.
 *
 * Reduce-scatter chain (shared): at step s rank r sends chunk j = r-1-s; for s > 0 that is the
 * chunk it received at step s-1 (from its left neighbour, into scratch slot s-1), reduced with its
 * own contribution. After n-1 steps rank r holds chunk r reduced over every rank.
 *
 * Scratch reuse across calls: a rank first writes its right neighbour's scratch after FETCHing
 * it, i.e. after the neighbour started this call (so finished reading its scratch for the last). */
#include "algos/algo_build.h"

#define LEFT(b) (((b)->r + (b)->n - 1) % (b)->n)
#define RIGHT(b) (((b)->r + 1) % (b)->n)

static void neighbours(algo_b *b)
{
    b->fetch[LEFT(b)] = b->fetch[RIGHT(b)] = 1;
    b->fetched_by[LEFT(b)] = b->fetched_by[RIGHT(b)] = 1;
}

/* Chunk j of the op's data and the largest chunk (elements). */
typedef struct rp_layout {
    uint64_t (*off)(const algo_b *b, uint32_t j);
    uint64_t (*len)(const algo_b *b, uint32_t j);
    uint64_t max;
} rp_layout;

static uint64_t even_off(const algo_b *b, uint32_t j)
{
    return algo_chunk_off(b->op->count, b->n, j);
}

static uint64_t even_len(const algo_b *b, uint32_t j)
{
    return algo_chunk_len(b->op->count, b->n, j);
}

static uint64_t blk_off(const algo_b *b, uint32_t j)
{
    return (uint64_t)j * b->op->count;
}

static uint64_t blk_len(const algo_b *b, uint32_t j)
{
    (void)j;
    return b->op->count;
}

/* Receive slot s (s < n-1) and accumulator slot s (s < n) in SCRATCH, in elements. */
static uint64_t rslot(const algo_b *b, const rp_layout *L, uint32_t s)
{
    (void)b;
    return (uint64_t)s * L->max;
}

static uint64_t aslot(const algo_b *b, const rp_layout *L, uint32_t s)
{
    return ((uint64_t)(b->n - 1) + s) * L->max;
}

/* The reduce-scatter chain. mine(j) is this rank's contribution to chunk j (buffer + offset);
 * acc(s) where the partial result of step s goes (it is what step s+1 sends, and after the last
 * step the whole chunk r). Step 0 sends mine(r-1) itself. */
static void chain(algo_b *b, const rp_layout *L, algo_buf src, bool acc_is_src)
{
    uint32_t n = b->n, r = b->r, R = RIGHT(b), Lf = LEFT(b);
    for (uint32_t s = 0; s < n; s++) {
        uint32_t j = algo_mod((int64_t)r - 1 - s, n); /* the chunk sent at step s (s = n-1: chunk r, kept) */
        algo_ref cur = algo_b_ref(b, src, r, L->off(b, j));
        if (s > 0) {
            /* chunk j arrived at step s-1 in receive slot s-1: add my contribution */
            algo_b_wait(b, 0, Lf, ALGO_SLOT_DATA);
            algo_ref in = algo_b_ref(b, ALGO_BUF_SCRATCH, r, rslot(b, L, s - 1));
            if (acc_is_src) {
                algo_b_reduce(b, 0, cur, in, L->len(b, j));
            } else {
                algo_ref acc = algo_b_ref(b, ALGO_BUF_SCRATCH, r, aslot(b, L, s));
                algo_b_reduce3(b, 0, acc, in, cur, L->len(b, j));
                cur = acc;
            }
        }
        if (s + 1 == n)
            break;
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, R, rslot(b, L, s)), cur, L->len(b, j));
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
}

/* Where the chain leaves chunk r: OUT itself (acc_is_src) or the last accumulator slot. */
static algo_ref result(algo_b *b, const rp_layout *L, algo_buf src, bool acc_is_src)
{
    if (acc_is_src)
        return algo_b_ref(b, src, b->r, L->off(b, b->r));
    return algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, aslot(b, L, b->n - 1));
}

static void rp_allreduce(algo_b *b)
{
    uint32_t n = b->n, r = b->r, R = RIGHT(b), Lf = LEFT(b);
    uint64_t c = b->op->count;
    rp_layout L = {even_off, even_len, (c + n - 1) / n};
    neighbours(b);
    algo_b_prologue(b);
    if (!b->op->in_place)
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), c);
    if (n == 1)
        return;
    b->p->scratch_bytes = (uint64_t)(n - 1) * L.max * b->esz;
    chain(b, &L, ALGO_BUF_OUT, true);
    for (uint32_t t = 0; t + 1 < n; t++) { /* allgather of the finished chunks, into R's OUT */
        uint32_t k = algo_mod((int64_t)r - t, n);
        if (t > 0)
            algo_b_wait(b, 0, Lf, ALGO_SLOT_DATA);
        algo_ref mine = algo_b_ref(b, ALGO_BUF_OUT, r, even_off(b, k));
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, R, even_off(b, k)), mine, even_len(b, k));
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
    algo_b_wait(b, 0, Lf, ALGO_SLOT_DATA);
}

static void rp_reduce_scatter(algo_b *b)
{
    uint32_t n = b->n, r = b->r;
    rp_layout L = {blk_off, blk_len, b->op->count};
    neighbours(b);
    algo_b_prologue(b);
    if (n == 1) {
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), b->op->count);
        return;
    }
    b->p->scratch_bytes = (uint64_t)(2 * n - 1) * L.max * b->esz;
    chain(b, &L, ALGO_BUF_IN, false);
    algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), result(b, &L, ALGO_BUF_IN, false), b->op->count);
}

/* ReduceScatterV: the same chain with symbolic blocks (one plan for every count table). A block
 * arrives in the receiver's scratch at the block's own displacement (each block arrives once per
 * call) and is reduced there in place, so the scratch is laid out like IN (ALGO_VSCR_EXTENT). */
static void rp_reduce_scatterv(algo_b *b)
{
    uint32_t n = b->n, r = b->r, R = RIGHT(b), Lf = LEFT(b);
    neighbours(b);
    algo_b_prologue(b);
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, r, 0);
    if (n == 1) {
        algo_b_copy_blk(b, 0, out, algo_blk_ref(b, ALGO_BUF_IN, r, r), r);
        return;
    }
    b->p->vscratch = ALGO_VSCR_EXTENT;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t j = algo_mod((int64_t)r - 1 - s, n);
        algo_ref cur = algo_blk_ref(b, ALGO_BUF_IN, r, j);
        if (s > 0) {
            algo_b_wait(b, 0, Lf, ALGO_SLOT_DATA);
            algo_ref got = algo_blk_ref(b, ALGO_BUF_SCRATCH, r, j);
            if (s + 1 == n) {
                algo_b_reduce_blk(b, 0, out, got, &cur, j);
                break;
            }
            algo_b_reduce_blk(b, 0, got, cur, NULL, j);
            cur = got;
        }
        algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_SCRATCH, R, j), cur, j);
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
}

/* Reduce: the chain over chunks of IN (accumulating in scratch), then every rank copies its chunk
 * into the root's OUT (DONE slot: the DATA slot's counts belong to the chain). */
static void rp_reduce(algo_b *b)
{
    uint32_t n = b->n, r = b->r, root = b->op->root;
    uint64_t c = b->op->count;
    rp_layout L = {even_off, even_len, (c + n - 1) / n};
    neighbours(b);
    for (uint32_t q = 0; q < n; q++) { /* every rank writes into the root's OUT */
        if (r == root)
            b->fetched_by[q] |= q != root;
        else if (q == root)
            b->fetch[q] = 1;
    }
    algo_b_prologue(b);
    if (n == 1) {
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), c);
        return;
    }
    b->p->scratch_bytes = (uint64_t)(2 * n - 1) * L.max * b->esz;
    chain(b, &L, ALGO_BUF_IN, false);
    algo_ref mine = result(b, &L, ALGO_BUF_IN, false);
    algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, root, even_off(b, r)), mine, even_len(b, r));
    if (r != root) {
        algo_b_signal(b, 0, root, ALGO_SLOT_DONE);
        return;
    }
    for (uint32_t q = 0; q < n; q++)
        if (q != root)
            algo_b_wait(b, 0, q, ALGO_SLOT_DONE);
}

int algo_ring_push_build(algo_b *b)
{
    switch (b->op->coll) {
    case ALGO_COLL_ALLREDUCE: rp_allreduce(b); return 0;
    case ALGO_COLL_REDUCE_SCATTER: rp_reduce_scatter(b); return 0;
    case ALGO_COLL_REDUCE: rp_reduce(b); return 0;
    case ALGO_COLL_REDUCE_SCATTERV: rp_reduce_scatterv(b); return 0;
    default: return HAL_E_NOT_SUPPORTED;
    }
}
