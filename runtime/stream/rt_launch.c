/* Launching a plan: every step becomes a HAL task on the user's stream or a slave stream.
 * Nothing here waits for the device: the host enqueues and returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/stream/rt_launch.h"
#include "runtime/rt_trace.h"

rt_launch_ctx *rt_launch_ctx_new(rt_comm *c, const algo_plan *plan)
{
    uint32_t n = c->nranks;
    /* One block: the context, then its per-rank arrays (pointer-aligned first). */
    /* AlltoAllVC keeps this call's whole matrix for the checks (rt_vcheck.c). */
    size_t nmat = plan->op.coll == ALGO_COLL_ALLTOALLVC ? (size_t)n * n : 0;
    size_t bytes = sizeof(rt_launch_ctx) + (3 * n + n) * sizeof(void *) + 4 * n * sizeof(uint64_t) +
                   nmat * sizeof(uint64_t) + n * sizeof(rt_fetch_arg);
    rt_launch_ctx *ctx = calloc(1, bytes);
    if (!ctx)
        return NULL;
    char *p = (char *)(ctx + 1);
    ctx->base = (void **)p, p += 3 * n * sizeof(void *);
    ctx->vbase = (void **)p, p += n * sizeof(void *);
    ctx->vt = (uint64_t *)p, p += 4 * n * sizeof(uint64_t);
    ctx->vmatrix = nmat ? (uint64_t *)p : NULL, p += nmat * sizeof(uint64_t);
    ctx->fetch = (rt_fetch_arg *)p;
    ctx->c = c;
    ctx->plan = plan;
    ctx->esize = hal_dtype_size(plan->op.dtype);
    for (uint32_t r = 0; r < n; r++) {
        ctx->fetch[r].ctx = ctx;
        ctx->fetch[r].peer = r;
        ctx->base[2 * n + r] = c->peers[r].scratch;
    }
    ctx->base[2 * n + c->rank] = c->scratch;
    return ctx;
}

void rt_launch_ctx_free(rt_launch_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->done)
        ctx->c->hal->event_destroy(ctx->done);
    if (ctx->plan_held)
        rt_plan_put(ctx->c, ctx->plan);
    free(ctx->p2p_items);
    free(ctx);
}

static uint32_t wait_timeout_ms(const rt_comm *c)
{
    if (c->exec_timeout_s == 0)
        return UINT32_MAX; /* 0 = never time out, as CANN */
    uint64_t ms = (uint64_t)c->exec_timeout_s * 1000u;
    return ms > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)ms;
}

/* Waits poll the communicator's abort word (an _Atomic uint32_t: same layout as a plain one). */
static const volatile uint32_t *rt_abort_flag(rt_comm *c)
{
    return (const volatile uint32_t *)(void *)&c->ctrl->abort;
}

static uint32_t map_slot(const rt_launch_ctx *ctx, uint32_t slot)
{
    return (ctx->p2p && slot == ALGO_SLOT_PUB) ? RT_SLOT_P2P_PUB : slot;
}

static hal_result enqueue_sync(rt_launch_ctx *ctx, hal_stream *s, const algo_step *st)
{
    rt_comm *c = ctx->c;
    uint32_t peer = st->u.sync.peer, slot = map_slot(ctx, st->u.sync.slot);
    if (peer >= c->nranks || peer == c->rank || slot >= RT_SLOTS)
        return HAL_E_PARAM;
    if (st->kind == ALGO_STEP_SIGNAL)
        return c->hal->notify_record(c->peers[peer].to_peer[slot], s);
    CHECK(c->hal->notify_wait(c->peers[peer].from_peer[slot], s, wait_timeout_ms(c), rt_abort_flag(c)));
    if (!ctx->p2p || slot != ALGO_SLOT_P2P_DATA)
        return HAL_OK;
    /* A p2p receive: was the signal the sender's data, or its HcclCommDestroy? */
    if (st->u.sync.item >= ctx->plan->op.nitems)
        return HAL_E_PARAM;
    return c->hal->task_async(s, rt_p2p_recv_task, &ctx->p2p_items[st->u.sync.item]);
}

