/* Point-to-point: HcclSend, HcclRecv, HcclBatchSendRecv and HcclGroupStart/End batching.
 * A call (or a group's calls on one comm and stream) becomes one SENDRECV launch whose items are
 * matched one by one: the k-th send from A to B meets the k-th receive at B from A, whatever
 * either side grouped (runtime/rt_p2p_pub.c checks and binds each pair). The plan depends on the
 * items' directions, peers and sizes only; their buffers are bound at launch, so it is cached. */
#include <stdlib.h>
#include <string.h>

#include "common/oh_tls.h"
#include "runtime/rt_internal.h"
#include "runtime/stream/rt_launch.h"

/* One requested item and the API it came from (named in errors). */
typedef struct rt_p2p_req {
    HcclSendRecvItem item;
    uint32_t cmd;
} rt_p2p_req;

typedef struct rt_group_entry {
    HcclComm comm;             /* checked again at HcclGroupEnd: it may have been destroyed since */
    hal_stream *stream;
    rt_p2p_req req;
} rt_group_entry;

/* The open group of this thread: grown on demand, freed when the outermost group ends. */
static _Thread_local int g_depth;
static _Thread_local rt_group_entry *g_items;
static _Thread_local uint32_t g_nitems, g_cap;

static HcclResult check_item(rt_comm *c, const HcclSendRecvItem *it, const char *api)
{
    CHECK_ARG(it->sendRecvType == HCCL_SEND || it->sendRecvType == HCCL_RECV, HCCL_E_PARA, "p2p",
              "%s: rank %u: sendRecvType=%d is invalid", api, c->rank, (int)it->sendRecvType);
    CHECK_ARG(it->remoteRank < c->nranks, HCCL_E_PARA, "p2p", "%s: rank %u: remote rank %u is out of range (size %u)",
              api, c->rank, it->remoteRank, c->nranks);
    size_t es = hal_dtype_size((hal_dtype)it->dataType);
    CHECK_ARG(es && (uint32_t)it->dataType != 13, HCCL_E_PARA, "p2p", "%s: rank %u: dataType=%d is invalid", api,
              c->rank, (int)it->dataType);
    uint64_t bytes = 0; /* multiplied, not count <= 2^62 / es: a 64-bit division per item showed */
    CHECK_ARG(!__builtin_mul_overflow(it->count, (uint64_t)es, &bytes) && bytes <= UINT64_C(1) << 62, HCCL_E_PARA,
              "p2p", "%s: rank %u: count=%llu overflows", api, c->rank, (unsigned long long)it->count);
    return rt_check_buffer(c, api, it->sendRecvType == HCCL_SEND ? "sendBuf" : "recvBuf", it->buf, it->count * es);
}

/* The last p2p call of up to RT_P2P_CHECKED_ITEMS items this thread found good (the collectives'
 * repeated-call check, rt_check.c, for Send, Recv and BatchSendRecv): a loop that repeats a call
 * skips its items' checks, whose buffer lookups were about 5% of an 8 B Send/Recv's host work. The
 * epoch moves at every free of device memory; memory in HcclCommSetMemoryRange ranges is checked
 * every call. Initial-exec (oh_tls.h): 88 bytes. */
#define RT_P2P_CHECKED_ITEMS 2u

typedef struct checked_p2p {
    HcclComm comm;
    uint64_t epoch; /* rt_repeat_epoch before the checks; 0: nothing remembered */
    uint32_t n;
    HcclSendRecvItem items[RT_P2P_CHECKED_ITEMS];
} checked_p2p;

static _Thread_local OH_TLS_HOT checked_p2p t_p2p_checked;

static bool same_item(const HcclSendRecvItem *a, const HcclSendRecvItem *b)
{
    return a->sendRecvType == b->sendRecvType && a->buf == b->buf && a->count == b->count &&
           a->dataType == b->dataType && a->remoteRank == b->remoteRank;
}

static bool checked_before(HcclComm comm, const rt_p2p_req *reqs, uint32_t n, uint64_t epoch)
{
    const checked_p2p *k = &t_p2p_checked;
    if (!epoch || k->epoch != epoch || k->comm != comm || k->n != n)
        return false;
    for (uint32_t i = 0; i < n; i++)
        if (!same_item(&k->items[i], &reqs[i].item))
            return false;
    return true;
}

/* Every item checked, or none where this thread's last good call had the same ones. */
static HcclResult check_items(rt_comm *c, HcclComm comm, const rt_p2p_req *reqs, uint32_t n, const char *api)
{
    uint64_t epoch = n <= RT_P2P_CHECKED_ITEMS ? rt_repeat_epoch(c) : 0;
    if (checked_before(comm, reqs, n, epoch))
        return HCCL_SUCCESS;
    for (uint32_t i = 0; i < n; i++)
        CHECK(check_item(c, &reqs[i].item, api));
    if (epoch) {
        t_p2p_checked.comm = comm;
        t_p2p_checked.epoch = epoch;
        t_p2p_checked.n = n;
        for (uint32_t i = 0; i < n; i++)
            t_p2p_checked.items[i] = reqs[i].item;
    }
    return HCCL_SUCCESS;
}

