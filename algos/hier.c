/* Hierarchical AllReduce ("hier", HCCL's level0 / level1 scheme) for ranks on S >= 2 servers of m
 * ranks each: most bytes stay on the fast intra-server path. The rank of local index l owns chunk
 * l of the buffer (count split m ways), processed in C rounds of slices; per slice:
 *   1. intra reduce-scatter: it reduces its slice of every local peer's IN into its own OUT
 *      (reads of peers' memory: same server only);
 *   2. inter allreduce of the slice among the S ranks of local index l (one per server): the
 *      ring_push chain and allgather, or halving-doubling (hd_push.c) where algo_cost_inter_hd
 *      predicts fewer latencies pay (only copies cross servers), through receive slots reused
 *      with READY credits (push.h) so the scratch stays within algo_topo.scratch_max;
 *   3. it signals FIN to every local peer, which pulls the finished slice into its own OUT.
 * Pipelining: with C > 1 (the budget needs rounds, or algo_cost_hier_chunks says overlapping
 * pays) phases 1-2 run on slave stream 1 and phase 3 on slave stream 2, so stage 3 of slice c-1
 * (HCCS) overlaps stages 1-2 of slice c (net). The streams of one rank never wait on each other:
 * stream 2 waits only for peers' FIN signals, which order everything it reads.
 * Each server sends 2(S-1)/S of the data across servers (the flat ring: about twice the data per
 * boundary rank). Chunk l of a rank's OUT is written only by that rank's phases 1-2 and its group
 * peers (phase 2); other chunks only by its phase 3, after the owner's FIN (so in place, after the
 * owner read that slice of its IN). A local peer reads my OUT until its DONE; my plan ends after. */
#include <stdlib.h>

#include "algos/cost.h"
#include "algos/hd_push.h"
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

#define HIER_SLOT_FIN ALGO_SLOT_DLV /* "slice c of my chunk is final in my OUT": local peers pull it */
#define HIER_NBUF 2     /* phase-2 receive slots when chunked */

/* The plan's shape, the same on every rank (it comes from the count and the geometry only). */
typedef struct hier_plan {
    uint32_t C;        /* rounds (slices of every chunk) */
    uint32_t sA, sB;   /* streams of phases 1-2 and of phase 3 */
    bool hd;           /* phase 2 by halving-doubling (hd_push.c) instead of the ring */
    algo_pslots ps;    /* ring: phase-2 receive slots in the group */
    algo_hd hdp;       /* halving-doubling: its geometry */
} hier_plan;

/* My chunk's slice c, and local peer k's. */
static uint64_t slice_off(const algo_b *b, const hier_geo *g, uint32_t l, uint32_t C, uint32_t c)
{
    uint64_t cnt = b->op->count;
    return algo_chunk_off(cnt, g->m, l) + algo_chunk_off(algo_chunk_len(cnt, g->m, l), C, c);
}

static uint64_t slice_len(const algo_b *b, const hier_geo *g, uint32_t l, uint32_t C, uint32_t c)
{
    return algo_chunk_len(algo_chunk_len(b->op->count, g->m, l), C, c);
}

/* Phase 1: my OUT slice = the local ranks' IN slices reduced (m == 1: my IN slice). */
static void intra_reduce(algo_b *b, const hier_geo *g, uint32_t s, uint64_t off, uint64_t len)
{
    algo_ref out = algo_b_ref(b, ALGO_BUF_OUT, b->r, off);
    algo_ref mine = algo_b_ref(b, ALGO_BUF_IN, b->r, off);
    if (g->m == 1 && !b->op->in_place)
        algo_b_copy(b, s, out, mine, len);
    bool first = true;
    for (uint32_t k = 1; k < g->m; k++) {
        algo_ref theirs = algo_b_ref(b, ALGO_BUF_IN, g->local[(g->l + k) % g->m], off);
        if (first && !b->op->in_place)
            algo_b_reduce3(b, s, out, mine, theirs, len);
        else
            algo_b_reduce(b, s, out, theirs, len);
        first = false;
    }
}

