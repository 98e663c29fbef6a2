/* The device-side tasks that carry plan steps across servers (rt_net.h). They run on the stream
 * workers in stream order; a write returns once queued, so the data leaves while the stream goes
 * on, and the launch's last task waits for the send completions (rt_net_drain_task). */
#include <stdio.h>

#include "runtime/net/rt_net_priv.h"
#include "runtime/stream/rt_launch.h"

static int fail(rt_comm *c, uint32_t p, hal_result rc, const char *what, char *msg, size_t len)
{
    const char *addr = c->net && c->net->peer[p].link ? net_link_peer(c->net->peer[p].link) : "?";
    snprintf(msg, len, "comm %s: rank %u: %s to rank %u (server %u, %s) failed: %s", c->name, c->rank, what, p,
             c->server_of[p], addr, hal_result_name(rc));
    OH_ERR("net", "%s", msg);
    rt_abort_all(c, rc == HAL_E_PEER ? HCCL_E_REMOTE : rt_from_hal(rc), msg);
    return rc;
}

static uint32_t rkey_of(rt_launch_ctx *ctx, uint32_t p, uint8_t buf, uint32_t item)
{
    rt_comm *c = ctx->c;
    if (ctx->p2p) /* the receiver's record of this send, FETCHed from the mirror */
        return rt_ctrl_p2p(c->peers[p].ctrl, c->rank, ctx->p2p_items[item].ordinal)->rkey_out;
    const rt_net_hello *h = &c->net->hello[p];
    if (buf == ALGO_BUF_SCRATCH)
        return h->scratch_rkey;
    if (buf == ALGO_BUF_INBOX)
        return h->inbox_rkey;
    const rt_pub_record *rec = rt_ctrl_pub(c->peers[p].ctrl, ctx->seq); /* the peer's record, FETCHed */
    return buf == ALGO_BUF_OUT ? rec->rkey_out : rec->rkey_in;
}

int rt_net_write_task(void *arg, char *msg, size_t len)
{
    rt_net_op *op = arg;
    rt_launch_ctx *ctx = op->ctx;
    rt_comm *c = ctx->c;
    net_link *l = c->net->peer[op->peer].link;
    uint32_t rkey = rkey_of(ctx, op->peer, op->buf, op->item);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < op->n; i++) {
        const hal_dma_desc *d = &ctx->descs[op->first + i];
        void *src = hal_ref_resolve(d->src), *dst = hal_ref_resolve(d->dst);
        if (!src || !dst)
            return fail(c, op->peer, HAL_E_INTERNAL, "a write with an unbound address", msg, len);
        hal_result rc = net_write(l, src, d->bytes, (uint64_t)(uintptr_t)dst, rkey, NET_NOTIFY_NONE, 0);
        if (rc != HAL_OK)
            return fail(c, op->peer, rc, "a write", msg, len);
        bytes += d->bytes;
    }
    atomic_fetch_add_explicit(&c->net->sent_bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->net->sent_writes, op->n, memory_order_relaxed);
    return 0;
}

/* SIGNAL{p, PUB}: the peer will FETCH this call's record from its mirror of my block, so the
 * record (and V table) goes first, on the same link. Only peers that FETCH me get it: a peer that
 * does not may already have left. */
static hal_result push_record(rt_launch_ctx *ctx, uint32_t p)
{
    rt_comm *c = ctx->c;
    const rt_net_hello *h = &c->net->hello[p];
    net_link *l = c->net->peer[p].link;
    const rt_pub_record *rec = rt_ctrl_pub(c->ctrl, ctx->seq);
    uint64_t roff = (uint64_t)((const char *)rec - (const char *)c->ctrl);
    if (ctx->vop) {
        const uint64_t *t = rt_ctrl_vtable(c->ctrl, ctx->seq);
        uint64_t voff = (uint64_t)((const char *)t - (const char *)c->ctrl);
        CHECK(net_write(l, t, RT_VTABLE_ENTRIES(c->nranks) * sizeof *t, h->mirror + voff, h->mirror_rkey,
                        NET_NOTIFY_NONE, 0));
    }
    return net_write(l, rec, sizeof *rec, h->mirror + roff, h->mirror_rkey, NET_NOTIFY_NONE, 0);
}

int rt_net_signal_task(void *arg, char *msg, size_t len)
{
    rt_net_op *op = arg;
    rt_comm *c = op->ctx->c;
    uint32_t id = c->net->hello[op->peer].notify_base + op->slot;
    hal_result rc = op->slot == ALGO_SLOT_PUB ? push_record(op->ctx, op->peer) : HAL_OK;
    if (rc == HAL_OK)
        rc = net_write(c->net->peer[op->peer].link, NULL, 0, 0, 0, id, 0);
    return rc == HAL_OK ? 0 : fail(c, op->peer, rc, "a signal", msg, len);
}

int rt_net_drain_task(void *arg, char *msg, size_t len)
{
    rt_launch_ctx *ctx = arg;
    rt_comm *c = ctx->c;
    int timeout_ms = c->exec_timeout_s > 0 ? c->exec_timeout_s * 1000 : -1;
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (!c->peers[p].remote)
            continue;
        hal_result rc = net_link_drain(c->net->peer[p].link, timeout_ms);
        if (rc != HAL_OK)
            return fail(c, p, rc, "completing the writes", msg, len);
    }
    return 0;
}

int rt_net_push_p2p(rt_comm *c, uint32_t peer, const rt_pub_record *rec, char *msg, size_t len)
{
    const rt_net_hello *h = &c->net->hello[peer];
    uint64_t off = (uint64_t)((const char *)rec - (const char *)c->ctrl);
    hal_result rc = net_write(c->net->peer[peer].link, rec, sizeof *rec, h->mirror + off, h->mirror_rkey,
                              NET_NOTIFY_NONE, 0);
    return rc == HAL_OK ? 0 : fail(c, peer, rc, "publishing a receive", msg, len);
}

int rt_net_push_taken(rt_comm *c, uint32_t peer, const rt_pub_record *rec, char *msg, size_t len)
{
    const rt_net_hello *h = &c->net->hello[peer];
    uint64_t off = (uint64_t)((const char *)&rec->p2p_taken - (const char *)c->peers[peer].ctrl);
    hal_result rc = net_write(c->net->peer[peer].link, (const void *)&rec->p2p_taken, sizeof rec->p2p_taken,
                              h->ctrl + off, h->ctrl_rkey, NET_NOTIFY_NONE, 0);
    return rc == HAL_OK ? 0 : fail(c, peer, rc, "marking a receive taken", msg, len);
}
