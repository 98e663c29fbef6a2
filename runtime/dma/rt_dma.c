/* DMA instruction construction: binds a plan's symbolic refs to this call's addresses and splits
 * large transfers across the device's DMA engines (one DMA instruction of the launch's program,
 * rt_prog.c: the pieces run in parallel and complete as one, so stream order is kept). On hardware a descriptor is one engine's work,
 * so this split is what spreads a transfer; the emulator may cut pieces further to balance its
 * CPU threads, which is its own business. */
#include "runtime/stream/rt_launch.h"

#define RT_DMA_SPLIT_MIN (1u << 20) /* below this one engine is faster than the hand-off */

/* p2p: vdispl names an item of the launch (plan.h); its buffers are this call's, never the plan's. */
hal_ref rt_p2p_bind(rt_launch_ctx *ctx, const algo_ref *r)
{
    rt_p2p_item *it = &ctx->p2p_items[r->vdispl];
    if (r->owner == ALGO_SELF)
        return (hal_ref){it->buf, NULL, r->offset};
    return (hal_ref){NULL, (void *const *)&it->peer_buf, r->offset}; /* filled by the item's FETCH */
}

/* r's offset in its buffer in this call (a V-op's from this call's own tables). */
static uint64_t bind_offset(const rt_launch_ctx *ctx, const algo_ref *r)
{
    if (ctx->p2p)
        return r->offset;
    if (r->buf == ALGO_BUF_INBOX)
        return rt_box_offset(r->offset, rt_plan_stride(ctx->c, ctx->plan));
    return r->offset + (r->vsym.tab ? algo_vt_get(ctx->vt, ctx->c->nranks, r->vsym) * ctx->esize : 0);
}

hal_ref rt_dma_bind(rt_launch_ctx *ctx, const algo_ref *r)
{
    if (ctx->p2p)
        return rt_p2p_bind(ctx, r);
    rt_comm *c = ctx->c;
    uint32_t owner = r->owner == ALGO_SELF ? c->rank : (uint32_t)r->owner;
    if (r->buf == ALGO_BUF_INBOX) /* exchanged at init; the slot changes per call (rt_launch.c, next_slot) */
        return (hal_ref){rt_ctx_inbox(ctx, owner), NULL, bind_offset(ctx, r)};
    void **slot = &ctx->base[(size_t)r->buf * c->nranks + owner];
    hal_ref ref = {NULL, NULL, bind_offset(ctx, r)};
    if (r->vdispl >= 0)
        ref.indirect = (void *const *)&ctx->vbase[owner];
    else if (owner != c->rank && r->buf != ALGO_BUF_SCRATCH && ctx->staged && !c->peers[owner].remote)
        ref.base = rt_staging_peer_buf(c, owner, ctx->plan->op.coll, r->buf); /* imported at init */
    else if (owner != c->rank && r->buf != ALGO_BUF_SCRATCH)
        ref.indirect = (void *const *)slot; /* filled by FETCH on the device */
    else
        ref.base = *slot; /* known now */
    return ref;
}

bool rt_dma_per_call(const rt_launch_ctx *ctx, const algo_ref *r)
{
    if (ctx->p2p) /* rt_p2p_bind: this rank's item buffers; a peer's comes through the item */
        return r->owner == ALGO_SELF;
    if (r->buf == ALGO_BUF_INBOX)
        return true;
    uint32_t owner = r->owner == ALGO_SELF ? ctx->c->rank : (uint32_t)r->owner;
    return r->vdispl < 0 && owner == ctx->c->rank && r->buf != ALGO_BUF_SCRATCH;
}

/* A V-op step's size from this call's tables, else the plan's. */
static uint64_t step_total(const rt_launch_ctx *ctx, const algo_step *step)
{
    bool is_copy = step->kind == ALGO_STEP_COPY;
    algo_vsym v = is_copy ? step->u.copy.vcount : step->u.reduce.vcount;
    if (v.tab) {
        uint64_t elems = ctx->vop ? algo_vt_get(ctx->vt, ctx->c->nranks, v) : 0;
        return is_copy ? elems * ctx->esize : elems;
    }
    return is_copy ? step->u.copy.bytes : step->u.reduce.count;
}

uint64_t rt_dma_step_bytes(const rt_launch_ctx *ctx, const algo_step *step)
{
    return step_total(ctx, step) * (step->kind == ALGO_STEP_COPY ? 1 : ctx->esize);
}

