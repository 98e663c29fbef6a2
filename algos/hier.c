/* Hierarchical AllReduce ("hier", HCCL's level0 / level1 scheme) for ranks on S >= 2 servers of m
 * ranks each: most bytes stay on the fast intra-server path.
 *   1. intra reduce-scatter: the rank with local index l reduces chunk l (count split m ways) of
 *      every local peer's IN into its own OUT (reads of peers' memory: same server only);
 *   2. inter allreduce of chunk l among the S ranks of local index l (one per server): the
 *      ring_push chain and allgather (only copies cross servers);
 *   3. intra allgather: chunk l copied into every local peer's OUT.
 * Each server sends 2(S-1)/S of the data across servers (the flat ring: about twice the data per
 * boundary rank). Chunk l of a peer's OUT is written only by the rank of local index l, and never
 * copied from IN by its owner (each rank initialises only its own chunk), so the phases need no
 * other ordering than the DATA signals. */
#include <stdlib.h>

#include "algos/hier_geo.h"

/* Geometry in hier_geo.c; this plan needs S >= 2 servers of equal size m. */
typedef algo_hgeo hier_geo;

static bool geo_build(const algo_b *b, hier_geo *g)
{
    bool ok = algo_hgeo_build(b->topo, b->n, b->r, g) && g->S >= 2 && algo_hgeo_equal(g);
    if (!ok)
        algo_hgeo_free(g);
    return ok;
}

bool algo_hier_fits(const algo_op *op, const algo_topo *topo)
{
    algo_b b = {.n = op->nranks, .r = 0, .topo = topo};
    hier_geo g = {0};
    bool ok = op->coll == ALGO_COLL_ALLREDUCE && geo_build(&b, &g) && g.m >= 2;
    algo_hgeo_free(&g);
    return ok;
}

/* Phase 1: OUT chunk l = sum over local ranks of their IN chunk l. */
static void intra_reduce(algo_b *b, const hier_geo *g, uint64_t off, uint64_t len)
{
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, b->r, off);
    algo_ref mine = algo_b_ref(b, ALGO_BUF_IN, b->r, off);
    bool first = true;
    for (uint32_t k = 0; k < g->m; k++) {
        uint32_t q = g->local[k];
        if (q == b->r)
            continue;
        algo_ref theirs = algo_b_ref(b, ALGO_BUF_IN, q, off);
        if (first && !b->op->in_place)
            algo_b_reduce3(b, 0, out, mine, theirs, len);
        else
            algo_b_reduce(b, 0, out, theirs, len);
        first = false;
    }
}

/* Phase 2: ring_push allreduce of [off, off + len) of OUT among the group (see ring_push.c). */
static void inter_allreduce(algo_b *b, const hier_geo *g, uint64_t off, uint64_t len)
{
    uint32_t S = g->S, i = g->si, R = g->group[(i + 1) % S], L = g->group[(i + S - 1) % S];
    uint64_t max = (len + S - 1) / S;
    b->p->scratch_bytes = (uint64_t)(S - 1) * max * b->esz;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t j = algo_mod((int64_t)i - 1 - s, S);
        uint64_t o = off + algo_chunk_off(len, S, j), n = algo_chunk_len(len, S, j);
        algo_ref cur = algo_b_ref(b, ALGO_BUF_OUT, b->r, o);
        if (s > 0) {
            algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
            algo_b_reduce(b, 0, cur, algo_b_ref(b, ALGO_BUF_SCRATCH, b->r, (uint64_t)(s - 1) * max), n);
        }
        if (s + 1 == S)
            break;
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_SCRATCH, R, (uint64_t)s * max), cur, n);
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
    for (uint32_t t = 0; t + 1 < S; t++) {
        uint32_t k = algo_mod((int64_t)i - t, S);
        uint64_t o = off + algo_chunk_off(len, S, k), n = algo_chunk_len(len, S, k);
        if (t > 0)
            algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, R, o), algo_b_ref(b, ALGO_BUF_OUT, b->r, o), n);
        algo_b_signal(b, 0, R, ALGO_SLOT_DATA);
    }
    algo_b_wait(b, 0, L, ALGO_SLOT_DATA);
}

/* Phase 3: my finished chunk into every local peer's OUT; theirs into mine. */
static void intra_gather(algo_b *b, const hier_geo *g, uint64_t off, uint64_t len)
{
    for (uint32_t k = 0; k < g->m; k++) {
        uint32_t q = g->local[(g->l + k) % g->m];
        if (q == b->r)
            continue;
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, q, off), algo_b_ref(b, ALGO_BUF_OUT, b->r, off), len);
        algo_b_signal(b, 0, q, ALGO_SLOT_DATA);
    }
    for (uint32_t k = 0; k < g->m; k++)
        if (g->local[k] != b->r)
            algo_b_wait(b, 0, g->local[k], ALGO_SLOT_DATA);
}

int algo_hier_build(algo_b *b)
{
    hier_geo g = {0};
    if (b->op->coll != ALGO_COLL_ALLREDUCE || !geo_build(b, &g)) {
        algo_hgeo_free(&g);
        return HAL_E_NOT_SUPPORTED;
    }
    uint32_t S = g.S;
    for (uint32_t k = 0; k < g.m; k++)
        if (g.local[k] != b->r)
            b->fetch[g.local[k]] = b->fetched_by[g.local[k]] = 1;
    b->fetch[g.group[(g.si + 1) % S]] = b->fetched_by[g.group[(g.si + S - 1) % S]] = 1;
    b->fetch[g.group[(g.si + S - 1) % S]] = b->fetched_by[g.group[(g.si + 1) % S]] = 1;
    algo_b_prologue(b);
    uint64_t off = algo_chunk_off(b->op->count, g.m, g.l), len = algo_chunk_len(b->op->count, g.m, g.l);
    if (g.m == 1 && !b->op->in_place)
        algo_b_copy(b, 0, algo_b_ref(b, ALGO_BUF_OUT, b->r, off), algo_b_ref(b, ALGO_BUF_IN, b->r, off), len);
    intra_reduce(b, &g, off, len);
    inter_allreduce(b, &g, off, len);
    intra_gather(b, &g, off, len);
    algo_hgeo_free(&g);
    return 0;
}
