/* Ring with receive-side reduction ("ring_push"): the ring for ranks on several servers, where a
 * rank can only write into a peer's memory over a link, never reduce into it or read it. Every
 * step copies a partial result into a receive slot of the right neighbour's SCRATCH and signals;
 * the neighbour reduces it locally with its own data. The gathering phases copy finished chunks
 * into the neighbour's OUT. So every cross-rank step is a COPY into a peer's SCRATCH or OUT, which
 * runtime/net carries as a one-sided write.
 *
 * Reduce-scatter chain (shared): at step s rank r sends chunk j = r-1-s; for s > 0 that is the
 * chunk it received at step s-1 (from its left neighbour), reduced with its own contribution.
 * After n-1 steps rank r holds chunk r reduced over every rank.
 *
 * Scratch budget (push.h): one round when n-1 receive slots of a chunk fit algo_topo.scratch_max;
 * otherwise the data is cut into rounds (slices of n chunks) that run the whole chain one after
 * the other, through two receive slots reused with READY credits. Deterministic mode goes to the
 * rank-ordered chain (ordered_push.c). ReduceScatterV keeps its count-independent plan (scratch
 * laid out like IN, ALGO_VSCR_EXTENT): a call that does not fit fails with HCCL_E_MEMORY.
 *
 * Scratch reuse across calls: a rank first writes its right neighbour's scratch after FETCHing
 * it, i.e. after the neighbour started this call (so finished reading its scratch for the last). */
#include "algos/push.h"

#define LEFT(b) (((b)->r + (b)->n - 1) % (b)->n)
#define RIGHT(b) (((b)->r + 1) % (b)->n)
#define RP_NBUF 2 /* receive slots when chunked: double buffering */


/* The geometry of one plan: `rounds` slices of the per-chunk data `span` (AllReduce/Reduce: the
 * buffer, n chunks per round; ReduceScatter: each block, one sub-range of every block per round).
 * SCRATCH: nbuf receive slots, then (RS, Reduce) nbuf accumulators, then (Reduce) nbuf stage slots. */
typedef struct rp_geo {
    uint64_t span, rounds;
    bool blocks;         /* ReduceScatter: chunk j is block j's sub-range */
    algo_pslots ps;
    uint64_t stage;      /* element offset of the stage slots (Reduce) */
} rp_geo;

/* Chunk j of round k: element offset into IN-shaped data and length. */
static uint64_t chunk_off(const algo_b *b, const rp_geo *g, uint64_t k, uint32_t j)
{
    uint64_t so = algo_chunk_off(g->span, (uint32_t)g->rounds, (uint32_t)k);
    if (g->blocks)
        return (uint64_t)j * b->op->count + so;
    return so + algo_chunk_off(algo_chunk_len(g->span, (uint32_t)g->rounds, (uint32_t)k), b->n, j);
}

static uint64_t chunk_len(const algo_b *b, const rp_geo *g, uint64_t k, uint32_t j)
{
    uint64_t sl = algo_chunk_len(g->span, (uint32_t)g->rounds, (uint32_t)k);
    return g->blocks ? sl : algo_chunk_len(sl, b->n, j);
}

/* Sets the rounds and slots; mult: kinds of slot (receive, accumulator, stage). */
static void geo_init(algo_b *b, rp_geo *g, uint64_t span, bool blocks, uint32_t mult)
{
    uint32_t n = b->n, nbuf;
    uint64_t elems, parts = blocks ? 1 : n;
    g->span = span;
    g->blocks = blocks;
    g->rounds = algo_push_rounds(span, parts, n - 1, RP_NBUF < n - 1 ? RP_NBUF : n - 1, mult, b->esz, algo_b_budget(b),
                                 &elems, &nbuf);
    g->ps = (algo_pslots){.from = LEFT(b), .to = RIGHT(b), .stream = 0, .base = 0, .elems = elems,
                          .acc = (uint64_t)nbuf * elems, .nbuf = nbuf, .total = g->rounds * (n - 1)};
    g->stage = 2 * (uint64_t)nbuf * elems;
    b->p->scratch_bytes = (uint64_t)nbuf * mult * elems * b->esz;
    b->p->nslots = ALGO_PUSH_NSLOTS;
}

/* The reduce-scatter chain of round k. src: my contribution (IN, or OUT for AllReduce, which
 * then accumulates in place and sends from there); otherwise partials go through the accumulator
 * slots, and the last step leaves chunk r in *last. */
static void chain(algo_b *b, rp_geo *g, uint64_t k, algo_buf src, bool acc_is_src, algo_ref last)
{
    uint32_t n = b->n, r = b->r;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t j = algo_mod((int64_t)r - 1 - s, n); /* the chunk sent at step s (s = n-1: chunk r, kept) */
        uint64_t len = chunk_len(b, g, k, j);
        algo_ref cur = algo_b_ref(b, src, r, chunk_off(b, g, k, j));
        if (s > 0) {
            algo_ref in = algo_ps_recv(b, &g->ps); /* chunk j's partial from my left */
            if (acc_is_src) {
                algo_b_reduce(b, 0, cur, in, len);
            } else if (s + 1 == n && b->op->in_place && last.buf != ALGO_BUF_SCRATCH) {
                algo_b_reduce(b, 0, last, in, len); /* `last` is my IN chunk r itself */
            } else {
                algo_ref acc = s + 1 == n ? last : algo_ps_acc(b, &g->ps);
                algo_b_reduce3(b, 0, acc, in, cur, len);
                cur = acc;
            }
            algo_ps_release(b, &g->ps);
        }
        if (s + 1 < n)
            algo_ps_send(b, &g->ps, cur, len);
    }
}

