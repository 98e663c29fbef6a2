/* HcclCreateSubCommConfig: a communicator over a subset of a global one. The sub-communicator's
 * first member starts a rendezvous and leaves its root info in its global control block (the
 * "mailbox", peer-visible device memory, rt_mailbox); the other members read it from there, so no
 * user-side exchange is needed. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/oh_hash.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/net/rt_net.h"
#include "runtime/rt_internal.h"

#define RT_SUBCOMM_NOT_MEMBER 0xFFFFFFFFull

static uint64_t mailbox_check(const rt_mailbox *m)
{
    return oh_fnv1a(oh_fnv1a(OH_FNV1A_BASIS, &m->info, sizeof m->info), &m->tag, sizeof m->tag);
}

void rt_mailbox_put(rt_ctrl *ctrl, const HcclRootInfo *info, uint64_t tag)
{
    ctrl->mailbox.info = *info;
    ctrl->mailbox.tag = tag;
    ctrl->mailbox.check = mailbox_check(&ctrl->mailbox);
    atomic_store_explicit(&ctrl->mailbox_tag, tag, memory_order_release);
}

bool rt_mailbox_take(const rt_ctrl *ctrl, uint64_t tag, HcclRootInfo *info)
{
    if (atomic_load_explicit(&ctrl->mailbox_tag, memory_order_acquire) != tag)
        return false;
    rt_mailbox m;
    memcpy(&m, &ctrl->mailbox, sizeof m);
    atomic_thread_fence(memory_order_acquire);
    if (m.tag != tag || m.check != mailbox_check(&m))
        return false;
    *info = m.info;
    return true;
}

static HcclResult wait_mailbox(rt_comm *g, uint32_t owner, uint64_t tag, HcclRootInfo *info)
{
    rt_ctrl *ctrl = g->peers[owner].ctrl;
    int limit_ms = rt_bootstrap_timeout_s() * 1000;
    struct timespec nap = {0, 1000000}; /* init path only: a 1 ms poll costs nothing */
    for (int waited = 0; waited <= limit_ms; waited++) {
        bool taken = rt_mailbox_take(ctrl, tag, info);
        /* Read from a block the owner has released since (it destroyed the global comm)? */
        CHECK_ARG(rt_ctrl_peer_live(g, owner), HCCL_E_PARA, "comm",
                  "rank %u: sub-communicator %llu: global rank %u destroyed the global communicator", g->rank,
                  (unsigned long long)(tag - 1), owner);
        if (taken)
            return HCCL_SUCCESS;
        nanosleep(&nap, NULL);
    }
    OH_ERR("comm", "rank %u: sub-communicator %llu: global rank %u never started it (HCCL_CONNECT_TIMEOUT=%d s)",
           g->rank, (unsigned long long)(tag - 1), owner, rt_bootstrap_timeout_s());
    return HCCL_E_TIMEOUT;
}

static HcclResult check_members(rt_comm *g, uint32_t n, const uint32_t *ids, uint32_t sub_rank)
{
    CHECK_ARG(n >= 1 && n <= g->nranks, HCCL_E_PARA, "comm", "HcclCreateSubCommConfig: rankNum=%u is invalid (1..%u)",
              n, g->nranks);
    CHECK_ARG(sub_rank < n, HCCL_E_PARA, "comm", "HcclCreateSubCommConfig: subCommRankId=%u >= rankNum=%u", sub_rank,
              n);
    CHECK_ARG(ids[sub_rank] == g->rank, HCCL_E_PARA, "comm",
              "HcclCreateSubCommConfig: rankIds[%u]=%u but this is global rank %u", sub_rank, ids[sub_rank], g->rank);
    for (uint32_t i = 0; i < n; i++) {
        CHECK_ARG(ids[i] < g->nranks, HCCL_E_PARA, "comm", "HcclCreateSubCommConfig: rankIds[%u]=%u is out of range",
                  i, ids[i]);
        for (uint32_t j = i + 1; j < n; j++)
            CHECK_ARG(ids[i] != ids[j], HCCL_E_PARA, "comm", "HcclCreateSubCommConfig: rank %u is listed twice",
                      ids[i]);
    }
    return HCCL_SUCCESS;
}

HcclResult HcclCreateSubCommConfig(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds, uint64_t subCommId,
                                   uint32_t subCommRankId, HcclCommConfig *config, HcclComm *subComm)
{
    CHECK_ARG(comm && subComm, HCCL_E_PTR, "comm", "HcclCreateSubCommConfig: comm and subComm must not be NULL");
    rt_comm *g = NULL;
    CHECK(rt_comm_get(*comm, "HcclCreateSubCommConfig", &g));
    CHECK_ARG(!g->is_sub, HCCL_E_NOT_SUPPORT, "comm", "HcclCreateSubCommConfig: a sub-communicator cannot be split");
    if (rankIds == NULL && subCommId == RT_SUBCOMM_NOT_MEMBER) {
        *subComm = NULL; /* this rank does not join */
        return HCCL_SUCCESS;
    }
    CHECK_ARG(rankIds, HCCL_E_PTR, "comm", "HcclCreateSubCommConfig: rankIds is NULL");
    CHECK(check_members(g, rankNum, rankIds, subCommRankId));
    uint64_t tag = subCommId + 1;
    HcclRootInfo info;
    if (subCommRankId == 0) {
        CHECK(rt_bootstrap_root_listen(&info));
        rt_mailbox_put(g->ctrl, &info, tag);
        if (g->net) /* members on other servers read it in their mirrors of this block */
            CHECK(rt_net_push_mailbox(g, true));
    } else {
        CHECK(wait_mailbox(g, rankIds[0], tag, &info));
    }
    char name[COMM_NAME_MAX_LENGTH];
    snprintf(name, sizeof name, "%.64s_sub_%llu", g->name, (unsigned long long)subCommId);
    rt_comm *c = NULL;
    HcclResult rc = rt_comm_create(rankNum, subCommRankId, config, name, &info, &c);
    if (subCommRankId == 0) {
        atomic_store(&g->ctrl->mailbox_tag, 0); /* every member has joined (or failed) */
        if (g->net)
            rt_net_push_mailbox(g, false);
    }
    CHECK(rc);
    c->is_sub = true;
    *subComm = c->handle;
    return HCCL_SUCCESS;
}
