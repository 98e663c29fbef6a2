/* One-way calls, the runtime's side (algos/plan.h, INBOX; docs/runtime.md, "One-way calls").
 *
 * An eager Broadcast or Scatter in a run of such calls goes one-way: the root writes its data (a
 * Broadcast root into its own inbox's slot, a Scatter root into its receivers'), signals them and
 * goes on; it takes one credit per receiver before writing (c->ow_slots of them were given at
 * init, rt_notify.c), and a receiver gives it back once it copied its data out. A small Reduce
 * goes one-way the other way round (a gather): every other rank is a writer, writes its IN into
 * its box of the root's gather slot, signals and goes on, taking one credit from the root, which
 * reads every writer's box and gives each its credit back. Below, "root" is the writer of a
 * Broadcast or Scatter, "writer" either kind (rt_oneway_writer).
 * Bookkeeping here:
 * - runs: which calls go one-way (rt_oneway_expect_run);
 * - slots: calls that end full take the eager slots in turn, a root's one-way calls its
 *   one-way slots in turn (every rank issues the same calls, so every rank counts the same);
 * - views: every rank writes its own record of a one-way call when its plan starts (the root in
 *   its header task, a receiver by PUBLISH), so peers can compare calls without waiting for them;
 * - drain: before its next call that is not one-way (it publishes into slots and signals that
 *   receivers of the run may not have consumed yet), a rank that rooted one-way calls waits until
 *   every receiver gave all its credits back (rt_prog.c build_drain). After the drain every
 *   receiver has finished every call of the run, as the full end of an eager call would have
 *   guaranteed.
 * Signals: a root's PUB signal is the call's seq, stored into the header of the box it wrote after
 * the data (rt_hdr_flag_task); its receiver waits for that flag, in the cache line it reads
 * the data from (hal_flag_wait), and the root wakes it only if it sleeps (notify_wake on
 * RT_SLOT_HDR_WAKE). A count per call on a notify line both sides touch cost the root a wait for
 * that line at every call once its receivers kept up with it (docs/perf-history.md, "Flag waits").
 * Mismatches: a receiver checks its root's header as any eager FETCH does. What only a root could
 * see (two ranks that both think they are the root, or a receiver that waits for another root) is
 * compared from the views before each wait that may block on it: the receiver's wait for its root
 * and a root's wait for credits (where they would sleep: the waits' checks), and a root's drain;
 * since every rank writes its view before it waits, of two ranks that wait on each other the later
 * one sees the other's view. A one-way root learns of
 * a mismatch in its call at its next call that waits (or at HcclCommDestroy), not at the call. */
#include <stdio.h>
#include <time.h>

#include "runtime/stream/rt_launch.h"

uint64_t rt_oneway_slot_offset(const rt_comm *c, const algo_plan *plan)
{
    if (plan->oneway) /* the run position in the slots of the plan's kind (rt_internal.h) */
        return rt_kind_slot_offset(c, rt_plan_slot_kind(plan), rt_ow_pos(c, c->oneway_calls));
    return rt_inbox_slot_offset(c, (uint32_t)((c->full_calls + 1) % ALGO_EAGER_SLOTS));
}

void rt_oneway_prepare(rt_comm *c, rt_launch_ctx *ctx)
{
    const algo_plan *plan = ctx->plan;
    uint32_t run = c->oneway_run;
    ctx->credit_seq = 0;
    ctx->ndrain = 0;
    /* Calls so far the same on every rank: a peer's call goes one-way only as a run allows. */
    ctx->peer_oneway = c->oneway && !c->net && (c->able_run > 0 || c->able_last_run > 1);
    if (rt_oneway_writer(c, plan)) { /* past the credits given at init: those of run position run - S */
        if (plan->oneway_gather)
            rt_gather_warm(c, plan->op.root);
        if (run >= c->ow_slots)
            ctx->credit_seq = c->oneway_seq[rt_ow_pos(c, run)];
        return;
    }
    if (plan->oneway || !run) /* a receiver publishes into no slot and signals no PUB */
        return;
    ctx->ndrain = run < c->ow_slots ? run : c->ow_slots;
    for (uint32_t i = 0; i < ctx->ndrain; i++)
        ctx->drain_seq[i] = c->oneway_seq[rt_ow_pos(c, run - 1 - i)];
}

