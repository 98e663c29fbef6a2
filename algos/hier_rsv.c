/* Hierarchical ReduceScatterV for ranks on S >= 2 servers of any sizes (hier_geo.h), one plan for
 * every count table (blocks are symbolic V-table entries, algo_blk_ref).
 * Block j (on server t) is summed along a chain of the other servers t+1, t+2, ..., t-1: on each,
 * j's agent (local index lidx(j) mod m_s) adds its server's ranks' IN block j into the partial in
 * its SCRATCH and copies it on into the next agent's SCRATCH (the last: into j's); j adds its own
 * server's contributions into OUT. Every partial lives at the block's own displacement in SCRATCH
 * (laid out like IN, ALGO_VSCR_EXTENT, as ring_push's ReduceScatterV), so no slot arithmetic on
 * counts is needed. Network: (S-1) blocks per rank, the minimum.
 * Deadlock-free and signal order consistent: every rank does its hops in order of chain position
 * (a hop at position p waits only on hops at p-1), blocks in rank order within a position. */
#include "algos/hier_geo.h"

/* Position of server s in block j's chain (0..S-2), j not on s. */
static uint32_t chain_pos(const algo_hgeo *g, uint32_t s, uint32_t j)
{
    return algo_mod((int64_t)s - g->sid[j] - 1, g->S);
}

static uint32_t agent(const algo_hgeo *g, uint32_t s, uint32_t j)
{
    return algo_hgeo_rank(g, s, g->lidx[j] % g->size[s]);
}

/* Where block j goes after server s: the next server's agent, or j after the last. */
static uint32_t chain_next(const algo_hgeo *g, uint32_t s, uint32_t j)
{
    return chain_pos(g, s, j) + 2 == g->S ? j : agent(g, (s + 1) % g->S, j);
}

static void pairs(algo_b *b, const algo_hgeo *g)
{
    uint32_t s = g->si, S = g->S;
    algo_hgeo_pair_local(b, g);
    for (uint32_t j = 0; j < g->n; j++) {
        if (g->sid[j] == s || agent(g, s, j) != b->r)
            continue;
        if (chain_pos(g, s, j) > 0)
            algo_hgeo_pair(b, agent(g, (s + S - 1) % S, j));
        algo_hgeo_pair(b, chain_next(g, s, j));
    }
    algo_hgeo_pair(b, agent(g, (s + S - 1) % S, b->r)); /* the last agent of my own block */
}

/* dst (block j) op= every local rank's IN block j; `first`: dst = mine op a peer's first. */
static void add_local(algo_b *b, const algo_hgeo *g, algo_ref dst, uint32_t j, bool first, bool skip_me)
{
    for (uint32_t i = 0; i < g->m; i++) {
        uint32_t q = g->local[(g->l + i) % g->m];
        if (q == b->r && (skip_me || first))
            continue;
        algo_ref theirs = algo_blk_ref(b, ALGO_BUF_IN, q, j);
        if (first) {
            algo_ref mine = algo_blk_ref(b, ALGO_BUF_IN, b->r, j);
            algo_b_reduce_blk(b, 0, dst, mine, &theirs, j);
            first = false;
        } else {
            algo_b_reduce_blk(b, 0, dst, theirs, NULL, j);
        }
    }
}

/* One hop of block j's chain at this rank (position p). */
static void hop(algo_b *b, const algo_hgeo *g, uint32_t j, uint32_t p)
{
    uint32_t s = g->si, S = g->S, next = chain_next(g, s, j);
    algo_ref part = algo_blk_ref(b, ALGO_BUF_SCRATCH, b->r, j);
    if (p == 0 && g->m == 1) {
        part = algo_blk_ref(b, ALGO_BUF_IN, b->r, j); /* alone: my IN is the partial */
    } else if (p == 0) {
        add_local(b, g, part, j, true, false);
    } else {
        algo_b_wait(b, 0, agent(g, (s + S - 1) % S, j), ALGO_SLOT_DATA);
        add_local(b, g, part, j, false, false);
    }
    algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_SCRATCH, next, j), part, j);
    algo_b_signal(b, 0, next, ALGO_SLOT_DATA);
}

int algo_hier_reduce_scatterv(algo_b *b, const algo_hgeo *g)
{
    uint32_t r = b->r, s = g->si, S = g->S;
    pairs(b, g);
    algo_b_prologue(b);
    b->p->vscratch = ALGO_VSCR_EXTENT;
    for (uint32_t p = 0; p + 1 < S; p++)
        for (uint32_t j = 0; j < g->n; j++)
            if (g->sid[j] != s && chain_pos(g, s, j) == p && agent(g, s, j) == r)
                hop(b, g, j, p);
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, r, 0), got = algo_blk_ref(b, ALGO_BUF_SCRATCH, r, r);
    algo_b_wait(b, 0, agent(g, (s + S - 1) % S, r), ALGO_SLOT_DATA);
    if (b->op->in_place) { /* OUT is my block of IN: my term is in it */
        algo_b_reduce_blk(b, 0, out, got, NULL, r);
    } else {
        algo_ref mine = algo_blk_ref(b, ALGO_BUF_IN, r, r);
        algo_b_reduce_blk(b, 0, out, got, &mine, r);
    }
    add_local(b, g, out, r, false, true);
    algo_b_epilogue(b, 0);
    return 0;
}
