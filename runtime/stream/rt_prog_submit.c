/* Submitting what rt_prog_build made (rt_prog.c): each program either as ONE task (hal
 * prog_launch) or, where the backend has no program executor (or while the timeline trace records,
 * so that every step stays its own timed task, docs/tracing.md), one task per instruction, with
 * the same semantics; FORK/JOIN segments as event records and waits between them. A small launch
 * of one program may instead run at once on the calling thread (rt_prog_run_now; docs/runtime.md,
 * "Runs at once"). */
#include "runtime/rt_trace.h"
#include "runtime/stream/rt_launch.h"

/* One instruction as a task of its own (the same semantics as inside a program). */
static hal_result submit_insn(rt_comm *c, hal_stream *s, const hal_insn *in)
{
    switch (in->kind) {
    case HAL_INSN_DMA:
        return c->hal->dma_batch(s, in->u.dma.descs, in->u.dma.n);
    case HAL_INSN_NOTIFY_RECORD:
        return c->hal->notify_record(in->u.notify.n, s);
    case HAL_INSN_NOTIFY_WAIT:
        if (in->u.notify.check && c->hal->notify_wait_checked)
            return c->hal->notify_wait_checked(in->u.notify.n, s, in->u.notify.timeout_ms, in->u.notify.abort_flag,
                                               in->u.notify.check, in->u.notify.check_arg);
        if (in->u.notify.at_least)
            return c->hal->notify_wait_count(in->u.notify.n, s, in->u.notify.at_least, in->u.notify.timeout_ms,
                                             in->u.notify.abort_flag);
        return c->hal->notify_wait(in->u.notify.n, s, in->u.notify.timeout_ms, in->u.notify.abort_flag);
    case HAL_INSN_FN:
        return c->hal->task_async(s, in->u.fn.fn, in->u.fn.arg);
    case HAL_INSN_FLAG_WAIT:
        return c->hal->flag_wait(s, in->u.flag.w);
    case HAL_INSN_NOTIFY_WAKE:
        return c->hal->notify_wake(in->u.notify.n, s);
    case HAL_INSN_AHEAD:
        return HAL_OK; /* one task per instruction: nothing runs ahead */
    default:
        return HAL_E_PARAM;
    }
}

/* Bytes the DMA instructions of ctx's first program move (what a run at once would run), stopping
 * past `most`; past it where the launch does not start with a program on its stream. */
static uint64_t prog_bytes(const rt_launch_ctx *ctx, uint64_t most)
{
    if (!ctx->nsegs || ctx->segs[0].kind != RT_SEG_PROG)
        return most + 1;
    const rt_seg *g = &ctx->segs[0];
    uint64_t bytes = 0;
    for (uint32_t i = g->first; i < g->first + g->n && bytes <= most; i++) {
        const hal_insn *in = &ctx->insns[i];
        for (uint32_t k = 0; in->kind == HAL_INSN_DMA && k < in->u.dma.n; k++)
            bytes += in->u.dma.descs[k].bytes;
    }
    return bytes;
}

/* Every program of the launch checked, and the first one's bytes counted, once per build, not per
 * call: a launch that reuses its programs as they are (rt_prog_reuse.c) keeps both (ctx->checked),
 * and neither a run at once nor a queued launch checks them again (HAL prog_run_now,
 * prog_launch_checked). */
static hal_result settle(rt_launch_ctx *ctx)
{
    if (ctx->checked)
        return HAL_OK;
    for (uint32_t i = 0; i < ctx->nsegs; i++) {
        const rt_seg *g = &ctx->segs[i];
        hal_result rc = g->kind == RT_SEG_PROG ? ctx->c->hal->prog_check(&ctx->insns[g->first], g->n) : HAL_OK;
        if (rc != HAL_OK)
            return rc;
    }
    ctx->run_bytes = prog_bytes(ctx, ALGO_EAGER_BOX);
    ctx->checked = true;
    return HAL_OK;
}

/* `done`: also record it after the program, in the same task (NULL: no record). `checked`: the
 * program passed prog_check since it last changed more than its addresses (settle). */
static hal_result submit_prog(rt_launch_ctx *ctx, hal_stream *s, const rt_seg *g, bool unroll, bool checked,
                              hal_event *done)
{
    rt_comm *c = ctx->c;
    if (checked)
        return c->hal->prog_launch_checked(s, &ctx->insns[g->first], g->n, done);
    if (done)
        return c->hal->prog_launch_record(s, &ctx->insns[g->first], g->n, done);
    if (!unroll)
        return c->hal->prog_launch(s, &ctx->insns[g->first], g->n);
    for (uint32_t i = g->first; i < g->first + g->n; i++) {
        rt_trace_step(ctx, ctx->isrc[i].stream, ctx->isrc[i].step);
        CHECK(submit_insn(c, s, &ctx->insns[i]));
    }
    return HAL_OK;
}

