/* The peer-visible control block: layout, publication rings and the communicator-wide abort. */
#include <stdio.h>
#include <string.h>

#include "runtime/rt_internal.h"

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t off_notify(void)
{
    return align64(sizeof(rt_ctrl));
}

static size_t off_pub(uint32_t n)
{
    return off_notify() + align64((size_t)n * RT_SLOTS * sizeof(hal_notify_handle));
}

static size_t off_p2p(uint32_t n)
{
    return off_pub(n) + align64(RT_PUB_RING * sizeof(rt_pub_record));
}

static size_t off_vtable(uint32_t n)
{
    return off_p2p(n) + align64((size_t)n * RT_PUB_RING * sizeof(rt_pub_record));
}

size_t rt_ctrl_size(uint32_t n)
{
    return off_vtable(n) + align64((size_t)RT_PUB_RING * 2 * n * sizeof(uint64_t));
}

hal_notify_handle *rt_ctrl_notify_tbl(rt_ctrl *c, uint32_t sender)
{
    return (hal_notify_handle *)((char *)c + off_notify()) + (size_t)sender * RT_SLOTS;
}

rt_pub_record *rt_ctrl_pub(rt_ctrl *c, uint64_t seq)
{
    return (rt_pub_record *)((char *)c + off_pub(c->nranks)) + seq % RT_PUB_RING;
}

rt_pub_record *rt_ctrl_p2p(rt_ctrl *c, uint32_t peer, uint64_t seq)
{
    return (rt_pub_record *)((char *)c + off_p2p(c->nranks)) + (size_t)peer * RT_PUB_RING + seq % RT_PUB_RING;
}

uint64_t *rt_ctrl_vtable(rt_ctrl *c, uint64_t seq)
{
    return (uint64_t *)((char *)c + off_vtable(c->nranks)) + (seq % RT_PUB_RING) * 2 * c->nranks;
}

/* Writes the reason into every rank's control block, then raises the flags: a waiting rank
 * polls its own flag, so it fails within a poll interval with the first reason recorded. */
void rt_abort_all(rt_comm *c, HcclResult code, const char *msg)
{
    for (uint32_t r = 0; r < c->nranks; r++) {
        rt_ctrl *ctrl = c->peers[r].ctrl;
        if (!ctrl)
            continue;
        uint32_t expected = 0;
        /* 1 = claimed (message being written), 2 = published. */
        if (atomic_compare_exchange_strong(&ctrl->abort, &expected, 1)) {
            ctrl->abort_code = (uint32_t)code;
            snprintf(ctrl->abort_msg, sizeof ctrl->abort_msg, "%s", msg);
            atomic_store(&ctrl->abort, 2);
        }
    }
}
