/* Ring in deterministic mode: reductions as a chain 0 -> 1 -> ... -> n-1 in rank order, so every
 * element is ((x0 op x1) op x2) ... op x(n-1), bit for bit what mesh computes in that mode.
 * Like the ring it moves data only by writes into the receiver (network-ready).
 *
 * The buffer is cut into units (AllReduce/Reduce: min(n, count) chunks; ReduceScatter(V): the n
 * blocks). Per unit, rank 0 writes its IN into rank 1's SCRATCH; rank i reduces its IN into its
 * SCRATCH (acc = acc op x_i) and writes the accumulator into rank i+1's SCRATCH; rank n-1 holds
 * the result and delivers it: AllReduce into rank 0's OUT, then a chain 0 -> 1 -> ... -> n-2;
 * Reduce into the root's OUT; ReduceScatter each block into its owner's OUT. Units pipeline.
 * Ranks 1..n-1 need SCRATCH for their whole IN (bounded by HCCL_BUFFSIZE); a rank tells its left
 * neighbour READY before that one may write its SCRATCH (its previous call is over).
 * ReduceScatterV units are symbolic blocks (one step per block and hop, sizes and offsets from the
 * V tables), so one plan serves every count table; its scratch need is the call's IN extent
 * (ALGO_VSCR_EXTENT, checked at launch). */
#include "algos/algo_build.h"

typedef struct unit {
    uint64_t off, len; /* elements of IN (and of the SCRATCH accumulator, same offsets) */
    int64_t blk;       /* >= 0: ReduceScatter(V) block blk instead (algo_blk_ref: V tables) */
} unit;

static bool scatters(const algo_op *op)
{
    return op->coll == ALGO_COLL_REDUCE_SCATTER || op->coll == ALGO_COLL_REDUCE_SCATTERV;
}

static uint32_t nunits(const algo_b *b)
{
    const algo_op *op = b->op;
    if (scatters(op))
        return b->n;
    return op->count < b->n ? (uint32_t)op->count : b->n;
}

static unit unit_at(const algo_b *b, uint32_t u)
{
    const algo_op *op = b->op;
    if (scatters(op))
        return (unit){0, 0, u};
    return (unit){algo_chunk_off(op->count, nunits(b), u), algo_chunk_len(op->count, nunits(b), u), -1};
}

/* owner's buf at unit x's first element. */
static algo_ref unit_ref(const algo_b *b, algo_buf buf, uint32_t owner, const unit *x)
{
    return x->blk >= 0 ? algo_blk_ref(b, buf, owner, (uint32_t)x->blk) : algo_b_ref(b, buf, owner, x->off);
}

static void unit_copy(algo_b *b, algo_ref dst, algo_ref src, const unit *x)
{
    if (x->blk >= 0)
        algo_b_copy_blk(b, 0, dst, src, (uint32_t)x->blk);
    else
        algo_b_copy(b, 0, dst, src, x->len);
}

static void unit_reduce(algo_b *b, algo_ref dst, algo_ref src, const unit *x)
{
    if (x->blk >= 0)
        algo_b_reduce_blk(b, 0, dst, src, NULL, (uint32_t)x->blk);
    else
        algo_b_reduce(b, 0, dst, src, x->len);
}

/* Which peers' OUT this rank writes (fetch) and which write its OUT (fetched_by), beyond the
 * ring check the prologue adds. */
static void mark_fetches(algo_b *b)
{
    uint32_t n = b->n, r = b->r, last = n - 1;
    switch (b->op->coll) {
    case ALGO_COLL_ALLREDUCE: /* n-1 -> 0, then j -> j+1: the ring neighbours */
        b->fetch[(r + 1) % n] = b->fetched_by[(r + 1) % n] = 1;
        b->fetch[(r + n - 1) % n] = b->fetched_by[(r + n - 1) % n] = 1;
        break;
    case ALGO_COLL_REDUCE:
        if (r == last)
            b->fetch[b->op->root] = 1;
        if (r == b->op->root)
            b->fetched_by[last] = 1;
        break;
    default: /* ReduceScatter(V): n-1 writes every owner's OUT */
        if (r == last)
            for (uint32_t q = 0; q < n; q++)
                b->fetch[q] = 1; /* the prologue drops q == r */
        else
            b->fetched_by[last] = 1;
        break;
    }
}