static hal_result enqueue_fetch(rt_launch_ctx *ctx, hal_stream *s, uint32_t peer, uint32_t item)
{
    rt_comm *c = ctx->c;
    if (peer >= c->nranks || peer == c->rank || (ctx->p2p && item >= ctx->plan->op.nitems))
        return HAL_E_PARAM;
    uint32_t slot = map_slot(ctx, ALGO_SLOT_PUB);
    CHECK(c->hal->notify_wait(c->peers[peer].from_peer[slot], s, wait_timeout_ms(c), rt_abort_flag(c)));
    if (ctx->p2p)
        return c->hal->task_async(s, rt_p2p_fetch_task, &ctx->p2p_items[item]);
    return c->hal->task_async(s, rt_fetch_task, &ctx->fetch[peer]);
}

static hal_result enqueue_list(rt_launch_ctx *ctx, uint32_t stream_idx, hal_stream *s);

static hal_result enqueue_fork(rt_launch_ctx *ctx, hal_stream *s0, uint32_t idx)
{
    rt_comm *c = ctx->c;
    if (idx == 0 || idx >= ctx->plan->nstreams)
        return HAL_E_PARAM;
    CHECK(c->hal->event_record(c->fork_ev[idx], s0));
    CHECK(c->hal->stream_wait_event(c->slaves[idx], c->fork_ev[idx]));
    CHECK(enqueue_list(ctx, idx, c->slaves[idx]));
    return c->hal->event_record(c->join_ev[idx], c->slaves[idx]);
}

static hal_result enqueue_step(rt_launch_ctx *ctx, hal_stream *s, const algo_step *st)
{
    rt_comm *c = ctx->c;
    switch (st->kind) {
    case ALGO_STEP_COPY:
    case ALGO_STEP_REDUCE:
        return rt_dma_submit(ctx, s, st);
    case ALGO_STEP_SIGNAL:
    case ALGO_STEP_WAIT:
        return enqueue_sync(ctx, s, st);
    case ALGO_STEP_FORK:
        return enqueue_fork(ctx, s, st->u.fork.stream);
    case ALGO_STEP_JOIN:
        if (st->u.fork.stream == 0 || st->u.fork.stream >= ctx->plan->nstreams)
            return HAL_E_PARAM;
        return c->hal->stream_wait_event(s, c->join_ev[st->u.fork.stream]);
    case ALGO_STEP_PUBLISH:
        return c->hal->task_async(s, ctx->p2p ? rt_p2p_publish_task : rt_publish_task, ctx);
    case ALGO_STEP_FETCH:
        return enqueue_fetch(ctx, s, st->u.fetch.peer, st->u.fetch.item);
    default:
        return HAL_E_PARAM;
    }
}

static hal_result enqueue_list(rt_launch_ctx *ctx, uint32_t stream_idx, hal_stream *s)
{
    const algo_step_list *l = &ctx->plan->streams[stream_idx];
    for (uint32_t i = 0; i < l->nsteps; i++) {
        rt_trace_step(ctx, stream_idx, i);
        hal_result rc = enqueue_step(ctx, s, &l->steps[i]);
        if (rc != HAL_OK) {
            OH_ERR("launch", "rank %u: enqueueing step %u (kind %u) of stream %u of %s/%s failed: %s", ctx->c->rank,
                   i, l->steps[i].kind, stream_idx, algo_coll_name(ctx->plan->op.coll), ctx->plan->name,
                   hal_result_name(rc));
            return rc;
        }
    }
    return HAL_OK;
}

static void pending_push(rt_comm *c, rt_launch_ctx *ctx)
{
    if (c->pending_tail)
        c->pending_tail->next = ctx;
    else
        c->pending_head = ctx;
    c->pending_tail = ctx;
}

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

void rt_launch_reclaim(rt_comm *c, bool wait_all)
{
    while (c->pending_head) {
        rt_launch_ctx *ctx = c->pending_head;
        if (!wait_all && c->hal->event_query(ctx->done) == HAL_E_NOT_READY)
            break;
        /* Complete now (or waited for): the sync returns the error a failed stream carried. */
        hal_result rc = c->hal->event_sync(ctx->done, -1);
        if (rc != HAL_OK)
            note_failure(c, ctx, rc);
        c->pending_head = ctx->next;
        if (!c->pending_head)
            c->pending_tail = NULL;
        rt_launch_ctx_free(ctx);
    }
}

