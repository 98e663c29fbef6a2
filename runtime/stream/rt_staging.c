/* Staging mode, the buffers: HCCL's CCL_IN/CCL_OUT. On CANN, aclrtIpcMemImportByKey maps the one
 * allocation a peer exported, not its whole device, so a peer can reach only what was exported at
 * init: the plans' scratch, the eager inbox and these staging buffers. In this mode every call
 * goes through them (rt_staging_launch.c) and peers never address a user buffer.
 *
 * Layout: HCCL_BUFFSIZE is split in two, half the plans' scratch and half one staging allocation
 * of staging IN then staging OUT (a quarter each). Each rank exports scratch, inbox and staging by
 * key (HAL ipc_mem_export, anyone of the server may import) and sends the keys with its init blob;
 * peers on its server import them and use the pointers their import returned. */
#include <stdlib.h>
#include <string.h>

#include "runtime/stream/rt_launch.h"
#include "runtime/stream/rt_staging.h"

static const char *const g_key_what[RT_STAGE_KEYS] = {"scratch", "inbox", "staging buffers"};

static pthread_once_t g_mode_once = PTHREAD_ONCE_INIT;
static int g_mode; /* -1 off, 0 auto, 1 on */

static void mode_read(void)
{
    const char *env = getenv("HCCL_ASCEND_STAGING");
    if (!env || !*env || !strcmp(env, "auto"))
        g_mode = 0;
    else if (!strcmp(env, "on") || !strcmp(env, "1"))
        g_mode = 1;
    else if (!strcmp(env, "off") || !strcmp(env, "0"))
        g_mode = -1;
    else {
        OH_WARN("staging", "HCCL_ASCEND_STAGING=%s is not auto, on or off: auto", env);
        g_mode = 0;
    }
}

bool rt_staging_wanted(const hal_ops *hal)
{
    pthread_once(&g_mode_once, mode_read);
    /* auto: on where peers cannot address user buffers, i.e. hal/ascend over CANN's library. */
    bool on = g_mode > 0 || (g_mode == 0 && !strcmp(hal->name, "ascend") && !hal_acl_is_emulator());
    static atomic_bool logged;
    if (!atomic_exchange(&logged, true))
        OH_INFO("staging", "calls %s staging buffers%s (HCCL_ASCEND_STAGING=%s, backend %s)",
                on ? "go through" : "do not go through", on ? ", control blocks in host shared memory" : "",
                g_mode > 0 ? "on" : g_mode < 0 ? "off" : "auto", hal->name);
    return on;
}

static HcclResult export_one(rt_comm *c, uint32_t k, void *ptr, uint64_t bytes)
{
    hal_result rc = c->hal->ipc_mem_export(c->dev, ptr, bytes, HAL_IPC_NO_PID_CHECK, c->ipc_key[k]);
    if (rc != HAL_OK) {
        c->ipc_key[k][0] = '\0';
        OH_ERR("staging", "rank %u: exporting its %s (%p, %llu bytes) for its peers failed: %s", c->rank,
               g_key_what[k], ptr, (unsigned long long)bytes, hal_result_name(rc));
        return rt_from_hal(rc);
    }
    return HCCL_SUCCESS;
}

HcclResult rt_staging_alloc(rt_comm *c)
{
    /* alloc_device_state gave scratch half of HCCL_BUFFSIZE; staging IN and OUT share the rest. */
    /* The control path is host code: its block must be host memory here (rt_ctrl_shm.c). */
    hal_device_handle owner;
    uint64_t after;
    CHECK_ARG(c->ctrl_shm && c->hal->mem_lookup(c->ctrl, &owner, &after) != HAL_OK, HCCL_E_INTERNAL, "staging",
              "rank %u: the control block %p is not in host shared memory", c->rank, (void *)c->ctrl);
    c->stage_half = c->scratch_bytes / 2;
    CHECK_MAP(c->hal->mem_alloc(c->dev, 2 * c->stage_half, &c->stage), rt_from_hal);
    CHECK(export_one(c, RT_KEY_SCRATCH, c->scratch, c->scratch_bytes));
    CHECK(export_one(c, RT_KEY_INBOX, c->inbox, rt_inbox_bytes(c)));
    return export_one(c, RT_KEY_STAGE, c->stage, 2 * c->stage_half);
}