/* Rank n-1 delivers finished unit u (in its SCRATCH): a ReduceScatter block to its owner's OUT. */
static void deliver(algo_b *b, uint32_t u, const unit *x)
{
    const algo_op *op = b->op;
    uint32_t r = b->r;
    algo_ref acc = unit_ref(b, ALGO_BUF_SCRATCH, r, x);
    uint32_t to = op->coll == ALGO_COLL_ALLREDUCE ? 0 : op->coll == ALGO_COLL_REDUCE ? op->root : u;
    algo_ref dst = scatters(op) ? algo_b_ref(b, ALGO_BUF_OUT, to, 0) : unit_ref(b, ALGO_BUF_OUT, to, x);
    if (op->coll == ALGO_COLL_ALLREDUCE)
        unit_copy(b, unit_ref(b, ALGO_BUF_OUT, r, x), acc, x);
    unit_copy(b, dst, acc, x);
    if (to != r)
        algo_b_signal(b, 0, to, ALGO_SLOT_DATA);
}

/* What a rank other than n-1 does after the chain: wait for its result, forward (AllReduce). */
static void receive(algo_b *b)
{
    const algo_op *op = b->op;
    uint32_t n = b->n, r = b->r, last = n - 1, U = nunits(b);
    if (scatters(op)) {
        algo_b_wait(b, 0, last, ALGO_SLOT_DATA);
    } else if (op->coll == ALGO_COLL_REDUCE) {
        if (r == op->root)
            for (uint32_t u = 0; u < U; u++)
                algo_b_wait(b, 0, last, ALGO_SLOT_DATA);
    } else { /* AllReduce: 0 gets it from n-1, j+1 from j */
        for (uint32_t u = 0; u < U; u++) {
            unit x = unit_at(b, u);
            algo_b_wait(b, 0, r == 0 ? last : r - 1, ALGO_SLOT_DATA);
            if (r + 2 < n) {
                unit_copy(b, unit_ref(b, ALGO_BUF_OUT, r + 1, &x), unit_ref(b, ALGO_BUF_OUT, r, &x), &x);
                algo_b_signal(b, 0, r + 1, ALGO_SLOT_DATA);
            }
        }
    }
}

static void single_rank(algo_b *b)
{
    const algo_op *op = b->op;
    unit x = scatters(op) ? unit_at(b, 0) : (unit){0, op->count, -1};
    if (!op->in_place)
        unit_copy(b, algo_b_ref(b, ALGO_BUF_OUT, 0, 0), unit_ref(b, ALGO_BUF_IN, 0, &x), &x);
}

/* Ranks 1..n-1 accumulate their whole IN in SCRATCH. A need from the call's tables is declared by
 * rank 0 too: then every rank refuses a call that does not fit, none waits for the others. */
static void need_scratch(algo_b *b)
{
    if (algo_counts_symbolic(b->op->coll)) {
        b->p->vscratch = ALGO_VSCR_EXTENT;
    } else if (b->r > 0) {
        uint64_t in_elems, out_elems;
        algo_buffer_elems(b->op, &in_elems, &out_elems);
        b->p->scratch_bytes = in_elems * b->esz;
    }
}

int algo_ring_ordered_build(algo_b *b)
{
    uint32_t n = b->n, r = b->r, last = n - 1, U = nunits(b);
    if (n == 1) {
        algo_b_prologue(b);
        single_rank(b);
        return 0;
    }
    mark_fetches(b);
    algo_b_prologue(b);
    need_scratch(b);
    if (r > 0)
        algo_b_signal(b, 0, r - 1, ALGO_SLOT_READY);
    if (r < last)
        algo_b_wait(b, 0, r + 1, ALGO_SLOT_READY);
    for (uint32_t u = 0; u < U; u++) {
        unit x = unit_at(b, u);
        algo_ref in = unit_ref(b, ALGO_BUF_IN, r, &x), acc = unit_ref(b, ALGO_BUF_SCRATCH, r, &x);
        if (r > 0) {
            algo_b_wait(b, 0, r - 1, ALGO_SLOT_DATA);
            unit_reduce(b, acc, in, &x); /* acc = (x0 op ... op x(r-1)) op x_r */
        }
        if (r == last) {
            deliver(b, u, &x);
        } else {
            unit_copy(b, unit_ref(b, ALGO_BUF_SCRATCH, r + 1, &x), r > 0 ? acc : in, &x);
            algo_b_signal(b, 0, r + 1, ALGO_SLOT_DATA);
        }
    }
    if (r < last)
        receive(b);
    algo_b_epilogue(b, 0);
    return 0;
}
