/* Communicator lifecycle: device resources, bootstrap exchange, peer mapping, destroy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/bootstrap/bootstrap.h"
#include "runtime/net/rt_net.h"
#include "runtime/rt_internal.h"
#include "runtime/stream/rt_launch.h"

#define RT_COMM_MAGIC 0x434f4d4du

/* What each rank tells the others at init. */
typedef struct rt_rank_blob {
    hal_device_handle dev;
    uint64_t ctrl;
    uint32_t ctrl_epoch;
    uint32_t ctrl_shm;        /* staging mode: its control block's host shared-memory segment (rt_ctrl_shm.c) */
    uint64_t scratch;
    uint64_t scratch_bytes;
    uint64_t inbox;
    rt_net_blob net;          /* links between servers (runtime/net) */
    char ipc_key[RT_STAGE_KEYS][HAL_IPC_KEY_LEN]; /* staging mode: scratch, inbox, staging ("" = none) */
    uint64_t stage;           /* staging mode: its staging buffers' address in its own process */
    uint32_t ow_slots;        /* its inbox's one-way slots (rt_comm.ow_slots) */
} rt_rank_blob;

static HcclResult alloc_device_state(rt_comm *c)
{
    c->staging = rt_staging_wanted(c->hal); /* before the control block: where it lives depends on it */
    CHECK(rt_ctrl_acquire(c));
    /* Staging memory bounded by HCCL_BUFFSIZE; the emulator's heap is sparse, so untouched
     * scratch costs no physical memory. */
    c->scratch_bytes = (uint64_t)c->buffsize_mb << 20;
    if (c->staging) /* half for the plans' scratch, half for staging IN + OUT (rt_staging.c) */
        c->scratch_bytes /= 2;
    CHECK_MAP(c->hal->mem_alloc(c->dev, c->scratch_bytes, &c->scratch), rt_from_hal);
    /* Always allocated, whatever HCCL_EAGER_MAX_BYTES says here: a peer may run eager plans. */
    c->eager_hdr = c->hal->host_mapped_mem && !c->staging; /* docs/runtime.md, "Eager header mode" */
    /* One-way calls need the header mode, the roots' credits (given by host records at init),
     * count waits (the drain) and flag waits (a receiver's wait for its root's header). */
    c->oneway = c->oneway_wanted && c->eager_hdr && c->hal->notify_host_record && c->hal->notify_wait_count &&
                c->hal->flag_wait && c->hal->notify_wake;
    /* The inbox's layout, one-way or not (a peer may be). Eager calls run on one server only, where
     * every rank sees the same CPUs; connect_peer checks that its peers there agree. */
    c->ow_slots = algo_oneway_slots(rt_ranks_fit_cpus(c->nranks));
    /* p2p with this server's peers through boxes in the inboxes: task functions write them (header
     * mode), waits are flag waits woken by notify_wake (docs/runtime.md, "Point to point"). Eager
     * exchanges likewise: a flag in the header line a FETCH reads anyway instead of a count on a
     * notify line both sides write (docs/runtime.md, "Eager header mode"). Every rank of a server has
     * the same backend and staging (connect_peer), so every rank signals the same way. */
    c->flag_waits = c->eager_hdr && c->hal->flag_wait && c->hal->notify_wake;
    /* As ow_slots, from the CPUs: every rank of this server lays its boxes out alike. */
    c->p2p_box_bytes = rt_ranks_fit_cpus(c->nranks) ? RT_P2P_EAGER_FIT : RT_P2P_EAGER_SHARED;
    rt_inbox_layout_set(c);
    CHECK(rt_inbox_acquire(c));
    if (c->staging)
        CHECK(rt_staging_alloc(c));
    return rt_launch_pool_warm(c);
}

/* Servers numbered in order of first appearance among the ranks (peers 0..p-1 already known): a
 * server is the devices with one (server_key, server_index). The key tells hosts apart where no
 * launcher set an index (hal/ascend hashes the host name into it), the index emulated servers. */
static uint32_t server_number(const rt_comm *c, uint32_t p)
{
    const hal_device_handle *d = &c->peers[p].dev;
    uint32_t next = 0;
    for (uint32_t q = 0; q < p; q++) {
        const hal_device_handle *e = &c->peers[q].dev;
        if (e->server_key == d->server_key && e->server_index == d->server_index)
            return c->server_of[q];
        if (c->server_of[q] >= next)
            next = c->server_of[q] + 1;
    }
    return next;
}

