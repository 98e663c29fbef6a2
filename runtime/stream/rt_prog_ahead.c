/* Running ahead (docs/runtime.md, "Running ahead"): how many calls before it a launch's prefix may
 * pass, set on the AHEAD mark its program build placed (rt_prog.c, ahead_able; rt_prog_p2p.c). */
#include "runtime/stream/rt_launch.h"

static bool ranges_meet(uintptr_t a, uint64_t alen, uintptr_t b, uint64_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

/* The launch's AHEAD mark, before any wait, or NULL. */
static hal_insn *find_mark(rt_launch_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->ninsns && !hal_insn_waits(&ctx->insns[i]); i++)
        if (ctx->insns[i].kind == HAL_INSN_AHEAD)
            return &ctx->insns[i];
    return NULL;
}

/* What stops a prefix at a launch before it (same stream, in flight): collectives read their IN
 * (a span), p2p launches their eager sends' buffers. */
typedef struct ahead_reads {
    const rt_launch_ctx *ctx;
    bool p2p;
    uintptr_t in;
    uint64_t in_bytes;
} ahead_reads;

static bool stops_at(const ahead_reads *r, const rt_launch_ctx *prev)
{
    if (!r->p2p)
        return ranges_meet(r->in, r->in_bytes, prev->out_at, prev->out_bytes);
    if (!prev->p2p) /* collectives' marks are of another group */
        return true;
    for (uint32_t k = 0; k < r->ctx->plan->op.nitems; k++) {
        const rt_p2p_item *it = &r->ctx->p2p_items[k];
        if (it->eager && ranges_meet((uintptr_t)it->buf, rt_p2p_item_bytes(it), prev->out_at, prev->out_bytes))
            return true;
    }
    return false;
}

/* The launches before, if on this stream, may still write their OUT after their own marks: the
 * prefix runs ahead of as many of them as it reads nothing of. With depth 0 the mark stays on: its
 * prefix runs in order, and later calls may still run ahead of it. */
static void set_mark(hal_insn *mark, const ahead_reads *r, hal_stream *stream, uint64_t group)
{
    const rt_comm *c = r->ctx->c;
    uint32_t depth = 0;
    while (depth < ALGO_AHEAD_MAX) {
        if (depth == c->npending) {
            depth = ALGO_AHEAD_MAX; /* none older in flight */
            break;
        }
        const rt_launch_ctx *prev = rt_pending_at(c, c->npending - 1 - depth);
        if (prev->stream != stream || stops_at(r, prev))
            break;
        depth++;
    }
    mark->u.ahead.group = group;
    mark->u.ahead.depth = depth;
}

void rt_prog_ahead(rt_launch_ctx *ctx, const rt_call *call)
{
    uint64_t in_elems = 0, out_elems = 0;
    algo_buffer_elems(&call->op, &in_elems, &out_elems);
    ctx->out_at = (uintptr_t)call->out;
    ctx->out_bytes = out_elems * ctx->esize;
    hal_insn *mark = find_mark(ctx);
    ctx->runs_ahead = false;
    if (!mark)
        return;
    ahead_reads r = {ctx, false, (uintptr_t)call->in, in_elems * ctx->esize};
    /* An eager AlltoAllV with a block past the crossover to receive: peers write it into this call's
     * OUT once its PUBLISH is out, so that runs in order, after the calls before it have ended. */
    if (rt_a2av_receives_directly(ctx)) {
        mark->u.ahead.group = (uint64_t)(uintptr_t)ctx->c->handle;
        mark->u.ahead.depth = 0;
        return;
    }
    ctx->runs_ahead = !stops_at(&r, ctx); /* a launch like it before: itself */
    set_mark(mark, &r, call->stream, (uint64_t)(uintptr_t)ctx->c->handle);
}

/* A p2p launch's OUT for the launches after it: the span of its receive buffers. */
static void p2p_out_span(rt_launch_ctx *ctx)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (uint32_t k = 0; k < ctx->plan->op.nitems; k++) {
        const rt_p2p_item *it = &ctx->p2p_items[k];
        uint64_t bytes = rt_p2p_item_bytes(it);
        if (it->is_send || !bytes)
            continue;
        lo = (uintptr_t)it->buf < lo ? (uintptr_t)it->buf : lo;
        hi = (uintptr_t)it->buf + bytes > hi ? (uintptr_t)it->buf + bytes : hi;
    }
    ctx->out_at = hi ? lo : 0;
    ctx->out_bytes = hi ? hi - lo : 0;
}

void rt_prog_p2p_ahead(rt_launch_ctx *ctx, hal_stream *stream)
{
    p2p_out_span(ctx);
    hal_insn *mark = find_mark(ctx);
    ctx->runs_ahead = false;
    if (!mark)
        return;
    ahead_reads r = {ctx, true, 0, 0};
    ctx->runs_ahead = !stops_at(&r, ctx); /* a launch like it before: itself */
    /* Not the group of collectives' marks: neither runs ahead of the other's launches. */
    set_mark(mark, &r, stream, (uint64_t)(uintptr_t)ctx->c->handle | 1ull << 63);
}
