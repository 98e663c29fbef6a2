/* PUBLISH and FETCH, run on the device in stream order: each rank writes this call's buffer
 * addresses and op signature (V-ops: their count tables, rt_vcheck.c) into its peer-visible
 * record; a peer reads it, compares signature and tables with its own (before any data moves)
 * and binds the addresses for its DMA tasks. A mismatch fails the op on every rank with both
 * calls named. */
#include <stdatomic.h>
#include <stddef.h>
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

/* A V-op's own tables checked, then written where peers check them (rt_vcheck.c); *t: where. */
static int publish_tables(rt_launch_ctx *ctx, uint64_t **t, char *msg, size_t len)
{
    if (rt_vself_check(ctx, msg, len))
        return HAL_E_ABORTED;
    *t = rt_ctrl_vtable(ctx->c->ctrl, ctx->seq);
    rt_vpublish(ctx, *t);
    return 0;
}

int rt_publish_task(void *arg, char *msg, size_t len)
{
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    rt_pub_record *rec = rt_ctrl_pub(c->ctrl, ctx->seq);
    fill_record(ctx, rec, ctx->seq);
    if (ctx->vop) {
        uint64_t *t;
        if (publish_tables(ctx, &t, msg, len))
            return HAL_E_ABORTED;
        rec->vcounts = (uint64_t)(uintptr_t)t;
        if (rt_vop_is_a2a(ctx))
            rec->vdispl = (uint64_t)(uintptr_t)(t + 2 * (size_t)c->nranks);
    }
    atomic_store_explicit(&rec->ready, ctx->seq, memory_order_release);
    return 0;
}

bool rt_sig_equal(const rt_sig *a, const rt_sig *b)
{
    /* A barrier is an AllReduce underneath, but two different calls all the same. */
    return a->cmd == b->cmd && a->count == b->count && a->dtype == b->dtype && a->redop == b->redop &&
           a->root == b->root && a->nranks == b->nranks && a->deterministic == b->deterministic &&
           a->eager == b->eager && a->vtab == b->vtab;
}

static void append_protocol(char *call, size_t cap, uint32_t eager)
{
    if (eager)
        strncat(call, eager == RT_SIG_ONEWAY ? " with the one-way eager protocol" : " with the eager protocol",
                cap - strlen(call) - 1);
}

static void append_crossover(char *call, size_t cap, uint32_t bytes)
{
    size_t n = strlen(call);
    snprintf(call + n, cap - n, " with an eager crossover of %u B (HCCL_EAGER_MAX_BYTES)", bytes);
}

int rt_mismatch_report(rt_comm *c, uint32_t peer, const rt_sig *theirs, const rt_sig *my_sig, char *msg, size_t len)
{
    char mine[160], other[160];
    rt_sig_format(my_sig, mine, sizeof mine);
    rt_sig_format(theirs, other, sizeof other);
    if (theirs->eager != my_sig->eager) { /* the protocol is not part of the call: say which ran it */
        append_protocol(other, sizeof other, theirs->eager);
        append_protocol(mine, sizeof mine, my_sig->eager);
    } else if (theirs->cmd == HCCL_CMD_ALLTOALLV && theirs->eager && theirs->vtab != my_sig->vtab) {
        append_crossover(other, sizeof other, theirs->vtab); /* an eager AlltoAllV's vtab (rt_launch.c) */
        append_crossover(mine, sizeof mine, my_sig->vtab);
    }
    if (theirs->cmd == HCCL_CMD_FINALIZE)
        snprintf(msg, len, "comm %s: rank %u called %s after op #%llu where rank %u called %s as op #%llu", c->name,
                 peer, other, (unsigned long long)(theirs->seq - 1), c->rank, mine, (unsigned long long)my_sig->seq);
    else
        snprintf(msg, len, "comm %s: rank %u called %s as op #%llu where rank %u called %s", c->name, peer, other,
                 (unsigned long long)theirs->seq, c->rank, mine);
    OH_ERR("mismatch", "%s", msg);
    rt_abort_all(c, HCCL_E_PARA, msg);
    return HAL_E_ABORTED;
}