static HcclResult connect_peer(rt_comm *c, uint32_t p, const rt_rank_blob *b)
{
    rt_peer *peer = &c->peers[p];
    peer->dev = b->dev;
    peer->scratch = (void *)(uintptr_t)b->scratch;
    peer->inbox = (void *)(uintptr_t)b->inbox;
    peer->stage_va = b->stage;
    c->server_of[p] = server_number(c, p);
    if (p == c->rank) {
        peer->ctrl = c->ctrl;
        peer->ctrl_epoch = c->ctrl_epoch;
        peer->stage = c->stage;
        return HCCL_SUCCESS;
    }
    hal_link_class link = c->hal->link_class(c->dev, &b->dev);
    if (link == HAL_LINK_NET) { /* its memory stays unmapped: runtime/net makes a mirror of its block */
        CHECK_ARG(c->hal->notify_host_record, HCCL_E_NOT_SUPPORT, "comm",
                  "rank %u: peer %u is on another server (server %u) and the %s backend cannot take signals from "
                  "links", c->rank, p, b->dev.server_index, c->hal->name);
        peer->remote = true;
        peer->ctrl_epoch = b->ctrl_epoch;
        return HCCL_SUCCESS;
    }
    CHECK_ARG(b->ow_slots == c->ow_slots, HCCL_E_INTERNAL, "comm",
              "rank %u: peer %u lays out its eager inbox with %u one-way slots a root and this rank with %u (the "
              "online CPUs changed during init?)", c->rank, p, b->ow_slots, c->ow_slots);
    CHECK_ARG(link != HAL_LINK_SELF, HCCL_E_PARA, "comm",
              "rank %u and rank %u use the same device %u: give every rank its own device (aclrtSetDevice)", c->rank,
              p, b->dev.device_id);
    hal_result rc = c->hal->mem_import(c->dev, &b->dev);
    if (rc != HAL_OK) {
        OH_ERR("comm", "rank %u: mapping the memory of peer %u (device %u, pid %u) failed: %s", c->rank, p,
               b->dev.device_id, b->dev.pid, hal_result_name(rc));
        return rt_from_hal(rc);
    }
    CHECK_ARG(c->staging == (b->ctrl_shm != 0), HCCL_E_PARA, "comm",
              "rank %u: peer %u runs %s staging buffers (HCCL_ASCEND_STAGING) and this rank %s: set it alike on every "
              "rank", c->rank, p, b->ctrl_shm ? "with" : "without", c->staging ? "with" : "without");
    /* Only a mapped block may be touched (rt_abort_all writes to every peer->ctrl set). */
    rt_ctrl *ctrl = (rt_ctrl *)(uintptr_t)b->ctrl;
    if (c->staging) { /* host shared memory, mapped here by name (rt_ctrl_shm.c) */
        ctrl = rt_ctrl_shm_map(b->dev.pid, b->ctrl_shm, rt_ctrl_size(c->nranks));
        CHECK_ARG(ctrl, HCCL_E_INTERNAL, "comm", "rank %u: peer %u's control block (pid %u, segment %u) cannot be "
                  "mapped", c->rank, p, b->dev.pid, b->ctrl_shm);
        peer->ctrl = ctrl; /* unmapped at destroy from now on */
        peer->ctrl_map_bytes = rt_ctrl_size(c->nranks);
    }
    CHECK_ARG(ctrl->magic == RT_CTRL_MAGIC, HCCL_E_INTERNAL, "comm", "rank %u: peer %u's control block is not readable",
              c->rank, p);
    peer->ctrl = ctrl;
    peer->ctrl_epoch = b->ctrl_epoch;
    CHECK_ARG(rt_ctrl_peer_live(c, p), HCCL_E_INTERNAL, "comm",
              "rank %u: peer %u left the communicator during init (its init failed)", c->rank, p);
    /* Chunks and the OUT half of a peer's staging are sized from HCCL_BUFFSIZE: it must agree. */
    CHECK_ARG(!c->staging || b->scratch_bytes == c->scratch_bytes, HCCL_E_PARA, "comm",
              "rank %u: peer %u has HCCL_BUFFSIZE %llu MB and this rank %u MB: with staging buffers "
              "(HCCL_ASCEND_STAGING) every rank must use the same", c->rank, p,
              (unsigned long long)(b->scratch_bytes >> 19), c->buffsize_mb);
    return c->staging ? rt_staging_connect(c, p, b->ipc_key) : HCCL_SUCCESS;
}

