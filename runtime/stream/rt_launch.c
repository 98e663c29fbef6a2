/* Launching a plan: its steps become device programs on the user's stream and the slave streams
 * (rt_prog.c), bound to this call in a pooled launch context (rt_launch_pool.c). Nothing here
 * waits for the device: the host enqueues and returns. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/stream/rt_launch.h"
#include "runtime/rt_trace.h"

/* A launch that ended in a failed stream (a wait timed out, a peer aborted the op) poisons the
 * communicator: HcclGetCommAsyncError reports it here and the peers' pending waits end too. */
static void note_failure(rt_comm *c, const rt_launch_ctx *ctx, hal_result rc)
{
    if (atomic_load(&c->ctrl->abort))
        return; /* the first reason (e.g. a mismatch) is already recorded */
    char call[160], msg[RT_MSG_LEN];
    rt_sig_format(&ctx->sig, call, sizeof call);
    snprintf(msg, sizeof msg, "comm %s: rank %u: %s (op #%llu) failed on the device: %s", c->name, c->rank, call,
             (unsigned long long)ctx->seq, hal_result_name(rc));
    OH_ERR("launch", "%s", msg);
    rt_abort_all(c, rt_from_hal(rc), msg);
}

/* Waits for the oldest pending launch (it is complete, or the wait runs its stream's work) and
 * returns its context to the pool. */
static void reclaim_oldest(rt_comm *c)
{
    rt_launch_ctx *ctx = rt_pending_at(c, 0);
    /* The sync returns the error a failed stream carried. */
    hal_result rc = c->hal->event_sync(ctx->done, -1);
    if (rc != HAL_OK)
        note_failure(c, ctx, rc);
    (void)rt_pending_pop(c);
    rt_launch_ctx_put(ctx);
}

void rt_launch_reclaim(rt_comm *c, bool wait_all)
{
    while (c->npending) {
        if (!wait_all && c->hal->event_query(rt_pending_at(c, 0)->done) == HAL_E_NOT_READY)
            break;
        reclaim_oldest(c);
    }
}

/* The pending launch after which `left` are younger (the oldest if fewer are older). */
static rt_launch_ctx *pending_leaving(rt_comm *c, uint32_t left)
{
    return rt_pending_at(c, c->npending > left ? c->npending - left - 1 : 0);
}

bool rt_ranks_fit_cpus(uint32_t ranks)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && ranks <= (uint64_t)cpus;
}

void rt_launch_help_setup(rt_comm *c)
{
    uint32_t local = 0;
    for (uint32_t q = 0; q < c->nranks; q++)
        local += !c->peers[q].remote;
    c->ranks_fit_cpus = rt_ranks_fit_cpus(local);
}

/* Launches in flight from which the host helps. Early (all but the newest) where a helped
 * program's waits are short: every rank of this server has a CPU, so the peers it waits for are
 * running. Otherwise a rank that ran its launches that early would wait for peers that have not
 * had the CPU yet (8 B AllReduce at N = 4 on 2 CPUs took twice as long): it lets a batch of calls
 * build up first. One-way runs too: their waits are short, but a help per call costs more than
 * one per 8 calls once a loop is long (8 B Broadcast on 2 CPUs, loops of 1000 and 20 000 calls: 5%
 * at 4 and 8 ranks; docs/perf-history.md, twenty-first pass). */
uint32_t rt_launch_help_from(const rt_comm *c)
{
    return c->ranks_fit_cpus ? RT_LAUNCH_HELP_EARLY : RT_LAUNCH_HELP_AT;
}

/* Well before the queue is full, the host runs the older launches itself where that cannot block
 * it (hal event_help): a loop of small calls then costs one thread per rank instead of the host
 * and the worker taking turns on the cores (docs/runtime.md, "The host helps early"). It runs
 * those older than the newest half of the window (rt_launch_help_from). What it cannot run (a
 * hold, a peer that is late) stays with the worker, and the next try waits for half a window more
 * launches. */
void rt_launch_help(rt_comm *c)
{
    uint32_t window = rt_launch_help_from(c);
    if (c->npending < window) {
        c->help_at = 0;
        return;
    }
    if (!c->hal->event_help || c->npending < c->help_at)
        return;
    hal_result rc = c->hal->event_help(pending_leaving(c, window / 2)->done);
    rt_launch_reclaim(c, false);
    c->help_at = rc == HAL_E_NOT_READY ? c->npending + window / 2 : 0;
}

/* A stream's queue is finite on a device too: with RT_LAUNCH_INFLIGHT_MAX launches of this
 * communicator not yet complete, the host waits until only half as many are left before it
 * enqueues another. The wait (event_sync without deadline) runs the stream's queued work on this
 * thread instead of sleeping, so a loop that runs far ahead becomes the executor of its own
 * launches, half a queue at a time (the worker hands over once per batch, not per launch): it
 * stops allocating, and the worker it would compete with for the cores goes idle. */
