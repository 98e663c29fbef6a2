/* PUBLISH and FETCH, run on the device in stream order: each rank writes this call's buffer
 * addresses and op signature (V-ops: their count tables, rt_vcheck.c) into its peer-visible
 * record; a peer reads it, compares signature and tables with its own (before any data moves)
 * and binds the addresses for its DMA tasks. A mismatch fails the op on every rank with both
 * calls named. */
#include <stdio.h>
#include <string.h>

#include "runtime/net/rt_net.h"
#include "runtime/stream/rt_launch.h"

static void fill_record(rt_launch_ctx *ctx, rt_pub_record *rec, uint64_t seq)
{
    rt_comm *c = ctx->c;
    rec->sig = ctx->sig;
    rec->sig.seq = seq;
    rec->in = (uint64_t)(uintptr_t)ctx->base[0 * c->nranks + c->rank];
    rec->out = (uint64_t)(uintptr_t)ctx->base[1 * c->nranks + c->rank];
    rec->vdispl = rec->vcounts = 0;
    rec->rkey_in = rec->rkey_out = 0;
    if (c->net) { /* peers on other servers write into OUT through the links */
        rec->rkey_in = rt_net_user_rkey(c, (void *)(uintptr_t)rec->in);
        rec->rkey_out = rec->out == rec->in ? rec->rkey_in : rt_net_user_rkey(c, (void *)(uintptr_t)rec->out);
    }
}

int rt_publish_task(void *arg, char *msg, size_t len)
{
    (void)msg;
    (void)len;
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    rt_pub_record *rec = rt_ctrl_pub(c->ctrl, ctx->seq);
    fill_record(ctx, rec, ctx->seq);
    if (ctx->vop) {
        if (rt_vself_check(ctx, msg, len))
            return HAL_E_ABORTED;
        uint64_t *t = rt_ctrl_vtable(c->ctrl, ctx->seq);
        rt_vpublish(ctx, t);
        rec->vcounts = (uint64_t)(uintptr_t)t;
        if (rt_vop_is_a2a(ctx))
            rec->vdispl = (uint64_t)(uintptr_t)(t + 2 * (size_t)c->nranks);
    }
    atomic_store_explicit(&rec->ready, ctx->seq, memory_order_release);
    return 0;
}

static bool sig_equal(const rt_sig *a, const rt_sig *b)
{
    /* A barrier is an AllReduce underneath, but two different calls all the same. */
    return a->cmd == b->cmd && a->count == b->count && a->dtype == b->dtype && a->redop == b->redop &&
           a->root == b->root && a->nranks == b->nranks && a->deterministic == b->deterministic &&
           a->eager == b->eager;
}

static int report_mismatch(rt_launch_ctx *ctx, uint32_t peer, const rt_sig *theirs, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    char mine[160], other[160];
    rt_sig_format(&ctx->sig, mine, sizeof mine);
    rt_sig_format(theirs, other, sizeof other);
    if (theirs->eager != ctx->sig.eager) /* the protocol is not part of the call: say which ran it */
        strncat(theirs->eager ? other : mine, " with the eager protocol",
                sizeof mine - strlen(theirs->eager ? other : mine) - 1);
    if (theirs->cmd == HCCL_CMD_FINALIZE)
        snprintf(msg, len, "comm %s: rank %u called %s after op #%llu where rank %u called %s as op #%llu", c->name,
                 peer, other, (unsigned long long)(theirs->seq - 1), c->rank, mine, (unsigned long long)ctx->seq);
    else
        snprintf(msg, len, "comm %s: rank %u called %s as op #%llu where rank %u called %s", c->name, peer, other,
                 (unsigned long long)theirs->seq, c->rank, mine);
    OH_ERR("mismatch", "%s", msg);
    rt_abort_all(c, HCCL_E_PARA, msg);
    return HAL_E_ABORTED;
}

static void bind_peer(rt_launch_ctx *ctx, uint32_t peer, const rt_pub_record *rec)
{
    rt_comm *c = ctx->c;
    /* Staging mode: the peer's staging buffers as imported here (its own addresses may differ
     * from this process's mapping on CANN); the record's are only the peer's view. */
    bool mapped = ctx->staged && !c->peers[peer].remote; /* a remote peer's stays its own (link writes) */
    uint64_t in = mapped ? (uint64_t)(uintptr_t)rt_staging_peer_buf(c, peer, ctx->plan->op.coll, 0) : rec->in;
    uint64_t out = mapped ? (uint64_t)(uintptr_t)rt_staging_peer_buf(c, peer, ctx->plan->op.coll, 1) : rec->out;
    ctx->base[0 * c->nranks + peer] = (void *)(uintptr_t)in;
    ctx->base[1 * c->nranks + peer] = (void *)(uintptr_t)out;
    if (rec->vdispl) { /* AlltoAllV(C): where my block lands in the peer's OUT; the table in the
                        * peer's block as mapped here, or in its mirror for a remote peer
                        * (rec->vdispl is the peer's own view of it) */
        const uint64_t *displ = rt_ctrl_vtable(c->peers[peer].ctrl, ctx->seq) + 2 * (size_t)c->nranks;
        ctx->vbase[peer] = (char *)(uintptr_t)out + displ[c->rank] * ctx->esize;
    }
}

