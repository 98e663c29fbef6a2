/* Hierarchical Broadcast for ranks on S >= 2 servers of any sizes (hier_geo.h).
 * The buffer is split into m0 chunks (m0 = the root's server size); chunk k belongs to the rank of
 * local index k on the root's server ("owner") and, on every other server t, to the rank of local
 * index k mod m_t ("holder").
 *   1. the root copies chunk k into owner k's buffer (intra scatter);
 *   2. each chunk travels a chain of servers, owner -> holder on the next server -> ... (a COPY
 *      from the sender's own buffer into the next holder's, then a signal), so the network sends
 *      are spread over the root server's m0 ranks and no rank sends a chunk more than once;
 *   3. owners and holders copy their chunks into every local peer's buffer (intra allgather).
 * The chain visits the other servers largest first: a server of one rank holds every chunk, and
 * last in the chain it forwards none. Each plan ends with the DONE handshake (algo_b_epilogue). */
#include <stdlib.h>

#include "algos/hier_geo.h"

typedef struct bc_geo {
    uint32_t s0, m0; /* root's server and its size */
    uint32_t *order; /* [S] servers in chain order (s0 first) */
    uint32_t *pos;   /* [S] each server's place in it */
} bc_geo;

static bool bc_order(const algo_hgeo *g, uint32_t root, bc_geo *c)
{
    c->order = calloc(2 * (size_t)g->S, sizeof *c->order);
    if (!c->order)
        return false;
    c->pos = c->order + g->S;
    c->s0 = g->sid[root];
    c->m0 = g->size[c->s0];
    uint32_t k = 0;
    c->order[k++] = c->s0;
    for (uint32_t sz = algo_hgeo_max(g); sz > 0; sz--) /* the others, largest first */
        for (uint32_t t = 0; t < g->S; t++)
            if (t != c->s0 && g->size[t] == sz)
                c->order[k++] = t;
    for (uint32_t i = 0; i < g->S; i++)
        c->pos[c->order[i]] = i;
    return true;
}

/* Rank holding chunk k on the server at chain position p (ALGO_HGEO_NONE past the end). */
static uint32_t bc_at(const algo_hgeo *g, const bc_geo *c, uint32_t p, uint32_t k)
{
    if (p >= g->S)
        return ALGO_HGEO_NONE;
    uint32_t t = c->order[p];
    return algo_hgeo_rank(g, t, k % g->size[t]);
}

/* Chunk [off, off + len) into every local peer except the root. */
static void bc_spread(algo_b *b, const algo_hgeo *g, uint64_t off, uint64_t len)
{
    for (uint32_t i = 1; i < g->m; i++) {
        uint32_t q = g->local[(g->l + i) % g->m];
        if (q == b->op->root)
            continue;
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, q, off), algo_b_ref(b, ALGO_BUF_OUT, b->r, off), len);
        algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
    }
}

/* Chunks this rank holds: k = l, l + m, ... below m0 (the chain partners are fixed per chunk). */
static void bc_pairs(algo_b *b, const algo_hgeo *g, const bc_geo *c)
{
    uint32_t p = c->pos[g->si];
    algo_hgeo_pair_local(b, g);
    for (uint32_t k = g->l; k < c->m0; k += g->m) {
        if (p > 0)
            algo_hgeo_pair(b, bc_at(g, c, p - 1, k));
        algo_hgeo_pair(b, bc_at(g, c, p + 1, k));
    }
}

/* Chunk k at this rank: receive it (from the root or the previous server), forward it to the next
 * server's holder, spread it inside the server. */
static void bc_chunk(algo_b *b, const algo_hgeo *g, const bc_geo *c, uint32_t k)
{
    uint32_t p = c->pos[g->si], root = b->op->root, next = bc_at(g, c, p + 1, k);
    uint64_t off = algo_chunk_off(b->op->count, c->m0, k), len = algo_chunk_len(b->op->count, c->m0, k);
    if (p > 0)
        algo_b_wait(b, 0, bc_at(g, c, p - 1, k), ALGO_SLOT_DATA);
    else if (b->r != root)
        algo_b_wait(b, 0, root, ALGO_SLOT_DATA);
    if (next != ALGO_HGEO_NONE) {
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, next, off), algo_b_ref(b, ALGO_BUF_OUT, b->r, off), len);
        algo_b_signal(b, 0, next, ALGO_SLOT_DATA);
    }
    bc_spread(b, g, off, len);
}

int algo_hier_broadcast(algo_b *b, const algo_hgeo *g)
{
    uint32_t root = b->op->root, r = b->r;
    uint64_t cnt = b->op->count;
    bc_geo c;
    if (!bc_order(g, root, &c))
        return HAL_E_NOMEM;
    bc_pairs(b, g, &c);
    algo_b_prologue(b);
    if (r == root)
        for (uint32_t k = 0; k < c.m0; k++) { /* the buffer is IN and OUT at once */
            uint32_t q = algo_hgeo_rank(g, c.s0, k);
            if (q == root)
                continue;
            uint64_t off = algo_chunk_off(cnt, c.m0, k);
            algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, q, off), algo_b_ref(b, ALGO_BUF_IN, r, off),
                        algo_chunk_len(cnt, c.m0, k));
            algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
        }
    for (uint32_t k = g->l; k < c.m0; k += g->m)
        bc_chunk(b, g, &c, k);
    for (uint32_t k = 0; k < c.m0 && r != root; k++) /* the chunks my local peers hold */
        if (k % g->m != g->l)
            algo_b_wait(b, 0, g->local[k % g->m], ALGO_SLOT_DATA);
    algo_b_epilogue(b, 0);
    free(c.order);
    return 0;
}
