/* Launch contexts, pooled per communicator: a reclaimed context keeps its memory (per-rank
 * bindings, instruction and descriptor arrays, p2p items) and its completion event, and serves the
 * next launch. In steady state a launch allocates nothing and creates no HAL object. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/stream/rt_launch.h"

/* Free contexts kept per communicator: as many as may be in flight (RT_LAUNCH_INFLIGHT_MAX), so a
 * busy loop of unsynchronized launches reuses them instead of allocating and freeing (and
 * faulting in fresh pages) on every call; p2p launches beyond it are freed when they come back. */
#define RT_CTX_POOL_MAX RT_LAUNCH_INFLIGHT_MAX

bool rt_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t n = *cap ? *cap : 16;
    while (n < need)
        n = n > UINT32_MAX / 2 ? need : n * 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = n;
    return true;
}

/* One block: the context, then its per-rank arrays (pointer-aligned first). */
static rt_launch_ctx *ctx_alloc(rt_comm *c)
{
    uint32_t n = c->nranks;
    size_t bytes = sizeof(rt_launch_ctx) + (3 * n + n) * sizeof(void *) + 2 * 4 * n * sizeof(uint64_t) +
                   n * sizeof(rt_fetch_arg);
    rt_launch_ctx *ctx = calloc(1, bytes);
    if (!ctx)
        return NULL;
    char *p = (char *)(ctx + 1);
    ctx->base = (void **)p, p += 3 * n * sizeof(void *);
    ctx->vbase = (void **)p, p += n * sizeof(void *);
    ctx->vt = (uint64_t *)p, p += 4 * n * sizeof(uint64_t);
    ctx->built_vt = (uint64_t *)p, p += 4 * n * sizeof(uint64_t);
    ctx->fetch = (rt_fetch_arg *)p;
    for (uint32_t r = 0; r < n; r++) {
        ctx->fetch[r].ctx = ctx;
        ctx->fetch[r].peer = r;
    }
    ctx->c = c;
    return ctx;
}

static void ctx_destroy(rt_launch_ctx *ctx)
{
    if (ctx->done)
        ctx->c->hal->event_destroy(ctx->done);
    free(ctx->vmatrix_mem);
    free(ctx->p2p_items);
    free(ctx->insns);
    free(ctx->isrc);
    free(ctx->descs);
    free(ctx->segs);
    free(ctx->netops);
    free(ctx->rebinds);
    free(ctx);
}

/* Pooled contexts looked at for one whose program was built for the plan (rt_prog.c reuses it):
 * a loop that alternates a few plans finds its own, and a miss costs only these few loads. */
#define RT_CTX_MATCH_SCAN 8u

/* A free context, preferably one that last built plan; NULL when the pool is empty. */
static rt_launch_ctx *pool_take(rt_comm *c, const algo_plan *plan)
{
    rt_launch_ctx **pp = &c->ctx_pool;
    for (uint32_t i = 0; *pp && i < RT_CTX_MATCH_SCAN; i++, pp = &(*pp)->next)
        if ((*pp)->built == plan)
            break;
    if (!*pp || (*pp)->built != plan)
        pp = &c->ctx_pool;
    rt_launch_ctx *ctx = *pp;
    if (ctx) {
        *pp = ctx->next;
        c->ctx_pooled--;
    }
    return ctx;
}

static _Atomic uint64_t g_allocs;

uint64_t rt_launch_ctx_alloc_count(void)
{
    return atomic_load(&g_allocs);
}

rt_launch_ctx *rt_launch_ctx_get(rt_comm *c, const algo_plan *plan)
{
    rt_launch_ctx *ctx = pool_take(c, plan);
    if (!ctx) {
        if (!(ctx = ctx_alloc(c)))
            return NULL;
        atomic_fetch_add(&g_allocs, 1);
    }
    uint32_t n = c->nranks;
    /* AlltoAllVC keeps this call's whole matrix for the checks (rt_vcheck.c). */
    ctx->vmatrix = NULL;
    if (plan->op.coll == ALGO_COLL_ALLTOALLVC) {
        if (!ctx->vmatrix_mem && !(ctx->vmatrix_mem = calloc((size_t)n * n, sizeof(uint64_t)))) {
            rt_launch_ctx_put(ctx);
            return NULL;
        }
        ctx->vmatrix = ctx->vmatrix_mem;
    }
    ctx->plan = plan;
    ctx->esize = hal_dtype_size(plan->op.dtype);
    ctx->seq = 0;
    memset(&ctx->sig, 0, sizeof ctx->sig);
    ctx->p2p = ctx->vop = ctx->plan_held = ctx->staged = ctx->hdr = ctx->runs_ahead = false;
    ctx->pre = ctx->post = NULL;
    ctx->npre = ctx->npost = 0;
    ctx->stream = NULL;
    ctx->next = NULL;
    ctx->vhash = 0;
    ctx->trace_op = 0;
    ctx->credit_seq = 0;
    ctx->ndrain = 0;
    ctx->out_at = 0;
    ctx->out_bytes = 0;
    /* insns, descs, segs and netops stay: rt_prog_build reuses them or starts over. */
    /* Peers' IN/OUT are bound by FETCH; clear the last launch's so nothing stale is ever read. */
    memset(ctx->base, 0, 2 * (size_t)n * sizeof(void *));
    memset(ctx->vbase, 0, (size_t)n * sizeof(void *));
    if (!ctx->scratch_bound) { /* the peers' SCRATCH is known once connected, and stays */
        for (uint32_t r = 0; r < n; r++)
            ctx->base[2 * n + r] = c->peers[r].scratch;
        ctx->base[2 * n + c->rank] = c->scratch;
        ctx->scratch_bound = true;
    }
    return ctx;
}

