/* Fan-outs (rt_launch.h, rt_fanout_forks): mesh plans write one source into every peer, a slave
 * stream per peer (AllGather's block, AllReduce's reduced slice, Broadcast's tail). On hardware the
 * slave streams keep several links busy at once. A backend that runs copies of one source in a row
 * as one pass over it (hal_ops.prog_fans_out_copies: the emulator, where every copy is CPU time and
 * memory bandwidth) reads the source once instead of once per peer, so rt_prog.c puts those copies
 * in a row on stream 0 instead (build_fanout). */
#include "runtime/stream/rt_launch.h"

static bool same_ref(const algo_ref *a, const algo_ref *b)
{
    return a->buf == b->buf && a->owner == b->owner && a->vdispl == b->vdispl && a->vsym.tab == b->vsym.tab &&
           a->vsym.idx == b->vsym.idx && a->offset == b->offset;
}

/* Slave k's list as part of a fan-out: its COPY (the first step, within this server), then only
 * signals. NULL if it is not. */
static const algo_step *fan_copy(const rt_launch_ctx *ctx, uint32_t k)
{
    if (k == 0 || k >= ctx->plan->nstreams)
        return NULL;
    const algo_step_list *l = &ctx->plan->streams[k];
    if (!l->nsteps || l->steps[0].kind != ALGO_STEP_COPY)
        return NULL;
    for (uint32_t i = 1; i < l->nsteps; i++)
        if (l->steps[i].kind != ALGO_STEP_SIGNAL)
            return NULL;
    const algo_step *cp = &l->steps[0];
    return rt_ref_remote(ctx, &cp->u.copy.dst) || rt_ref_remote(ctx, &cp->u.copy.src) ? NULL : cp;
}

uint32_t rt_fanout_forks(const rt_launch_ctx *ctx, uint32_t step)
{
    if (!ctx->c->hal->prog_fans_out_copies || ctx->trace_op) /* traced: one task per step, nothing fuses */
        return 0;
    const algo_step_list *s0 = &ctx->plan->streams[0];
    const algo_step *first = NULL;
    uint32_t forks = 0;
    for (uint32_t i = step; i < s0->nsteps && s0->steps[i].kind == ALGO_STEP_FORK; i++, forks++) {
        const algo_step *cp = fan_copy(ctx, s0->steps[i].u.fork.stream);
        if (!cp || (first && (!same_ref(&cp->u.copy.src, &first->u.copy.src) ||
                              rt_dma_step_bytes(ctx, cp) != rt_dma_step_bytes(ctx, first))))
            return 0; /* all of the FORKs in a row or none: a list left out would run alone */
        first = first ? first : cp;
    }
    return forks >= 2 && rt_dma_step_bytes(ctx, first) >= HAL_FANOUT_MIN_BYTES ? forks : 0;
}
