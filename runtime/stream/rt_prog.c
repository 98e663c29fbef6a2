/* A launch as device instructions. rt_prog_build turns the plan's steps into hal_insn entries
 * (one code path) and cuts them into segments: consecutive steps of one plan stream up to a FORK
 * or JOIN form one program; FORK/JOIN stay event records and waits between programs, and a slave
 * stream's list becomes its own program, submitted by rt_prog_submit.c. Arrays live in the launch
 * context until it is reclaimed. */
#include <stdatomic.h>
#include <stddef.h>

#include "runtime/net/rt_net.h"
#include "runtime/stream/rt_prog_build.h"

/* A slave list that only copies, reduces and signals, moving at most this much, runs inline in
 * stream 0's program at its FORK: waking a slave stream's worker and joining it back costs more
 * than such copies gain from running in parallel (docs/runtime.md: on 2 cores inlining was never
 * slower up to 4 MiB; 1 MiB keeps parallel slave copies for large transfers on bigger machines).
 * Such a list cannot block, so running it at the FORK is one of the orders the plan allows (its
 * steps and stream 0's between FORK and JOIN are unordered; the verifier checks plans race-free
 * under every order). */
#define RT_INLINE_SLAVE_BYTES (1u << 20)

/* What the builder tracks across steps. */
typedef struct prog_builder {
    rt_launch_ctx *ctx;
    hal_event *mark;  /* an event recorded on stream 0 with nothing queued there since (FORK reuses it) */
    uint32_t inlined; /* bit k: slave k's list ran inline (at its FORK or in a fan-out); its JOIN is a no-op */
} prog_builder;

uint32_t rt_prog_wait_timeout_ms(const rt_comm *c)
{
    if (c->exec_timeout_s == 0)
        return UINT32_MAX; /* 0 = never time out, as CANN */
    uint64_t ms = (uint64_t)c->exec_timeout_s * 1000u;
    return ms > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)ms;
}

/* Waits poll the communicator's abort word (an _Atomic uint32_t: same layout as a plain one). */
const volatile uint32_t *rt_prog_abort_flag(rt_comm *c)
{
    return (const volatile uint32_t *)(void *)&c->ctrl->abort;
}

static uint32_t map_slot(const rt_launch_ctx *ctx, uint32_t slot)
{
    return (ctx->p2p && slot == ALGO_SLOT_PUB) ? RT_SLOT_P2P_PUB : slot;
}

hal_insn *rt_prog_push_insn(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, uint8_t kind)
{
    uint32_t need = ctx->ninsns + 1;
    if (!rt_grow((void **)&ctx->insns, &ctx->insns_cap, need, sizeof *ctx->insns))
        return NULL;
    if (!rt_grow((void **)&ctx->isrc, &ctx->isrc_cap, need, sizeof *ctx->isrc))
        return NULL;
    ctx->isrc[ctx->ninsns] = (rt_insn_src){step, 0, (uint8_t)stream};
    hal_insn *in = &ctx->insns[ctx->ninsns++];
    in->kind = kind;
    return in;
}

hal_result rt_prog_push_notify(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, bool wait, hal_notify *n)
{
    hal_insn *in = rt_prog_push_insn(ctx, stream, step, wait ? HAL_INSN_NOTIFY_WAIT : HAL_INSN_NOTIFY_RECORD);
    if (!in)
        return HAL_E_NOMEM;
    in->u.notify.n = n;
    in->u.notify.timeout_ms = wait ? rt_prog_wait_timeout_ms(ctx->c) : 0;
    in->u.notify.abort_flag = wait ? rt_prog_abort_flag(ctx->c) : NULL;
    in->u.notify.at_least = 0;
    in->u.notify.keep_rest = wait; /* from_peer notifies: only this rank's launches wait on them */
    in->u.notify.check = NULL;
    in->u.notify.check_arg = NULL;
    return HAL_OK;
}

