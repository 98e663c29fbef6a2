/* Op-level timeline events: what an op is (name, sizes, algorithm, communicator) and which plan
 * step each of its tasks is, handed to the emulator's recorder (hal/hal_trace.h). */
#include <pthread.h>
#include <string.h>

#include "runtime/rt_trace.h"

/* The recorder in libascendcl; weak: libhccl still loads against a libascendcl without it. */
extern const hal_trace_api *aclExtGetTrace(uint32_t abi_version) __attribute__((weak));

static const _Atomic uint32_t g_unresolved = 1, g_off = 0;
const _Atomic uint32_t *rt_trace_flag = &g_unresolved;
static const hal_trace_api *g_api;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    g_api = aclExtGetTrace ? aclExtGetTrace(HAL_TRACE_ABI_VERSION) : NULL;
    rt_trace_flag = g_api ? g_api->active : &g_off;
}

static const char *const g_step_names[] = {
    [ALGO_STEP_COPY] = "COPY",       [ALGO_STEP_REDUCE] = "REDUCE", [ALGO_STEP_SIGNAL] = "SIGNAL",
    [ALGO_STEP_WAIT] = "WAIT",       [ALGO_STEP_FORK] = "FORK",     [ALGO_STEP_JOIN] = "JOIN",
    [ALGO_STEP_PUBLISH] = "PUBLISH", [ALGO_STEP_FETCH] = "FETCH",
};

static bool reduces(algo_coll coll)
{
    return coll == ALGO_COLL_ALLREDUCE || coll == ALGO_COLL_REDUCE || coll == ALGO_COLL_REDUCE_SCATTER ||
           coll == ALGO_COLL_REDUCE_SCATTERV;
}

static bool rooted(algo_coll coll)
{
    return coll == ALGO_COLL_BROADCAST || coll == ALGO_COLL_REDUCE || coll == ALGO_COLL_SCATTER;
}

void rt_trace_op_slow(rt_launch_ctx *ctx)
{
    pthread_once(&g_once, resolve);
    /* The recorder is the emulator's: its streams are the only ones it can time. */
    if (!g_api || !atomic_load(g_api->active) || strcmp(ctx->c->hal->name, "emu") != 0)
        return;
    const algo_op *op = &ctx->plan->op;
    const rt_comm *c = ctx->c;
    hal_trace_op t = {
        .name = algo_coll_name(op->coll),
        .algorithm = ctx->plan->name,
        .comm = c->name,
        .dtype = hal_dtype_name(op->dtype),
        .redop = reduces(op->coll) ? hal_redop_name(op->redop) : NULL,
        .count = op->count,
        .bytes = op->count * ctx->esize,
        .seq = ctx->seq,
        .rank = c->rank,
        .nranks = c->nranks,
        .root = rooted(op->coll) ? (int32_t)op->root : -1,
    };
    if (op->coll == ALGO_COLL_SENDRECV) { /* a batch of sends and receives: what this rank sends */
        t.count = 0;
        for (uint32_t i = 0; i < op->nitems; i++)
            t.count += op->items[i].is_send ? op->items[i].count : 0;
        t.bytes = t.count * ctx->esize;
    }
    ctx->trace_op = g_api->op_begin(&t, ctx->stream);
}

void rt_trace_step_slow(const rt_launch_ctx *ctx, uint32_t stream_idx, uint32_t index)
{
    const algo_step *st = &ctx->plan->streams[stream_idx].steps[index];
    int32_t peer = -1;
    if (st->kind == ALGO_STEP_SIGNAL || st->kind == ALGO_STEP_WAIT)
        peer = (int32_t)st->u.sync.peer;
    else if (st->kind == ALGO_STEP_FETCH)
        peer = (int32_t)st->u.fetch.peer;
    else if (st->kind == ALGO_STEP_COPY)
        peer = st->u.copy.dst.owner != ALGO_SELF ? st->u.copy.dst.owner : st->u.copy.src.owner;
    else if (st->kind == ALGO_STEP_REDUCE)
        peer = st->u.reduce.dst.owner != ALGO_SELF   ? st->u.reduce.dst.owner
               : st->u.reduce.src.owner != ALGO_SELF ? st->u.reduce.src.owner
               : st->u.reduce.has_src2              ? st->u.reduce.src2.owner
                                                     : ALGO_SELF;
    const char *kind = st->kind < sizeof g_step_names / sizeof g_step_names[0] ? g_step_names[st->kind] : "STEP";
    g_api->step(ctx->trace_op, kind, peer < 0 ? -1 : peer, stream_idx, index);
}

void rt_trace_op_end_slow(void)
{
    g_api->op_end();
}