HcclResult rt_launch_prepare(rt_comm *c, rt_launch_ctx *ctx)
{
    CHECK(rt_streams_ensure(c, ctx->plan->nstreams));
    CHECK_MAP(c->hal->event_create(c->dev, 0, &ctx->done), rt_from_hal);
    return HCCL_SUCCESS;
}

/* A communicator's launches run in call order even when issued on different streams (CANN and
 * NCCL allow that): they share notify slots and publication rings, so a launch on another stream
 * than the previous one first waits for the end of that one. The previous launch is the pending
 * tail; once reclaimed it has completed and there is nothing to wait for. */
static hal_result order_after_previous(rt_comm *c, hal_stream *s)
{
    const rt_launch_ctx *prev = c->pending_tail;
    if (!prev || prev->stream == s)
        return HAL_OK;
    return c->hal->stream_wait_event(s, prev->done);
}

/* Enqueues a prepared ctx's plan on stream s. The caller holds c->lock (seq order = enqueue order). */
HcclResult rt_launch_ctx_enqueue(rt_comm *c, rt_launch_ctx *ctx, hal_stream *s)
{
    ctx->stream = s;
    hal_result rc = order_after_previous(c, s);
    if (rc == HAL_OK) {
        rt_trace_op(ctx); /* docs/tracing.md: the plan's tasks belong to this op */
        rc = enqueue_list(ctx, 0, s);
        rt_trace_op_end(ctx);
    }
    if (rc == HAL_OK)
        rc = c->hal->event_record(ctx->done, s);
    if (rc != HAL_OK) {
        /* Part of the plan may be queued and the op's seq is taken: poison the communicator so
         * peers don't wait forever for this rank's part. */
        char msg[RT_MSG_LEN];
        snprintf(msg, sizeof msg, "comm %s: rank %u failed to enqueue its part of %s (op #%llu): %s", c->name,
                 c->rank, algo_coll_name(ctx->plan->op.coll), (unsigned long long)ctx->seq, hal_result_name(rc));
        OH_ERR("launch", "%s", msg);
        rt_abort_all(c, rt_from_hal(rc), msg);
        c->hal->stream_sync(s, -1);
        rt_launch_ctx_free(ctx);
        return rt_from_hal(rc);
    }
    pending_push(c, ctx);
    return HCCL_SUCCESS;
}

static void fill_sig(rt_launch_ctx *ctx, const rt_call *call)
{
    const algo_op *op = &call->op;
    ctx->sig.cmd = call->cmd;
    ctx->sig.count = op->count;
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
    ctx->sig.eager = ctx->plan->algo == ALGO_EAGER;
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
    }
}

HcclResult rt_launch(rt_comm *c, rt_call *call)
{
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, false);
    const algo_plan *plan = NULL;
    HcclResult rc = rt_plan_get(c, &call->op, &plan);
    rt_launch_ctx *ctx = rc == HCCL_SUCCESS ? rt_launch_ctx_new(c, plan) : NULL;
    if (rc == HCCL_SUCCESS && !ctx) {
        rt_plan_put(c, plan);
        rc = HCCL_E_MEMORY;
    }
    if (ctx)
        ctx->plan_held = true;
    if (rc == HCCL_SUCCESS) {
        rc = rt_launch_prepare(c, ctx);
        if (rc != HCCL_SUCCESS)
            rt_launch_ctx_free(ctx); /* no seq taken: the communicator stays usable */
    }
    if (rc == HCCL_SUCCESS) {
        ctx->seq = ++c->seq;
        c->last_eager = ctx->plan->algo == ALGO_EAGER;
        fill_sig(ctx, call);
        ctx->sig.seq = ctx->seq;
        bind_self(ctx, call);
        rc = rt_launch_ctx_enqueue(c, ctx, call->stream);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}
