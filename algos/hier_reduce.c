/* Hierarchical reductions other than AllReduce: ReduceScatter and Reduce, for ranks on S >= 2
 * servers of any sizes (hier_geo.h). Each server first reduces its ranks' contributions inside
 * the server (peers' IN is readable there), so only one partial result per server crosses the
 * network; it lands in the receiver's SCRATCH and the receiver reduces it locally (links only
 * write, verify_links.c). Plans end with the DONE handshake (algo_b_epilogue).
 * Not rank-ordered: algo_select keeps deterministic reductions on the flat ring_push. */
#include "algos/hier_geo.h"

/* dst = op over every local rank's IN at `off` (elements), `len` elements. `dst_is_mine_in`:
 * dst aliases this rank's own IN there (in place), so this rank's own term is already in it. */
static void local_sum(algo_b *b, const algo_hgeo *g, algo_ref dst, uint64_t off, uint64_t len, bool dst_is_mine_in)
{
    bool first = !dst_is_mine_in;
    for (uint32_t i = 1; i < g->m; i++) {
        uint32_t q = g->local[(g->l + i) % g->m];
        algo_ref theirs = algo_b_ref(b, ALGO_BUF_IN, q, off);
        if (first)
            algo_b_reduce3(b, 0, dst, algo_b_ref(b, ALGO_BUF_IN, b->r, off), theirs, len);
        else
            algo_b_reduce(b, 0, dst, theirs, len);
        first = false;
    }
    if (first) /* alone on my server, out of place */
        algo_b_copy(b, 0, dst, algo_b_ref(b, ALGO_BUF_IN, b->r, off), len);
}

/* Index of server s among the servers other than t (slot numbers in t's receive area). */
static uint32_t other_idx(uint32_t s, uint32_t t)
{
    return s < t ? s : s - 1;
}

/* ---- ReduceScatter --------------------------------------------------------------------------
 * Block j's partial over server s (s not j's server) is computed by j's "agent" on s, the rank
 * whose local index is j's modulo s's size, into the agent's SCRATCH (or straight from its IN
 * when alone), and copied into j's SCRATCH slot for s. j reduces its own server's ranks' block j
 * into its OUT, then each arriving partial. Network: (S-1) blocks per rank, the minimum.
 * Scratch: S-1 receive slots, then one accumulator per block this rank is agent for. */

static uint32_t rs_agent(const algo_hgeo *g, uint32_t j, uint32_t s)
{
    return algo_hgeo_rank(g, s, g->lidx[j] % g->size[s]);
}

int algo_hier_reduce_scatter(algo_b *b, const algo_hgeo *g)
{
    uint32_t r = b->r, S = g->S;
    uint64_t c = b->op->count, nacc = 0;
    algo_hgeo_pair_local(b, g);
    for (uint32_t j = 0; j < g->n; j++)
        if (g->sid[j] != g->si && (rs_agent(g, j, g->si) == r || rs_agent(g, r, g->sid[j]) == j))
            algo_hgeo_pair(b, j);
    algo_b_prologue(b);
    for (uint32_t d = 1; d < S; d++) { /* partials for the other servers' blocks */
        uint32_t t = (g->si + d) % S;
        for (uint32_t k = 0; k < g->size[t]; k++) {
            uint32_t j = algo_hgeo_rank(g, t, k);
            if (rs_agent(g, j, g->si) != r)
                continue;
            algo_ref acc = algo_b_ref(b, ALGO_BUF_IN, r, (uint64_t)j * c);
            if (g->m > 1) {
                acc = algo_b_ref(b, ALGO_BUF_SCRATCH, r, (S - 1 + nacc++) * c);
                local_sum(b, g, acc, (uint64_t)j * c, c, false);
            }
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, j, (uint64_t)other_idx(g->si, t) * c), acc, c);
            algo_b_signal(b, 0, j, ALGO_SLOT_DATA);
        }
    }
    b->p->scratch_bytes = (S - 1 + nacc) * c * b->esz;
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, r, 0);
    local_sum(b, g, out, (uint64_t)r * c, c, b->op->in_place); /* in place, OUT is my block of IN */
    for (uint32_t d = 1; d < S; d++) {
        uint32_t t = (g->si + d) % S;
        algo_b_wait(b, 0, rs_agent(g, r, t), ALGO_SLOT_DATA);
        algo_b_reduce(b, 0, out, algo_b_ref(b, ALGO_BUF_SCRATCH, r, (uint64_t)other_idx(t, g->si) * c), c);
    }
    algo_b_epilogue(b, 0);
    return 0;
}

