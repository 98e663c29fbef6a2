/* A V-op's program for other tables (rt_prog_reuse.c). Its tables give a V-op's program its offsets and
 * sizes, and also its shape: which steps run (an eager AlltoAllV sends a block through the inbox
 * or straight into the receiver's OUT by its size, plan.h algo_when), which copies are left out
 * (empty blocks) and how many pieces a large one is split into. A mixture-of-experts layer's
 * AlltoAllV has new counts every call, but mostly the same shape: then the program is kept and
 * only its descriptors are bound again, from the plan's steps (rt_dma_rebuild), instead of being
 * built anew. */
#include <string.h>

#include "runtime/stream/rt_launch.h"

/* What of a block's size the shape depends on: empty, within the crossover, past it. */
static unsigned size_class(const rt_launch_ctx *ctx, uint64_t elems)
{
    if (elems == 0)
        return 0;
    return elems * ctx->esize <= ctx->plan->v_small_bytes ? 1 : 2;
}

/* Step sizes and when-conditions are count entries (COUNT, RCOUNT: algos' send_len, recv_len
 * and algo_b_when), never displacements. */
static bool same_classes(const rt_launch_ctx *ctx, const uint64_t *a, const uint64_t *b)
{
    for (uint32_t i = 0; i < ctx->c->nranks; i++)
        if (size_class(ctx, a[i]) != size_class(ctx, b[i]))
            return false;
    return true;
}

rt_vfit rt_prog_vop_fit(const rt_launch_ctx *ctx, const uint64_t *built)
{
    size_t n = ctx->c->nranks;
    if (!ctx->vop || !memcmp(ctx->vt, built, 4 * n * sizeof *built))
        return RT_VFIT_SAME;
    /* Slave streams: a fan-out's choice depends on the sizes of its copies (rt_fanout.c). */
    if (ctx->plan->nstreams != 1)
        return RT_VFIT_NONE;
    size_t count = (ALGO_VT_COUNT - 1) * n, rcount = (ALGO_VT_RCOUNT - 1) * n;
    if (!same_classes(ctx, ctx->vt + count, built + count) || !same_classes(ctx, ctx->vt + rcount, built + rcount))
        return RT_VFIT_NONE;
    return RT_VFIT_SHAPE;
}

/* Every DMA instruction of a reusable single-stream program is one step's (build_dma), its
 * descriptors from isrc's first on. */
bool rt_prog_vop_rebind(rt_launch_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->ninsns; i++) {
        const hal_insn *in = &ctx->insns[i];
        if (in->kind != HAL_INSN_DMA)
            continue;
        const rt_insn_src *at = &ctx->isrc[i];
        const algo_step *st = &ctx->plan->streams[at->stream].steps[at->step];
        if (!rt_dma_rebuild(ctx, st, &ctx->descs[at->desc], in->u.dma.n))
            return false;
    }
    return true;
}