/* The check of the notify wait just pushed (hal_insn): runs where it would sleep. */
static void set_check(rt_launch_ctx *ctx, hal_task_fn check, rt_fetch_arg *arg)
{
    ctx->insns[ctx->ninsns - 1].u.notify.check = check;
    ctx->insns[ctx->ninsns - 1].u.notify.check_arg = arg;
}

/* Stream 0 waits until n holds at_least signals, taking none (hal_ops.notify_wait_count). */
static hal_result push_count_wait(rt_launch_ctx *ctx, hal_notify *n, uint32_t at_least)
{
    CHECK(rt_prog_push_notify(ctx, 0, 0, true, n));
    ctx->insns[ctx->ninsns - 1].u.notify.at_least = at_least;
    return HAL_OK;
}

hal_result rt_prog_push_fn(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, hal_task_fn fn, void *arg)
{
    hal_insn *in = rt_prog_push_insn(ctx, stream, step, HAL_INSN_FN);
    if (!in)
        return HAL_E_NOMEM;
    in->u.fn.fn = fn;
    in->u.fn.arg = arg;
    return HAL_OK;
}

static hal_result push_seg(rt_launch_ctx *ctx, rt_seg g)
{
    if (!rt_grow((void **)&ctx->segs, &ctx->segs_cap, ctx->nsegs + 1, sizeof *ctx->segs))
        return HAL_E_NOMEM;
    ctx->segs[ctx->nsegs++] = g;
    return HAL_OK;
}

static rt_net_op *push_netop(rt_launch_ctx *ctx, uint32_t peer)
{
    if (!rt_grow((void **)&ctx->netops, &ctx->netops_cap, ctx->nnetops + 1, sizeof *ctx->netops))
        return NULL;
    rt_net_op *op = &ctx->netops[ctx->nnetops++];
    *op = (rt_net_op){.ctx = ctx, .peer = peer};
    return op;
}

/* A COPY into a remote peer's buffer: its pieces become writes on the link (rt_net_write_task).
 * Nothing else may touch another server's memory. */
static hal_result build_net_copy(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, const algo_step *st)
{
    const algo_ref *dst = &st->u.copy.dst;
    if (st->kind != ALGO_STEP_COPY || rt_ref_remote(ctx, &st->u.copy.src) || dst->buf == ALGO_BUF_IN) {
        OH_ERR("launch", "rank %u: step %u of stream %u of %s/%s %s rank %u's memory on another server: only copies "
               "into its SCRATCH/OUT/INBOX can cross servers", ctx->c->rank, step, stream,
               algo_coll_name(ctx->plan->op.coll), ctx->plan->name,
               st->kind == ALGO_STEP_COPY ? "copies with" : "reduces with", (unsigned)dst->owner);
        return HAL_E_NOT_SUPPORTED;
    }
    uint32_t n = rt_dma_build(ctx, st, &ctx->descs[ctx->ndescs]);
    if (n == 0)
        return HAL_OK;
    rt_net_op *op = push_netop(ctx, (uint32_t)dst->owner);
    if (!op)
        return HAL_E_NOMEM;
    op->first = ctx->ndescs;
    op->n = n;
    op->buf = dst->buf;
    op->item = ctx->p2p && dst->vdispl >= 0 ? (uint32_t)dst->vdispl : 0;
    ctx->ndescs += n;
    return rt_prog_push_fn(ctx, stream, step, rt_net_write_task, NULL); /* arg set in rt_prog_build */
}

