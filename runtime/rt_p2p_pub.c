/* Point-to-point publication, run on the device in stream order. Each receive item writes a record
 * {ordinal, call, count, dtype, buffer} into this rank's ring for its sender; the sender's FETCH
 * for its send of the same ordinal reads it, checks that both sides describe the same message
 * (before any byte moves: a disagreement fails both ranks, named in one line), marks it taken and
 * binds the receiver's buffer.
 * HcclCommDestroy (rt_p2p_finalize) writes FINALIZE as the next receive from every peer and signals
 * both p2p slots of every peer: a peer blocked sending to this rank reads the FINALIZE; a peer blocked
 * receiving from it wakes on the data slot and finds its own record not taken (a sender on another
 * server does the same over the link, runtime/net). So a receiver never
 * reads the sender's memory after its wait (the sender may have released it by then).
 * With a peer of this server where the inboxes have p2p boxes, sends end by writing a box of the
 * receiver's inbox and small ones go eager (rt_p2p_box.c); the records and FETCH stay for the
 * direct sends. */
#include <stdio.h>
#include <string.h>

#include "runtime/net/rt_net.h"
#include "runtime/stream/rt_launch.h"

int rt_p2p_publish_task(void *arg, char *msg, size_t len)
{
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    for (uint32_t k = 0; k < ctx->plan->op.nitems; k++) {
        const rt_p2p_item *it = &ctx->p2p_items[k];
        if (it->is_send || it->peer == c->rank)
            continue;
        rt_pub_record *rec = rt_ctrl_p2p(c->ctrl, it->peer, it->ordinal);
        memset(&rec->sig, 0, sizeof rec->sig);
        rec->sig.seq = it->ordinal;
        rec->sig.cmd = it->cmd;
        rec->sig.dtype = it->dtype;
        rec->sig.count = it->count;
        rec->sig.nranks = c->nranks;
        rec->in = 0;
        rec->out = (uint64_t)(uintptr_t)it->buf;
        rec->vdispl = rec->vcounts = 0;
        rec->rkey_in = rec->rkey_out = 0;
        atomic_store_explicit(&rec->p2p_taken, 0, memory_order_relaxed);
        if (c->peers[it->peer].remote) /* the sender reads it in its mirror of my block */
            rec->rkey_out = rt_net_user_rkey(c, it->buf);
        atomic_store_explicit(&rec->ready, it->ordinal, memory_order_release);
        if (rt_p2p_on_flags(c, it->peer)) /* what a direct sender waits for (rt_p2p_box.c) */
            atomic_store_explicit(rt_p2p_posted(c, c->inbox, it->peer), it->ordinal, memory_order_release);
        if (c->peers[it->peer].remote) {
            int rc = rt_net_push_p2p(c, it->peer, rec, msg, len);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* "HcclSend(count=8, fp32) to rank 1 (send #3 to rank 1)" */
static void format_item(const rt_p2p_item *it, char *buf, size_t len)
{
    rt_sig sig = {.cmd = it->cmd, .dtype = it->dtype, .count = it->count};
    char call[128];
    rt_sig_format(&sig, call, sizeof call);
    const char *dir = it->is_send ? "to" : "from";
    snprintf(buf, len, "%s %s rank %u (%s #%llu %s rank %u)", call, dir, it->peer, it->is_send ? "send" : "receive",
             (unsigned long long)it->ordinal, dir, it->peer);
}

int rt_p2p_fail(rt_comm *c, HcclResult code, int hal_rc, const char *msg)
{
    OH_ERR("p2p", "%s", msg);
    rt_abort_all(c, code, msg);
    return hal_rc;
}

int rt_p2p_report_destroy(const rt_p2p_item *it, char *msg, size_t len)
{
    rt_comm *c = it->ctx->c;
    char mine[256];
    format_item(it, mine, sizeof mine);
    snprintf(msg, len, "comm %s: rank %u called HcclCommDestroy while rank %u waits in %s", c->name, it->peer,
             c->rank, mine);
    return rt_p2p_fail(c, HCCL_E_PARA, HAL_E_ABORTED, msg);
}

int rt_p2p_report_mismatch(rt_comm *c, const rt_p2p_item *send, uint32_t sender, const rt_p2p_item *recv,
                           char *msg, size_t len)
{
    char s[256], r[256];
    format_item(send, s, sizeof s);
    format_item(recv, r, sizeof r);
    snprintf(msg, len, "comm %s: p2p mismatch: rank %u calls %s but rank %u calls %s", c->name, sender, s,
             send->peer, r);
    return rt_p2p_fail(c, HCCL_E_PARA, HAL_E_ABORTED, msg);
}

/* A send item: the receiver's record for the same ordinal must describe the same message. */
int rt_p2p_fetch_task(void *arg, char *msg, size_t len)
{
    rt_p2p_item *it = arg;
    rt_comm *c = it->ctx->c;
    rt_pub_record *rec = rt_ctrl_p2p(c->peers[it->peer].ctrl, c->rank, it->ordinal);
    uint64_t ready = atomic_load_explicit(&rec->ready, memory_order_acquire);
    if (!rt_ctrl_peer_live(c, it->peer)) /* its block left this communicator: not ours to read */
        return rt_p2p_report_destroy(it, msg, len);
    if (ready != it->ordinal) {
        snprintf(msg, len, "comm %s: rank %u expected rank %u's record of receive #%llu from rank %u but found #%llu",
                 c->name, c->rank, it->peer, (unsigned long long)it->ordinal, c->rank, (unsigned long long)ready);
        return rt_p2p_fail(c, HCCL_E_INTERNAL, HAL_E_INTERNAL, msg);
    }
    if (rec->sig.cmd == HCCL_CMD_FINALIZE)
        return rt_p2p_report_destroy(it, msg, len);
    if (rec->sig.count != it->count || rec->sig.dtype != it->dtype) {
        rt_p2p_item theirs = {.peer = c->rank, .is_send = 0, .cmd = rec->sig.cmd, .dtype = rec->sig.dtype,
                              .count = rec->sig.count, .ordinal = it->ordinal};
        return rt_p2p_report_mismatch(c, it, c->rank, &theirs, msg, len);
    }
    it->peer_buf = (void *)(uintptr_t)rec->out;
    if (c->staging && !c->peers[it->peer].remote) { /* its staging OUT, as imported here */
        uint64_t bytes = rt_p2p_item_bytes(it);
        it->peer_buf = rt_staging_p2p_peer(c, it->peer, rec->out, bytes);
        if (!it->peer_buf && bytes) {
            snprintf(msg, len, "comm %s: rank %u published a receive buffer %#llx of %llu bytes outside its staging "
                     "buffers (send #%llu from rank %u)", c->name, it->peer, (unsigned long long)rec->out,
                     (unsigned long long)bytes, (unsigned long long)it->ordinal, c->rank);
            return rt_p2p_fail(c, HCCL_E_INTERNAL, HAL_E_INTERNAL, msg);
        }
    }
    if (!rt_ctrl_peer_live(c, it->peer)) /* released while we read: the buffer is not ours */
        return rt_p2p_report_destroy(it, msg, len);
    /* Before the copy and the data signal: the receiver checks it after its wait. */
    atomic_store_explicit(&rec->p2p_taken, it->ordinal, memory_order_release);
    if (c->peers[it->peer].remote) /* rec is my mirror of its block: the mark goes over the link too */
        return rt_net_push_taken(c, it->peer, rec, msg, len);
    return 0;
}

/* A receive item after its data signal: a sender signals data only after taking the record, so
 * a record not taken means the signal was the sender's destroy. Reads this rank's memory only.
 * With a peer on flags, its box's header came instead (rt_p2p_box.c). */
int rt_p2p_recv_task(void *arg, char *msg, size_t len)
{
    rt_p2p_item *it = arg;
    rt_comm *c = it->ctx->c;
    if (rt_p2p_on_flags(c, it->peer))
        return rt_p2p_box_receive(it, msg, len);
    rt_pub_record *rec = rt_ctrl_p2p(c->ctrl, it->peer, it->ordinal);
    /* A remote sender's taken mark came over the link before its data and signal (rt_net_push_taken). */
    if (atomic_load_explicit(&rec->p2p_taken, memory_order_acquire) != it->ordinal)
        return rt_p2p_report_destroy(it, msg, len);
    return 0;
}

static void write_finalize(rt_comm *c, uint32_t peer, uint64_t ordinal)
{
    rt_pub_record *rec = rt_ctrl_p2p(c->ctrl, peer, ordinal);
    memset(&rec->sig, 0, sizeof rec->sig);
    rec->sig.cmd = HCCL_CMD_FINALIZE;
    rec->sig.seq = ordinal;
    rec->sig.nranks = c->nranks;
    atomic_store_explicit(&rec->p2p_taken, 0, memory_order_relaxed);
    atomic_store_explicit(&rec->ready, ordinal, memory_order_release);
    if (rt_p2p_on_flags(c, peer))
        atomic_store_explicit(rt_p2p_posted(c, c->inbox, peer), ordinal, memory_order_release);
}

/* Called by HcclCommDestroy once this rank's launches are complete (caller holds c->lock): a peer
 * blocked sending to this rank waits on its PUB slot (through the boxes: for the record, which is
 * the FINALIZE, or for a box, whose wait's check sees the destroy), one blocked receiving on its
 * data slot (through the boxes: the check of its wait sees the destroy). */
void rt_p2p_finalize(rt_comm *c)
{
    if (c->nranks < 2 || atomic_load(&c->ctrl->abort))
        return;
    atomic_store(&c->ctrl->destroyed, 1); /* before the wake-ups: the checks of flag waits read it */
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (p == c->rank)
            continue;
        write_finalize(c, p, c->peers[p].p2p_recvd + 1);
    }
    hal_stream *s = NULL;
    if (c->hal->stream_create(c->dev, &s) != HAL_OK)
        return;
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (p == c->rank || c->peers[p].remote)
            continue;
        c->hal->notify_record(c->peers[p].to_peer[RT_SLOT_P2P_PUB], s);
        c->hal->notify_record(c->peers[p].to_peer[ALGO_SLOT_P2P_DATA], s);
        if (rt_p2p_boxes(c)) /* a sender waiting for a box: its check then sees the destroy */
            c->hal->notify_record(c->peers[p].to_peer[RT_SLOT_P2P_CREDIT], s);
    }
    c->hal->stream_sync(s, -1);
    c->hal->stream_destroy(s);
}
