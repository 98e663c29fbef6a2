/* Deterministic reductions across servers ("ring_push" in deterministic mode): a chain in rank
 * order 0 -> 1 -> ... -> n-1 in which each hop only COPIES the running partial into a receive slot
 * of the next rank's SCRATCH; the receiver reduces its own IN into that slot (partial op x_r), so
 * every element is ((x0 op x1) op x2) ... op x(n-1), bit for bit what mesh and ring_ordered give.
 * Rank n-1 then delivers the result by copies: AllReduce into rank 0's OUT and on along
 * 0 -> 1 -> ... -> n-2; Reduce into the root's OUT; ReduceScatter each piece into its owner's OUT.
 *
 * Units pipeline along the chain. When the units' slots fit the scratch budget
 * (algo_topo.scratch_max) every unit has its own slots; otherwise the data is cut into more units
 * that go through two slots of each kind per rank (receive, accumulator, stage) reused with
 * credits (push.h), so any count runs within HCCL_BUFFSIZE. A rank forwards the partial from its
 * accumulator, never from a slot its left neighbour may refill; rank n-1 delivers Reduce and
 * ReduceScatter results from stage slots that the receiver ACKs on its slave stream 1.
 * ReduceScatterV stays with ring_ordered.c (symbolic blocks, ALGO_VSCR_EXTENT). */
#include "algos/push.h"

#define OP_NBUF 2

typedef struct op_geo {
    uint64_t rounds;  /* slices of the data (AllReduce/Reduce) or of every block (ReduceScatter) */
    uint32_t per;     /* units per round: min(n, count) chunks, or the n blocks */
    uint64_t units;
    algo_pslots ps;
    uint64_t stage;   /* element offset of rank n-1's stage slots */
    uint64_t ndlv;    /* deliveries to ranks other than n-1 (Reduce, ReduceScatter) */
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

/* Who gets unit x's result: rank 0 first (AllReduce), the root, or the block's owner. */
static uint32_t owner(const algo_b *b, const op_unit *x)
{
    const algo_op *op = b->op;
    return op->coll == ALGO_COLL_ALLREDUCE ? 0 : op->coll == ALGO_COLL_REDUCE ? op->root : x->blk;
}

static void geo_init(algo_b *b, op_geo *g)
{
    uint32_t n = b->n, nbuf;
    uint64_t c = b->op->count, elems, budget = algo_b_budget(b);
    g->per = scatters(b) ? n : (c < n ? (uint32_t)c : n);
    uint64_t parts = scatters(b) ? 1 : g->per;
    g->rounds = algo_push_rounds(c, parts, scatters(b) ? n : g->per, OP_NBUF, 3, b->esz, budget, &elems, &nbuf);
    g->units = g->rounds * g->per;
    g->ps = (algo_pslots){.from = b->r - 1, .to = b->r + 1, .stream = 0, .base = 0, .elems = elems,
                          .acc = (uint64_t)nbuf * elems, .nbuf = nbuf, .total = g->units};
    g->stage = 2 * (uint64_t)nbuf * elems;
    g->ndlv = 0;
    for (uint64_t u = 0; b->op->coll != ALGO_COLL_ALLREDUCE && u < g->units; u++) {
        op_unit x = unit_at(b, g, u);
        g->ndlv += owner(b, &x) != n - 1;
    }
    if (b->r > 0) /* rank 0 only sends */
        b->p->scratch_bytes = (uint64_t)nbuf * 3 * elems * b->esz;
    b->p->nslots = ALGO_PUSH_NSLOTS;
}

/* Which peers' OUT this rank writes (fetch) and which write its OUT (fetched_by), beyond the
 * chain neighbours. */
static void mark_fetches(algo_b *b)
{
    uint32_t n = b->n, r = b->r, last = n - 1;
    algo_b_ring_neighbours(b); /* chain (and last -> 0 for AllReduce) */
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

/* Rank n-1: unit x's partial arrived in slot `in`; reduce my IN into it and deliver the result
 * (*d: deliveries to other ranks so far, each through stage slot d % nbuf). */
static void deliver(algo_b *b, op_geo *g, const op_unit *x, algo_ref in, uint64_t *d)
{
    uint32_t r = b->r, to = owner(b, x);
    algo_ref mine = algo_b_ref(b, ALGO_BUF_IN, r, x->off);
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, r, b->op->coll == ALGO_COLL_ALLREDUCE ? x->off : x->out_off);
    if (b->op->coll == ALGO_COLL_ALLREDUCE || to == r) { /* my OUT: written once, a safe source */
        if (b->op->in_place) { /* OUT is my IN: the partial first, then x_r, so through the slot */
            algo_b_reduce(b, 0, in, mine, x->len);
            algo_b_copy(b, 0, out, in, x->len);
        } else {
            algo_b_reduce3(b, 0, out, in, mine, x->len);
        }
        algo_ps_release(b, &g->ps);
        if (to != r) {
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, to, x->off), out, x->len);
            algo_b_signal(b, 0, to, ALGO_SLOT_DATA);
        }
        return;
    }
    if (*d >= g->ps.nbuf) { /* the stage slot's last delivery must have landed: its receiver ACKs */
        /* Reduce: every delivery goes to the root; ReduceScatter: round k delivers blocks 0..n-2 */
        uint32_t prev = scatters(b) ? (uint32_t)((*d - g->ps.nbuf) % (b->n - 1)) : b->op->root;
        algo_b_wait(b, 0, prev, ALGO_SLOT_ACK);
    }
    algo_ref stage = algo_b_ref(b, ALGO_BUF_SCRATCH, r, g->stage + (*d % g->ps.nbuf) * g->ps.elems);
    algo_b_reduce3(b, 0, stage, in, mine, x->len);
    algo_ps_release(b, &g->ps);
    algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, to, x->out_off), stage, x->len);
    algo_b_signal(b, 0, to, ALGO_SLOT_DLV);
    (*d)++;
}