static void throttle(rt_comm *c)
{
    rt_launch_help(c);
    if (c->npending < RT_LAUNCH_INFLIGHT_MAX)
        return;
    rt_launch_ctx *mid = pending_leaving(c, RT_LAUNCH_INFLIGHT_MAX / 2);
    (void)c->hal->event_sync(mid->done, -1); /* its result is taken below, launch by launch */
    while (c->npending > RT_LAUNCH_INFLIGHT_MAX / 2)
        reclaim_oldest(c);
}

/* An eager plan's INBOX refs bind this op's slot of each rank's inbox (rt_dma_bind): it changes
 * from call to call, so a reused program sets it again (rt_rebind). */
static void bind_inbox(rt_comm *c, rt_launch_ctx *ctx)
{
    if (!ctx->plan->inbox_bytes && !ctx->hdr)
        return;
    ctx->inbox_at = rt_oneway_slot_offset(c, ctx->plan); /* the same in every inbox */
}

HcclResult rt_launch_prepare(rt_comm *c, rt_launch_ctx *ctx)
{
    bind_inbox(c, ctx);
    CHECK(rt_streams_ensure(c, ctx->plan->nstreams));
    if (!ctx->done) /* a pooled context keeps its event */
        CHECK_MAP(c->hal->event_create(c->dev, HAL_EVENT_SERIAL, &ctx->done), rt_from_hal);
    CHECK_MAP(rt_prog_build(ctx), rt_from_hal);
    return HCCL_SUCCESS;
}

/* A communicator's launches run in call order even when issued on different streams (CANN and
 * NCCL allow that): they share notify slots and publication rings, so a launch on another stream
 * than the previous one first waits for the end of that one. The previous launch is the pending
 * tail; once reclaimed it has completed and there is nothing to wait for. */
static hal_result order_after_previous(rt_comm *c, hal_stream *s)
{
    const rt_launch_ctx *prev = rt_pending_newest(c);
    if (!prev || prev->stream == s)
        return HAL_OK;
    return c->hal->stream_wait_event(s, prev->done);
}

/* Enqueues a prepared ctx's plan on stream s. The caller holds c->lock (seq order = enqueue order). */
HcclResult rt_launch_ctx_enqueue(rt_comm *c, rt_launch_ctx *ctx, hal_stream *s)
{
    ctx->stream = s;
    hal_result rc = order_after_previous(c, s);
    bool recorded = false, finished = false;
    if (rc == HAL_OK) {
        rt_trace_op(ctx); /* docs/tracing.md: the plan's tasks belong to this op */
        rc = rt_prog_run_now(ctx, &finished, &recorded);
        if (rc == HAL_E_NOT_READY)
            rc = rt_prog_submit(ctx, &recorded);
        rt_trace_op_end(ctx);
    }
    if (rc == HAL_OK && !recorded && !finished)
        rc = c->hal->event_record(ctx->done, s);
    if (rc != HAL_OK) {
        /* Part of the plan may be queued and the op's seq is taken: poison the communicator so
         * peers don't wait forever for this rank's part. */
        char msg[RT_MSG_LEN];
        snprintf(msg, sizeof msg, "comm %s: rank %u failed to enqueue its part of %s (op #%llu): %s", c->name,
                 c->rank, algo_coll_name(ctx->plan->op.coll), (unsigned long long)ctx->seq, hal_result_name(rc));
        OH_ERR("launch", "%s", msg);
        rt_abort_all(c, rt_from_hal(rc), msg);
        /* What was submitted reads ctx: let it end (the abort ends its waits) before reuse. */
        c->hal->stream_sync(s, -1);
        for (uint32_t k = 1; k < ctx->plan->nstreams; k++)
            c->hal->stream_sync(c->slaves[k], -1);
        rt_launch_ctx_put(ctx);
        return rt_from_hal(rc);
    }
    if (finished) /* it ran here, to its end: nothing of it is left on the device */
        rt_launch_ctx_put(ctx);
    else
        rt_pending_push(c, ctx);
    return HCCL_SUCCESS;
}