/* The addresses of this call that the step's n new descriptors hold (rt_rebind). */
static hal_result note_rebinds(rt_launch_ctx *ctx, const algo_step *st, uint32_t n)
{
    bool is_copy = st->kind == ALGO_STEP_COPY;
    const algo_ref *refs[3] = {is_copy ? &st->u.copy.dst : &st->u.reduce.dst,
                               is_copy ? &st->u.copy.src : &st->u.reduce.src,
                               !is_copy && st->u.reduce.has_src2 ? &st->u.reduce.src2 : NULL};
    for (uint8_t f = 0; f < 3; f++) {
        if (!refs[f] || !rt_dma_per_call(ctx, refs[f]))
            continue;
        if (!rt_grow((void **)&ctx->rebinds, &ctx->rebinds_cap, ctx->nrebinds + n, sizeof *ctx->rebinds))
            return HAL_E_NOMEM;
        uint32_t owner = refs[f]->owner == ALGO_SELF ? ctx->c->rank : (uint32_t)refs[f]->owner;
        uint8_t buf = (uint8_t)refs[f]->buf;
        if (ctx->p2p) { /* rt_p2p_bind */
            owner = (uint32_t)refs[f]->vdispl;
            buf = RT_REBIND_ITEM;
        }
        size_t field = f == 0 ? offsetof(hal_dma_desc, dst) : f == 1 ? offsetof(hal_dma_desc, src)
                                                                     : offsetof(hal_dma_desc, src2);
        uint32_t index = buf == ALGO_BUF_INBOX || buf == RT_REBIND_ITEM ? owner : buf * ctx->c->nranks + owner;
        for (uint32_t i = 0; i < n; i++) {
            size_t at = (size_t)(ctx->ndescs + i) * sizeof(hal_dma_desc) + field + offsetof(hal_ref, base);
            if (at > UINT32_MAX)
                return HAL_E_NOMEM; /* 4 GiB of descriptors: no plan comes near */
            ctx->rebinds[ctx->nrebinds++] = (rt_rebind){(uint32_t)at, buf, index};
        }
    }
    return HAL_OK;
}

static hal_result build_dma(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, const algo_step *st)
{
    if (rt_prog_p2p_skips(ctx, st))
        return HAL_OK;
    if (!rt_grow((void **)&ctx->descs, &ctx->descs_cap, ctx->ndescs + RT_DMA_MAX_PIECES, sizeof *ctx->descs))
        return HAL_E_NOMEM;
    bool is_copy = st->kind == ALGO_STEP_COPY;
    if (rt_ref_remote(ctx, is_copy ? &st->u.copy.dst : &st->u.reduce.dst) ||
        rt_ref_remote(ctx, is_copy ? &st->u.copy.src : &st->u.reduce.src) ||
        (!is_copy && st->u.reduce.has_src2 && rt_ref_remote(ctx, &st->u.reduce.src2)))
        return build_net_copy(ctx, stream, step, st);
    uint32_t n = rt_dma_build(ctx, st, &ctx->descs[ctx->ndescs]);
    if (n == 0)
        return HAL_OK; /* nothing to move (an empty V block) */
    CHECK(note_rebinds(ctx, st, n));
    hal_insn *in = rt_prog_push_insn(ctx, stream, step, HAL_INSN_DMA);
    if (!in)
        return HAL_E_NOMEM;
    ctx->isrc[ctx->ninsns - 1].desc = ctx->ndescs;
    in->u.dma.descs = NULL; /* set once the descriptor array stops growing (rt_prog_build) */
    in->u.dma.n = n;
    ctx->ndescs += n;
    return HAL_OK;
}

static bool is_pub_signal(const algo_step *st)
{
    return st->kind == ALGO_STEP_SIGNAL && st->u.sync.slot == ALGO_SLOT_PUB;
}

/* PUB signals as flags (rt_hdr_flags: a one-way root's, rt_oneway.c; an eager exchange's): the first
 * stores the call's seq into the headers of the boxes it wrote, each wakes its peer if it sleeps in
 * its flag wait for that header. */
