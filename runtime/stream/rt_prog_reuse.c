/* Reusing a launch's program (rt_prog.c, rt_prog_build): the program a context built for a plan
 * serves the next launch of that plan from the same context with its per-call addresses set again,
 * and a launch that takes a context which never ran the plan copies the program of the launch
 * before it (rt_prog_clone.c). docs/runtime.md, "No rebuild on the hot path". */
#include <string.h>

#include "runtime/stream/rt_launch.h"

/* A collective's program holds, besides the plan and the communicator's static state (notifies,
 * scratch, events, timeouts), only this call's own IN/OUT and inbox slot as descriptor addresses
 * (listed in ctx->rebinds); peers' buffers are read through the context (FETCH fills them) and the
 * instructions' arguments point into the context. A V-op's also holds offsets and sizes from its
 * V tables (and which AlltoAllV blocks go eager), so it serves calls with the same tables as it is,
 * and those with other tables of the same shape once its descriptors are bound to them
 * (rt_prog_vop.c): a loop that gathers the same uneven shards builds once, and so does a
 * mixture-of-experts AlltoAllV whose counts change every call. A p2p launch's the same:
 * its items' buffers are rebound, which sends go eager follows from the plan's sizes, and its flag
 * waits and AHEAD mark are set per call (rt_prog_p2p_waits, rt_prog_p2p_ahead). Not reusable:
 * staging copies and staging buffers, steps across servers, a drain. */
static bool reusable(const rt_launch_ctx *ctx)
{
    return !ctx->staged && !ctx->npre && !ctx->npost && !ctx->nnetops && !ctx->ndrain &&
           (ctx->vop || !algo_counts_symbolic(ctx->plan->op.coll));
}

/* The program in ctx's arrays now serves later calls of its plan (and tables). */
static void mark_built(rt_launch_ctx *ctx, uint64_t evictions)
{
    ctx->built = ctx->plan;
    ctx->built_evictions = evictions;
    if (ctx->vop)
        memcpy(ctx->built_vt, ctx->vt, 4 * (size_t)ctx->c->nranks * sizeof *ctx->vt);
}

/* Sets a reused program's per-call addresses from this call's bindings (bind_self, bind_inbox). */
static void rebind(rt_launch_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->nrebinds; i++) {
        const rt_rebind *rb = &ctx->rebinds[i];
        void **field = (void **)(void *)((char *)ctx->descs + rb->at);
        if (rb->buf == ALGO_BUF_INBOX)
            *field = rt_ctx_inbox(ctx, rb->index);
        else
            *field = rb->buf == RT_REBIND_ITEM ? ctx->p2p_items[rb->index].buf : ctx->base[rb->index];
    }
}

/* A program built for ctx's plan now in ctx's arrays, from tables that `fit` this call's: its
 * per-call addresses set again, and a V-op's offsets and sizes when its tables differ. False: build. */
static bool serve(rt_launch_ctx *ctx, rt_vfit fit, uint64_t evictions)
{
    rebind(ctx);
    if (fit == RT_VFIT_SAME)
        return true;
    if (!rt_prog_vop_rebind(ctx))
        return false;
    mark_built(ctx, evictions); /* from this call's tables now */
    return true;
}

bool rt_prog_reuse(rt_launch_ctx *ctx, uint64_t evictions)
{
    rt_vfit fit = RT_VFIT_NONE;
    if (ctx->built == ctx->plan && ctx->built_evictions == evictions && reusable(ctx) &&
        (fit = rt_prog_vop_fit(ctx, ctx->built_vt)) != RT_VFIT_NONE && serve(ctx, fit, evictions)) {
        ctx->checked = ctx->checked && fit == RT_VFIT_SAME; /* other tables: other sizes */
        return true; /* this context's program for the same plan */
    }
    ctx->checked = false; /* a clone or a build follows */
    const rt_launch_ctx *donor = rt_pending_newest(ctx->c); /* the launch before, often the same plan */
    if (reusable(ctx) && donor && donor->built == ctx->plan && donor->built_evictions == evictions &&
        (fit = rt_prog_vop_fit(ctx, donor->built_vt)) != RT_VFIT_NONE && rt_prog_clone(ctx, donor)) {
        mark_built(ctx, evictions);
        if (serve(ctx, fit, evictions))
            return true;
    }
    return false;
}

void rt_prog_mark_built(rt_launch_ctx *ctx, uint64_t evictions)
{
    if (reusable(ctx))
        mark_built(ctx, evictions);
}