/* Phase 2: ring_push allreduce of [off, off + len) of OUT among the group (see ring_push.c). */
static void inter_allreduce(algo_b *b, const hier_geo *g, hier_plan *h, uint64_t off, uint64_t len)
{
    uint32_t S = g->S, i = g->si, s = h->sA;
    for (uint32_t t = 0; t < S; t++) {
        uint32_t j = algo_mod((int64_t)i - 1 - t, S);
        uint64_t o = off + algo_chunk_off(len, S, j), n = algo_chunk_len(len, S, j);
        algo_ref cur = algo_b_ref(b, ALGO_BUF_OUT, b->r, o);
        if (t > 0) {
            algo_b_reduce(b, s, cur, algo_ps_recv(b, &h->ps), n);
            algo_ps_release(b, &h->ps);
        }
        if (t + 1 < S)
            algo_ps_send(b, &h->ps, cur, n);
    }
    for (uint32_t t = 0; t + 1 < S; t++) {
        uint32_t k = algo_mod((int64_t)i - t, S);
        uint64_t o = off + algo_chunk_off(len, S, k), n = algo_chunk_len(len, S, k);
        if (t > 0)
            algo_b_wait(b, s, h->ps.from, ALGO_SLOT_DATA);
        algo_b_copy(b, s, algo_b_ref(b, ALGO_BUF_OUT, h->ps.to, o), algo_b_ref(b, ALGO_BUF_OUT, b->r, o), n);
        algo_b_signal(b, s, h->ps.to, ALGO_SLOT_DATA);
    }
    algo_b_wait(b, s, h->ps.from, ALGO_SLOT_DATA);
}

/* Phase 3 of slice c: every local peer's finished slice, once it says FIN, into my OUT. */
static void intra_pull(algo_b *b, const hier_geo *g, const hier_plan *h, uint32_t c)
{
    for (uint32_t k = 1; k < g->m; k++) {
        uint32_t lq = (g->l + k) % g->m, q = g->local[lq];
        uint64_t o = slice_off(b, g, lq, h->C, c);
        algo_b_wait(b, h->sB, q, HIER_SLOT_FIN);
        algo_b_copy(b, h->sB, algo_b_ref(b, ALGO_BUF_OUT, b->r, o), algo_b_ref(b, ALGO_BUF_OUT, q, o),
                    slice_len(b, g, lq, h->C, c));
    }
}

static void signal_local(algo_b *b, const hier_geo *g, uint32_t s, uint32_t slot)
{
    for (uint32_t k = 1; k < g->m; k++)
        algo_b_signal(b, s, g->local[(g->l + k) % g->m], slot);
}

/* Fewest rounds whose halving-doubling slots fit the budget (slices of at most ceil(per / C)). */
static uint64_t hd_rounds(uint64_t per, uint32_t S, uint64_t esz, uint64_t budget)
{
    uint64_t C = 1;
    if (!budget || per == 0)
        return 1;
    uint64_t need = algo_hd_scratch_elems(per, S) * esz;
    if (need > budget)
        C = (need + budget - 1) / budget;
    while (C < per && algo_hd_scratch_elems((per + C - 1) / C, S) * esz > budget)
        C++;
    return C;
}

/* Rounds (budget and pipelining), the inter-stage algorithm and its slots. */
static void plan_shape(algo_b *b, const hier_geo *g, hier_plan *h)
{
    uint32_t S = g->S, nbuf, nchunked = HIER_NBUF < S - 1 ? HIER_NBUF : S - 1;
    uint64_t per = (b->op->count + g->m - 1) / g->m, elems, budget = algo_b_budget(b);
    uint32_t pipe = g->m > 1 ? algo_cost_hier_chunks(NULL, b->op->count * b->esz, S, g->m) : 1;
    uint64_t C = algo_push_rounds(per, S, S - 1, nchunked, 1, b->esz, budget, &elems, &nbuf);
    if (pipe > C) { /* more, smaller slices than the budget needs: they fit a fortiori */
        C = pipe;
        elems = ((per + C - 1) / C + S - 1) / S;
        nbuf = nchunked;
    }
    uint64_t Chd = hd_rounds(per, S, b->esz, budget);
    Chd = Chd > pipe ? Chd : pipe;
    h->hd = algo_cost_inter_hd(NULL, (per + Chd - 1) / Chd * b->esz, S, Chd, (per + C - 1) / C * b->esz, C);
    if (h->hd)
        C = Chd;
    h->C = (uint32_t)C;
    h->sA = h->sB = 0;
    if (h->C > 1 && g->m > 1) {
        h->sA = 1;
        h->sB = 2;
    }
    h->ps = (algo_pslots){.from = g->group[(g->si + S - 1) % S], .to = g->group[(g->si + 1) % S], .stream = h->sA,
                          .base = 0, .elems = elems ? elems : 1, .nbuf = nbuf, .total = (uint64_t)h->C * (S - 1)};
    h->hdp = (algo_hd){.group = g->group, .S = S, .i = g->si, .stream = h->sA, .base = 0,
                       .maxlen = (per + h->C - 1) / h->C, .round = 0, .rounds = h->C};
    b->p->scratch_bytes = h->hd ? algo_hd_scratch_elems(h->hdp.maxlen, S) * b->esz
                                : (uint64_t)nbuf * h->ps.elems * b->esz;
}