void rt_launch_ctx_put(rt_launch_ctx *ctx)
{
    if (!ctx)
        return;
    rt_comm *c = ctx->c;
    if (ctx->plan_held)
        rt_plan_put(c, ctx->plan);
    ctx->plan_held = false;
    ctx->plan = NULL;
    if (c->ctx_pooled >= RT_CTX_POOL_MAX) {
        ctx_destroy(ctx);
        return;
    }
    ctx->next = c->ctx_pool;
    c->ctx_pool = ctx;
    c->ctx_pooled++;
}

/* What a warmed context has room for: an eager plan's program on m ranks takes 5m - 3
 * instructions, 2m - 1 descriptors and 4m - 1 rebinds (AllReduce, the largest), with m at most
 * RT_WARM_RANKS (eager runs on up to ALGO_MESH_MAX_RANKS, algos/select.c); larger plans grow the
 * arrays on first use. */
#define RT_WARM_RANKS ALGO_MESH_MAX_RANKS
#define RT_WARM_SEGS 4u

/* Grows an array to `need` elements and writes it, so its pages are faulted in here and not at
 * its first use on the hot path. */
static bool grow_touched(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (!rt_grow(arr, cap, need, elem))
        return false;
    memset(*arr, 0, (size_t)*cap * elem);
    return true;
}

static bool ctx_warm(rt_launch_ctx *ctx)
{
    uint32_t m = ctx->c->nranks < RT_WARM_RANKS ? ctx->c->nranks : RT_WARM_RANKS;
    return ctx->c->hal->event_create(ctx->c->dev, HAL_EVENT_SERIAL, &ctx->done) == HAL_OK &&
           grow_touched((void **)&ctx->insns, &ctx->insns_cap, 5 * m, sizeof *ctx->insns) &&
           grow_touched((void **)&ctx->isrc, &ctx->isrc_cap, 5 * m, sizeof *ctx->isrc) &&
           grow_touched((void **)&ctx->descs, &ctx->descs_cap, 2 * m + RT_DMA_MAX_PIECES, sizeof *ctx->descs) &&
           grow_touched((void **)&ctx->rebinds, &ctx->rebinds_cap, 4 * m, sizeof *ctx->rebinds) &&
           grow_touched((void **)&ctx->segs, &ctx->segs_cap, RT_WARM_SEGS, sizeof *ctx->segs);
}

/* Fills the pool at communicator init with as many contexts as may be in flight, each with its
 * completion event and room for an eager plan, its memory written: the launches of a loop then
 * allocate nothing and fault in no page (each fresh context cost page faults, ~10 us each on a VM,
 * and an event on the hot path: the first back-to-back loop of a communicator ran 2-3x slower than
 * the next, docs/perf-history.md). */
HcclResult rt_launch_pool_warm(rt_comm *c)
{
    while (c->ctx_pooled < RT_LAUNCH_INFLIGHT_MAX) {
        rt_launch_ctx *ctx = ctx_alloc(c);
        if (!ctx)
            return HCCL_E_MEMORY;
        bool ok = ctx_warm(ctx);
        rt_launch_ctx_put(ctx);
        if (!ok)
            return HCCL_E_MEMORY; /* what was made is freed with the pool */
    }
    return HCCL_SUCCESS;
}

rt_p2p_item *rt_launch_ctx_items(rt_launch_ctx *ctx, uint32_t n)
{
    if (!rt_grow((void **)&ctx->p2p_items, &ctx->p2p_cap, n ? n : 1, sizeof *ctx->p2p_items))
        return NULL;
    memset(ctx->p2p_items, 0, (size_t)(n ? n : 1) * sizeof *ctx->p2p_items);
    return ctx->p2p_items;
}

void rt_launch_pool_free(rt_comm *c)
{
    while (c->ctx_pool) {
        rt_launch_ctx *ctx = c->ctx_pool;
        c->ctx_pool = ctx->next;
        ctx_destroy(ctx);
    }
    c->ctx_pooled = 0;
}