static void rp_allreduce(algo_b *b)
{
    uint32_t n = b->n, r = b->r, R = RIGHT(b), Lf = LEFT(b);
    uint64_t c = b->op->count;
    algo_b_ring_neighbours(b);
    algo_b_prologue(b);
    if (!b->op->in_place)
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), c);
    if (n == 1)
        return;
    rp_geo g;
    geo_init(b, &g, c, false, 1);
    for (uint64_t k = 0; k < g.rounds; k++) {
        chain(b, &g, k, ALGO_BUF_OUT, true, (algo_ref){0});
        for (uint32_t t = 0; t + 1 < n; t++) { /* allgather of the finished chunks, into R's OUT */
            uint32_t j = algo_mod((int64_t)r - t, n);
            if (t > 0)
                algo_b_wait(b, 0, Lf, ALGO_SLOT_DATA);
            algo_ref mine = algo_b_ref(b, ALGO_BUF_OUT, r, chunk_off(b, &g, k, j));
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, R, chunk_off(b, &g, k, j)), mine, chunk_len(b, &g, k, j));
            algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
        }
        algo_b_wait(b, 0, Lf, ALGO_SLOT_DATA);
    }
}

static void rp_reduce_scatter(algo_b *b)
{
    uint32_t n = b->n, r = b->r;
    algo_b_ring_neighbours(b);
    algo_b_prologue(b);
    if (n == 1) {
        if (!b->op->in_place)
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), b->op->count);
        return;
    }
    rp_geo g;
    geo_init(b, &g, b->op->count, true, 2);
    for (uint64_t k = 0; k < g.rounds; k++) { /* the last step reduces straight into OUT */
        algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, r, algo_chunk_off(g.span, (uint32_t)g.rounds, (uint32_t)k));
        chain(b, &g, k, ALGO_BUF_IN, false, out);
    }
}

/* ReduceScatterV: the same chain with symbolic blocks (one plan for every count table). A block
 * arrives in the receiver's scratch at the block's own displacement (each block arrives once per
 * call) and is reduced there in place, so the scratch is laid out like IN (ALGO_VSCR_EXTENT). Not
 * chunked: the rounds would depend on the counts, which this plan does not know. */
static void rp_reduce_scatterv(algo_b *b)
{
    uint32_t n = b->n, r = b->r, R = RIGHT(b), Lf = LEFT(b);
    algo_b_ring_neighbours(b);
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

/* Reduce: per round the chain over chunks of IN, then every rank delivers its chunk into the
 * root's OUT (the root reduces straight into it) from a stage slot, reused once the root ACKed
 * the delivery that last used it. The root takes deliveries on slave stream 1, so its own chain
 * never waits for them; its JOIN orders every write into its OUT before its end. */
static void rp_reduce(algo_b *b)
{
    uint32_t n = b->n, r = b->r, root = b->op->root;
    uint64_t c = b->op->count;
    algo_b_ring_neighbours(b);
    for (uint32_t q = 0; q < n; q++) { /* every rank writes into the root's OUT */
        if (r == root)
            b->fetched_by[q] |= q != root;
        else if (q == root)
            b->fetch[q] = 1;
    }
    algo_b_prologue(b);
    if (n == 1) {
        if (!b->op->in_place)
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, 0), algo_b_ref(b, ALGO_BUF_IN, r, 0), c);
        return;
    }
    rp_geo g;
    geo_init(b, &g, c, false, 3);
    if (r == root)
        algo_b_fork(b, 1);
    for (uint64_t k = 0; k < g.rounds; k++) {
        algo_ref dst = algo_b_ref(b, ALGO_BUF_OUT, root, chunk_off(b, &g, k, r));
        if (r == root) {
            chain(b, &g, k, ALGO_BUF_IN, false, dst);
            for (uint32_t q = 0; q < n; q++) { /* stream 1: the deliveries of round k */
                if (q == root)
                    continue;
                algo_b_wait(b, 1, q, ALGO_SLOT_DLV);
                if (k + g.ps.nbuf < g.rounds)
                    algo_b_signal(b, 1, q, ALGO_SLOT_ACK);
            }
            continue;
        }
        if (k >= g.ps.nbuf) /* stage slot k % nbuf held round k - nbuf's chunk */
            algo_b_wait(b, 0, root, ALGO_SLOT_ACK);
        algo_ref stage = algo_b_ref(b, ALGO_BUF_SCRATCH, r, g.stage + (k % g.ps.nbuf) * g.ps.elems);
        chain(b, &g, k, ALGO_BUF_IN, false, stage);
        algo_b_copy(b, 0, dst, stage, chunk_len(b, &g, k, r));
        algo_b_signal(b, 0, root, ALGO_SLOT_DLV);
    }
    if (r == root)
        algo_b_join(b, 1);
}

int algo_ring_push_build(algo_b *b)
{
    algo_coll c = b->op->coll;
    if (b->op->deterministic && b->n > 1) /* the ring's orders differ per chunk: a rank-ordered chain */
        return c == ALGO_COLL_REDUCE_SCATTERV ? algo_ring_ordered_build(b) : algo_ordered_push_build(b);
    switch (c) {
    case ALGO_COLL_ALLREDUCE: rp_allreduce(b); return 0;
    case ALGO_COLL_REDUCE_SCATTER: rp_reduce_scatter(b); return 0;
    case ALGO_COLL_REDUCE: rp_reduce(b); return 0;
    case ALGO_COLL_REDUCE_SCATTERV: rp_reduce_scatterv(b); return 0;
    default: return HAL_E_NOT_SUPPORTED;
    }
}
