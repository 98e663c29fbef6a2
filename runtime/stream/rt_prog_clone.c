/* A launch's program copied from another launch of the same plan (rt_prog_reuse.c): a loop issues far
 * more launches than complete meanwhile, so most of its first launches take a context that never
 * ran this plan, and building the program each time was most of a short loop's cost (8 B Broadcast
 * at 4 ranks, 100 calls: 103 builds; docs/perf-history.md, "One-way Broadcast"). The donor is a launch
 * still in flight: its arrays stay as built until it is reclaimed, and only the host writes them.
 * What points into the donor (instruction arguments, descriptors bound through its bindings) is
 * moved to the same place in the new context. */
#include <string.h>

#include "runtime/stream/rt_launch.h"

/* A pointer into donor's p2p items (an item, or a member of one), as the same place in ctx's (a
 * p2p launch of the same plan has as many items). */
static bool move_item(rt_launch_ctx *ctx, const rt_launch_ctx *donor, const void **p)
{
    uintptr_t at = (uintptr_t)*p, first = (uintptr_t)donor->p2p_items;
    if (!donor->p2p || at < first || at - first >= donor->plan->op.nitems * sizeof *donor->p2p_items)
        return false;
    *p = (const char *)ctx->p2p_items + (at - first);
    return true;
}

/* An instruction argument of donor's, as the same argument of ctx; false for one that points
 * anywhere but donor itself, its fetch arguments or its p2p items (then ctx builds its own). */
static bool move_arg(rt_launch_ctx *ctx, const rt_launch_ctx *donor, void **arg)
{
    const rt_fetch_arg *f = *arg;
    if (*arg == donor) {
        *arg = ctx;
        return true;
    }
    if (f >= donor->fetch && f < donor->fetch + ctx->c->nranks) {
        *arg = &ctx->fetch[f - donor->fetch];
        return true;
    }
    return *arg == NULL || move_item(ctx, donor, (const void **)arg);
}

/* A descriptor side bound through donor's bindings (a peer's IN/OUT, filled by FETCH: rt_dma_bind;
 * a p2p item's peer_buf), as the same binding of ctx; false for an indirection anywhere else. */
static bool move_ref(rt_launch_ctx *ctx, const rt_launch_ctx *donor, hal_ref *ref)
{
    uint32_t n = ctx->c->nranks;
    void *const *p = ref->indirect;
    if (!p)
        return true;
    if (p >= (void *const *)donor->base && p < (void *const *)donor->base + 3 * (size_t)n) {
        ref->indirect = (void *const *)ctx->base + (p - (void *const *)donor->base);
        return true;
    }
    if (p >= (void *const *)donor->vbase && p < (void *const *)donor->vbase + n) {
        ref->indirect = (void *const *)ctx->vbase + (p - (void *const *)donor->vbase);
        return true;
    }
    const void *at = p; /* a direct send's: its item's peer_buf (rt_p2p_bind) */
    if (!move_item(ctx, donor, &at))
        return false;
    ref->indirect = at;
    return true;
}

/* A one-way receiver's flag waits are in its FETCH args, one per writer (rt_prog.c); a p2p
 * launch's in its items. */
static bool move_flag_wait(rt_launch_ctx *ctx, const rt_launch_ctx *donor, const hal_flag_wait **w)
{
    for (uint32_t q = 0; q < ctx->c->nranks; q++)
        if (*w == &donor->fetch[q].wait) {
            *w = &ctx->fetch[q].wait;
            return true;
        }
    const void *p = *w;
    if (!move_item(ctx, donor, &p))
        return false;
    *w = p;
    return true;
}

static bool copy_array(void **dst, uint32_t *cap, const void *src, uint32_t n, size_t elem)
{
    if (!rt_grow(dst, cap, n, elem))
        return false;
    if (n)
        memcpy(*dst, src, (size_t)n * elem);
    return true;
}

bool rt_prog_clone(rt_launch_ctx *ctx, const rt_launch_ctx *donor)
{
    if (!copy_array((void **)&ctx->insns, &ctx->insns_cap, donor->insns, donor->ninsns, sizeof *ctx->insns) ||
        !copy_array((void **)&ctx->isrc, &ctx->isrc_cap, donor->isrc, donor->ninsns, sizeof *ctx->isrc) ||
        !copy_array((void **)&ctx->descs, &ctx->descs_cap, donor->descs, donor->ndescs, sizeof *ctx->descs) ||
        !copy_array((void **)&ctx->segs, &ctx->segs_cap, donor->segs, donor->nsegs, sizeof *ctx->segs) ||
        !copy_array((void **)&ctx->rebinds, &ctx->rebinds_cap, donor->rebinds, donor->nrebinds, sizeof *ctx->rebinds))
        return false;
    ctx->ninsns = donor->ninsns;
    ctx->ndescs = donor->ndescs;
    ctx->nsegs = donor->nsegs;
    ctx->nrebinds = donor->nrebinds;
    ctx->nnetops = 0;
    for (uint32_t i = 0; i < ctx->ndescs; i++) {
        hal_dma_desc *d = &ctx->descs[i];
        if (!move_ref(ctx, donor, &d->dst) || !move_ref(ctx, donor, &d->src) || !move_ref(ctx, donor, &d->src2))
            return false;
    }
    for (uint32_t i = 0; i < ctx->ninsns; i++) {
        hal_insn *in = &ctx->insns[i];
        if (in->kind == HAL_INSN_DMA)
            in->u.dma.descs = &ctx->descs[ctx->isrc[i].desc];
        else if (in->kind == HAL_INSN_FN && !move_arg(ctx, donor, &in->u.fn.arg))
            return false;
        else if (in->kind == HAL_INSN_FLAG_WAIT && !move_flag_wait(ctx, donor, &in->u.flag.w))
            return false;
        else if (in->kind == HAL_INSN_NOTIFY_WAIT && in->u.notify.check &&
                 !move_arg(ctx, donor, &in->u.notify.check_arg))
            return false;
    }
    return true;
}