/* A lone one-way call costs its root a drain before the next call, which the full exchange does
 * not need (a round trip more: at 4 ranks, a loop of 8 B Broadcast + AllReduce took 46 us a round
 * with every Broadcast one-way, 38 with none; tools/bench/mixed_bench.c). So a call goes one-way
 * only in a run: after a call of the same root that could go one-way too, or first in a run when
 * the run before it was longer than one call and ended with a call that could not. A call whose
 * root is not the run's goes full: its root and every receiver wait for the old root's drain, so
 * the next root never writes a one-way slot the old one still has in use (rt_internal.h, the
 * inbox), and no rank gets more than the slots ahead of another (the publication ring). Every rank
 * that made the same calls decides the same (and the protocol is in the signature). Asked of
 * Broadcast and Scatter only, so that other ops keep one plan each in the cache. */
bool rt_oneway_expect_run(const rt_comm *c, const algo_op *op)
{
    if (!algo_coll_oneway(op->coll))
        return false;
    bool gather = op->coll == ALGO_COLL_REDUCE;
    return c->able_run > 0 ? op->root == c->able_root && gather == c->able_gather : c->able_last_run > 1;
}

/* A run has one root and one direction: a Reduce after a Broadcast of the same root has other
 * writers, which must not write before the Broadcast's root drained. */
static void count_runs(rt_comm *c, const algo_plan *plan)
{
    bool gather = plan->op.coll == ALGO_COLL_REDUCE;
    if (plan->oneway_able && (!c->able_run || (plan->op.root == c->able_root && gather == c->able_gather))) {
        c->able_run += c->able_run < UINT32_MAX;
        c->able_root = plan->op.root;
        c->able_gather = gather;
        return;
    }
    if (c->able_run)
        c->able_last_run = c->able_run;
    c->able_run = plan->oneway_able; /* another root: a new run, its first call full */
    c->able_root = plan->op.root;
    c->able_gather = gather;
}

void rt_oneway_commit(rt_comm *c, const rt_launch_ctx *ctx)
{
    const algo_plan *plan = ctx->plan;
    count_runs(c, plan);
    if (plan->oneway)
        c->oneway_calls++;
    else
        c->full_calls++;
    if (rt_oneway_writer(c, plan))
        c->oneway_seq[rt_ow_pos(c, c->oneway_run++)] = ctx->seq;
    else if (ctx->ndrain)
        c->oneway_run = 0;
}

/* Rank q's view of call seq (its record), once written and while its block is this
 * communicator's. */
static bool peer_view(const rt_comm *c, uint32_t q, uint64_t seq, rt_sig *theirs)
{
    rt_pub_record *rec = c->peers[q].ctrl ? rt_ctrl_pub(c->peers[q].ctrl, seq) : NULL;
    if (!rec || atomic_load_explicit(&rec->ready, memory_order_acquire) != seq)
        return false;
    *theirs = rec->sig;
    return rt_ctrl_peer_live(c, q) && atomic_load_explicit(&rec->ready, memory_order_acquire) == seq;
}

/* 0 when q's view of call seq is not written yet or is the same call as mine; else the
 * communicator fails naming both (HAL_E_ABORTED). */
static int check_view(rt_comm *c, uint32_t q, uint64_t seq, char *msg, size_t len)
{
    const rt_pub_record *mine = rt_ctrl_pub(c->ctrl, seq);
    rt_sig theirs;
    if (q == c->rank || atomic_load_explicit(&mine->ready, memory_order_acquire) != seq ||
        !peer_view(c, q, seq, &theirs) || rt_sig_equal(&theirs, &mine->sig))
        return 0;
    return rt_mismatch_report(c, q, &theirs, &mine->sig, msg, len);
}