/* The notify tables were read from peers' blocks: valid only if no peer has left since. */
static HcclResult check_peers_live(rt_comm *c)
{
    for (uint32_t p = 0; p < c->nranks; p++)
        CHECK_ARG(rt_ctrl_peer_live(c, p), HCCL_E_INTERNAL, "comm",
                  "rank %u: peer %u left the communicator during init (its init failed)", c->rank, p);
    return HCCL_SUCCESS;
}

static HcclResult exchange_and_connect(rt_comm *c, const HcclRootInfo *root)
{
    hal_device_info info;
    CHECK_MAP(c->hal->device_info(c->dev, &info), rt_from_hal);
    rt_rank_blob mine = {info.handle, (uint64_t)(uintptr_t)c->ctrl, c->ctrl_epoch, c->ctrl_shm, (uint64_t)(uintptr_t)c->scratch,
                         c->scratch_bytes, (uint64_t)(uintptr_t)c->inbox, {{0}, 0, 0, 0, 0, 0}, {{0}},
                         (uint64_t)(uintptr_t)c->stage, c->ow_slots};
    memcpy(mine.ipc_key, c->ipc_key, sizeof mine.ipc_key);
    CHECK(rt_net_prepare(c, &mine.net));
    rt_rank_blob *all = calloc(c->nranks, sizeof *all);
    const rt_net_blob **nets = calloc(c->nranks, sizeof *nets);
    HcclResult rc = all && nets ? HCCL_SUCCESS : HCCL_E_MEMORY;
    if (rc == HCCL_SUCCESS)
        rc = rt_bootstrap_allgather(root, c->nranks, c->rank, &mine, sizeof mine, all);
    c->scratch_budget = c->scratch_bytes;
    for (uint32_t p = 0; rc == HCCL_SUCCESS && p < c->nranks; p++) {
        nets[p] = &all[p].net;
        if (all[p].scratch_bytes < c->scratch_budget)
            c->scratch_budget = all[p].scratch_bytes;
        rc = connect_peer(c, p, &all[p]);
    }
    if (rc == HCCL_SUCCESS)
        rc = rt_net_connect(c, nets);
    free(all);
    free(nets);
    CHECK(rc);
    CHECK(rt_notify_connect_peers(c));
    CHECK(check_peers_live(c));
    return rt_ctrl_join(c);
}

static void default_name(rt_comm *c, const HcclRootInfo *root, const char *given)
{
    if (c->name[0])
        return;
    if (given) {
        snprintf(c->name, sizeof c->name, "%s", given);
        return;
    }
    /* FNV-1a over the root info: equal on every rank of one communicator. */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof root->internal; i++)
        h = (h ^ (uint8_t)root->internal[i]) * 1099511628211ull;
    snprintf(c->name, sizeof c->name, "hccl_comm_%016llx", (unsigned long long)h);
}

static HcclResult comm_open_device(rt_comm *c)
{
    hal_device *cur = NULL;
    if (c->hal->current_device(&cur) != HAL_OK || !cur) {
        OH_ERR("comm", "no device is set on this thread: call aclrtSetDevice() before initialising a communicator");
        return HCCL_E_PARA;
    }
    hal_device_info info;
    CHECK_MAP(c->hal->device_info(cur, &info), rt_from_hal);
    /* Hold our own reference so the device outlives the communicator's users. */
    CHECK_MAP(c->hal->device_open((int32_t)info.handle.device_id, &c->dev), rt_from_hal);
    c->dma_engines = info.dma_engines ? info.dma_engines : 1;
    c->dev_handle = info.handle;
    return HCCL_SUCCESS;
}

