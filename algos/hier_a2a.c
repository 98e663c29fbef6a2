/* Hierarchical AlltoAll for ranks on S >= 2 servers of any sizes (hier_geo.h): one aggregated
 * transfer per ordered pair of servers instead of m_s x m_t small ones.
 *   - blocks between ranks of one server go straight into the receiver's OUT (intra);
 *   - for each other server t, the "sender agent" of my server for t (local index t mod m_s)
 *     gathers every local rank's blocks bound for t's ranks into its SCRATCH (intra reads of the
 *     peers' IN), then copies the whole region (m_s x m_t blocks) in one COPY into the SCRATCH of
 *     t's "receiver agent" for my server (local index s mod m_t), which copies each block into
 *     its local destination's OUT.
 * The network carries the same bytes as the flat pairwise exchange, in far fewer transfers
 * (S(S-1) instead of about n^2); the price is two intra copies per remote block. Regions are
 * destination-major, so a destination's blocks from consecutive source ranks are one COPY. */
#include "algos/hier_geo.h"

/* Sender agent of server s for server t, receiver agent of t for s. */
static uint32_t agent(const algo_hgeo *g, uint32_t s, uint32_t t)
{
    return algo_hgeo_rank(g, s, t % g->size[s]);
}

/* Blocks of the region between servers s and t. */
static uint64_t region(const algo_hgeo *g, uint32_t s, uint32_t t)
{
    return (uint64_t)g->size[s] * g->size[t];
}

/* Incoming regions of receiver agent `a` (on server t), in source-server order: the offset (in
 * blocks) of source server s's, or with s == S the total. */
static uint64_t in_off(const algo_hgeo *g, uint32_t a, uint32_t s)
{
    uint32_t t = g->sid[a];
    uint64_t off = 0;
    for (uint32_t x = 0; x < s && x < g->S; x++)
        if (x != t && agent(g, t, x) == a)
            off += region(g, x, t);
    return off;
}

/* Destination-major slot of (source local k on s, destination local kd on t) in a region. */
static uint64_t slot(const algo_hgeo *g, uint32_t s, uint32_t k, uint32_t kd)
{
    return (uint64_t)kd * g->size[s] + k;
}

static void pairs(algo_b *b, const algo_hgeo *g)
{
    algo_hgeo_pair_local(b, g);
    for (uint32_t t = 0; t < g->S; t++)
        if (t != g->si && agent(g, g->si, t) == b->r) /* I send to and receive from t's agent */
            algo_hgeo_pair(b, agent(g, t, g->si));
}

/* Gathers my server's blocks for server t into my SCRATCH at `base` (blocks), sends the region. */
static void send_region(algo_b *b, const algo_hgeo *g, uint32_t t, uint64_t base)
{
    uint32_t s = g->si, dst = agent(g, t, s);
    uint64_t c = b->op->count;
    for (uint32_t k = 0; k < g->size[s]; k++) {
        uint32_t p = algo_hgeo_rank(g, s, k);
        for (uint32_t kd = 0; kd < g->size[t]; kd++) {
            uint32_t d = algo_hgeo_rank(g, t, kd);
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, (base + slot(g, s, k, kd)) * c),
                        algo_b_ref(b, ALGO_BUF_IN, p, (uint64_t)d * c), c);
        }
    }
    algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, dst, in_off(g, dst, s) * c),
                algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, base * c), region(g, s, t) * c);
    algo_b_signal(b, 0, dst, ALGO_SLOT_DATA);
}

/* Copies the region from server s (at `base` blocks in my SCRATCH) into my server's OUTs. */
static void recv_region(algo_b *b, const algo_hgeo *g, uint32_t s, uint64_t base)
{
    uint32_t t = g->si;
    uint64_t c = b->op->count;
    algo_b_wait(b, 0, agent(g, s, t), ALGO_SLOT_DATA);
    for (uint32_t kd = 0; kd < g->size[t]; kd++) {
        uint32_t d = algo_hgeo_rank(g, t, kd);
        for (uint32_t k = 0; k < g->size[s];) { /* runs of consecutive source ranks: one COPY */
            uint32_t e = k + 1, src = algo_hgeo_rank(g, s, k);
            while (e < g->size[s] && algo_hgeo_rank(g, s, e) == src + (e - k))
                e++;
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, d, (uint64_t)src * c),
                        algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, (base + slot(g, s, k, kd)) * c), (uint64_t)(e - k) * c);
            k = e;
        }
        if (d != b->r)
            algo_b_signal(b, 0, d, ALGO_SLOT_DATA);
    }
}

int algo_hier_alltoall(algo_b *b, const algo_hgeo *g)
{
    uint32_t r = b->r, s = g->si, S = g->S;
    uint64_t c = b->op->count, in_total = in_off(g, r, S), out = in_total;
    pairs(b, g);
    algo_b_prologue(b);
    for (uint32_t i = 0; i < g->m; i++) { /* my blocks for my own server, me first */
        uint32_t q = g->local[(g->l + i) % g->m];
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, q, (uint64_t)r * c), algo_b_ref(b, ALGO_BUF_IN, r, (uint64_t)q * c), c);
        if (q != r)
            algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
    }
    for (uint32_t d = 1; d < S; d++) {
        uint32_t t = (s + d) % S;
        if (agent(g, s, t) != r)
            continue;
        send_region(b, g, t, out);
        out += region(g, s, t);
    }
    for (uint32_t d = 1; d < S; d++) {
        uint32_t x = (s + S - d) % S;
        if (agent(g, s, x) == r)
            recv_region(b, g, x, in_off(g, r, x));
    }
    b->p->scratch_bytes = out * c * b->esz;
    for (uint32_t i = 1; i < g->m; i++) { /* each local peer: its direct block, then its regions */
        uint32_t q = g->local[(g->l + i) % g->m];
        algo_b_wait(b, 0, q, ALGO_SLOT_DATA);
        for (uint32_t x = 0; x < S; x++)
            if (x != s && agent(g, s, x) == q)
                algo_b_wait(b, 0, q, ALGO_SLOT_DATA);
    }
    algo_b_epilogue(b, 0);
    return 0;
}