static int report_mismatch(rt_launch_ctx *ctx, uint32_t peer, const rt_sig *theirs, char *msg, size_t len)
{
    return rt_mismatch_report(ctx->c, peer, theirs, &ctx->sig, msg, len);
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

/* The headers of peer's calls this rank may read in slot s: peer's box of my inbox, and in a
 * one-way slot also the box of peer's own inbox (a Broadcast root writes its own; mapped here
 * unless peer is on another server, where no call goes one-way). A one-way slot has one box that
 * every root writes in turn (a Scatter root its receivers', a Broadcast root its own), so a header
 * there is peer's only if it names peer as the root; a gather slot a box per writer. */
static uint32_t headers_seen(const rt_comm *c, uint32_t s, uint32_t peer, rt_sig hdr[2])
{
    bool oneway = rt_slot_oneway(s) && !rt_slot_gather(c, s);
    uint32_t k = 0;
    memcpy(&hdr[k], rt_inbox_box(c, c->inbox, s, peer), sizeof *hdr);
    k += !oneway || hdr[k].root == peer;
    if (oneway && !c->peers[peer].remote) {
        memcpy(&hdr[k], rt_inbox_box(c, c->peers[peer].inbox, s, peer), sizeof *hdr);
        k += hdr[k].root == peer;
    }
    return k;
}

/* Did peer publish call seq in a box header I read? Its slot depends on its plan (one-way or not,
 * rt_oneway_slot_offset): look in every slot, this is the path of a mismatch only. */
static bool header_of_call(rt_comm *c, uint32_t peer, uint64_t seq, rt_sig *theirs)
{
    rt_sig hdr[2];
    for (uint32_t s = 0; s < rt_inbox_slots(c); s++)
        for (uint32_t k = 0, n = headers_seen(c, s, peer, hdr); k < n; k++)
            if (hdr[k].seq == seq) {
                *theirs = hdr[k];
                return true;
            }
    return false;
}

/* A signal left over from a one-way call of peer's that this rank ran differently (rt_oneway.c): its
 * header is still in a one-way slot, and my view of that call is my record. */
static bool stale_oneway(rt_comm *c, uint32_t peer, uint64_t seq, rt_sig *theirs, const rt_sig **mine)
{
    rt_sig hdr[2];
    for (uint32_t s = ALGO_EAGER_SLOTS; s < rt_inbox_slots(c); s++)
        for (uint32_t k = 0, n = headers_seen(c, s, peer, hdr); k < n; k++) {
            const rt_pub_record *rec = rt_ctrl_pub(c->ctrl, hdr[k].seq);
            if (hdr[k].eager == RT_SIG_ONEWAY && hdr[k].seq && hdr[k].seq < seq &&
                atomic_load_explicit(&rec->ready, memory_order_acquire) == hdr[k].seq &&
                !rt_sig_equal(&hdr[k], &rec->sig)) {
                *theirs = hdr[k];
                *mine = &rec->sig;
                return true;
            }
        }
    return false;
}

/* Read by peers' destroys (rt_ctrl_wait_fetched): done with peer's record of call seq. A one-way
 * Broadcast or Scatter reads no record but the root's: every peer's may go (a receiver marks the
 * root's once it checked its header), and neither does a one-way Reduce's writer; its root checks
 * every writer's header, one at a time. */
static void mark_fetched(rt_launch_ctx *ctx, uint32_t peer)
{
    rt_comm *c = ctx->c;
    _Atomic uint64_t *fetched = rt_ctrl_fetched(c->ctrl);
    if (!ctx->plan->oneway || (ctx->plan->oneway_gather && peer != c->rank)) {
        atomic_store_explicit(&fetched[peer], ctx->seq, memory_order_release);
        return;
    }
    for (uint32_t q = 0; q < c->nranks; q++)
        if (q != c->rank)
            atomic_store_explicit(&fetched[q], ctx->seq, memory_order_release);
}

/* The same V-op with other tables, whose hash differs (rt_sig.vtab), and so may the protocol: the
 * tables chose it (algos/select.c). */
static bool only_tables_differ(const rt_sig *theirs, const rt_sig *mine)
{
    rt_sig t = *theirs;
    t.eager = mine->eager;
    t.vtab = mine->vtab;
    return rt_sig_equal(&t, mine);
}

/* A mismatch with peer's call `theirs`; where it is this V-op with other tables, the table check
 * names the entry, from the tables the peer published for this call (rt_vpublish, in record and
 * header mode alike). */
static int report_call_mismatch(rt_launch_ctx *ctx, uint32_t peer, const rt_sig *theirs, char *msg, size_t len)
{
    if (ctx->vop && only_tables_differ(theirs, &ctx->sig) &&
        rt_vcheck_peer(ctx, peer, rt_ctrl_vtable(ctx->c->peers[peer].ctrl, ctx->seq), msg, len))
        return HAL_E_ABORTED;
    return report_mismatch(ctx, peer, theirs, msg, len);
}

/* The peer's record slot holds another call than this one, which it should hold by now. */
static int wrong_record(rt_launch_ctx *ctx, uint32_t peer, uint64_t ready, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    snprintf(msg, len, "comm %s: rank %u expected rank %u's record of op #%llu but found op #%llu", c->name, c->rank,
             peer, (unsigned long long)ctx->seq, (unsigned long long)ready);
    rt_abort_all(c, HCCL_E_INTERNAL, msg);
    return HAL_E_INTERNAL;
}

/* Binds the peer's buffers from its record, unless the peer released it while we read it (then the
 * bindings are not ours). */
static int bind_live(rt_launch_ctx *ctx, uint32_t peer, const rt_pub_record *rec, char *msg, size_t len)
{
    bind_peer(ctx, peer, rec);
    if (!rt_ctrl_peer_live(ctx->c, peer))
        return report_destroyed(ctx, peer, ctx->seq, msg, len);
    return 0;
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
    rt_sig theirs;
    const rt_sig *mine;
    if (ready != seq && c->eager_hdr && header_of_call(c, peer, seq, &theirs)) /* an eager peer in header mode */
        return report_call_mismatch(ctx, peer, &theirs, msg, len);
    if (ready != seq && c->eager_hdr && stale_oneway(c, peer, seq, &theirs, &mine))
        return rt_mismatch_report(c, peer, &theirs, mine, msg, len);
    if (ready != seq)
        return wrong_record(ctx, peer, ready, msg, len);
    if (!rt_sig_equal(&rec->sig, &ctx->sig))
        return report_call_mismatch(ctx, peer, &rec->sig, msg, len);
    if (ctx->vop && rt_vcheck_peer(ctx, peer, rec->vcounts ? rt_ctrl_vtable(pc, seq) : NULL, msg, len))
        return HAL_E_ABORTED; /* before bind_peer: nothing can address the peer's buffers */
    int rc = bind_live(ctx, peer, rec, msg, len);
    if (rc)
        return rc;
    mark_fetched(ctx, peer); /* its record may be released now */
    return 0;
}

/* Whether this rank's plan writes its box (and header) in q's slot: a Broadcast root its own
 * (oneway_pull), a one-way Reduce's writer its root's, any other eager plan every peer's. */
static bool writes_into(const rt_launch_ctx *ctx, uint32_t q)
{
    const algo_plan *p = ctx->plan;
    if (p->oneway_gather)
        return q == p->op.root;
    return p->oneway_pull ? q == ctx->c->rank : q != ctx->c->rank;
}

/* Header mode (docs/runtime.md, "Eager header mode"), where task functions reach peers' memory
 * (the emulator): an eager call publishes no record. Its writer puts the call's signature into
 * the header of its own box in every peer's inbox slot (a one-way Broadcast root: in its own
 * slot, which its receivers read; a one-way Reduce's writer: in its root's: writes_into), next to
 * the data it copies there, before the PUB signals; the
 * reader's FETCH reads the header where it reads the data instead of the record in the writer's
 * control block: one cache line it reads anyway instead of two it would miss. Where PUB signals are
 * flags (rt_hdr_flags), the header's seq is the signal: rt_hdr_flag_task stores it after the data. */
int rt_eager_post_task(void *arg, char *msg, size_t len)
{
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    rt_sig sig = ctx->sig;
    sig.seq = ctx->seq;
    bool oneway = ctx->plan->oneway, flags = rt_hdr_flags(ctx);
    uint64_t stride = rt_plan_stride(c, ctx->plan);
    _Static_assert(offsetof(rt_sig, seq) == 0, "a header's seq comes first");
    if (rt_a2av_receives_directly(ctx)) { /* senders of large blocks need my OUT: a record too */
        int rc = rt_publish_task(ctx, msg, len);
        if (rc)
            return rc;
    } else if (ctx->vop) { /* the tables: AlltoAllV's checks, the others' entry named where a hash differs */
        uint64_t *t;
        if (publish_tables(ctx, &t, msg, len))
            return HAL_E_ABORTED;
    }
    for (uint32_t q = 0; q < c->nranks; q++) {
        if (!writes_into(ctx, q))
            continue;
        char *hdr = (char *)rt_box_hdr(rt_ctx_inbox(ctx, q), c->rank, stride);
        if (flags) /* the seq is the PUB signal, stored after the data; constant sizes: plain moves */
            memcpy(hdr + sizeof sig.seq, (char *)&sig + sizeof sig.seq, sizeof sig - sizeof sig.seq);
        else
            memcpy(hdr, &sig, sizeof sig);
    }
    if (!oneway)
        return 0;
    mark_fetched(ctx, c->rank); /* a one-way root reads nobody's record */
    return rt_publish_task(ctx, msg, len); /* and writes its view (rt_oneway.c) */
}

/* A PUB signal as a flag (a one-way root's, rt_oneway.c; an eager exchange's): this call's seq into
 * the header of every box it wrote, after the data and the header's other fields (release: the
 * reader's flag wait acquires it). */
int rt_hdr_flag_task(void *arg, char *msg, size_t len)
{
    (void)msg, (void)len;
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    uint64_t stride = rt_plan_stride(c, ctx->plan);
    for (uint32_t q = 0; q < c->nranks; q++) {
        if (!writes_into(ctx, q))
            continue;
        _Atomic uint64_t *seq = (_Atomic uint64_t *)(void *)&rt_box_hdr(rt_ctx_inbox(ctx, q), c->rank, stride)->seq;
        atomic_store_explicit(seq, ctx->seq, memory_order_release);
    }
    return 0;
}

/* A one-way receiver's signal from its root without this call's header in the slot. Never this
 * call's data: the two count the root's one-way calls differently, because of an earlier call they
 * ran differently (named, if this rank's record of it is still there), or the root destroyed or
 * runs another call (its record says, as in the record mode). A one-way root also writes a record
 * of its call, so even a record of this call does not make the slot's data this call's. */
static int oneway_not_this_call(rt_fetch_arg *fa, char *msg, size_t len)
{
    rt_launch_ctx *ctx = fa->ctx;
    rt_comm *c = ctx->c;
    rt_sig theirs;
    const rt_sig *mine;
    if (stale_oneway(c, fa->peer, ctx->seq, &theirs, &mine))
        return rt_mismatch_report(c, fa->peer, &theirs, mine, msg, len);
    int rc = rt_fetch_task(fa, msg, len);
    if (rc)
        return rc;
    snprintf(msg, len, "comm %s: rank %u's signal to rank %u was not op #%llu's data: the two ran one of rank %u's "
             "earlier one-way calls differently", c->name, fa->peer, c->rank, (unsigned long long)ctx->seq, fa->peer);
    OH_ERR("mismatch", "%s", msg);
    rt_abort_all(c, HCCL_E_INTERNAL, msg);
    return HAL_E_INTERNAL;
}

/* An eager AlltoAllV in header mode, after the peer's header of this call: its tables against
 * mine (the sig has no hash of them: every rank's differ), then, where a block of mine to it is
 * past the crossover, its OUT from the record it published because it receives that block directly
 * (rt_eager_post_task). Both before any step addresses its OUT. */
static int a2av_check_peer(rt_launch_ctx *ctx, uint32_t peer, char *msg, size_t len)
{
    rt_comm *c = ctx->c;
    rt_ctrl *pc = c->peers[peer].ctrl;
    if (rt_vcheck_peer(ctx, peer, rt_ctrl_vtable(pc, ctx->seq), msg, len))
        return HAL_E_ABORTED;
    if (!rt_a2av_sends_directly(ctx, peer))
        return 0;
    const rt_pub_record *rec = rt_ctrl_pub(pc, ctx->seq);
    uint64_t ready = atomic_load_explicit(&((rt_pub_record *)rec)->ready, memory_order_acquire);
    if (ready != ctx->seq) /* the tables agree, so it receives directly and published first */
        return wrong_record(ctx, peer, ready, msg, len);
    return bind_live(ctx, peer, rec, msg, len);
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
    uint32_t inbox = ctx->plan->oneway_pull ? fa->peer : c->rank; /* a Broadcast's: its root's own */
    memcpy(&theirs, rt_box_hdr(rt_ctx_inbox(ctx, inbox), fa->peer, rt_plan_stride(c, ctx->plan)), sizeof theirs);
    if (theirs.seq != ctx->seq)
        return ctx->plan->oneway ? oneway_not_this_call(fa, msg, len) : rt_fetch_task(arg, msg, len);
    if (!rt_sig_equal(&theirs, &ctx->sig))
        return report_call_mismatch(ctx, fa->peer, &theirs, msg, len);
    if (ctx->plan->v_small_bytes) { /* AlltoAllV: no hash of tables that differ per rank */
        int rc = a2av_check_peer(ctx, fa->peer, msg, len);
        if (rc)
            return rc;
    }
    mark_fetched(ctx, fa->peer); /* as after a record */
    return 0;
}
