/* Notify slots: per (sender, receiver) pair RT_SLOTS counting notifies owned by the receiver.
 * Each rank creates the notifies its peers will signal and lists their handles in its control
 * block; after the bootstrap every rank imports, from each peer's block, the row addressed to it. */
#include <string.h>

#include "runtime/rt_internal.h"

HcclResult rt_notify_setup_local(rt_comm *c)
{
    for (uint32_t s = 0; s < c->nranks; s++) {
        if (s == c->rank)
            continue;
        hal_notify_handle *row = rt_ctrl_notify_tbl(c->ctrl, s);
        for (uint32_t k = 0; k < RT_SLOTS; k++) {
            CHECK_MAP(c->hal->notify_create(c->dev, &c->peers[s].from_peer[k]), rt_from_hal);
            CHECK_MAP(c->hal->notify_export(c->peers[s].from_peer[k], &row[k]), rt_from_hal);
        }
        /* A one-way root's credits from s (algos/plan.h, INBOX): s has read nothing yet. */
        for (uint32_t k = 0; c->oneway && k < c->ow_slots; k++)
            CHECK_MAP(c->hal->notify_host_record(c->peers[s].from_peer[ALGO_SLOT_CREDIT]), rt_from_hal);
    }
    return HCCL_SUCCESS;
}

HcclResult rt_notify_connect_peers(rt_comm *c)
{
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (p == c->rank || c->peers[p].remote) /* remote: signals go over the link (runtime/net) */
            continue;
        const hal_notify_handle *row = rt_ctrl_notify_tbl(c->peers[p].ctrl, c->rank);
        for (uint32_t k = 0; k < RT_SLOTS; k++) {
            hal_result rc = c->hal->notify_import(c->dev, &row[k], &c->peers[p].to_peer[k]);
            if (rc != HAL_OK) {
                OH_ERR("notify", "rank %u: importing notify slot %u of peer %u failed: %s", c->rank, k, p,
                       hal_result_name(rc));
                return rt_from_hal(rc);
            }
        }
    }
    return HCCL_SUCCESS;
}

void rt_notify_teardown(rt_comm *c)
{
    for (uint32_t p = 0; p < c->nranks; p++) {
        for (uint32_t k = 0; k < RT_SLOTS; k++) {
            if (c->peers[p].to_peer[k])
                c->hal->notify_destroy(c->peers[p].to_peer[k]);
            if (c->peers[p].from_peer[k])
                c->hal->notify_destroy(c->peers[p].from_peer[k]);
            c->peers[p].to_peer[k] = c->peers[p].from_peer[k] = NULL;
        }
    }
}
