/* algo_compile: validation and dispatch to the per-algorithm compilers; names. */
#include "algos/algo_build.h"
#include "common/oh_check.h"

const char *algo_kind_name(algo_kind kind)
{
    static const char *const names[ALGO_KIND_COUNT] = {"auto", "ring", "mesh", "pairwise", "p2p", "eager", "ring_push", "hier"};
    return (unsigned)kind < ALGO_KIND_COUNT ? names[kind] : "unknown";
}

const char *algo_coll_name(algo_coll coll)
{
    static const char *const names[ALGO_COLL_COUNT] = {
        "HcclAllReduce", "HcclBroadcast",   "HcclAllGather",  "HcclReduceScatter",
        "HcclReduce",    "HcclScatter",     "HcclAlltoAll",   "HcclAlltoAllV",
        "HcclAlltoAllVC", "HcclAllGatherV", "HcclReduceScatterV", "HcclBatchSendRecv",
    };
    return (unsigned)coll < ALGO_COLL_COUNT ? names[coll] : "unknown";
}

/* Collectives whose sizes come from op->counts / op->items rather than op->count. */
static bool has_counts(algo_coll c)
{
    return c == ALGO_COLL_ALLTOALLV || c == ALGO_COLL_ALLTOALLVC || c == ALGO_COLL_ALLGATHERV ||
           c == ALGO_COLL_REDUCE_SCATTERV || c == ALGO_COLL_SENDRECV;
}

static int build(algo_b *b, algo_kind kind)
{
    switch (kind) {
    case ALGO_RING: return algo_ring_build(b);
    case ALGO_MESH: return algo_mesh_build(b);
    case ALGO_PAIRWISE: return algo_pairwise_build(b);
    case ALGO_P2P: return algo_p2p_build(b);
    case ALGO_EAGER: return algo_eager_build(b);
    case ALGO_RING_PUSH: return algo_ring_push_build(b);
    case ALGO_HIER: return algo_hier_coll_build(b);
    default: return HAL_E_NOT_SUPPORTED;
    }
}

int algo_compile(const algo_op *op, const algo_topo *topo, algo_kind kind, algo_plan **out)
{
    CHECK_ARG(out, HAL_E_PARAM, "algos", "algo_compile: out is NULL");
    *out = NULL;
    CHECK(algo_op_check(op));
    if (!algo_supports(kind, op))
        return HAL_E_NOT_SUPPORTED;
    algo_b b;
    CHECK(algo_b_init(&b, op, kind));
    b.topo = topo; /* the flat algorithms ignore placement; hier needs it */
    int rc = 0;
    /* Eager plans do their own (full-end) empty call: see plan.h, INBOX. */
    if (op->count == 0 && !has_counts(op->coll) && kind != ALGO_EAGER)
        algo_b_empty(&b); /* nothing moves, but every rank still publishes and checks */
    else
        rc = build(&b, kind);
    if (rc) {
        algo_b_abort(&b);
        return rc;
    }
    return algo_b_finish(&b, out);
}