static uint64_t req_bytes(const rt_p2p_req *r)
{
    return r->item.count * hal_dtype_size((hal_dtype)r->item.dataType);
}

/* Items to itself pair within the call (k-th send to self with k-th receive from self): nothing
 * else could ever complete them. */
static HcclResult check_self_pairs(rt_comm *c, const rt_p2p_req *reqs, uint32_t n)
{
    uint32_t r = 0;
    for (uint32_t s = 0; s < n; s++) {
        const HcclSendRecvItem *si = &reqs[s].item;
        if (si->sendRecvType != HCCL_SEND || si->remoteRank != c->rank)
            continue;
        while (r < n && (reqs[r].item.sendRecvType != HCCL_RECV || reqs[r].item.remoteRank != c->rank))
            r++;
        CHECK_ARG(r < n, HCCL_E_PARA, "p2p", "rank %u: a send to itself needs a receive from itself in the same "
                  "call or group", c->rank);
        const HcclSendRecvItem *ri = &reqs[r++].item;
        CHECK_ARG(si->count == ri->count && si->dataType == ri->dataType, HCCL_E_PARA, "p2p",
                  "rank %u: send to itself of %llu x %s but receive from itself of %llu x %s", c->rank,
                  (unsigned long long)si->count, hal_dtype_name((hal_dtype)si->dataType),
                  (unsigned long long)ri->count, hal_dtype_name((hal_dtype)ri->dataType));
    }
    for (; r < n; r++)
        CHECK_ARG(reqs[r].item.sendRecvType != HCCL_RECV || reqs[r].item.remoteRank != c->rank, HCCL_E_PARA, "p2p",
                  "rank %u: a receive from itself needs a send to itself in the same call or group", c->rank);
    return HCCL_SUCCESS;
}

/* Items of a call this small are described on the stack: a Send or Recv allocates nothing. */
#define RT_P2P_STACK_ITEMS 16

/* The plan's shape: directions, peers and sizes in bytes (so mixed dtypes share one plan), in
 * `stack` when it fits. */
static algo_p2p_item *to_algo_items(const rt_p2p_req *reqs, uint32_t n, algo_p2p_item *stack)
{
    algo_p2p_item *pi = n <= RT_P2P_STACK_ITEMS ? stack : calloc(n, sizeof *pi);
    for (uint32_t i = 0; pi && i < n; i++)
        pi[i] = (algo_p2p_item){reqs[i].item.sendRecvType == HCCL_SEND, reqs[i].item.remoteRank, req_bytes(&reqs[i]),
                                0};
    return pi;
}

/* A send goes eager when it is small and its receiver on this server has boxes for it (the
 * sender's choice alone: the receiver finds out which way it came, rt_p2p_recv_task). */
static bool goes_eager(const rt_comm *c, const rt_p2p_req *r)
{
    uint32_t p = r->item.remoteRank;
    return r->item.sendRecvType == HCCL_SEND && p != c->rank && c->p2p_eager && rt_p2p_on_flags(c, p) &&
           req_bytes(r) <= c->p2p_box_bytes;
}

static rt_p2p_item *to_launch_items(rt_launch_ctx *ctx, const rt_p2p_req *reqs, uint32_t n)
{
    rt_p2p_item *it = rt_launch_ctx_items(ctx, n); /* the pooled context's memory, zeroed */
    for (uint32_t i = 0; it && i < n; i++) { /* field by field: a compound literal zeroed it again */
        const HcclSendRecvItem *r = &reqs[i].item;
        it[i].ctx = ctx;
        it[i].peer = r->remoteRank;
        it[i].is_send = r->sendRecvType == HCCL_SEND;
        it[i].cmd = reqs[i].cmd;
        it[i].dtype = (uint32_t)r->dataType;
        it[i].count = r->count;
        it[i].buf = r->buf;
        it[i].eager = goes_eager(ctx->c, &reqs[i]);
    }
    return it;
}

static uint64_t *p2p_counter(rt_comm *c, const rt_p2p_item *it)
{
    return it->is_send ? &c->peers[it->peer].p2p_sent : &c->peers[it->peer].p2p_recvd;
}

/* Numbers the items per (peer, direction) (caller holds c->lock). A launch may hold at most
 * RT_P2P_RING items per peer and direction: a launch's receive records share the ring the peer reads
 * them from (sends are held to the same limit, so both sides of a pair accept the same calls). */