static hal_result build_flag_signal(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, uint32_t peer)
{
    const algo_step_list *l = &ctx->plan->streams[stream];
    if (!step || !is_pub_signal(&l->steps[step - 1]))
        CHECK(rt_prog_push_fn(ctx, stream, step, rt_hdr_flag_task, ctx));
    CHECK(rt_prog_push_notify(ctx, stream, step, false, ctx->c->peers[peer].to_peer[RT_SLOT_HDR_WAKE]));
    ctx->insns[ctx->ninsns - 1].kind = HAL_INSN_NOTIFY_WAKE;
    return HAL_OK;
}

static hal_result build_sync(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, const algo_step *st)
{
    rt_comm *c = ctx->c;
    uint32_t peer = st->u.sync.peer, slot = map_slot(ctx, st->u.sync.slot);
    if (peer >= c->nranks || peer == c->rank || slot >= RT_SLOTS)
        return HAL_E_PARAM;
    if (st->kind == ALGO_STEP_SIGNAL && c->peers[peer].remote) {
        rt_net_op *op = push_netop(ctx, peer);
        if (!op)
            return HAL_E_NOMEM;
        op->slot = slot;
        return rt_prog_push_fn(ctx, stream, step, rt_net_signal_task, NULL);
    }
    if (st->kind == ALGO_STEP_SIGNAL && slot == ALGO_SLOT_PUB && rt_hdr_flags(ctx))
        return build_flag_signal(ctx, stream, step, peer);
    if (ctx->p2p && rt_p2p_on_flags(c, peer))
        return rt_prog_p2p_sync(ctx, stream, step, st);
    if (st->kind == ALGO_STEP_SIGNAL)
        return rt_prog_push_notify(ctx, stream, step, false, c->peers[peer].to_peer[slot]);
    CHECK(rt_prog_push_notify(ctx, stream, step, true, c->peers[peer].from_peer[slot]));
    if (slot == ALGO_SLOT_CREDIT) /* a receiver may run another call: its view, where the wait sleeps */
        set_check(ctx, rt_oneway_credit_check, &ctx->fetch[peer]);
    if (!ctx->p2p || slot != ALGO_SLOT_P2P_DATA)
        return HAL_OK;
    /* A p2p receive: was the signal the sender's data, or its HcclCommDestroy? */
    if (st->u.sync.item >= ctx->plan->op.nitems)
        return HAL_E_PARAM;
    return rt_prog_push_fn(ctx, stream, step, rt_p2p_recv_task, &ctx->p2p_items[st->u.sync.item]);
}

/* The first wait of an eager exchange in header mode, or of an eager AlltoAllV in record mode (its
 * record and tables go into rings RT_PUB_RING deep, which the bound of 2D + 1 calls keeps as it
 * keeps the inbox slots) (docs/runtime.md, "Running ahead"):
 * what came before it (PUBLISH, the writes into peers' inboxes, the PUB signals) may run ahead. Not
 * after a drain, staging copies or anything else that waits. */
static bool ahead_able(const rt_launch_ctx *ctx, uint32_t stream)
{
    if (stream || !(ctx->hdr || ctx->plan->v_small_bytes) || ctx->p2p || ctx->plan->oneway ||
        ctx->plan->algo != ALGO_EAGER || ctx->plan->nstreams != 1 || ctx->npre)
        return false;
    for (uint32_t i = 0; i < ctx->ninsns; i++)
        if (hal_insn_waits(&ctx->insns[i]) || ctx->insns[i].kind == HAL_INSN_AHEAD)
            return false;
    return true;
}