hal_result rt_prog_submit(rt_launch_ctx *ctx, bool *recorded)
{
    rt_comm *c = ctx->c;
    bool unroll = !c->hal->prog_launch || ctx->trace_op;
    bool checked = !unroll && c->hal->prog_launch_checked && c->hal->prog_check;
    *recorded = false;
    if (checked) {
        hal_result rc = settle(ctx);
        if (rc != HAL_OK) {
            OH_ERR("launch", "rank %u: a program of %s/%s failed its check: %s", c->rank,
                   algo_coll_name(ctx->plan->op.coll), ctx->plan->name, hal_result_name(rc));
            return rc;
        }
    }
    for (uint32_t i = 0; i < ctx->nsegs; i++) {
        const rt_seg *g = &ctx->segs[i];
        hal_stream *s = g->stream ? c->slaves[g->stream] : ctx->stream;
        hal_result rc;
        if (g->kind == RT_SEG_PROG) {
            /* The launch's completion rides on its last program when that one ends it on its stream. */
            bool last = i + 1 == ctx->nsegs && !g->stream && !unroll && c->hal->prog_launch_record;
            rc = submit_prog(ctx, s, g, unroll, checked, last ? ctx->done : NULL);
            *recorded = last && rc == HAL_OK;
        } else {
            rt_trace_step(ctx, 0, g->step);
            rc = g->kind == RT_SEG_RECORD ? c->hal->event_record(g->ev, s) : c->hal->stream_wait_event(s, g->ev);
        }
        if (rc != HAL_OK) {
            OH_ERR("launch", "rank %u: submitting part %u of %u (kind %u, plan stream %u) of %s/%s failed: %s",
                   c->rank, i, ctx->nsegs, g->kind, g->stream, algo_coll_name(ctx->plan->op.coll), ctx->plan->name,
                   hal_result_name(rc));
            return rc;
        }
    }
    return HAL_OK;
}

/* Where the host runs a launch at once: one program on the launch stream (no slave streams, not
 * unrolled for the trace) that moves no more than an eager box (a larger one would keep the caller
 * from its own work while it copies). With more ranks on this server than CPUs, only a launch whose
 * prefix could not pass a launch like it (rt_prog_ahead): in place, one-way, or without a prefix.
 * There the queue is what lets a rank that has the CPU post several calls' sends in one turn while
 * its peers wait for a CPU (8 B out-of-place AllReduce at 4 ranks on 2 CPUs: 1.9 us queued, 2.7 at
 * once); a launch that cannot run ahead gains nothing from it and saves the queue entry, the record
 * and the reclaim (8 B Broadcast at 8 ranks: 1.30 -> 1.02 us; docs/perf-history.md, thirty-third pass). */
static bool runs_now(const rt_launch_ctx *ctx)
{
    rt_comm *c = ctx->c;
    return c->hal->prog_run_now && c->hal->prog_check && c->hal->prog_launch && !ctx->trace_op &&
           ctx->nsegs == 1 && ctx->segs[0].kind == RT_SEG_PROG && !ctx->segs[0].stream &&
           (c->ranks_fit_cpus || !ctx->runs_ahead);
}

hal_result rt_prog_run_now(rt_launch_ctx *ctx, bool *finished, bool *recorded)
{
    rt_comm *c = ctx->c;
    *finished = *recorded = false;
    if (!runs_now(ctx))
        return HAL_E_NOT_READY;
    hal_result rc = settle(ctx);
    if (rc != HAL_OK)
        return rc;
    if (ctx->run_bytes > ALGO_EAGER_BOX)
        return HAL_E_NOT_READY;
    if (c->run_now_skip) { /* one left its program at a wait not long ago */
        c->run_now_skip--;
        return HAL_E_NOT_READY;
    }
    if (c->npending && c->hal->event_help) { /* the launches before it run first, here if they can */
        (void)c->hal->event_help(rt_pending_newest(c)->done);
        rt_launch_reclaim(c, false);
    }
    if (c->npending) /* one of them waits for a peer (or a hold): this one goes behind it */
        return HAL_E_NOT_READY;
    const rt_seg *g = &ctx->segs[0];
    bool queued = false;
    rc = c->hal->prog_run_now(ctx->stream, &ctx->insns[g->first], g->n, ctx->done, &queued);
    if (rc == HAL_OK) {
        *finished = !queued;
        *recorded = queued;
        uint32_t next = c->run_now_backoff ? 2 * c->run_now_backoff : RT_RUN_NOW_BACKOFF;
        c->run_now_backoff = queued ? (next < RT_RUN_NOW_BACKOFF_MAX ? next : RT_RUN_NOW_BACKOFF_MAX) : 0;
        c->run_now_skip = c->run_now_backoff;
    }
    return rc;
}