static HcclResult assign_ordinals(rt_comm *c, rt_p2p_item *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (items[i].peer != c->rank)
            items[i].ordinal = ++*p2p_counter(c, &items[i]);
    for (uint32_t i = 0; i < n; i++) {
        const rt_p2p_item *it = &items[i];
        if (it->peer == c->rank || *p2p_counter(c, it) - it->ordinal < RT_P2P_RING)
            continue;
        for (uint32_t j = 0; j < n; j++) /* undo: this call is refused as a whole */
            if (items[j].peer != c->rank)
                --*p2p_counter(c, &items[j]);
        OH_ERR("p2p", "rank %u: more than %d %s rank %u in one call or group", c->rank, RT_P2P_RING,
               it->is_send ? "sends to" : "receives from", it->peer);
        return HCCL_E_PARA;
    }
    rt_p2p_bind_waits(c, items, n);
    return HCCL_SUCCESS;
}

static void fill_sig(rt_launch_ctx *ctx, const rt_p2p_req *reqs, uint32_t n)
{
    ctx->p2p = true;
    ctx->sig.cmd = n == 1 ? reqs[0].cmd : HCCL_CMD_BATCH_SEND_RECV;
    ctx->sig.count = n ? reqs[0].item.count : 0;
    ctx->sig.dtype = n ? (uint32_t)reqs[0].item.dataType : (uint32_t)HCCL_DATA_TYPE_INT8;
    ctx->sig.nranks = ctx->c->nranks;
}

static HcclResult launch_locked(rt_comm *c, const algo_op *op, const rt_p2p_req *reqs, uint32_t n, hal_stream *s)
{
    rt_launch_reclaim(c, false);
    rt_launch_help(c); /* without it a loop runs ahead of the worker and allocates a context per call */
    rt_p2p_warm(c);
    CHECK(rt_pending_reserve(c)); /* before the ordinals are taken: the push cannot fail */
    const algo_plan *plan = NULL;
    CHECK(rt_plan_get(c, op, &plan));
    rt_launch_ctx *ctx = rt_launch_ctx_get(c, plan);
    if (!ctx) {
        rt_plan_put(c, plan);
        return HCCL_E_MEMORY;
    }
    ctx->plan_held = true;
    if (!to_launch_items(ctx, reqs, n)) {
        rt_launch_ctx_put(ctx);
        return HCCL_E_MEMORY;
    }
    fill_sig(ctx, reqs, n);
    rt_prog_p2p_waits(ctx);
    hal_dma_desc *post = NULL; /* staging mode: staging OUT -> user buffers, read by the build */
    HcclResult rc = HCCL_SUCCESS;
    if (c->staging && !(post = calloc(n ? n : 1, sizeof *post)))
        rc = HCCL_E_MEMORY;
    if (rc == HCCL_SUCCESS && post) {
        rc = rt_staging_p2p(c, ctx->p2p_items, n, post, &ctx->npost);
        ctx->post = post;
    }
    if (rc == HCCL_SUCCESS)
        rc = rt_launch_prepare(c, ctx); /* before the ordinals: a failure takes none */
    ctx->post = NULL;
    ctx->npost = 0;
    free(post);
    if (rc == HCCL_SUCCESS)
        rc = assign_ordinals(c, ctx->p2p_items, n);
    if (rc != HCCL_SUCCESS) {
        rt_launch_ctx_put(ctx);
        return rc;
    }
    rt_prog_p2p_ahead(ctx, s);
    return rt_launch_ctx_enqueue(c, ctx, s);
}

static HcclResult launch(rt_comm *c, const rt_p2p_req *reqs, uint32_t n, hal_stream *s)
{
    CHECK(check_self_pairs(c, reqs, n));
    algo_p2p_item stack[RT_P2P_STACK_ITEMS];
    algo_p2p_item *pi = to_algo_items(reqs, n, stack);
    if (!pi)
        return HCCL_E_MEMORY;
    algo_op op = {.coll = ALGO_COLL_SENDRECV, .nranks = c->nranks, .rank = c->rank, .dtype = HAL_DT_INT8,
                  .items = pi, .nitems = n};
    pthread_mutex_lock(&c->lock);
    HcclResult rc = launch_locked(c, &op, reqs, n, s);
    pthread_mutex_unlock(&c->lock);
    if (pi != stack)
        free(pi);
    return rc;
}

static HcclResult group_append(HcclComm comm, hal_stream *s, const rt_p2p_req *reqs, uint32_t n)
{
    CHECK_ARG(n <= UINT32_MAX / 2 - g_nitems, HCCL_E_PARA, "p2p", "too many calls in one group");
    if (g_nitems + n > g_cap) {
        uint32_t cap = g_cap ? g_cap : 16;
        while (cap < g_nitems + n)
            cap *= 2;
        rt_group_entry *grown = realloc(g_items, (size_t)cap * sizeof *grown);
        if (!grown)
            return HCCL_E_MEMORY;
        g_items = grown;
        g_cap = cap;
    }
    for (uint32_t i = 0; i < n; i++)
        g_items[g_nitems++] = (rt_group_entry){comm, s, reqs[i]};
    return HCCL_SUCCESS;
}