static hal_result build_fetch(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, const algo_step *st)
{
    rt_comm *c = ctx->c;
    uint32_t peer = st->u.fetch.peer, item = st->u.fetch.item;
    if (peer >= c->nranks || peer == c->rank || (ctx->p2p && item >= ctx->plan->op.nitems))
        return HAL_E_PARAM;
    if (ctx->p2p)
        return rt_prog_p2p_fetch(ctx, stream, step, &ctx->p2p_items[item]);
    if (ahead_able(ctx, stream)) { /* off until rt_prog_ahead turns it on for a launch */
        hal_insn *mark = rt_prog_push_insn(ctx, stream, step, HAL_INSN_AHEAD);
        if (!mark)
            return HAL_E_NOMEM;
        mark->u.ahead.group = 0;
        mark->u.ahead.depth = 0;
    }
    if (rt_hdr_flags(ctx)) { /* the peer's header is the signal: a one-way receiver's writer, an exchange's peer */
        hal_insn *in = rt_prog_push_insn(ctx, stream, step, HAL_INSN_FLAG_WAIT);
        if (!in)
            return HAL_E_NOMEM;
        in->u.flag.w = &ctx->fetch[peer].wait; /* its flag and seq: per call (bind_flag_waits) */
        return rt_prog_push_fn(ctx, stream, step, rt_eager_check_task, &ctx->fetch[peer]);
    }
    CHECK(rt_prog_push_notify(ctx, stream, step, true, c->peers[peer].from_peer[ALGO_SLOT_PUB]));
    if (c->oneway) /* the peer may root a one-way call where this rank runs another */
        set_check(ctx, rt_oneway_peer_check, &ctx->fetch[peer]);
    return rt_prog_push_fn(ctx, stream, step, ctx->hdr ? rt_eager_check_task : rt_fetch_task, &ctx->fetch[peer]);
}

/* A one-way receiver publishes its view as a record: it writes no one's inbox (rt_oneway.c). */
static hal_task_fn publish_fn(const rt_launch_ctx *ctx)
{
    if (ctx->p2p)
        return rt_p2p_publish_task;
    bool receiver = ctx->plan->oneway && !rt_oneway_writer(ctx->c, ctx->plan);
    return ctx->hdr && !receiver ? rt_eager_post_task : rt_publish_task;
}

static hal_result build_step(rt_launch_ctx *ctx, uint32_t stream, uint32_t step, const algo_step *st)
{
    if (st->when != ALGO_WHEN_ALWAYS &&
        !algo_step_runs(ctx->plan, st, algo_vt_get(ctx->vt, ctx->c->nranks, st->when_sym)))
        return HAL_OK; /* not for this call's block sizes (plan.h, algo_when) */
    switch (st->kind) {
    case ALGO_STEP_COPY:
    case ALGO_STEP_REDUCE:
        return build_dma(ctx, stream, step, st);
    case ALGO_STEP_SIGNAL:
    case ALGO_STEP_WAIT:
        return build_sync(ctx, stream, step, st);
    case ALGO_STEP_PUBLISH:
        return rt_prog_push_fn(ctx, stream, step, publish_fn(ctx), ctx);
    case ALGO_STEP_FETCH:
        return build_fetch(ctx, stream, step, st);
    default:
        return HAL_E_PARAM;
    }
}

/* Ends the open program of `stream` (instructions from *first on), if it has any. */
static hal_result close_prog(prog_builder *b, uint32_t stream, uint32_t *first)
{
    rt_launch_ctx *ctx = b->ctx;
    if (ctx->ninsns == *first)
        return HAL_OK;
    CHECK(push_seg(ctx, (rt_seg){.kind = RT_SEG_PROG, .stream = (uint8_t)stream, .first = *first,
                                 .n = ctx->ninsns - *first}));
    *first = ctx->ninsns;
    if (stream == 0)
        b->mark = NULL;
    return HAL_OK;
}

static hal_result build_list(prog_builder *b, uint32_t stream);

/* FORK{k}: the slave waits for stream 0's progress so far (an event recorded there: the one a
 * FORK just before recorded, if nothing came since), runs its list, and records its join event. */