static HcclResult import_one(rt_comm *c, uint32_t p, uint32_t k, const char *key, void **ptr)
{
    rt_peer *peer = &c->peers[p];
    CHECK_ARG(key[0] && strnlen(key, HAL_IPC_KEY_LEN) < HAL_IPC_KEY_LEN, HCCL_E_PARA, "staging",
              "rank %u: peer %u exported no %s: it runs without staging buffers (HCCL_ASCEND_STAGING); set it alike "
              "on every rank", c->rank, p, g_key_what[k]);
    hal_result rc = c->hal->ipc_mem_import(c->dev, key, ptr);
    if (rc != HAL_OK) {
        OH_ERR("staging", "rank %u: importing the %s of peer %u (key %s) failed: %s", c->rank, g_key_what[k], p, key,
               hal_result_name(rc));
        return rt_from_hal(rc);
    }
    memcpy(peer->ipc_key[k], key, HAL_IPC_KEY_LEN);
    return HCCL_SUCCESS;
}

HcclResult rt_staging_connect(rt_comm *c, uint32_t p, const char keys[RT_STAGE_KEYS][HAL_IPC_KEY_LEN])
{
    rt_peer *peer = &c->peers[p];
    /* The blob's addresses are the peer's view; these are this process's mappings. */
    CHECK(import_one(c, p, RT_KEY_SCRATCH, keys[RT_KEY_SCRATCH], &peer->scratch));
    CHECK(import_one(c, p, RT_KEY_INBOX, keys[RT_KEY_INBOX], &peer->inbox));
    return import_one(c, p, RT_KEY_STAGE, keys[RT_KEY_STAGE], &peer->stage);
}

static void close_key(rt_comm *c, char *key, const char *whose)
{
    if (!key[0])
        return;
    hal_result rc = c->hal->ipc_close(key);
    if (rc != HAL_OK) /* an importer whose exporter closed first: nothing left to release */
        OH_DBG("staging", "rank %u: closing %s key %s: %s", c->rank, whose, key, hal_result_name(rc));
    key[0] = '\0';
}

void rt_staging_teardown(rt_comm *c)
{
    for (uint32_t p = 0; c->peers && p < c->nranks; p++)
        for (uint32_t k = 0; k < RT_STAGE_KEYS; k++)
            close_key(c, c->peers[p].ipc_key[k], "an imported");
    for (uint32_t k = 0; k < RT_STAGE_KEYS; k++)
        close_key(c, c->ipc_key[k], "its exported");
    if (c->stage)
        c->hal->mem_free(c->dev, c->stage);
    c->stage = NULL;
}

/* Broadcast has one buffer: staging IN is both its IN and its OUT (rt_staging_launch.c). */
void *rt_staging_peer_buf(const rt_comm *c, uint32_t p, algo_coll coll, uint32_t buf)
{
    char *base = c->peers[p].stage;
    return buf == 0 || coll == ALGO_COLL_BROADCAST ? base : base + c->stage_half;
}

/* Point to point: a receive from a peer of this server lands in this rank's staging OUT (the
 * receives of one call packed, 64-byte aligned) and is copied to the user's buffer after the plan;
 * the sender copies from its own buffer (local) into the imported staging. Fits or fails: a call
 * receiving more than a staging buffer is refused with the sizes named (its senders then wait
 * until HCCL_EXEC_TIMEOUT; docs/ascend.md). */
HcclResult rt_staging_p2p(rt_comm *c, rt_p2p_item *items, uint32_t n, hal_dma_desc *post, uint32_t *npost)
{
    uint64_t off = 0;
    char *sout = (char *)c->stage + c->stage_half;
    *npost = 0;
    for (uint32_t i = 0; i < n; i++) {
        rt_p2p_item *it = &items[i];
        if (it->is_send || it->peer == c->rank || c->peers[it->peer].remote)
            continue;
        uint64_t bytes = rt_p2p_item_bytes(it);
        CHECK_ARG(bytes <= c->stage_half - off, HCCL_E_MEMORY, "staging",
                  "rank %u: the receives of this call need %llu bytes of staging (receive #%u of %llu bytes from rank "
                  "%u included) but a staging buffer holds %llu (a quarter of HCCL_BUFFSIZE): point to point is not "
                  "cut into chunks; raise HCCL_BUFFSIZE or split the call", c->rank,
                  (unsigned long long)(off + bytes), i, (unsigned long long)bytes, it->peer,
                  (unsigned long long)c->stage_half);
        rt_stage_copy(post, npost, it->buf, sout + off, bytes);
        it->buf = sout + off;
        off += (bytes + 63) & ~(uint64_t)63;
    }
    return HCCL_SUCCESS;
}

void *rt_staging_p2p_peer(const rt_comm *c, uint32_t p, uint64_t addr, uint64_t bytes)
{
    const rt_peer *peer = &c->peers[p];
    uint64_t size = 2 * c->stage_half;
    if (addr < peer->stage_va || addr - peer->stage_va > size || bytes > size - (addr - peer->stage_va))
        return NULL;
    return (char *)peer->stage + (addr - peer->stage_va);
}