HcclResult rt_comm_create(uint32_t nranks, uint32_t rank, const HcclCommConfig *config, const char *name,
                          const HcclRootInfo *root, rt_comm **out)
{
    CHECK_ARG(nranks >= 1, HCCL_E_PARA, "comm", "nRanks=%u is invalid (>= 1)", nranks);
    CHECK_ARG(rank < nranks, HCCL_E_PARA, "comm", "rank=%u is out of range for nRanks=%u", rank, nranks);
    const hal_ops *hal = hal_get();
    CHECK_ARG(hal, HCCL_E_NOT_SUPPORT, "comm", "no device backend is available (HCCL_HAL)");
    rt_comm *c = calloc(1, sizeof *c);
    if (!c)
        return HCCL_E_MEMORY;
    c->hal = hal;
    c->rank = rank;
    c->nranks = nranks;
    pthread_mutex_init(&c->lock, NULL);
    c->peers = calloc(nranks, sizeof *c->peers);
    c->server_of = calloc(nranks, sizeof *c->server_of);
    c->cache = rt_plan_cache_new();
    HcclResult rc = (c->peers && c->server_of && c->cache) ? HCCL_SUCCESS : HCCL_E_MEMORY;
    if (rc == HCCL_SUCCESS)
        rc = rt_config_apply(c, config);
    c->symwin_max_bytes = rt_symwin_limit(config);
    if (rc == HCCL_SUCCESS)
        rc = comm_open_device(c);
    if (rc == HCCL_SUCCESS)
        rc = alloc_device_state(c);
    if (rc == HCCL_SUCCESS)
        rc = rt_notify_setup_local(c);
    default_name(c, root, name); /* before the links: their log lines name the communicator */
    if (rc == HCCL_SUCCESS)
        rc = exchange_and_connect(c, root);
    if (rc == HCCL_SUCCESS) {
        rt_inbox_warm(c);
        rt_launch_help_setup(c);
    }
    if (rc == HCCL_SUCCESS)
        rc = rt_handle_new(c);
    if (rc != HCCL_SUCCESS) {
        char msg[RT_MSG_LEN];
        snprintf(msg, sizeof msg, "rank %u of %u: communicator init failed: %s", rank, nranks, HcclGetErrorString(rc));
        OH_ERR("comm", "%s", msg);
        /* Peers already connected to us (e.g. waiting in the join barrier) fail now, not after
         * HCCL_CONNECT_TIMEOUT. */
        rt_abort_all(c, rc, msg); /* the reason first: a peer reads it once it sees the mark */
        rt_ctrl_join_fail_all(c);
        rt_comm_destroy(c);
        return rc;
    }
    c->magic = RT_COMM_MAGIC;
    rt_registry_add(c);
    rt_mem_range_comm_created(c);
    rt_watchdog_start();
    OH_INFO("comm", "rank %u of %u: communicator %s ready", rank, nranks, c->name);
    *out = c;
    return HCCL_SUCCESS;
}

/* Order matters: the handle goes first (later calls are refused), then the watchdog's registry;
 * the control block goes back to the pool last, once nothing of ours can signal or read it. */
HcclResult rt_comm_destroy(rt_comm *c)
{
    rt_handle_retire(c);
    if (c->magic == RT_COMM_MAGIC) {
        rt_registry_remove(c);
        rt_mem_range_comm_destroyed(c);
    }
    if (c->handle) {
        rt_symwin_comm_destroyed(c->handle);
        rt_comm_register_destroyed(c->handle);
    }
    if (c->ctrl)
        atomic_store(&c->ctrl->destroyed, 1); /* peers' watchdogs: this rank left on purpose */
    c->magic = 0;
    /* Nothing the device still reads (plans, bindings, control blocks) may be freed under it. */
    rt_launch_reclaim(c, true);
    if (c->ctrl && c->oneway_run)
        rt_oneway_destroy_check(c); /* one-way calls this rank rooted, as its next call would drain them */
    if (c->ctrl && c->last_eager)
        rt_ctrl_wait_fetched(c); /* peers may still read the last eager call's record */
    rt_launch_pool_free(c);
    rt_pending_free(c);
    rt_streams_teardown(c);
    rt_net_teardown(c); /* links first: nothing lands in our memory or records our notifies after it */
    rt_notify_teardown(c);
    rt_staging_teardown(c); /* closes the exports before their memory goes */
    for (uint32_t p = 0; c->peers && p < c->nranks; p++) /* staging mode: peers' control blocks */
        if (c->peers[p].ctrl_map_bytes)
            rt_ctrl_shm_unmap(c->peers[p].ctrl, c->peers[p].ctrl_map_bytes);
    if (c->scratch)
        c->hal->mem_free(c->dev, c->scratch);
    rt_inbox_release(c);
    rt_ctrl_release(c);
    if (c->dev)
        c->hal->device_close(c->dev);
    rt_plan_cache_free(c->cache);
    free(c->peers);
    free(c->server_of);
    free(c->nic_backup);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return HCCL_SUCCESS;
}