static hal_result build_fork(prog_builder *b, uint32_t k, uint32_t step)
{
    rt_launch_ctx *ctx = b->ctx;
    rt_comm *c = ctx->c;
    if (k == 0 || k >= ctx->plan->nstreams)
        return HAL_E_PARAM;
    if (!b->mark) {
        CHECK(push_seg(ctx, (rt_seg){.kind = RT_SEG_RECORD, .stream = 0, .step = step, .ev = c->fork_ev[k]}));
        b->mark = c->fork_ev[k];
    }
    CHECK(push_seg(ctx, (rt_seg){.kind = RT_SEG_WAIT, .stream = (uint8_t)k, .step = step, .ev = b->mark}));
    CHECK(build_list(b, k));
    return push_seg(ctx, (rt_seg){.kind = RT_SEG_RECORD, .stream = (uint8_t)k, .step = step, .ev = c->join_ev[k]});
}

static bool inlinable(const rt_launch_ctx *ctx, uint32_t k)
{
    if (k == 0 || k >= ctx->plan->nstreams)
        return false;
    const algo_step_list *l = &ctx->plan->streams[k];
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < l->nsteps; i++) {
        const algo_step *st = &l->steps[i];
        if (st->kind == ALGO_STEP_SIGNAL)
            continue;
        if (st->kind != ALGO_STEP_COPY && st->kind != ALGO_STEP_REDUCE)
            return false;
        bytes += rt_dma_step_bytes(ctx, st);
        if (bytes > RT_INLINE_SLAVE_BYTES)
            return false;
    }
    return true;
}

/* The `forks` FORKs from stream 0's step `step` on start a fan-out (rt_fanout_forks): their lists
 * run inline, every list's COPY first and then the signals, so that the copies (and the one of
 * stream 0 just before them, if it copies the same source) are DMA instructions in a row. Any
 * interleaving of the lists is an order the plan allows, as for a list inlined at its FORK. */
static hal_result build_fanout(prog_builder *b, uint32_t step, uint32_t forks)
{
    rt_launch_ctx *ctx = b->ctx;
    const algo_step *fork = &ctx->plan->streams[0].steps[step];
    for (uint32_t pass = 0; pass < 2; pass++)
        for (uint32_t j = 0; j < forks; j++) {
            uint32_t k = fork[j].u.fork.stream;
            const algo_step_list *l = &ctx->plan->streams[k];
            b->inlined |= 1u << k;
            for (uint32_t i = pass ? 1 : 0; i < (pass ? l->nsteps : 1); i++)
                CHECK(build_step(ctx, k, i, &l->steps[i]));
        }
    return HAL_OK;
}

/* FORK/JOIN of stream 0; *first: the start of stream 0's open program. */
static hal_result build_fork_join(prog_builder *b, uint32_t stream, uint32_t step, const algo_step *st,
                                  uint32_t *first)
{
    rt_launch_ctx *ctx = b->ctx;
    uint32_t k = st->u.fork.stream;
    if (stream != 0 || k == 0 || k >= ctx->plan->nstreams)
        return HAL_E_PARAM; /* only stream 0 forks and joins (plan.h) */
    bool fork = st->kind == ALGO_STEP_FORK;
    if (b->inlined & (1u << k)) { /* its list ran inline: at its FORK, or in a fan-out of an earlier FORK */
        if (!fork)
            b->inlined &= ~(1u << k); /* a later FORK of k starts afresh */
        return HAL_OK;
    }
    uint32_t fan = fork ? rt_fanout_forks(ctx, step) : 0;
    if (fan)
        return build_fanout(b, step, fan);
    if (fork && inlinable(ctx, k)) {
        b->inlined |= 1u << k;
        const algo_step_list *l = &ctx->plan->streams[k];
        for (uint32_t i = 0; i < l->nsteps; i++)
            CHECK(build_step(ctx, k, i, &l->steps[i]));
        return HAL_OK;
    }
    CHECK(close_prog(b, stream, first));
    if (fork) {
        CHECK(build_fork(b, k, step));
        *first = ctx->ninsns; /* the slave's list was built in between */
        return HAL_OK;
    }
    b->mark = NULL;
    return push_seg(ctx, (rt_seg){.kind = RT_SEG_WAIT, .stream = 0, .step = step, .ev = ctx->c->join_ev[k]});
}