/* The peer's control block left this communicator (docs/runtime.md, "Lifetime"): it destroyed
 * its side, and what its block holds now is not ours to read. */
static int report_destroyed(rt_launch_ctx *ctx, uint32_t peer, uint64_t seq, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    char mine[160];
    rt_sig_format(&ctx->sig, mine, sizeof mine);
    snprintf(msg, len, "comm %s: rank %u called HcclCommDestroy where rank %u called %s as op #%llu", c->name, peer,
             c->rank, mine, (unsigned long long)seq);
    OH_ERR("mismatch", "%s", msg);
    rt_abort_all(c, HCCL_E_PARA, msg);
    return HAL_E_ABORTED;
}

int rt_fetch_task(void *arg, char *msg, size_t len)
{
    rt_fetch_arg *fa = arg;
    rt_launch_ctx *ctx = fa->ctx;
    rt_comm *c = ctx->c;
    uint32_t peer = fa->peer;
    rt_ctrl *pc = c->peers[peer].ctrl;
    uint64_t seq = ctx->seq;
    const rt_pub_record *rec = rt_ctrl_pub(pc, seq);
    uint64_t ready = atomic_load_explicit(&((rt_pub_record *)rec)->ready, memory_order_acquire);
    if (!rt_ctrl_peer_live(c, peer))
        return report_destroyed(ctx, peer, seq, msg, len);
    if (ready != seq && c->eager_hdr) { /* an eager peer in header mode published its call in my inbox */
        rt_sig theirs;
        memcpy(&theirs, rt_box_hdr(rt_inbox_slot(c, c->inbox, seq), peer), sizeof theirs);
        if (theirs.seq == seq)
            return report_mismatch(ctx, peer, &theirs, msg, len);
    }
    if (ready != seq) {
        snprintf(msg, len, "comm %s: rank %u expected rank %u's record of op #%llu but found op #%llu", c->name,
                 c->rank, peer, (unsigned long long)seq, (unsigned long long)ready);
        rt_abort_all(c, HCCL_E_INTERNAL, msg);
        return HAL_E_INTERNAL;
    }
    if (!sig_equal(&rec->sig, &ctx->sig))
        return report_mismatch(ctx, peer, &rec->sig, msg, len);
    if (ctx->vop && rt_vcheck_peer(ctx, peer, rec->vcounts ? rt_ctrl_vtable(pc, seq) : NULL, msg, len))
        return HAL_E_ABORTED; /* before bind_peer: nothing can address the peer's buffers */
    bind_peer(ctx, peer, rec);
    if (!rt_ctrl_peer_live(c, peer)) /* released while we read: the bindings are not ours */
        return report_destroyed(ctx, peer, seq, msg, len);
    /* Mine, read by the peer's destroy (rt_ctrl_wait_fetched): its record may be released now. */
    atomic_store_explicit(&rt_ctrl_fetched(c->ctrl)[peer], seq, memory_order_release);
    return 0;
}

/* Header mode (docs/runtime.md, "Eager header mode"), where task functions reach peers' memory
 * (the emulator): an eager call publishes no record. Its writer puts the call's signature into
 * the header of its own box in every peer's inbox slot, next to the data it copies there, before
 * the PUB signals; the peer's FETCH reads the header from its own inbox instead of the record in
 * the writer's control block: one cache line it reads anyway instead of two it would miss. */
int rt_eager_post_task(void *arg, char *msg, size_t len)
{
    (void)msg;
    (void)len;
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    rt_sig sig = ctx->sig;
    sig.seq = ctx->seq;
    for (uint32_t q = 0; q < c->nranks; q++)
        if (q != c->rank)
            memcpy(rt_box_hdr(ctx->inbox[q], c->rank), &sig, sizeof sig);
    return 0;
}

/* After the peer's PUB signal. A header of another call means the signal was not this call's
 * data: the peer destroyed its communicator (a FINALIZE record) or runs a plan that publishes
 * (a mismatch); its record says which, as in the record mode. */
int rt_eager_check_task(void *arg, char *msg, size_t len)
{
    rt_fetch_arg *fa = arg;
    rt_launch_ctx *ctx = fa->ctx;
    rt_comm *c = ctx->c;
    rt_sig theirs;
    memcpy(&theirs, rt_box_hdr(ctx->inbox[c->rank], fa->peer), sizeof theirs);
    if (theirs.seq != ctx->seq)
        return rt_fetch_task(arg, msg, len);
    if (!sig_equal(&theirs, &ctx->sig))
        return report_mismatch(ctx, fa->peer, &theirs, msg, len);
    /* Read by the peer's destroy (rt_ctrl_wait_fetched), as after a record. */
    atomic_store_explicit(&rt_ctrl_fetched(c->ctrl)[fa->peer], ctx->seq, memory_order_release);
    return 0;
}
