/* Hierarchical AlltoAll for ranks on S >= 2 servers of any sizes (hier_geo.h): one network
 * transfer per (source server, destination rank) instead of one per (source rank, destination
 * rank).
 *   - blocks between ranks of one server go straight into the receiver's OUT (intra);
 *   - every rank d of another server t has an "agent" on my server s, the rank of local index
 *     lidx(d) mod m_s: it gathers every local rank's block for d into its SCRATCH (intra reads of
 *     the peers' IN), in source order, and copies them into d's OUT with one COPY per run of
 *     consecutive source ranks (one per server when servers hold consecutive ranks), then
 *     signals d.
 * The network carries the same bytes as the flat pairwise exchange, spread the same way over
 * the ranks, in m_s times fewer transfers; the price is one intra copy per remote block. */
#include "algos/hier_geo.h"

static uint32_t agent(const algo_hgeo *g, uint32_t s, uint32_t d)
{
    return algo_hgeo_rank(g, s, g->lidx[d] % g->size[s]);
}

static void pairs(algo_b *b, const algo_hgeo *g)
{
    algo_hgeo_pair_local(b, g);
    for (uint32_t d = 0; d < g->n; d++)
        if (g->sid[d] != g->si) {
            if (agent(g, g->si, d) == b->r) /* I write d's OUT */
                algo_hgeo_pair(b, d);
            if (agent(g, g->sid[d], b->r) == d) /* d writes mine */
                algo_hgeo_pair(b, d);
        }
}

/* Gathers my server's blocks for rank d into my SCRATCH at `base` (elements), sends them. */
static void send_to(algo_b *b, const algo_hgeo *g, uint32_t d, uint64_t base)
{
    uint64_t c = b->op->count;
    for (uint32_t k = 0; k < g->m; k++)
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, base + (uint64_t)k * c),
                    algo_b_ref(b, ALGO_BUF_IN, g->local[k], (uint64_t)d * c), c);
    for (uint32_t k = 0; k < g->m;) { /* runs of consecutive source ranks: one COPY each */
        uint32_t e = k + 1, src = g->local[k];
        while (e < g->m && g->local[e] == src + (e - k))
            e++;
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, d, (uint64_t)src * c),
                    algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, base + (uint64_t)k * c), (uint64_t)(e - k) * c);
        k = e;
    }
    algo_b_signal(b, 0, d, ALGO_SLOT_DATA);
}

int algo_hier_alltoall(algo_b *b, const algo_hgeo *g)
{
    uint32_t r = b->r, s = g->si, S = g->S;
    uint64_t c = b->op->count, used = 0;
    pairs(b, g);
    algo_b_prologue(b);
    for (uint32_t i = 0; i < g->m; i++) { /* my blocks for my own server, me first */
        uint32_t q = g->local[(g->l + i) % g->m];
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, q, (uint64_t)r * c), algo_b_ref(b, ALGO_BUF_IN, r, (uint64_t)q * c),
                    c);
        if (q != r)
            algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
    }
    for (uint32_t dd = 1; dd < S; dd++) { /* the other servers' ranks I am the agent for */
        uint32_t t = (s + dd) % S;
        for (uint32_t k = 0; k < g->size[t]; k++) {
            uint32_t d = algo_hgeo_rank(g, t, k);
            if (agent(g, s, d) != r)
                continue;
            send_to(b, g, d, used);
            used += (uint64_t)g->m * c;
        }
    }
    b->p->scratch_bytes = used * b->esz;
    for (uint32_t i = 1; i < g->m; i++) /* each local peer's direct block */
        algo_b_wait(b, 0, g->local[(g->l + i) % g->m], ALGO_SLOT_DATA);
    for (uint32_t dd = 1; dd < S; dd++) /* each other server's blocks, from my agent there */
        algo_b_wait(b, 0, agent(g, (s + S - dd) % S, r), ALGO_SLOT_DATA);
    algo_b_epilogue(b, 0);
    return 0;
}
