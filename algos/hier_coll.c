/* The hierarchical algorithm ("hier") per collective: where it applies and which compiler builds
 * it. AllReduce keeps hier.c's plan (equal servers of >= 2 ranks); the others (hier_gather.c,
 * hier_bcast.c, hier_reduce.c, hier_rsv.c, hier_a2a.c) take servers of any sizes, as long as one
 * holds >= 2 ranks (with a rank per server, hier would be the flat algorithm with extra steps). */
#include "algos/hier_geo.h"

bool algo_hier_coll_supported(algo_coll c)
{
    switch (c) {
    case ALGO_COLL_ALLREDUCE:
    case ALGO_COLL_ALLGATHER:
    case ALGO_COLL_ALLGATHERV:
    case ALGO_COLL_BROADCAST:
    case ALGO_COLL_SCATTER:
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE_SCATTERV:
    case ALGO_COLL_REDUCE:
    case ALGO_COLL_ALLTOALL: return true;
    default: return false;
    }
}

/* No hierarchical reduction is rank-ordered: deterministic mode takes the ordered chains. */
static bool reduces(algo_coll c)
{
    return c == ALGO_COLL_ALLREDUCE || c == ALGO_COLL_REDUCE_SCATTER || c == ALGO_COLL_REDUCE_SCATTERV || c == ALGO_COLL_REDUCE;
}

bool algo_hier_coll_fits(const algo_op *op, const algo_topo *topo)
{
    if (!algo_hier_coll_supported(op->coll) || (op->deterministic && reduces(op->coll)))
        return false;
    if (op->coll == ALGO_COLL_ALLREDUCE)
        return algo_hier_fits(op, topo);
    algo_hgeo g;
    if (!algo_hgeo_build(topo, op->nranks, 0, &g))
        return false;
    bool ok = g.S >= 2 && algo_hgeo_max(&g) >= 2;
    algo_hgeo_free(&g);
    return ok;
}

int algo_hier_coll_build(algo_b *b)
{
    if (b->op->coll == ALGO_COLL_ALLREDUCE)
        return algo_hier_build(b);
    algo_hgeo g;
    if (!algo_hgeo_build(b->topo, b->n, b->r, &g))
        return HAL_E_NOT_SUPPORTED;
    int rc = HAL_E_NOT_SUPPORTED;
    if (g.S >= 2) {
        switch (b->op->coll) {
        case ALGO_COLL_ALLGATHER:
        case ALGO_COLL_ALLGATHERV: rc = algo_hier_allgather(b, &g); break;
        case ALGO_COLL_BROADCAST: rc = algo_hier_broadcast(b, &g); break;
        case ALGO_COLL_SCATTER: rc = algo_hier_scatter(b, &g); break;
        case ALGO_COLL_REDUCE_SCATTER: rc = algo_hier_reduce_scatter(b, &g); break;
        case ALGO_COLL_REDUCE_SCATTERV: rc = algo_hier_reduce_scatterv(b, &g); break;
        case ALGO_COLL_REDUCE: rc = algo_hier_reduce(b, &g); break;
        case ALGO_COLL_ALLTOALL: rc = algo_hier_alltoall(b, &g); break;
        default: break;
        }
    }
    algo_hgeo_free(&g);
    return rc;
}
