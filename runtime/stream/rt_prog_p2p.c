/* A p2p launch's steps as instructions. With a peer of this server (rt_p2p_on_flags) they go
 * through the boxes (runtime/rt_p2p_box.c): flag waits and wake-ups instead of counted notifies,
 * which an eager send could not keep balanced (it waits for no receive record, so a count the
 * receiver recorded for it would be left for the next send):
 *   FETCH        eager send: wait for its box (`read`), write it; other sends: wait for the receive
 *                record (`posted`), check and bind it (rt_p2p_fetch_task)
 *   COPY         an eager send's: none (its bytes went into the box)
 *   SIGNAL PUB   a wake-up of a sender asleep in its wait for the record
 *   SIGNAL DATA  a direct send's header (rt_p2p_delivered_task), then a wake-up of the receiver
 *   WAIT DATA    the box's header, the receive's check (rt_p2p_recv_task), a wake-up of a sender
 *                waiting for the box
 * Elsewhere, counted notifies on the PUB and DATA slots, the FETCH and the receive's check.
 * Running ahead (docs/runtime.md): a launch's program starts with its eager sends of stream 0,
 * each done only where its box is free (rt_p2p_eager_try_task; its FETCH in order does the rest),
 * and an AHEAD mark: while the launches before it wait for their receives, its sends go out. In a
 * ring of sends and receives, each rank then sends the next calls' messages before its receive of
 * this one, and ranks sharing CPUs finish several calls per turn instead of one. */
#include "runtime/stream/rt_prog_build.h"

static hal_result push_wake(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, hal_notify *n)
{
    CHECK(rt_prog_push_notify(ctx, stream, step, false, n));
    ctx->insns[ctx->ninsns - 1].kind = HAL_INSN_NOTIFY_WAKE;
    return HAL_OK;
}

/* The item's flag wait (set per call: rt_prog_p2p_waits). */
static hal_result push_flag_wait(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, rt_p2p_item *it)
{
    hal_insn *in = rt_prog_push_insn(ctx, stream, step, HAL_INSN_FLAG_WAIT);
    if (!in)
        return HAL_E_NOMEM;
    in->u.flag.w = &it->wait;
    return HAL_OK;
}

/* What each item's flag wait sleeps on and checks where it would sleep; its flag and value come
 * with the ordinal (rt_p2p_bind_waits). Per call, not in the program: the items are rewritten for
 * every call, and a built program serves later calls of its plan (rt_prog.c, reusable). */
void rt_prog_p2p_waits(rt_launch_ctx *ctx)
{
    rt_comm *c = ctx->c;
    for (uint32_t k = 0; k < ctx->plan->op.nitems; k++) {
        rt_p2p_item *it = &ctx->p2p_items[k];
        if (it->peer == c->rank || !rt_p2p_on_flags(c, it->peer))
            continue;
        hal_notify *const *from = c->peers[it->peer].from_peer;
        /* A destroying receiver writes FINALIZE as a direct send's record (rt_p2p_finalize): no
         * check needed there. */
        bool direct = it->is_send && !it->eager;
        it->wait = (hal_flag_wait){.wake = from[!it->is_send ? ALGO_SLOT_P2P_DATA
                                               : it->eager ? RT_SLOT_P2P_CREDIT : RT_SLOT_P2P_PUB],
                                   .timeout_ms = rt_prog_wait_timeout_ms(c), .abort_flag = rt_prog_abort_flag(c),
                                   .check = direct ? NULL : rt_p2p_peer_check, .check_arg = it};
    }
}

hal_result rt_prog_p2p_fetch(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, rt_p2p_item *it)
{
    rt_peer *p = &ctx->c->peers[it->peer];
    if (!rt_p2p_on_flags(ctx->c, it->peer)) {
        CHECK(rt_prog_push_notify(ctx, stream, step, true, p->from_peer[RT_SLOT_P2P_PUB]));
        return rt_prog_push_fn(ctx, stream, step, rt_p2p_fetch_task, it);
    }
    CHECK(push_flag_wait(ctx, stream, step, it));
    return rt_prog_push_fn(ctx, stream, step, it->eager ? rt_p2p_eager_send_task : rt_p2p_fetch_task, it);
}

