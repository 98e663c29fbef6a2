/* Point to point through the boxes (rt_internal.h, RT_P2P_BOXES; docs/runtime.md, "Point to
 * point"), with a peer of this server. Every wait is a flag wait on a line the waiter reads anyway,
 * every signal a wake-up that writes nothing where nobody sleeps:
 *   eager send (at most rt_comm.p2p_box_bytes): waits until the receiver has read the box's last
 *     message (its `read` line), writes its bytes and header into the box;
 *   direct send: waits for the receive record (`posted`), checks it and copies into the
 *     receive buffer (rt_p2p_pub.c), then writes the box's header;
 *   receive: waits for the box's header; an eager one is checked against the receive and copied
 *     out; then `read` and a wake-up for a sender waiting for the box.
 * So the receiver never reads the sender's memory, and an eager sender goes on without the
 * receiver: its send is over once the bytes are in the box, as an MPI eager send. A mismatch is
 * then found by the receiver, which fails the communicator on every rank (the sender at its next
 * wait); a sender that has begun HcclCommDestroy fails a receive still waiting for it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/stream/rt_launch.h"

static void write_header(rt_comm *c, const rt_p2p_item *it, rt_sig *hdr, bool eager)
{
    hdr->cmd = it->cmd;
    hdr->dtype = it->dtype;
    hdr->count = it->count;
    hdr->nranks = c->nranks;
    hdr->eager = eager;
    atomic_store_explicit((_Atomic uint64_t *)(void *)&hdr->seq, it->ordinal, memory_order_release);
}

/* An eager send, its box free: bytes, then the header (its seq last). A receiver that has begun
 * its HcclCommDestroy reads no box again: the send fails as a direct one would. */
int rt_p2p_eager_send_task(void *arg, char *msg, size_t len)
{
    rt_p2p_item *it = arg;
    rt_comm *c = it->ctx->c;
    if (it->sent)
        return 0;
    if (rt_ctrl_peer_left(c, it->peer))
        return rt_p2p_report_destroy(it, msg, len);
    void *inbox = c->peers[it->peer].inbox;
    uint64_t bytes = rt_p2p_item_bytes(it);
    if (bytes)
        memcpy(rt_p2p_box_bytes(c, inbox, c->rank, it->ordinal, bytes), it->buf, bytes);
    write_header(c, it, rt_p2p_box(c, inbox, c->rank, it->ordinal), true);
    return 0;
}

/* Ahead of the launches before it, the send may not wait: where its box is not free yet (its
 * wait, rt_p2p_bind_waits), the send in order does it. */
int rt_p2p_eager_try_task(void *arg, char *msg, size_t len)
{
    rt_p2p_item *it = arg;
    if (!hal_flag_met(&it->wait))
        return 0;
    int rc = rt_p2p_eager_send_task(it, msg, len);
    it->sent = rc == 0;
    return rc;
}

int rt_p2p_delivered_task(void *arg, char *msg, size_t len)
{
    (void)msg;
    (void)len;
    rt_p2p_item *it = arg;
    rt_comm *c = it->ctx->c;
    write_header(c, it, rt_p2p_box(c, c->peers[it->peer].inbox, c->rank, it->ordinal), false);
    return 0;
}

int rt_p2p_box_receive(rt_p2p_item *it, char *msg, size_t len)
{
    rt_comm *c = it->ctx->c;
    const rt_sig *hdr = rt_p2p_box(c, c->inbox, it->peer, it->ordinal);
    uint64_t seq = atomic_load_explicit((const _Atomic uint64_t *)(const void *)&hdr->seq, memory_order_acquire);
    if (seq != it->ordinal) {
        snprintf(msg, len, "comm %s: rank %u expected rank %u's send #%llu in its box but found #%llu", c->name,
                 c->rank, it->peer, (unsigned long long)it->ordinal, (unsigned long long)seq);
        return rt_p2p_fail(c, HCCL_E_INTERNAL, HAL_E_INTERNAL, msg);
    }
    if (hdr->eager && (hdr->count != it->count || hdr->dtype != it->dtype)) {
        rt_p2p_item send = {.peer = c->rank, .is_send = 1, .cmd = hdr->cmd, .dtype = hdr->dtype,
                            .count = hdr->count, .ordinal = it->ordinal};
        return rt_p2p_report_mismatch(c, &send, it->peer, it, msg, len);
    }
    uint64_t bytes = rt_p2p_item_bytes(it);
    if (hdr->eager && bytes)
        memcpy(it->buf, rt_p2p_box_bytes(c, c->inbox, it->peer, it->ordinal, bytes), bytes);
    atomic_store_explicit(rt_p2p_read(c, c->inbox, it->peer), it->ordinal, memory_order_release);
    return 0;
}

/* A peer stores its flag before it marks itself destroyed: a flag still short after the mark
 * will stay short. */
int rt_p2p_peer_check(void *arg, char *msg, size_t len)
{
    const rt_p2p_item *it = arg;
    if (!rt_ctrl_peer_left(it->ctx->c, it->peer) || hal_flag_met(&it->wait))
        return 0;
    return rt_p2p_report_destroy(it, msg, len);
}

void rt_p2p_bind_waits(rt_comm *c, rt_p2p_item *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        rt_p2p_item *it = &items[i];
        hal_flag_wait *w = &it->wait;
        if (!w->wake) /* no flag wait (rt_prog_p2p.c) */
            continue;
        rt_peer *p = &c->peers[it->peer];
        if (!it->is_send) {
            w->flag = (const volatile uint64_t *)(void *)&rt_p2p_box(c, c->inbox, it->peer, it->ordinal)->seq;
            w->at_least = it->ordinal;
        } else if (it->eager) { /* the message RT_P2P_BOXES before it was read */
            w->flag = (const volatile uint64_t *)(void *)rt_p2p_read(c, p->inbox, c->rank);
            w->at_least = it->ordinal > RT_P2P_BOXES ? it->ordinal - RT_P2P_BOXES : 0;
        } else { /* its receive record is out (rt_p2p_publish_task) */
            w->flag = (const volatile uint64_t *)(void *)rt_p2p_posted(c, p->inbox, c->rank);
            w->at_least = it->ordinal;
        }
    }
}

/* Done at the first p2p launch, not at init: a writer's part is 64 B + 64 x (64 B + the eager
 * limit), up to 130 pages, and communicators that never send pay nothing (8-rank init and
 * teardown took 386 -> 475 ms with it at init: docs/perf-history.md, "Eager Send/Recv"). Without it a
 * loop's first 64 calls each start pages of both inboxes, about 7 us a page on the VM. */
void rt_p2p_warm(rt_comm *c)
{
    if (c->p2p_warm || !rt_p2p_boxes(c))
        return;
    c->p2p_warm = true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint64_t bytes = rt_p2p_writer_bytes(c);
    for (uint32_t q = 0; q < c->nranks; q++)
        if (q != c->rank && rt_p2p_on_flags(c, q)) {
            const char *mine = (const char *)rt_p2p_read(c, c->inbox, q);
            const char *theirs = (const char *)rt_p2p_read(c, c->peers[q].inbox, c->rank);
            rt_warm_range(c, mine, mine + bytes, page);
            rt_warm_range(c, theirs, theirs + bytes, page);
        }
}
