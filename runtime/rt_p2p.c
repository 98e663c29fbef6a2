/* Point-to-point: HcclSend, HcclRecv, HcclBatchSendRecv and HcclGroupStart/End batching.
 * A call (or a group's calls on one comm and stream) becomes one SENDRECV plan. Item buffers are
 * part of the plan: their offsets are absolute addresses on a null base, and the peer's receive
 * buffer is bound from its p2p publication record. Each pair keeps its own sequence, so two ranks
 * match their p2p calls to each other whatever else the other ranks do. */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"
#include "runtime/rt_launch.h"

#define RT_GROUP_MAX 4096

typedef struct rt_group_entry {
    rt_comm *comm;
    hal_stream *stream;
    HcclSendRecvItem item;
} rt_group_entry;

static _Thread_local int g_depth;
static _Thread_local rt_group_entry *g_items;
static _Thread_local uint32_t g_nitems;

static HcclResult check_item(rt_comm *c, const HcclSendRecvItem *it, const char *api)
{
    CHECK_ARG(it->sendRecvType == HCCL_SEND || it->sendRecvType == HCCL_RECV, HCCL_E_PARA, "p2p",
              "%s: rank %u: sendRecvType=%d is invalid", api, c->rank, (int)it->sendRecvType);
    CHECK_ARG(it->remoteRank < c->nranks, HCCL_E_PARA, "p2p", "%s: rank %u: remote rank %u is out of range (size %u)",
              api, c->rank, it->remoteRank, c->nranks);
    size_t es = hal_dtype_size((hal_dtype)it->dataType);
    CHECK_ARG(es && (uint32_t)it->dataType != 13, HCCL_E_PARA, "p2p", "%s: rank %u: dataType=%d is invalid", api,
              c->rank, (int)it->dataType);
    CHECK_ARG(it->count <= (UINT64_C(1) << 62) / es, HCCL_E_PARA, "p2p", "%s: rank %u: count=%llu overflows", api,
              c->rank, (unsigned long long)it->count);
    return rt_check_buffer(c, api, it->sendRecvType == HCCL_SEND ? "sendBuf" : "recvBuf", it->buf, it->count * es);
}

/* The op's items: buffers become absolute offsets on a null base (rt_dma_bind). algo_compile
 * rejects two items of one direction for one peer. */
static HcclResult to_algo_items(rt_comm *c, const HcclSendRecvItem *items, uint32_t n, algo_p2p_item *out)
{
    for (uint32_t i = 0; i < n; i++) {
        const HcclSendRecvItem *it = &items[i];
        CHECK_ARG(it->dataType == items[0].dataType, HCCL_E_PARA, "p2p",
                  "rank %u: items of one call must share a data type (%d vs %d)", c->rank, (int)it->dataType,
                  (int)items[0].dataType);
        out[i] = (algo_p2p_item){it->sendRecvType == HCCL_SEND, it->remoteRank, it->count,
                                 (uint64_t)(uintptr_t)it->buf};
    }
    return HCCL_SUCCESS;
}

/* What this call publishes per peer: directions, counts and the receive buffer. */
static void bind_items(rt_launch_ctx *ctx, const HcclSendRecvItem *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const HcclSendRecvItem *it = &items[i];
        uint32_t p = it->remoteRank;
        if (it->sendRecvType == HCCL_SEND) {
            ctx->p2p_dir[p] |= 1;
            ctx->p2p_send[p] = it->count;
        } else {
            ctx->p2p_dir[p] |= 2;
            ctx->p2p_recv[p] = it->count;
            ctx->p2p_recv_addr[p] = (uint64_t)(uintptr_t)it->buf;
        }
    }
}

static void assign_pair_seqs(rt_comm *c, rt_launch_ctx *ctx)
{
    for (uint32_t p = 0; p < c->nranks; p++)
        if (ctx->p2p_dir[p] && p != c->rank)
            ctx->p2p_seq[p] = ++c->peers[p].p2p_seq;
}