hal_result rt_prog_p2p_sync(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, const algo_step *st)
{
    uint32_t item = st->u.sync.item;
    if (item >= ctx->plan->op.nitems)
        return HAL_E_PARAM;
    rt_p2p_item *it = &ctx->p2p_items[item];
    rt_peer *p = &ctx->c->peers[st->u.sync.peer];
    if (st->u.sync.slot == ALGO_SLOT_PUB && st->kind == ALGO_STEP_SIGNAL)
        return push_wake(ctx, stream, step, p->to_peer[RT_SLOT_P2P_PUB]);
    if (st->u.sync.slot != ALGO_SLOT_P2P_DATA)
        return HAL_E_PARAM;
    if (st->kind == ALGO_STEP_SIGNAL) {
        if (!it->eager)
            CHECK(rt_prog_push_fn(ctx, stream, step, rt_p2p_delivered_task, it));
        return push_wake(ctx, stream, step, p->to_peer[ALGO_SLOT_P2P_DATA]);
    }
    CHECK(push_flag_wait(ctx, stream, step, it));
    CHECK(rt_prog_push_fn(ctx, stream, step, rt_p2p_recv_task, it));
    /* Only an eager sender waits for its box; a receive too large for one came direct, or fails
     * the call as a mismatch (an abort wakes every wait). */
    if (rt_p2p_item_bytes(it) > ctx->c->p2p_box_bytes)
        return HAL_OK;
    return push_wake(ctx, stream, step, p->to_peer[RT_SLOT_P2P_CREDIT]);
}

/* Whether the launch may take part in running ahead: an eager send, or a receive an eager send
 * could fill (a loop of small calls). A launch of large messages only would make every wait that
 * is not met at once look for prefixes to run, and find none. */
static bool small_launch(const rt_launch_ctx *ctx)
{
    for (uint32_t k = 0; k < ctx->plan->op.nitems; k++) {
        const rt_p2p_item *it = &ctx->p2p_items[k];
        if (it->eager || (!it->is_send && rt_p2p_item_bytes(it) <= ctx->c->p2p_box_bytes))
            return true;
    }
    return false;
}

hal_result rt_prog_p2p_prefix(rt_launch_ctx *ctx)
{
    if (!ctx->p2p || !rt_p2p_boxes(ctx->c) || !small_launch(ctx))
        return HAL_OK;
    const algo_step_list *l = &ctx->plan->streams[0];
    for (uint32_t i = 0; i < l->nsteps; i++) {
        const algo_step *st = &l->steps[i];
        if (st->kind != ALGO_STEP_FETCH || st->u.fetch.item >= ctx->plan->op.nitems)
            continue;
        rt_p2p_item *it = &ctx->p2p_items[st->u.fetch.item];
        if (!it->eager)
            continue;
        CHECK(rt_prog_push_fn(ctx, 0, i, rt_p2p_eager_try_task, it));
        CHECK(push_wake(ctx, 0, i, ctx->c->peers[it->peer].to_peer[ALGO_SLOT_P2P_DATA]));
    }
    hal_insn *mark = rt_prog_push_insn(ctx, 0, 0, HAL_INSN_AHEAD);
    if (!mark)
        return HAL_E_NOMEM;
    mark->u.ahead.group = 0; /* off until rt_prog_p2p_ahead */
    mark->u.ahead.depth = 0;
    return HAL_OK;
}

bool rt_prog_p2p_skips(const rt_launch_ctx *ctx, const algo_step *st)
{
    const algo_ref *dst = &st->u.copy.dst;
    return ctx->p2p && st->kind == ALGO_STEP_COPY && dst->owner != ALGO_SELF &&
           (uint32_t)dst->owner != ctx->c->rank && dst->vdispl >= 0 && (uint32_t)dst->vdispl < ctx->plan->op.nitems &&
           ctx->p2p_items[dst->vdispl].eager;
}