/* Reduce / ReduceScatter, a rank other than n-1 on slave stream 1: its deliveries, each ACKed
 * when rank n-1 will reuse its stage slot. */
static bool take_deliveries(algo_b *b, const op_geo *g)
{
    uint32_t r = b->r, last = b->n - 1;
    bool any = false;
    for (uint64_t u = 0, d = 0; u < g->units; u++) {
        op_unit x = unit_at(b, g, u);
        if (owner(b, &x) == last)
            continue;
        if (owner(b, &x) == r) {
            if (!any)
                algo_b_fork(b, 1);
            any = true;
            algo_b_wait(b, 1, last, ALGO_SLOT_DLV);
            if (d + g->ps.nbuf < g->ndlv)
                algo_b_signal(b, 1, last, ALGO_SLOT_ACK);
        }
        d++;
    }
    return any;
}

/* AllReduce, ranks before n-1 after the chain: 0 gets the result from n-1, j+1 from j. */
static void forward(algo_b *b, const op_geo *g)
{
    uint32_t n = b->n, r = b->r, last = n - 1;
    for (uint64_t u = 0; u < g->units; u++) {
        op_unit x = unit_at(b, g, u);
        algo_b_wait(b, 0, r == 0 ? last : r - 1, ALGO_SLOT_DATA);
        if (r + 2 < n) { /* my OUT unit is final: a safe source */
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, r + 1, x.off), algo_b_ref(b, ALGO_BUF_OUT, r, x.off), x.len);
            algo_b_signal(b, 0, r + 1, ALGO_SLOT_DATA);
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
    bool joined = r == last || b->op->coll == ALGO_COLL_ALLREDUCE || !take_deliveries(b, &g);
    uint64_t d = 0;
    for (uint64_t u = 0; u < g.units; u++) {
        op_unit x = unit_at(b, &g, u);
        algo_ref mine = algo_b_ref(b, ALGO_BUF_IN, r, x.off);
        if (r == 0) {
            algo_ps_send(b, &g.ps, mine, x.len);
            continue;
        }
        algo_ref in = algo_ps_recv(b, &g.ps);
        if (r == last) {
            deliver(b, &g, &x, in, &d);
            continue;
        }
        algo_ref acc = algo_ps_acc(b, &g.ps);
        algo_b_reduce3(b, 0, acc, in, mine, x.len); /* (x0 op ... op x(r-1)) op x_r */
        algo_ps_release(b, &g.ps);
        algo_ps_send(b, &g.ps, acc, x.len);
    }
    if (r < last && b->op->coll == ALGO_COLL_ALLREDUCE)
        forward(b, &g);
    if (!joined)
        algo_b_join(b, 1);
    algo_b_epilogue(b, 0);
    return 0;
}
