/* Hierarchical plans that only gather or scatter data: AllGather(V) and Scatter, for
 * ranks on S >= 2 servers of any sizes (hier_geo.h). Each element crosses to each other server
 * once; inside a server a rank that received it passes it on (intra copies, the fast path).
 * Across servers every step is a COPY from the executing rank's own memory into a peer's OUT or
 * SCRATCH (verify_links.c). Each plan ends with the DONE handshake (algo_b_epilogue) with every
 * rank it is paired with, so no access to a rank's buffers outlives its call. */
#include "algos/hier_geo.h"

/* ---- AllGather(V) --------------------------------------------------------------------------
 * 1. every rank writes its block into the OUT of each local peer and of one rank per other
 *    server: the rank whose local index is mine modulo that server's size ("target");
 * 2. a rank that received a remote block copies it into the OUT of each of its local peers.
 * Across servers: (S-1) blocks per rank, the minimum; the flat ring moves n-1 blocks over each
 * server boundary. V blocks are symbolic (algo_blk_ref), so one plan serves every count table. */

static uint32_t ag_target(const algo_hgeo *g, uint32_t j, uint32_t t)
{
    return algo_hgeo_rank(g, t, g->lidx[j] % g->size[t]);
}

/* Remote blocks rank q relays inside its server (q's server's ranks receive them from q). */
static uint32_t ag_relayed_by(const algo_hgeo *g, uint32_t q)
{
    uint32_t cnt = 0;
    for (uint32_t j = 0; j < g->n; j++)
        cnt += g->sid[j] != g->sid[q] && ag_target(g, j, g->sid[q]) == q;
    return cnt;
}

static void ag_pairs(algo_b *b, const algo_hgeo *g)
{
    algo_hgeo_pair_local(b, g);
    for (uint32_t t = 0; t < g->S; t++)
        if (t != g->si)
            algo_hgeo_pair(b, ag_target(g, b->r, t));
    for (uint32_t j = 0; j < g->n; j++)
        if (g->sid[j] != g->si && ag_target(g, j, g->si) == b->r)
            algo_hgeo_pair(b, j);
}

int algo_hier_allgather(algo_b *b, const algo_hgeo *g)
{
    uint32_t r = b->r;
    ag_pairs(b, g);
    algo_b_prologue(b);
    algo_ref in = algo_b_ref(b, ALGO_BUF_IN, r, 0); /* in place, IN is my block of OUT */
    if (!b->op->in_place)
        algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_OUT, r, r), in, r);
    for (uint32_t k = 1; k < g->m; k++) {
        uint32_t q = g->local[(g->l + k) % g->m];
        algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_OUT, q, r), in, r);
        algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
    }
    for (uint32_t d = 1; d < g->S; d++) {
        uint32_t tg = ag_target(g, r, (g->si + d) % g->S);
        algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_OUT, tg, r), in, r);
        algo_b_signal(b, 0, tg, ALGO_SLOT_DATA);
    }
    for (uint32_t d = 1; d < g->S; d++) { /* relays, server by server */
        uint32_t t = (g->si + d) % g->S;
        for (uint32_t k = 0; k < g->size[t]; k++) {
            uint32_t j = algo_hgeo_rank(g, t, k);
            if (ag_target(g, j, g->si) != r)
                continue;
            algo_b_wait(b, 0, j, ALGO_SLOT_DATA);
            for (uint32_t i = 1; i < g->m; i++) {
                uint32_t q = g->local[(g->l + i) % g->m];
                algo_b_copy_blk(b, 0, algo_blk_ref(b, ALGO_BUF_OUT, q, j), algo_blk_ref(b, ALGO_BUF_OUT, r, j), j);
                algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
            }
        }
    }
    for (uint32_t k = 0; k < g->m; k++) { /* local peers: their own block, then what they relay */
        uint32_t q = g->local[k];
        for (uint32_t c = q == r ? 0 : 1 + ag_relayed_by(g, q); c > 0; c--)
            algo_b_wait(b, 0, q, ALGO_SLOT_DATA);
    }
    algo_b_epilogue(b, 0);
    return 0;
}

/* ---- Scatter --------------------------------------------------------------------------------
 * The root writes its local peers' blocks straight into their OUT; for every other server it
 * writes all of that server's blocks into the leader's SCRATCH, slot k for local index k, one
 * COPY per run of consecutive ranks (one per server when servers hold consecutive ranks), and
 * one signal; the leader copies them into its own and its local peers' OUT. The network carries
 * each block once, like the flat direct scatter, but in one transfer per server instead of one
 * per rank. */

static void sc_root(algo_b *b, const algo_hgeo *g)
{
    uint32_t root = b->op->root, r = b->r, s0 = g->sid[root];
    uint64_t c = b->op->count;
    for (uint32_t k = 0; k < g->m; k++) { /* my own server: direct */
        uint32_t q = g->local[k];
        if (q == root && b->op->in_place)
            continue; /* root's OUT is its block of IN */
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, q, 0), algo_b_ref(b, ALGO_BUF_IN, r, algo_blk_off(b->op, q)), c);
        if (q != root)
            algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
    }
    for (uint32_t d = 1; d < g->S; d++) {
        uint32_t t = (s0 + d) % g->S, lead = algo_hgeo_rank(g, t, 0);
        for (uint32_t k = 0; k < g->size[t];) {
            uint32_t e = k + 1, q = algo_hgeo_rank(g, t, k);
            while (e < g->size[t] && algo_hgeo_rank(g, t, e) == q + (e - k))
                e++;
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, lead, (uint64_t)k * c),
                        algo_b_ref(b, ALGO_BUF_IN, r, algo_blk_off(b->op, q)), (uint64_t)(e - k) * c);
            k = e;
        }
        algo_b_signal(b, 0, lead, ALGO_SLOT_DATA);
    }
}

int algo_hier_scatter(algo_b *b, const algo_hgeo *g)
{
    uint32_t root = b->op->root, r = b->r, s0 = g->sid[root];
    uint64_t c = b->op->count;
    algo_hgeo_pair_local(b, g);
    if (r == root)
        for (uint32_t t = 0; t < g->S; t++)
            algo_hgeo_pair(b, algo_hgeo_rank(g, t, 0));
    else if (g->l == 0)
        algo_hgeo_pair(b, root);
    algo_b_prologue(b);
    if (r == root) {
        sc_root(b, g);
    } else if (g->si == s0 || g->l != 0) {
        algo_b_wait(b, 0, g->si == s0 ? root : g->local[0], ALGO_SLOT_DATA);
    } else { /* a leader of another server */
        b->p->scratch_bytes = (uint64_t)g->m * c * b->esz;
        algo_b_wait(b, 0, root, ALGO_SLOT_DATA);
        for (uint32_t k = 0; k < g->m; k++) {
            uint32_t q = g->local[k];
            algo_ref slot = algo_b_ref(b, ALGO_BUF_SCRATCH, r, (uint64_t)k * c);
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, q, 0), slot, c);
            if (q != r)
                algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
        }
    }
    algo_b_epilogue(b, 0);
    return 0;
}