/* A FETCH's check (rt_prog.c): its peer's record of this call, where the peer wrote one (a one-way
 * root does), must be this rank's call. A full call waits for a PUB that a peer rooting a one-way
 * call never signals: this is where it learns of it. */
int rt_oneway_peer_check(void *arg, char *msg, size_t len)
{
    rt_fetch_arg *fa = arg;
    rt_launch_ctx *ctx = fa->ctx;
    rt_sig theirs;
    if (!ctx->peer_oneway || !peer_view(ctx->c, fa->peer, ctx->seq, &theirs) || rt_sig_equal(&theirs, &ctx->sig))
        return 0;
    return rt_mismatch_report(ctx->c, fa->peer, &theirs, &ctx->sig, msg, len);
}

/* Runs only where an eager exchange's flag wait for the peer's header would sleep (hal_flag_wait.
 * check): a peer that runs another call than this rank's writes no header of it, and every call
 * but an eager exchange publishes a record (a one-way root's view, a receiver's, a call that is not
 * eager, HcclCommDestroy's FINALIZE) before it could wait for this rank. A loop whose peers keep up
 * reads nobody's record. */
int rt_eager_flag_check(void *arg, char *msg, size_t len)
{
    rt_fetch_arg *fa = arg;
    rt_launch_ctx *ctx = fa->ctx;
    rt_sig theirs;
    if (rt_ctrl_peer_live(ctx->c, fa->peer) &&
        (!peer_view(ctx->c, fa->peer, ctx->seq, &theirs) || rt_sig_equal(&theirs, &ctx->sig)))
        return 0;
    return rt_fetch_task(fa, msg, len); /* names what differs (a V-op's tables too), or the destroy */
}

/* Runs only where a receiver's flag wait would sleep (hal_flag_wait.check; arg: the FETCH of its
 * writer, a Broadcast's or Scatter's root or a Reduce root's writer): a loop whose writers stay
 * ahead reads nobody's record. After a wake-up it also finds a writer that destroyed its
 * communicator (HcclCommDestroy's FINALIZE record, then a wake: rt_comm_api.c). */
int rt_oneway_writer_check(void *arg, char *msg, size_t len)
{
    rt_fetch_arg *fa = arg;
    if (!rt_ctrl_peer_live(fa->ctx->c, fa->peer)) /* its block left the communicator: the fetch says so */
        return rt_fetch_task(fa, msg, len);
    return check_view(fa->ctx->c, fa->peer, fa->ctx->seq, msg, len);
}

/* Runs only where a root's wait for q's credit would sleep (hal_insn's check): a root that waits
 * for credits at every call reads nobody's record, and the line of the record q writes at every
 * call stays q's. */
int rt_oneway_credit_check(void *arg, char *msg, size_t len)
{
    rt_fetch_arg *fa = arg;
    rt_launch_ctx *ctx = fa->ctx;
    return ctx->credit_seq ? check_view(ctx->c, fa->peer, ctx->credit_seq, msg, len) : 0;
}

/* How many calls of the run q has not given its credit back for (the count the drain's wait
 * compares, kept credits included; all of them when the backend cannot say). q gives one back
 * only after it checked the header (or record) of a call it ran as this root's receiver against
 * its own call, the whole signature and seq (rt_eager_check_task, rt_fetch_task): its views of
 * the others are this rank's. A communicator's calls run in call order, so the owed calls are the
 * newest. */
static uint32_t credits_owed(const rt_comm *c, uint32_t q, uint32_t ndrain)
{
    if (!c->hal->notify_count)
        return ndrain;
    uint32_t back = c->hal->notify_count(c->peers[q].from_peer[ALGO_SLOT_CREDIT]);
    uint32_t owed = back < c->ow_slots ? c->ow_slots - back : 0;
    return owed < ndrain ? owed : ndrain;
}