static hal_result build_list(prog_builder *b, uint32_t stream)
{
    rt_launch_ctx *ctx = b->ctx;
    const algo_step_list *l = &ctx->plan->streams[stream];
    uint32_t first = ctx->ninsns;
    if (stream == 0)
        CHECK(rt_prog_p2p_prefix(ctx));
    for (uint32_t i = 0; i < l->nsteps; i++) {
        const algo_step *st = &l->steps[i];
        bool fj = st->kind == ALGO_STEP_FORK || st->kind == ALGO_STEP_JOIN;
        hal_result rc = fj ? build_fork_join(b, stream, i, st, &first) : build_step(ctx, stream, i, st);
        if (rc != HAL_OK) {
            OH_ERR("launch", "rank %u: building step %u (kind %u) of stream %u of %s/%s failed: %s", ctx->c->rank,
                   i, st->kind, stream, algo_coll_name(ctx->plan->op.coll), ctx->plan->name, hal_result_name(rc));
            return rc;
        }
    }
    return close_prog(b, stream, &first);
}

/* A launch that wrote across servers ends with waiting for its send completions: the user may
 * reuse the source buffers once the stream passes the end. */
static hal_result build_net_end(prog_builder *b)
{
    rt_launch_ctx *ctx = b->ctx;
    if (!ctx->nnetops)
        return HAL_OK;
    uint32_t first = ctx->ninsns, last = ctx->plan->streams[0].nsteps;
    CHECK(rt_prog_push_fn(ctx, 0, last ? last - 1 : 0, rt_net_drain_task, ctx));
    return close_prog(b, 0, &first);
}

/* Staging mode (rt_staging.c): the copies between the user's buffers and the staging buffers, one
 * DMA instruction (its pieces run in parallel) of stream 0, in a program of its own: before the
 * plan's first step (nothing is published before the data is staged) or after its last (every
 * peer's write into staging OUT has been waited for). */
static hal_result build_stage_copies(prog_builder *b, const hal_dma_desc *d, uint32_t n, uint32_t step)
{
    rt_launch_ctx *ctx = b->ctx;
    if (n == 0)
        return HAL_OK;
    if (!rt_grow((void **)&ctx->descs, &ctx->descs_cap, ctx->ndescs + n, sizeof *ctx->descs))
        return HAL_E_NOMEM;
    uint32_t first = ctx->ninsns;
    hal_insn *in = rt_prog_push_insn(ctx, 0, step, HAL_INSN_DMA);
    if (!in)
        return HAL_E_NOMEM;
    ctx->isrc[ctx->ninsns - 1].desc = ctx->ndescs;
    in->u.dma.descs = NULL; /* set once the descriptor array stops growing */
    in->u.dma.n = n;
    for (uint32_t i = 0; i < n; i++)
        ctx->descs[ctx->ndescs++] = d[i];
    return close_prog(b, 0, &first);
}

/* A drain before the plan (rt_oneway.c): the views of the one-way calls this rank rooted are
 * checked, then one wait per receiver until every credit is back (taking none: they stay for
 * the next run). */
static hal_result build_drain(prog_builder *b)
{
    rt_launch_ctx *ctx = b->ctx;
    rt_comm *c = ctx->c;
    if (!ctx->ndrain)
        return HAL_OK;
    uint32_t first = ctx->ninsns;
    CHECK(rt_prog_push_fn(ctx, 0, 0, rt_oneway_drain_check_task, ctx));
    for (uint32_t q = 0; q < c->nranks; q++)
        if (q != c->rank)
            CHECK(push_count_wait(ctx, c->peers[q].from_peer[ALGO_SLOT_CREDIT], c->ow_slots));
    return close_prog(b, 0, &first);
}

