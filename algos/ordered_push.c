/* Deterministic reductions across servers ("ring_push" in deterministic mode): a chain in rank
 * order 0 -> 1 -> ... -> n-1 in which each hop only COPIES the running partial into a receive slot
 * of the next rank's SCRATCH; the receiver reduces its own IN into that slot (partial op x_r), so
 * every element is ((x0 op x1) op x2) ... op x(n-1), bit for bit what mesh and ring_ordered give.
 * Rank n-1 then delivers the result by copies: AllReduce into rank 0's OUT and on along
 * 0 -> 1 -> ... -> n-2; Reduce into the root's OUT; ReduceScatter each piece into its owner's OUT.
 *
 * Units pipeline along the chain. When the units' slots fit the scratch budget
 * (algo_topo.scratch_max) every unit has its own slot; otherwise the data is cut into more units
 * that go through two slots per rank reused with READY credits (push.h), so any count runs within
 * HCCL_BUFFSIZE. ReduceScatterV stays with ring_ordered.c (symbolic blocks, ALGO_VSCR_EXTENT). */
#include "algos/push.h"

#define OP_NBUF 2

typedef struct op_geo {
    uint64_t rounds;  /* slices of the data (AllReduce/Reduce) or of every block (ReduceScatter) */
    uint32_t per;     /* units per round: min(n, count) chunks, or the n blocks */
    uint64_t units;
    algo_pslots ps;
} op_geo;

static bool scatters(const algo_b *b)
{
    return b->op->coll == ALGO_COLL_REDUCE_SCATTER;
}

/* Unit u: IN element offset, length, and (ReduceScatter) its block and offset in the owner's OUT. */
typedef struct op_unit {
    uint64_t off, len, out_off;
    uint32_t blk;
} op_unit;

static op_unit unit_at(const algo_b *b, const op_geo *g, uint64_t u)
{
    uint32_t k = (uint32_t)(u / g->per), j = (uint32_t)(u % g->per);
    op_unit x = {0};
    if (scatters(b)) {
        uint64_t c = b->op->count;
        x.out_off = algo_chunk_off(c, (uint32_t)g->rounds, k);
        x.len = algo_chunk_len(c, (uint32_t)g->rounds, k);
        x.off = (uint64_t)j * c + x.out_off;
        x.blk = j;
        return x;
    }
    uint64_t c = b->op->count, so = algo_chunk_off(c, (uint32_t)g->rounds, k);
    uint64_t sl = algo_chunk_len(c, (uint32_t)g->rounds, k);
    x.off = x.out_off = so + algo_chunk_off(sl, g->per, j);
    x.len = algo_chunk_len(sl, g->per, j);
    return x;
}

static void geo_init(algo_b *b, op_geo *g)
{
    uint32_t n = b->n, nbuf;
    uint64_t c = b->op->count, elems, budget = b->topo ? b->topo->scratch_max : 0;
    g->per = scatters(b) ? n : (c < n ? (uint32_t)c : n);
    uint64_t parts = scatters(b) ? 1 : g->per;
    g->rounds = algo_push_rounds(c, parts, scatters(b) ? n : g->per, OP_NBUF, 0, b->esz, budget, &elems, &nbuf);
    g->units = g->rounds * g->per;
    g->ps = (algo_pslots){.from = b->r - 1, .to = b->r + 1, .stream = 0, .base = 0, .elems = elems, .nbuf = nbuf,
                          .total = g->units};
    if (b->r > 0) /* rank 0 only sends */
        b->p->scratch_bytes = (uint64_t)nbuf * elems * b->esz;
}

/* Which peers' OUT this rank writes (fetch) and which write its OUT (fetched_by), beyond the
 * chain neighbours. */
static void mark_fetches(algo_b *b)
{
    uint32_t n = b->n, r = b->r, last = n - 1;
    b->fetch[(r + 1) % n] = b->fetched_by[(r + 1) % n] = 1; /* chain (and last -> 0 for AllReduce) */
    b->fetch[(r + n - 1) % n] = b->fetched_by[(r + n - 1) % n] = 1;
    if (b->op->coll == ALGO_COLL_REDUCE) {
        if (r == last)
            b->fetch[b->op->root] = 1;
        if (r == b->op->root)
            b->fetched_by[last] = 1;
    } else if (scatters(b)) {
        for (uint32_t q = 0; q < n; q++) {
            if (r == last)
                b->fetch[q] = 1; /* the prologue drops q == r */
            else if (q == last)
                b->fetched_by[q] = 1;
        }
    }
}

/* Rank n-1: unit x is finished in `acc`; copy it where it belongs. */
static void deliver(algo_b *b, const op_unit *x, algo_ref acc)
{
    const algo_op *op = b->op;
    uint32_t r = b->r;
    uint32_t to = op->coll == ALGO_COLL_ALLREDUCE ? 0 : op->coll == ALGO_COLL_REDUCE ? op->root : x->blk;
    if (op->coll == ALGO_COLL_ALLREDUCE)
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r, x->off), acc, x->len);
    algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, to, x->out_off), acc, x->len);
    if (to != r)
        algo_b_signal(b, 0, to, ALGO_SLOT_DATA);
}

/* Ranks before n-1, after the chain: wait for their results (AllReduce: and forward them). */
static void receive(algo_b *b, const op_geo *g)
{
    const algo_op *op = b->op;
    uint32_t n = b->n, r = b->r, last = n - 1;
    for (uint64_t u = 0; u < g->units; u++) {
        op_unit x = unit_at(b, g, u);
        if (op->coll == ALGO_COLL_REDUCE) {
            if (r == op->root)
                algo_b_wait(b, 0, last, ALGO_SLOT_DATA);
        } else if (scatters(b)) {
            if (x.blk == r)
                algo_b_wait(b, 0, last, ALGO_SLOT_DATA);
        } else { /* AllReduce: 0 gets it from n-1, j+1 from j */
            algo_b_wait(b, 0, r == 0 ? last : r - 1, ALGO_SLOT_DATA);
            if (r + 2 < n) {
                algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r + 1, x.off), algo_b_ref(b, ALGO_BUF_OUT, r, x.off),
                            x.len);
                algo_b_signal(b, 0, r + 1, ALGO_SLOT_DATA);
            }
        }
    }
}

int algo_ordered_push_build(algo_b *b)
{
    uint32_t r = b->r, last = b->n - 1;
    if (b->op->coll != ALGO_COLL_ALLREDUCE && b->op->coll != ALGO_COLL_REDUCE && !scatters(b))
        return HAL_E_NOT_SUPPORTED;
    op_geo g;
    mark_fetches(b);
    algo_b_prologue(b);
    geo_init(b, &g);
    for (uint64_t u = 0; u < g.units; u++) {
        op_unit x = unit_at(b, &g, u);
        algo_ref in = algo_b_ref(b, ALGO_BUF_IN, r, x.off);
        if (r == 0) {
            algo_ps_send(b, &g.ps, in, x.len);
            continue;
        }
        algo_ref acc = algo_ps_recv(b, &g.ps);
        algo_b_reduce(b, 0, acc, in, x.len); /* (x0 op ... op x(r-1)) op x_r */
        if (r == last)
            deliver(b, &x, acc);
        else
            algo_ps_send(b, &g.ps, acc, x.len);
        algo_ps_release(b, &g.ps);
    }
    if (r < last)
        receive(b, &g);
    algo_b_epilogue(b, 0);
    return 0;
}