static HcclResult submit(HcclComm comm, const rt_p2p_req *reqs, uint32_t n, aclrtStream stream, const char *api)
{
    rt_comm *c = NULL;
    CHECK(rt_comm_get(comm, api, &c));
    CHECK(rt_comm_failed(c, api));
    CHECK(check_items(c, comm, reqs, n, api));
    hal_stream *s = NULL;
    CHECK_ARG(c->hal->stream_from_native(stream, &s) == HAL_OK, HCCL_E_PARA, "p2p",
              "%s: rank %u: stream %p is not a live stream of this process", api, c->rank, stream);
    if (g_depth > 0)
        return group_append(comm, s, reqs, n);
    return launch(c, reqs, n, s);
}

HcclResult HcclBatchSendRecv(HcclSendRecvItem *sendRecvInfo, uint32_t itemNum, HcclComm comm, aclrtStream stream)
{
    CHECK_ARG(sendRecvInfo || itemNum == 0, HCCL_E_PTR, "p2p", "HcclBatchSendRecv: sendRecvInfo is NULL");
    rt_p2p_req stack[RT_P2P_STACK_ITEMS];
    rt_p2p_req *reqs = itemNum <= RT_P2P_STACK_ITEMS ? stack : calloc(itemNum, sizeof *reqs);
    if (!reqs)
        return HCCL_E_MEMORY;
    /* The loop writes every entry used; zeroing them first only tells -Wmaybe-uninitialized so
     * (GCC 12 warns without it). Not `stack = {0}`: that zeroed all 16 (640 bytes) every call. */
    if (reqs == stack)
        memset(stack, 0, itemNum * sizeof *stack);
    for (uint32_t i = 0; i < itemNum; i++)
        reqs[i] = (rt_p2p_req){sendRecvInfo[i], HCCL_CMD_BATCH_SEND_RECV};
    HcclResult rc = submit(comm, reqs, itemNum, stream, "HcclBatchSendRecv");
    if (reqs != stack)
        free(reqs);
    return rc;
}

HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream)
{
    rt_p2p_req r = {{HCCL_SEND, sendBuf, count, dataType, destRank}, HCCL_CMD_SEND};
    return submit(comm, &r, 1, stream, "HcclSend");
}

HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream)
{
    rt_p2p_req r = {{HCCL_RECV, recvBuf, count, dataType, srcRank}, HCCL_CMD_RECEIVE};
    return submit(comm, &r, 1, stream, "HcclRecv");
}

HcclResult HcclGroupStart(void)
{
    g_depth++;
    return HCCL_SUCCESS;
}

/* Moves every later entry with the key (comm, stream) of entry i right behind it, keeping issue
 * order; returns the end of that run. */
static uint32_t gather_run(uint32_t i)
{
    uint32_t end = i + 1;
    for (uint32_t j = i + 1; j < g_nitems; j++) {
        if (g_items[j].comm != g_items[i].comm || g_items[j].stream != g_items[i].stream)
            continue;
        rt_group_entry e = g_items[j];
        memmove(&g_items[end + 1], &g_items[end], (size_t)(j - end) * sizeof e);
        g_items[end++] = e;
    }
    return end;
}

/* Launches the group's items: one launch per (communicator, stream), in first-use order. */
static HcclResult flush_group(void)
{
    HcclResult rc = HCCL_SUCCESS;
    rt_p2p_req *reqs = calloc(g_nitems ? g_nitems : 1, sizeof *reqs);
    if (!reqs)
        return HCCL_E_MEMORY;
    for (uint32_t i = 0; i < g_nitems;) {
        uint32_t end = gather_run(i);
        for (uint32_t j = i; j < end; j++)
            reqs[j - i] = g_items[j].req;
        rt_comm *c = rt_comm_check(g_items[i].comm);
        HcclResult r = c ? launch(c, reqs, end - i, g_items[i].stream) : HCCL_E_PARA;
        if (!c)
            OH_ERR("p2p", "HcclGroupEnd: a communicator of the group was destroyed before the group ended");
        if (r != HCCL_SUCCESS && rc == HCCL_SUCCESS)
            rc = r;
        i = end;
    }
    free(reqs);
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
    g_nitems = g_cap = 0;
    return rc;
}

HcclResult HcclGroupStatusGet(bool *isGroupEnabled)
{
    CHECK_ARG(isGroupEnabled, HCCL_E_PTR, "p2p", "HcclGroupStatusGet: isGroupEnabled is NULL");
    *isGroupEnabled = g_depth > 0;
    return HCCL_SUCCESS;
}