static HcclResult compile_and_launch(rt_comm *c, const HcclSendRecvItem *items, uint32_t n, hal_stream *s)
{
    algo_p2p_item *pi = calloc(n ? n : 1, sizeof *pi);
    if (!pi)
        return HCCL_E_MEMORY;
    algo_op op = {.coll = ALGO_COLL_SENDRECV, .nranks = c->nranks, .rank = c->rank,
                  .dtype = n ? (hal_dtype)items[0].dataType : HAL_DT_INT8, .items = pi, .nitems = n};
    algo_topo topo = {c->nranks, c->server_of};
    algo_plan *plan = NULL;
    HcclResult rc = to_algo_items(c, items, n, pi);
    if (rc == HCCL_SUCCESS)
        rc = rt_from_hal(algo_compile(&op, &topo, ALGO_P2P, &plan));
    free(pi);
    CHECK(rc);
    rt_launch_ctx *ctx = rt_launch_ctx_new(c, plan);
    if (!ctx) {
        algo_plan_free(plan);
        return HCCL_E_MEMORY;
    }
    ctx->owned_plan = plan;
    ctx->p2p = true;
    ctx->sig.cmd = HCCL_CMD_BATCH_SEND_RECV;
    ctx->sig.dtype = op.dtype;
    ctx->sig.nranks = c->nranks;
    bind_items(ctx, items, n);
    pthread_mutex_lock(&c->lock);
    rt_launch_reclaim(c, false);
    rc = rt_launch_prepare(c, ctx);
    if (rc != HCCL_SUCCESS) {
        rt_launch_ctx_free(ctx);
    } else {
        assign_pair_seqs(c, ctx);
        rc = rt_launch_ctx_enqueue(c, ctx, s);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static HcclResult submit(HcclComm comm, const HcclSendRecvItem *items, uint32_t n, aclrtStream stream,
                         const char *api)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, api, &c));
    CHECK_ARG(items || n == 0, HCCL_E_PTR, "p2p", "%s: sendRecvInfo is NULL", api);
    CHECK(rt_comm_failed(c, api));
    for (uint32_t i = 0; i < n; i++)
        CHECK(check_item(c, &items[i], api));
    hal_stream *s = NULL;
    CHECK_ARG(c->hal->stream_from_native(stream, &s) == HAL_OK, HCCL_E_PARA, "p2p",
              "%s: rank %u: stream %p is not a live stream of this process", api, c->rank, stream);
    if (g_depth > 0) {
        CHECK_ARG(g_nitems + n <= RT_GROUP_MAX, HCCL_E_PARA, "p2p", "%s: more than %d calls in one group", api,
                  RT_GROUP_MAX);
        if (!g_items && !(g_items = calloc(RT_GROUP_MAX, sizeof *g_items)))
            return HCCL_E_MEMORY;
        for (uint32_t i = 0; i < n; i++)
            g_items[g_nitems++] = (rt_group_entry){c, s, items[i]};
        return HCCL_SUCCESS;
    }
    return compile_and_launch(c, items, n, s);
}

HcclResult HcclBatchSendRecv(HcclSendRecvItem *sendRecvInfo, uint32_t itemNum, HcclComm comm, aclrtStream stream)
{
    return submit(comm, sendRecvInfo, itemNum, stream, "HcclBatchSendRecv");
}

HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream)
{
    HcclSendRecvItem it = {HCCL_SEND, sendBuf, count, dataType, destRank};
    return submit(comm, &it, 1, stream, "HcclSend");
}

HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream)
{
    HcclSendRecvItem it = {HCCL_RECV, recvBuf, count, dataType, srcRank};
    return submit(comm, &it, 1, stream, "HcclRecv");
}

HcclResult HcclGroupStart(void)
{
    g_depth++;
    return HCCL_SUCCESS;
}

/* Launches the group's items: one batch per (communicator, stream), in first-use order. */
static HcclResult flush_group(void)
{
    HcclResult rc = HCCL_SUCCESS;
    HcclSendRecvItem *batch = calloc(g_nitems ? g_nitems : 1, sizeof *batch);
    if (!batch)
        return HCCL_E_MEMORY;
    for (uint32_t i = 0; i < g_nitems; i++) {
        if (!g_items[i].comm)
            continue;
        rt_comm *c = g_items[i].comm;
        hal_stream *s = g_items[i].stream;
        uint32_t n = 0;
        for (uint32_t j = i; j < g_nitems; j++) {
            if (g_items[j].comm == c && g_items[j].stream == s) {
                batch[n++] = g_items[j].item;
                g_items[j].comm = NULL;
            }
        }
        HcclResult r = compile_and_launch(c, batch, n, s);
        if (r != HCCL_SUCCESS && rc == HCCL_SUCCESS)
            rc = r;
    }
    free(batch);
    g_nitems = 0;
    return rc;
}

HcclResult HcclGroupEnd(void)
{
    CHECK_ARG(g_depth > 0, HCCL_E_PARA, "p2p", "HcclGroupEnd without HcclGroupStart");
    if (--g_depth > 0)
        return HCCL_SUCCESS;
    HcclResult rc = flush_group();
    free(g_items);
    g_items = NULL;
    return rc;
}

HcclResult HcclGroupStatusGet(bool *isGroupEnabled)
{
    CHECK_ARG(isGroupEnabled, HCCL_E_PTR, "p2p", "HcclGroupStatusGet: isGroupEnabled is NULL");
    *isGroupEnabled = g_depth > 0;
    return HCCL_SUCCESS;
}