static uint32_t pieces_for(uint64_t bytes, uint32_t engines)
{
    if (engines <= 1 || bytes < 2ull * RT_DMA_SPLIT_MIN)
        return 1;
    uint64_t n = bytes / RT_DMA_SPLIT_MIN;
    if (n > engines)
        n = engines;
    return n > RT_DMA_MAX_PIECES ? RT_DMA_MAX_PIECES : (uint32_t)n;
}

/* Splits [0, total) elements into n nearly equal pieces; piece i starts at elem_start. */
static void piece_range(uint64_t total, uint32_t n, uint32_t i, uint64_t *start, uint64_t *len)
{
    uint64_t base = total / n, extra = total % n;
    *start = i * base + (i < extra ? i : extra);
    *len = base + (i < extra ? 1 : 0);
}

/* The offsets and sizes of step's n pieces (n from pieces_for) in this call. */
static void size_pieces(const rt_launch_ctx *ctx, const algo_step *step, uint64_t total, uint32_t n,
                        hal_dma_desc *d)
{
    bool is_copy = step->kind == ALGO_STEP_COPY;
    bool has_src2 = !is_copy && step->u.reduce.has_src2;
    uint64_t at_dst = bind_offset(ctx, is_copy ? &step->u.copy.dst : &step->u.reduce.dst);
    uint64_t at_src = bind_offset(ctx, is_copy ? &step->u.copy.src : &step->u.reduce.src);
    uint64_t at_src2 = has_src2 ? bind_offset(ctx, &step->u.reduce.src2) : 0;
    /* Copies split on bytes, reductions on whole elements. */
    uint64_t unit = is_copy ? 1 : ctx->esize;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t start = 0, len = total;
        if (n > 1)
            piece_range(total, n, i, &start, &len);
        d[i].dst.offset = at_dst + start * unit;
        d[i].src.offset = at_src + start * unit;
        if (has_src2)
            d[i].src2.offset = at_src2 + start * unit;
        d[i].bytes = is_copy ? len : len * unit;
        d[i].count = is_copy ? 0 : len;
    }
}

/* Fills step's n descriptors for this call's bindings and tables: every piece binds the same
 * buffers, at its own offsets. */
static void fill_pieces(rt_launch_ctx *ctx, const algo_step *step, uint64_t total, uint32_t n, hal_dma_desc *d)
{
    bool is_copy = step->kind == ALGO_STEP_COPY;
    hal_ref rdst = rt_dma_bind(ctx, is_copy ? &step->u.copy.dst : &step->u.reduce.dst);
    hal_ref rsrc = rt_dma_bind(ctx, is_copy ? &step->u.copy.src : &step->u.reduce.src);
    hal_ref rsrc2 = {NULL, NULL, 0};
    if (!is_copy && step->u.reduce.has_src2)
        rsrc2 = rt_dma_bind(ctx, &step->u.reduce.src2);
    for (uint32_t i = 0; i < n; i++) {
        d[i].kind = is_copy ? HAL_DMA_COPY : HAL_DMA_REDUCE;
        d[i].dst = rdst;
        d[i].src = rsrc;
        d[i].src2 = rsrc2;
        d[i].dtype = ctx->plan->op.dtype;
        d[i].op = ctx->plan->op.redop;
        d[i].reread = is_copy && step->u.copy.reread;
    }
    size_pieces(ctx, step, total, n, d);
}

uint32_t rt_dma_build(rt_launch_ctx *ctx, const algo_step *step, hal_dma_desc *d)
{
    uint64_t total = step_total(ctx, step);
    if (total == 0)
        return 0; /* also an empty V block, whose displacements may point anywhere */
    uint32_t n = pieces_for(rt_dma_step_bytes(ctx, step), ctx->c->dma_engines);
    fill_pieces(ctx, step, total, n, d);
    return n;
}

bool rt_dma_rebuild(const rt_launch_ctx *ctx, const algo_step *step, hal_dma_desc *d, uint32_t n)
{
    uint64_t total = step_total(ctx, step);
    if (total == 0 || pieces_for(rt_dma_step_bytes(ctx, step), ctx->c->dma_engines) != n)
        return false;
    size_pieces(ctx, step, total, n, d); /* the buffers are the built program's (or rebound) */
    return true;
}