static void fill_sig(rt_launch_ctx *ctx, const rt_call *call)
{
    const algo_op *op = &call->op;
    ctx->sig.cmd = call->cmd;
    ctx->sig.count = call->sig_count ? call->sig_count : op->count; /* staging: the user call's */
    ctx->sig.dtype = op->dtype;
    ctx->sig.redop = op->redop;
    ctx->sig.root = op->root;
    ctx->sig.nranks = op->nranks;
    /* Only the fields a collective defines take part in the comparison. */
    bool reduces = call->cmd == HCCL_CMD_ALLREDUCE || call->cmd == HCCL_CMD_REDUCE ||
                   call->cmd == HCCL_CMD_REDUCE_SCATTER || call->cmd == HCCL_CMD_REDUCE_SCATTER_V;
    if (!reduces)
        ctx->sig.redop = 0;
    if (call->cmd != HCCL_CMD_BROADCAST && call->cmd != HCCL_CMD_REDUCE && call->cmd != HCCL_CMD_SCATTER)
        ctx->sig.root = 0;
    /* Ranks that disagree on determinism would run different reduction plans (a hang or wrong sums). */
    ctx->sig.deterministic = reduces && op->deterministic;
    ctx->sig.eager = ctx->plan->oneway ? RT_SIG_ONEWAY : ctx->plan->algo == ALGO_EAGER ? RT_SIG_EAGER : 0;
    /* Eager AlltoAllV: no table hash (every rank's tables differ); its crossover instead. Ranks
     * configured with others (HCCL_EAGER_MAX_BYTES) would send a block through the inbox that its
     * receiver waits for in its OUT, until the timeout. */
    if (ctx->plan->v_small_bytes)
        ctx->sig.vtab = (uint32_t)ctx->plan->v_small_bytes;
}

static void bind_self(rt_launch_ctx *ctx, const rt_call *call)
{
    rt_comm *c = ctx->c;
    ctx->base[0 * c->nranks + c->rank] = call->in;
    ctx->base[1 * c->nranks + c->rank] = call->out;
    /* V-ops: the cached plan's V-table refs are bound to this call's counts. */
    ctx->vop = call->op.counts && (call->op.coll == ALGO_COLL_ALLTOALLV || call->op.coll == ALGO_COLL_ALLTOALLVC ||
                                   call->op.coll == ALGO_COLL_ALLGATHERV ||
                                   call->op.coll == ALGO_COLL_REDUCE_SCATTERV);
    if (ctx->vop)
        algo_vtables(&call->op, ctx->vt);
    if (call->op.coll == ALGO_COLL_ALLTOALLVC && call->op.counts && ctx->vmatrix) {
        memcpy(ctx->vmatrix, call->op.counts, (size_t)c->nranks * c->nranks * sizeof(uint64_t));
        ctx->vhash = rt_vmatrix_hash(ctx->vmatrix, (size_t)c->nranks * c->nranks);
        ctx->sig.vtab = (uint32_t)ctx->vhash;
    }
    if (ctx->vop && (call->op.coll == ALGO_COLL_ALLGATHERV || call->op.coll == ALGO_COLL_REDUCE_SCATTERV))
        ctx->sig.vtab = (uint32_t)rt_vmatrix_hash(ctx->vt, 2 * (size_t)c->nranks); /* COUNT, then DISPL */
}

HcclResult rt_launch(rt_comm *c, rt_call *call)
{
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, false);
    throttle(c);
    const algo_plan *plan = NULL;
    call->op.oneway_run = rt_oneway_expect_run(c, &call->op);
    HcclResult rc = rt_pending_reserve(c); /* before the seq is taken: the push cannot fail */
    if (rc == HCCL_SUCCESS)
        rc = rt_plan_get(c, &call->op, &plan);
    rt_launch_ctx *ctx = rc == HCCL_SUCCESS ? rt_launch_ctx_get(c, plan) : NULL;
    if (rc == HCCL_SUCCESS && !ctx) {
        rt_plan_put(c, plan);
        rc = HCCL_E_MEMORY;
    }
    if (rc == HCCL_SUCCESS) {
        ctx->plan_held = true;
        fill_sig(ctx, call);
        bind_self(ctx, call);
        if (ctx->vop)
            rt_vring_warm(c);
        ctx->staged = call->staged;
        ctx->pre = call->pre;
        ctx->post = call->post;
        ctx->npre = call->npre;
        ctx->npost = call->npost;
        /* The seq this op will take (c->lock is held). */
        ctx->seq = c->seq + 1;
        /* Header mode: task functions reach every peer's inbox. An AlltoAllV whose large blocks
         * go into a receiver's OUT reads that receiver's record for its address too. */
        ctx->hdr = c->eager_hdr && !c->net && ctx->plan->algo == ALGO_EAGER;
        rt_oneway_prepare(c, ctx);
        rc = rt_launch_prepare(c, ctx);
        if (rc != HCCL_SUCCESS)
            rt_launch_ctx_put(ctx); /* no seq taken: the communicator stays usable */
        else
            rt_prog_ahead(ctx, call);
    }
    if (rc == HCCL_SUCCESS) {
        c->seq = ctx->seq;
        c->last_eager = ctx->plan->algo == ALGO_EAGER;
        rt_oneway_commit(c, ctx);
        ctx->sig.seq = ctx->seq;
        rc = rt_launch_ctx_enqueue(c, ctx, call->stream);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}