static _Atomic uint64_t g_builds;

uint64_t rt_prog_build_count(void)
{
    return atomic_load(&g_builds);
}

/* A flag wait (hal_flag_wait) for writer's header: the header of writer's box in this call's slot of
 * `inbox`, where rt_eager_check_task reads it, and this call's seq; `check` runs where it would sleep. */
static void bind_flag_wait(rt_launch_ctx *ctx, uint32_t writer, uint32_t inbox, hal_task_fn check)
{
    rt_comm *c = ctx->c;
    const rt_sig *hdr = rt_box_hdr(rt_ctx_inbox(ctx, inbox), writer, rt_plan_stride(c, ctx->plan));
    ctx->fetch[writer].wait = (hal_flag_wait){.flag = &hdr->seq, .at_least = ctx->seq,
                                              .wake = c->peers[writer].from_peer[RT_SLOT_HDR_WAKE],
                                              .timeout_ms = rt_prog_wait_timeout_ms(c),
                                              .abort_flag = rt_prog_abort_flag(c), .check = check,
                                              .check_arg = &ctx->fetch[writer]};
}

/* A Broadcast's or Scatter's receiver waits for its root (oneway_pull: in the root's inbox, a
 * larger Scatter's in this rank's), a Reduce's root for every writer, in its own inbox; an eager
 * exchange's every rank for every peer, in its own inbox. */
static void bind_flag_waits(rt_launch_ctx *ctx)
{
    rt_comm *c = ctx->c;
    uint32_t root = ctx->plan->op.root;
    if (!rt_hdr_flags(ctx) || rt_oneway_writer(c, ctx->plan))
        return;
    if (ctx->plan->oneway && !ctx->plan->oneway_gather) {
        bind_flag_wait(ctx, root, ctx->plan->oneway_pull ? root : c->rank, rt_oneway_writer_check);
        return;
    }
    hal_task_fn check = ctx->plan->oneway ? rt_oneway_writer_check : rt_eager_flag_check;
    for (uint32_t q = 0; q < c->nranks; q++)
        if (q != c->rank)
            bind_flag_wait(ctx, q, c->rank, check);
}

hal_result rt_prog_build(rt_launch_ctx *ctx)
{
    uint64_t evictions = rt_plan_cache_evictions(ctx->c->cache);
    bind_flag_waits(ctx);
    if (rt_prog_reuse(ctx, evictions))
        return HAL_OK;
    ctx->built = NULL;
    atomic_fetch_add(&g_builds, 1);
    ctx->ninsns = ctx->ndescs = ctx->nsegs = ctx->nnetops = ctx->nrebinds = 0;
    prog_builder b = {ctx, NULL, 0};
    uint32_t last = ctx->plan->streams[0].nsteps;
    hal_result rc = build_drain(&b);
    if (rc == HAL_OK)
        rc = build_stage_copies(&b, ctx->pre, ctx->npre, 0);
    if (rc == HAL_OK)
        rc = build_list(&b, 0);
    if (rc == HAL_OK)
        rc = build_stage_copies(&b, ctx->post, ctx->npost, last ? last - 1 : 0);
    if (rc == HAL_OK)
        rc = build_net_end(&b);
    if (rc != HAL_OK)
        return rc;
    uint32_t k = 0; /* the arrays have their final addresses now */
    for (uint32_t i = 0; i < ctx->ninsns; i++) {
        hal_insn *in = &ctx->insns[i];
        if (in->kind == HAL_INSN_DMA)
            in->u.dma.descs = &ctx->descs[ctx->isrc[i].desc];
        else if (in->kind == HAL_INSN_FN && (in->u.fn.fn == rt_net_write_task || in->u.fn.fn == rt_net_signal_task))
            in->u.fn.arg = &ctx->netops[k++];
    }
    rt_prog_mark_built(ctx, evictions);
    return HAL_OK;
}