/* The rounds: phases 1-2 of every slice, FIN, and (one stream) the pull of each slice right after. */
static void hier_body(algo_b *b, const hier_geo *g, hier_plan *h)
{
    if (h->sA)
        algo_b_fork(b, h->sA);
    if (h->sB)
        algo_b_fork(b, h->sB);
    for (uint32_t c = 0; c < h->C; c++) {
        uint64_t off = slice_off(b, g, g->l, h->C, c), len = slice_len(b, g, g->l, h->C, c);
        intra_reduce(b, g, h->sA, off, len);
        if (h->hd) {
            h->hdp.round = c;
            algo_hd_allreduce(b, &h->hdp, off, len);
        } else {
            inter_allreduce(b, g, h, off, len);
        }
        signal_local(b, g, h->sA, HIER_SLOT_FIN);
        if (!h->sB)
            intra_pull(b, g, h, c);
    }
    for (uint32_t c = 0; h->sB && c < h->C; c++)
        intra_pull(b, g, h, c);
    signal_local(b, g, h->sB, ALGO_SLOT_DONE); /* I no longer read your OUT */
    if (h->sA)
        algo_b_join(b, h->sA);
    if (h->sB)
        algo_b_join(b, h->sB);
    for (uint32_t k = 1; k < g->m; k++) /* my OUT is no longer read */
        algo_b_wait(b, 0, g->local[(g->l + k) % g->m], ALGO_SLOT_DONE);
}

/* Who I FETCH (and who FETCHes me): my local peers, and my group partners of phase 2. */
static void mark_peers(algo_b *b, const hier_geo *g, const hier_plan *h)
{
    uint32_t S = g->S, i = g->si, P = 1;
    algo_hgeo_pair_local(b, g);
    if (!h->hd) { /* ring neighbours */
        algo_hgeo_pair(b, g->group[(i + 1) % S]);
        algo_hgeo_pair(b, g->group[(i + S - 1) % S]);
        return;
    }
    while (P * 2 <= S)
        P *= 2;
    for (uint32_t d = 1; i < P && d < P; d *= 2) /* halving-doubling partners */
        b->fetch[g->group[i ^ d]] = b->fetched_by[g->group[i ^ d]] = 1;
    if (i >= P || i + P < S) { /* fold partner */
        uint32_t q = g->group[i >= P ? i - P : i + P];
        b->fetch[q] = b->fetched_by[q] = 1;
    }
}

int algo_hier_build(algo_b *b)
{
    hier_geo g = {0};
    if (b->op->coll != ALGO_COLL_ALLREDUCE || !geo_build(b, &g)) {
        algo_hgeo_free(&g);
        return HAL_E_NOT_SUPPORTED;
    }
    if (b->op->deterministic) { /* the ring's orders differ per piece: the rank-ordered chain */
        algo_hgeo_free(&g);
        return algo_ordered_push_build(b);
    }
    hier_plan h;
    plan_shape(b, &g, &h);
    mark_peers(b, &g, &h);
    algo_b_prologue(b);
    b->p->nslots = ALGO_PUSH_NSLOTS;
    hier_body(b, &g, &h);
    algo_hgeo_free(&g);
    return 0;
}