/* ---- Reduce ---------------------------------------------------------------------------------
 * The count is split into m0 chunks (m0 = the root's server size); chunk k is finished by the
 * rank of local index k on the root's server ("owner") and, on every other server t, summed over
 * t's ranks by the rank of local index k mod m_t ("holder"), which copies it into the owner's
 * SCRATCH slot for t. The owner reduces its server's ranks' chunk k and the S-1 slots, and copies
 * the result into the root's OUT (the root does its own chunk straight in OUT). The network
 * carries (S-1) x count, into the m0 owners (not all into the root). Owner SCRATCH: S-1 slots
 * then the accumulator; holder SCRATCH: one accumulator per chunk held (none when alone). */

typedef struct rd_geo {
    uint32_t s0, m0;
    uint64_t ch; /* largest chunk (elements) */
} rd_geo;

static uint32_t rd_owner(const algo_hgeo *g, const rd_geo *c, uint32_t k)
{
    return algo_hgeo_rank(g, c->s0, k);
}

static uint32_t rd_holder(const algo_hgeo *g, uint32_t t, uint32_t k)
{
    return algo_hgeo_rank(g, t, k % g->size[t]);
}

/* A holder on another server: chunks k = l, l + m, ... summed locally, each sent to its owner. */
static void rd_holder_send(algo_b *b, const algo_hgeo *g, const rd_geo *c)
{
    uint64_t cnt = b->op->count, a = 0;
    for (uint32_t k = g->l; k < c->m0; k += g->m) {
        uint64_t off = algo_chunk_off(cnt, c->m0, k), len = algo_chunk_len(cnt, c->m0, k);
        algo_ref acc = algo_b_ref(b, ALGO_BUF_IN, b->r, off);
        if (g->m > 1) {
            acc = algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, a++ * c->ch);
            local_sum(b, g, acc, off, len, false);
        }
        uint32_t o = rd_owner(g, c, k);
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, o, (uint64_t)other_idx(g->si, c->s0) * c->ch), acc, len);
        algo_b_signal(b, 0, o, ALGO_SLOT_DATA);
    }
    b->p->scratch_bytes = a * c->ch * b->esz;
}

/* Owner of chunk l on the root's server. */
static void rd_owner_finish(algo_b *b, const algo_hgeo *g, const rd_geo *c)
{
    uint32_t r = b->r, root = b->op->root;
    uint64_t cnt = b->op->count, off = algo_chunk_off(cnt, c->m0, g->l), len = algo_chunk_len(cnt, c->m0, g->l);
    bool is_root = r == root;
    algo_ref acc = is_root ? algo_b_ref(b, ALGO_BUF_OUT, r, off)
                           : algo_b_ref(b, ALGO_BUF_SCRATCH, r, (uint64_t)(g->S - 1) * c->ch);
    b->p->scratch_bytes = (uint64_t)(g->S - (is_root ? 1 : 0)) * c->ch * b->esz;
    local_sum(b, g, acc, off, len, is_root && b->op->in_place);
    for (uint32_t d = 1; d < g->S; d++) {
        uint32_t t = (c->s0 + d) % g->S;
        algo_b_wait(b, 0, rd_holder(g, t, g->l), ALGO_SLOT_DATA);
        algo_b_reduce(b, 0, acc, algo_b_ref(b, ALGO_BUF_SCRATCH, r, (uint64_t)other_idx(t, c->s0) * c->ch), len);
    }
    if (is_root) {
        for (uint32_t k = 0; k < c->m0; k++)
            if (rd_owner(g, c, k) != r)
                algo_b_wait(b, 0, rd_owner(g, c, k), ALGO_SLOT_DATA);
        return;
    }
    algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, root, off), acc, len);
    algo_b_signal(b, 0, root, ALGO_SLOT_DATA);
}

int algo_hier_reduce(algo_b *b, const algo_hgeo *g)
{
    uint32_t root = b->op->root;
    rd_geo c = {g->sid[root], g->size[g->sid[root]], 0};
    c.ch = (b->op->count + c.m0 - 1) / c.m0;
    algo_hgeo_pair_local(b, g);
    for (uint32_t t = 0; t < g->S; t++)
        for (uint32_t k = 0; k < c.m0 && t != c.s0; k++) {
            if (rd_owner(g, &c, k) == b->r)
                algo_hgeo_pair(b, rd_holder(g, t, k));
            if (rd_holder(g, t, k) == b->r)
                algo_hgeo_pair(b, rd_owner(g, &c, k));
        }
    algo_b_prologue(b);
    if (g->si == c.s0)
        rd_owner_finish(b, g, &c);
    else
        rd_holder_send(b, g, &c);
    algo_b_epilogue(b, 0);
    return 0;
}
