/* Closed-form time estimates of the flat and the hierarchical plans of a collective across
 * servers, from the alpha-beta model's intra and inter (net) classes: what algo_select compares
 * to choose hier or flat without compiling and simulating both. The formulas follow the plans'
 * step structure (one stream: a rank's steps add up; each network step also pays a notify), take
 * the busiest rank, and use only the op's signature and the placement, so every rank reaches the
 * same choice. They are estimates: the verifier's critical path (plansim) is the reference. */
#include "algos/cost.h"
#include "algos/hier_geo.h"

typedef struct est {
    const algo_cost_model *cm;
    double n, S, M, mmin, m0; /* ranks, servers, largest / smallest server, root's server */
} est;

/* One COPY/REDUCE of `bytes` over link class l (gbps GB/s = 1e3 bytes per us). */
static double step(const est *e, algo_link l, double bytes)
{
    return algo_cost_xfer_us(e->cm, l, bytes);
}

/* A network step plus its notify. */
static double net(const est *e, double bytes)
{
    return step(e, ALGO_LINK_NET, bytes) + e->cm->sync_us[ALGO_LINK_NET];
}

static double intra(const est *e, double bytes)
{
    return step(e, ALGO_LINK_INTRA, bytes);
}

static double ceil_div(double a, double b)
{
    double q = a / b;
    return (double)(uint64_t)q < q ? (double)(uint64_t)q + 1 : q;
}

/* Flat plans across servers: each ring step waits for its slowest hop, a network one. */
static double flat(const est *e, algo_coll c, double B)
{
    double n = e->n, blk = B / n;
    switch (c) {
    case ALGO_COLL_ALLREDUCE: return 2 * (n - 1) * net(e, blk);
    case ALGO_COLL_BROADCAST: return (2 * n - 2) * net(e, blk); /* pipelined chain of n chunks */
    case ALGO_COLL_REDUCE: return n * net(e, blk);
    case ALGO_COLL_SCATTER: return (n - e->m0) * net(e, blk) + (e->m0 - 1) * intra(e, blk); /* direct */
    case ALGO_COLL_ALLTOALL: return (n - e->M) * net(e, blk) + (e->M - 1) * intra(e, blk);
    default: return (n - 1) * net(e, blk); /* AllGather(V), ReduceScatter(V) */
    }
}

/* Hierarchical plans (hier*.c), the busiest server's rank. */
static double hier(const est *e, algo_coll c, double B)
{
    double n = e->n, S = e->S, M = e->M, mi = e->mmin, m0 = e->m0, blk = B / n;
    double self_red = step(e, ALGO_LINK_SELF, blk);
    switch (c) {
    case ALGO_COLL_ALLREDUCE: /* equal servers of M */
        return 2 * (M - 1) * intra(e, B / M) + 2 * (S - 1) * net(e, B / (M * S));
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_ALLGATHERV: /* own block out, relays of ceil((n - m)/m) blocks inside */
        return (M - 1) * intra(e, blk) + (S - 1) * net(e, blk) + ceil_div(n - mi, mi) * (M - 1) * intra(e, blk);
    case ALGO_COLL_REDUCE_SCATTERV: /* a chain of S-1 hops per block: about ReduceScatter's work */
    case ALGO_COLL_REDUCE_SCATTER: /* partials for the other servers' blocks, then my own */
        return ceil_div(n - mi, mi) * ((M - 1) * intra(e, blk) + net(e, blk)) + (M - 1) * intra(e, blk) +
               (S - 1) * self_red;
    case ALGO_COLL_BROADCAST: { /* scatter in the root's server, chain of S-1 hops, allgather */
        double ch = B / m0;
        return (m0 - 1) * intra(e, ch) + (S - 1) * net(e, ch) + ceil_div(m0, mi) * (M - 1) * intra(e, ch);
    }
    case ALGO_COLL_REDUCE: { /* holders sum a chunk and send it while owners sum theirs */
        double ch = B / m0, hold = ceil_div(m0, mi) * ((mi - 1) * intra(e, ch) + net(e, ch));
        double own = (m0 - 1) * intra(e, ch);
        return (hold > own ? hold : own) + (S - 1) * step(e, ALGO_LINK_SELF, ch) + intra(e, ch);
    }
    case ALGO_COLL_SCATTER:
        return (m0 - 1) * intra(e, blk) + (S - 1) * net(e, M * blk) + M * intra(e, blk);
    case ALGO_COLL_ALLTOALL: { /* direct inside; per remote rank handled: gather, one transfer */
        double small = ceil_div(n - mi, mi) * (mi * intra(e, blk) + net(e, mi * blk));
        double large = ceil_div(n - M, M) * (M * intra(e, blk) + net(e, M * blk));
        return (M - 1) * intra(e, blk) + (small > large ? small : large);
    }
    default: return 1e300;
    }
}

double algo_cost_estimate(const algo_op *op, const algo_topo *topo, algo_kind kind, const algo_cost_model *cm)
{
    algo_hgeo g;
    if (!algo_hgeo_build(topo, op->nranks, op->root < op->nranks ? op->root : 0, &g))
        return 1e300;
    est e = {cm ? cm : algo_cost_default(), op->nranks, g.S, algo_hgeo_max(&g), algo_hgeo_min(&g), g.m};
    algo_hgeo_free(&g);
    double B = (double)algo_cost_size_bytes(op); /* V ops compiled without counts: 0, latency only */
    return kind == ALGO_HIER ? hier(&e, op->coll, B) : flat(&e, op->coll, B);
}