/* Compares a receiver's views of the calls it owes credits for, oldest first, up to the first it
 * has not started (nor, in call order, any later one). Comparing every receiver's view of every
 * call of the run read two remote cache lines a view, 0.2 us: 55-60 us after a run of 100 calls at
 * 4 ranks, longer than the calls, on a CPU the receivers may need to catch up. */
int rt_oneway_drain_check_task(void *arg, char *msg, size_t len)
{
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    for (uint32_t q = 0; q < c->nranks; q++) {
        for (uint32_t i = q == c->rank ? 0 : credits_owed(c, q, ctx->ndrain); i-- > 0;) {
            uint64_t seq = ctx->drain_seq[i]; /* drain_seq[0] is the newest */
            const rt_pub_record *mine = rt_ctrl_pub(c->ctrl, seq);
            rt_sig theirs;
            if (!peer_view(c, q, seq, &theirs))
                break;
            if (atomic_load_explicit(&mine->ready, memory_order_acquire) == seq &&
                !rt_sig_equal(&theirs, &mine->sig))
                return rt_mismatch_report(c, q, &theirs, &mine->sig, msg, len);
        }
    }
    return 0;
}

/* Has q written its view of call seq, or will it never (it left, or the communicator failed)? */
static bool view_settled(const rt_comm *c, uint32_t q, uint64_t seq)
{
    rt_sig theirs;
    rt_ctrl *pc = c->peers[q].ctrl;
    return q == c->rank || !pc || atomic_load(&c->ctrl->abort) || !rt_ctrl_peer_live(c, q) ||
           atomic_load(&pc->destroyed) || peer_view(c, q, seq, &theirs);
}

/* Has q given back every credit (copied every call of the run out), or will it never? */
static bool credits_settled(const rt_comm *c, uint32_t q)
{
    rt_ctrl *pc = c->peers[q].ctrl;
    if (q == c->rank || !pc || !c->hal->notify_count || atomic_load(&c->ctrl->abort) || !rt_ctrl_peer_live(c, q) ||
        atomic_load(&pc->destroyed))
        return true;
    return c->hal->notify_count(c->peers[q].from_peer[ALGO_SLOT_CREDIT]) >= c->ow_slots;
}

/* The drain a destroy cannot launch: the last one-way calls this rank rooted are compared with
 * every receiver's view, as soon as it wrote it; then, since a Broadcast's receivers copy out of
 * this rank's inbox after its call ended, the inbox goes back to the pool only once every receiver
 * gave all its credits back (each bounded by HCCL_EXEC_TIMEOUT, like rt_ctrl_wait_fetched). */
void rt_oneway_destroy_check(rt_comm *c)
{
    uint32_t n = c->oneway_run < c->ow_slots ? c->oneway_run : c->ow_slots;
    struct timespec nap = {0, 200000};
    uint64_t waited_us = 0, limit_us = (uint64_t)(c->exec_timeout_s > 0 ? c->exec_timeout_s : 0) * 1000000u;
    char msg[RT_MSG_LEN];
    for (uint32_t i = 0; i < n; i++) {
        uint64_t seq = c->oneway_seq[rt_ow_pos(c, c->oneway_run - 1 - i)];
        for (uint32_t q = 0; q < c->nranks; q++) {
            while (!view_settled(c, q, seq) && !(limit_us && waited_us >= limit_us)) {
                nanosleep(&nap, NULL); /* peers are inside the same calls */
                waited_us += 200;
            }
            if (!atomic_load(&c->ctrl->abort) && check_view(c, q, seq, msg, sizeof msg))
                return;
        }
    }
    for (uint32_t q = 0; q < c->nranks; q++)
        while (!credits_settled(c, q) && !(limit_us && waited_us >= limit_us)) {
            nanosleep(&nap, NULL); /* they are past their view: a few instructions from the copy */
            waited_us += 200;
        }
}
