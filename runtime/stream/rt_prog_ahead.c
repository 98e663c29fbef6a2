/* Running ahead (docs/runtime.md, "Running ahead"): how many calls before it a launch's prefix may
 * pass, set on the AHEAD mark its program build placed (rt_prog.c, ahead_able). */
#include "runtime/stream/rt_launch.h"

static bool ranges_meet(uintptr_t a, uint64_t alen, uintptr_t b, uint64_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

void rt_prog_ahead(rt_launch_ctx *ctx, const rt_call *call)
{
    uint64_t in_elems = 0, out_elems = 0;
    algo_buffer_elems(&call->op, &in_elems, &out_elems);
    ctx->out_at = (uintptr_t)call->out;
    ctx->out_bytes = out_elems * ctx->esize;
    hal_insn *mark = NULL;
    for (uint32_t i = 0; i < ctx->ninsns && !mark && !hal_insn_waits(&ctx->insns[i]); i++)
        if (ctx->insns[i].kind == HAL_INSN_AHEAD)
            mark = &ctx->insns[i];
    if (!mark)
        return;
    /* The launches before, if on this stream, may still write their OUT after their own marks:
     * this one's prefix runs ahead of as many of them as its IN meets none of. With depth 0 the
     * mark stays on: its prefix runs in order, and later calls may still run ahead of it. */
    const rt_comm *c = ctx->c;
    uint32_t depth = 0;
    /* An eager AlltoAllV with a block past the crossover to receive: peers write it into this call's
     * OUT once its PUBLISH is out, so that runs in order, after the calls before it have ended. */
    bool in_order = rt_a2av_receives_directly(ctx);
    while (depth < ALGO_AHEAD_MAX && !in_order) {
        if (depth == c->npending) {
            depth = ALGO_AHEAD_MAX; /* none older in flight */
            break;
        }
        const rt_launch_ctx *prev = rt_pending_at(c, c->npending - 1 - depth);
        if (prev->stream != call->stream ||
            ranges_meet((uintptr_t)call->in, in_elems * ctx->esize, prev->out_at, prev->out_bytes))
            break;
        depth++;
    }
    mark->u.ahead.group = (uint64_t)(uintptr_t)c->handle;
    mark->u.ahead.depth = depth;
}

/* A p2p launch's OUT for the launches after it: the span of its receive buffers. */
static void p2p_out_span(rt_launch_ctx *ctx)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (uint32_t k = 0; k < ctx->plan->op.nitems; k++) {
        const rt_p2p_item *it = &ctx->p2p_items[k];
        uint64_t bytes = it->count * hal_dtype_size((hal_dtype)it->dtype);
        if (it->is_send || !bytes)
            continue;
        lo = (uintptr_t)it->buf < lo ? (uintptr_t)it->buf : lo;
        hi = (uintptr_t)it->buf + bytes > hi ? (uintptr_t)it->buf + bytes : hi;
    }
    ctx->out_at = hi ? lo : 0;
    ctx->out_bytes = hi ? hi - lo : 0;
}

/* Whether a send the prefix makes (rt_prog_p2p.c: stream 0's eager sends) reads what prev writes. */
static bool prefix_reads(const rt_launch_ctx *ctx, const rt_launch_ctx *prev)
{
    for (uint32_t k = 0; k < ctx->plan->op.nitems; k++) {
        const rt_p2p_item *it = &ctx->p2p_items[k];
        if (it->eager && ranges_meet((uintptr_t)it->buf, it->count * hal_dtype_size((hal_dtype)it->dtype),
                                     prev->out_at, prev->out_bytes))
            return true;
    }
    return false;
}

void rt_prog_p2p_ahead(rt_launch_ctx *ctx, hal_stream *stream)
{
    p2p_out_span(ctx);
    hal_insn *mark = NULL;
    for (uint32_t i = 0; i < ctx->ninsns && !mark && !hal_insn_waits(&ctx->insns[i]); i++)
        if (ctx->insns[i].kind == HAL_INSN_AHEAD)
            mark = &ctx->insns[i];
    if (!mark)
        return;
    const rt_comm *c = ctx->c;
    uint32_t depth = 0;
    while (depth < ALGO_AHEAD_MAX) {
        if (depth == c->npending) {
            depth = ALGO_AHEAD_MAX; /* none older in flight */
            break;
        }
        const rt_launch_ctx *prev = rt_pending_at(c, c->npending - 1 - depth);
        if (prev->stream != stream || !prev->p2p || prefix_reads(ctx, prev))
            break;
        depth++;
    }
    /* Not the group of collectives' marks: neither runs ahead of the other's launches. */
    mark->u.ahead.group = (uint64_t)(uintptr_t)c->handle | 1ull << 63;
    mark->u.ahead.depth = depth;
}
