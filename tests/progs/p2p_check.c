/* p2p_check SCENARIO: point-to-point semantics, run by hcclrun on N ranks.
 *   match           ranks pair up (2k, 2k+1): several sends to one peer with mixed dtypes in a group
 *                   matched by separate HcclRecv calls (both ways); a grouped {send, recv} pair
 *                   against separate HcclSend/HcclRecv in both orders; HcclBatchSendRecv against
 *                   HcclSend/HcclRecv; a group with items to itself and an empty item
 *   batch           one HcclBatchSendRecv of many items (several per peer, mixed sizes and dtypes)
 *                   to every other rank, after one of 65 receives from one peer was refused
 *   crossdeps       rank 0 groups sends to ranks 1 and 2; rank 1 receives from 2 before it receives
 *                   from 0; rank 2 receives from 0 before it sends to 1: valid under NCCL semantics
 *                   only if rank 0's send to 2 does not wait for its send to 1
 *   planreuse       1,000 HcclSend/HcclRecv of one shape on alternating buffers compile no plan
 *                   after the first ones (HcclExtPlanCompileCount)
 *   eager           ranks pair up: 20 small sends complete before their receiver posts a receive
 *                   (both ranks meet in an HcclBarrier between: a send that waited for its
 *                   receive would never get there), then 150 sends of 0 B to 8 KiB back to back,
 *                   more than a receiver's 64 boxes, received only after all were issued; from 3
 *                   ranks a relay: each rank forwards what it received from the one before, from
 *                   the same buffer, 40 times without a synchronize
 *   mismatch-count  rank 0 sends 256 fp32 to rank 1, which receives 512 fp32: both fail (rank 0,
 *                   whose eager send is over once its bytes are in rank 1's box, at its next call,
 *                   an HcclBarrier)
 *   mismatch-dtype  rank 0 sends 256 fp32 to rank 1, which receives 256 int32: both fail (the same)
 *   mismatch-direct rank 0 sends 65536 fp32 to rank 1, which receives 131072 fp32: both fail at the call
 *   destroy-recv    rank 1 waits in HcclRecv from rank 0, which calls HcclCommDestroy
 *   destroy-send    rank 1 waits in HcclSend (64 KiB: it waits for the receive) to rank 0, which
 *                   calls HcclCommDestroy
 *   destroy-eager   rank 1 sends rank 0 65 messages of 1 KiB, one more than rank 0 has boxes for
 *                   it, and rank 0 calls HcclCommDestroy instead of receiving them
 * Every received byte is compared with what its sender wrote. Prints "p2p_check SCENARIO: PASS"
 * (or FAIL) per rank; failure scenarios print "rank R: DETECTED: <error message>". */
#include <string.h>
#include <unistd.h>

#include "prog_common.h"

static int g_bad;

#define FAILIF(cond, ...)                                                                   \
    do {                                                                                   \
        if (cond) {                                                                        \
            printf("FAIL: " __VA_ARGS__);                                                  \
            printf("\n");                                                                  \
            g_bad = 1;                                                                     \
        }                                                                                  \
    } while (0)

/* A message's bytes: a function of sender, receiver, a tag and the byte index. */
static uint8_t pattern(uint32_t from, uint32_t to, uint32_t tag, uint64_t i)
{
    return (uint8_t)(from * 31u + to * 17u + tag * 7u + (uint32_t)(i * 13u) + (uint32_t)(i >> 8));
}

typedef struct msg {
    void *dev;
    uint64_t count;
    HcclDataType dt;
    uint32_t from, to, tag;
} msg;

static uint64_t msg_bytes(const msg *m)
{
    return m->count * dt_size(m->dt);
}

/* A send buffer filled with the pattern, or a receive buffer filled with a sentinel. */
static msg msg_new(uint64_t count, HcclDataType dt, uint32_t from, uint32_t to, uint32_t tag, bool send)
{
    msg m = {NULL, count, dt, from, to, tag};
    uint64_t n = msg_bytes(&m);
    uint8_t *h = xmalloc(n);
    for (uint64_t i = 0; i < n; i++)
        h[i] = send ? pattern(from, to, tag, i) : 0xA5;
    m.dev = dev_alloc(n);
    to_dev(m.dev, h, n);
    free(h);
    return m;
}

static void msg_check(msg *m, const char *what)
{
    uint64_t n = msg_bytes(m);
    uint8_t *h = xmalloc(n);
    to_host(h, m->dev, n);
    for (uint64_t i = 0; i < n; i++)
        if (h[i] != pattern(m->from, m->to, m->tag, i)) {
            FAILIF(1, "%s: message %u from rank %u to rank %u byte %llu is 0x%02x, want 0x%02x", what, m->tag,
                   m->from, m->to, (unsigned long long)i, h[i], pattern(m->from, m->to, m->tag, i));
            break;
        }
    free(h);
}

static void msg_free(msg *m)
{
    dev_free(m->dev);
    m->dev = NULL;
}

static void sync_ok(prog_env *e, const char *what)
{
    aclError se = aclrtSynchronizeStream(e->stream);
    FAILIF(se != ACL_SUCCESS, "%s: synchronize returned %d", what, (int)se);
}

/* ---- match ------------------------------------------------------------------------------------ */

typedef struct spec {
    uint64_t count;
    HcclDataType dt;
} spec;

/* `src` groups sends of specs[] to `dst`, which receives each with its own HcclRecv. */
static void grouped_sends_vs_recvs(prog_env *e, uint32_t src, uint32_t dst, const spec *sp, int n, uint32_t tag0)
{
    msg m[8];
    bool sender = e->rank == src;
    for (int i = 0; i < n; i++)
        m[i] = msg_new(sp[i].count, sp[i].dt, src, dst, tag0 + (uint32_t)i, sender);
    if (sender) {
        HCCL_OK(HcclGroupStart());
        for (int i = 0; i < n; i++)
            HCCL_OK(HcclSend(m[i].dev, m[i].count, m[i].dt, dst, e->comm, e->stream));
        HCCL_OK(HcclGroupEnd());
    } else {
        for (int i = 0; i < n; i++)
            HCCL_OK(HcclRecv(m[i].dev, m[i].count, m[i].dt, src, e->comm, e->stream));
    }
    sync_ok(e, "grouped sends vs separate receives");
    for (int i = 0; !sender && i < n; i++)
        msg_check(&m[i], "grouped sends vs separate receives");
    for (int i = 0; i < n; i++)
        msg_free(&m[i]);
}

/* One side groups {send, recv} (or {recv, send}, or one HcclBatchSendRecv); the other calls
 * HcclSend and HcclRecv separately, send first or receive first. */
static void pair_vs_separate(prog_env *e, uint32_t a, uint32_t b, int grouping, bool b_sends_first, uint32_t tag)
{
    bool is_a = e->rank == a;
    uint32_t peer = is_a ? b : a;
    msg out = msg_new(1000 + tag, HCCL_DATA_TYPE_FP32, e->rank, peer, tag, true);
    msg in = msg_new(1000 + tag, HCCL_DATA_TYPE_FP32, peer, e->rank, tag, false);
    if (is_a && grouping == 2) {
        HcclSendRecvItem it[2] = {{HCCL_RECV, in.dev, in.count, in.dt, peer},
                                  {HCCL_SEND, out.dev, out.count, out.dt, peer}};
        HCCL_OK(HcclBatchSendRecv(it, 2, e->comm, e->stream));
    } else if (is_a) {
        HCCL_OK(HcclGroupStart());
        if (grouping == 0)
            HCCL_OK(HcclRecv(in.dev, in.count, in.dt, peer, e->comm, e->stream));
        HCCL_OK(HcclSend(out.dev, out.count, out.dt, peer, e->comm, e->stream));
        if (grouping == 1)
            HCCL_OK(HcclRecv(in.dev, in.count, in.dt, peer, e->comm, e->stream));
        HCCL_OK(HcclGroupEnd());
    } else if (b_sends_first) {
        HCCL_OK(HcclSend(out.dev, out.count, out.dt, peer, e->comm, e->stream));
        HCCL_OK(HcclRecv(in.dev, in.count, in.dt, peer, e->comm, e->stream));
    } else {
        HCCL_OK(HcclRecv(in.dev, in.count, in.dt, peer, e->comm, e->stream));
        HCCL_OK(HcclSend(out.dev, out.count, out.dt, peer, e->comm, e->stream));
    }
    sync_ok(e, "pair vs separate calls");
    msg_check(&in, "pair vs separate calls");
    msg_free(&out);
    msg_free(&in);
}

/* Items to itself pair inside one group; an empty message still matches. */
static void self_and_empty(prog_env *e, uint32_t peer)
{
    msg self_out = msg_new(77, HCCL_DATA_TYPE_INT16, e->rank, e->rank, 90, true);
    msg self_in = msg_new(77, HCCL_DATA_TYPE_INT16, e->rank, e->rank, 90, false);
    msg empty_out = msg_new(0, HCCL_DATA_TYPE_FP32, e->rank, peer, 91, true);
    msg empty_in = msg_new(0, HCCL_DATA_TYPE_FP32, peer, e->rank, 91, false);
    HCCL_OK(HcclGroupStart());
    HCCL_OK(HcclRecv(self_in.dev, 77, HCCL_DATA_TYPE_INT16, e->rank, e->comm, e->stream));
    HCCL_OK(HcclSend(empty_out.dev, 0, HCCL_DATA_TYPE_FP32, peer, e->comm, e->stream));
    HCCL_OK(HcclSend(self_out.dev, 77, HCCL_DATA_TYPE_INT16, e->rank, e->comm, e->stream));
    HCCL_OK(HcclRecv(empty_in.dev, 0, HCCL_DATA_TYPE_FP32, peer, e->comm, e->stream));
    HCCL_OK(HcclGroupEnd());
    sync_ok(e, "self and empty");
    msg_check(&self_in, "send to itself");
    msg_free(&self_out);
    msg_free(&self_in);
    msg_free(&empty_out);
    msg_free(&empty_in);
}

static void scen_match(prog_env *e)
{
    uint32_t a = e->rank & ~1u, b = a + 1;
    if (b >= e->n) {
        printf("rank %u: no partner (odd rank count), sits out\n", e->rank);
        return;
    }
    static const spec to_b[] = {{100, HCCL_DATA_TYPE_FP32}, {37, HCCL_DATA_TYPE_INT16}, {1000, HCCL_DATA_TYPE_INT8},
                                {3, HCCL_DATA_TYPE_FP64}, {65537, HCCL_DATA_TYPE_BFP16}};
    static const spec to_a[] = {{33, HCCL_DATA_TYPE_FP16}, {9, HCCL_DATA_TYPE_INT64}, {1, HCCL_DATA_TYPE_UINT8}};
    grouped_sends_vs_recvs(e, a, b, to_b, 5, 10);
    grouped_sends_vs_recvs(e, b, a, to_a, 3, 20);
    uint32_t tag = 30;
    for (int grouping = 0; grouping < 3; grouping++)
        for (int b_first = 0; b_first < 2; b_first++)
            pair_vs_separate(e, a, b, grouping, b_first, tag++);
    /* And with the roles swapped: b groups, a calls separately. */
    for (int grouping = 0; grouping < 3; grouping++)
        pair_vs_separate(e, b, a, grouping, grouping & 1, tag++);
    self_and_empty(e, e->rank == a ? b : a);
}

/* ---- crossdeps -------------------------------------------------------------------------------- */

static void scen_crossdeps(prog_env *e)
{
    if (e->rank > 2)
        return;
    msg m01 = msg_new(500, HCCL_DATA_TYPE_FP32, 0, 1, 1, e->rank == 0);
    msg m02 = msg_new(300, HCCL_DATA_TYPE_INT16, 0, 2, 2, e->rank == 0);
    msg m21 = msg_new(700, HCCL_DATA_TYPE_INT8, 2, 1, 3, e->rank == 2);
    if (e->rank == 0) {
        HCCL_OK(HcclGroupStart());
        HCCL_OK(HcclSend(m01.dev, m01.count, m01.dt, 1, e->comm, e->stream));
        HCCL_OK(HcclSend(m02.dev, m02.count, m02.dt, 2, e->comm, e->stream));
        HCCL_OK(HcclGroupEnd());
    } else if (e->rank == 1) {
        HCCL_OK(HcclRecv(m21.dev, m21.count, m21.dt, 2, e->comm, e->stream));
        HCCL_OK(HcclRecv(m01.dev, m01.count, m01.dt, 0, e->comm, e->stream));
    } else {
        HCCL_OK(HcclRecv(m02.dev, m02.count, m02.dt, 0, e->comm, e->stream));
        HCCL_OK(HcclSend(m21.dev, m21.count, m21.dt, 1, e->comm, e->stream));
    }
    sync_ok(e, "crossdeps");
    if (e->rank == 1) {
        msg_check(&m21, "crossdeps");
        msg_check(&m01, "crossdeps");
    } else if (e->rank == 2) {
        msg_check(&m02, "crossdeps");
    }
    msg_free(&m01);
    msg_free(&m02);
    msg_free(&m21);
}

/* ---- eager ------------------------------------------------------------------------------------ */

/* Sends that end before their receives are posted: only an eager send gets past its own. */
static void eager_before_recv(prog_env *e, uint32_t a, uint32_t b)
{
    enum { N = 20 };
    msg m[N];
    for (uint32_t i = 0; i < N; i++)
        m[i] = msg_new(1 + i * 13, HCCL_DATA_TYPE_INT8, a, b, 100 + i, e->rank == a);
    for (uint32_t i = 0; e->rank == a && i < N; i++)
        HCCL_OK(HcclSend(m[i].dev, m[i].count, m[i].dt, b, e->comm, e->stream));
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    for (uint32_t i = 0; e->rank == b && i < N; i++)
        HCCL_OK(HcclRecv(m[i].dev, m[i].count, m[i].dt, a, e->comm, e->stream));
    sync_ok(e, "eager sends before their receives");
    for (uint32_t i = 0; i < N; i++) {
        if (e->rank == b)
            msg_check(&m[i], "eager sends before their receives");
        msg_free(&m[i]);
    }
}

/* More messages in flight than boxes, of every size around the eager limit (2 KiB). */
static void eager_many(prog_env *e, uint32_t a, uint32_t b)
{
    enum { N = 150 };
    /* Around the 16 B that ride in a box's header line and the 1 KiB and 8 KiB eager limits. */
    static const uint64_t bytes[] = {0, 1, 3, 16, 18, 255, 1024, 1026, 8192, 8196};
    static const HcclDataType dts[] = {HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_FP16, HCCL_DATA_TYPE_FP32};
    msg *m = xmalloc(N * sizeof *m);
    for (uint32_t i = 0; i < N; i++) {
        HcclDataType dt = dts[i % 3];
        m[i] = msg_new(bytes[i % 10] / dt_size(dt), dt, a, b, 200 + i, e->rank == a);
    }
    for (uint32_t i = 0; i < N; i++) {
        if (e->rank == a)
            HCCL_OK(HcclSend(m[i].dev, m[i].count, m[i].dt, b, e->comm, e->stream));
        else if (e->rank == b)
            HCCL_OK(HcclRecv(m[i].dev, m[i].count, m[i].dt, a, e->comm, e->stream));
    }
    sync_ok(e, "150 messages in flight");
    for (uint32_t i = 0; i < N; i++) {
        if (e->rank == b)
            msg_check(&m[i], "150 messages in flight");
        msg_free(&m[i]);
    }
    free(m);
}

/* Each rank forwards, from the buffer it received into, what came from the rank before: every
 * send reads what the receive before it in stream order wrote. Rank 0 starts each round. */
static void eager_relay(prog_env *e)
{
    enum { ROUNDS = 40, COUNT = 100 };
    uint32_t next = (e->rank + 1) % e->n, prev = (e->rank + e->n - 1) % e->n;
    int32_t *h = xmalloc(COUNT * sizeof *h);
    void *buf = dev_alloc(COUNT * sizeof *h);
    for (uint32_t r = 0; r < ROUNDS; r++) {
        if (e->rank == 0) {
            for (uint32_t i = 0; i < COUNT; i++)
                h[i] = (int32_t)(r * 1000 + i);
            HCCL_OK(aclrtMemcpyAsync(buf, COUNT * sizeof *h, h, COUNT * sizeof *h, ACL_MEMCPY_HOST_TO_DEVICE,
                                     e->stream));
            sync_ok(e, "relay: staging the round"); /* h is rewritten next round */
            HCCL_OK(HcclSend(buf, COUNT, HCCL_DATA_TYPE_INT32, next, e->comm, e->stream));
            HCCL_OK(HcclRecv(buf, COUNT, HCCL_DATA_TYPE_INT32, prev, e->comm, e->stream));
        } else {
            HCCL_OK(HcclRecv(buf, COUNT, HCCL_DATA_TYPE_INT32, prev, e->comm, e->stream));
            HCCL_OK(HcclSend(buf, COUNT, HCCL_DATA_TYPE_INT32, next, e->comm, e->stream));
        }
    }
    sync_ok(e, "relay");
    to_host(h, buf, COUNT * sizeof *h);
    for (uint32_t i = 0; i < COUNT; i++)
        if (h[i] != (int32_t)((ROUNDS - 1) * 1000 + i)) {
            FAILIF(1, "relay: element %u is %d, want %d", i, h[i], (int)((ROUNDS - 1) * 1000 + i));
            break;
        }
    dev_free(buf);
    free(h);
}

static void scen_eager(prog_env *e)
{
    uint32_t a = e->rank & ~1u, b = a + 1;
    if (b < e->n) {
        eager_before_recv(e, a, b);
        eager_many(e, a, b);
        eager_many(e, b, a);
    } else {
        HCCL_OK(HcclBarrier(e->comm, e->stream)); /* eager_before_recv's */
        sync_ok(e, "barrier");
    }
    if (e->n >= 3)
        eager_relay(e);
}

/* ---- batch ------------------------------------------------------------------------------------ */

enum { BATCH_PER_PEER = 24 };

static const HcclDataType batch_dts[] = {HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_FP16,
                                         HCCL_DATA_TYPE_INT64};

static spec batch_spec(uint32_t from, uint32_t to, uint32_t k)
{
    spec s = {(from * 7u + to * 3u + k * 37u) % 300u, batch_dts[(from + to + k) % 4]};
    return s;
}

/* More than 64 receives from one peer in one call are refused at once, and leave nothing behind
 * (the batch that follows would mismatch if the refused call had consumed ordinals). */
static void batch_too_many(prog_env *e)
{
    enum { TOO_MANY = 65 };
    HcclSendRecvItem it[TOO_MANY];
    void *buf = dev_alloc(64);
    for (int i = 0; i < TOO_MANY; i++)
        it[i] = (HcclSendRecvItem){HCCL_RECV, buf, 4, HCCL_DATA_TYPE_FP32, (e->rank + 1) % e->n};
    HcclResult rc = HcclBatchSendRecv(it, TOO_MANY, e->comm, e->stream);
    FAILIF(rc != HCCL_E_PARA, "%d receives from one peer in one call returned %d, want HCCL_E_PARA", TOO_MANY,
           (int)rc);
    dev_free(buf);
}

static void scen_batch(prog_env *e)
{
    batch_too_many(e);
    uint32_t npeers = e->n - 1, nitems = 2 * BATCH_PER_PEER * npeers, i = 0;
    HcclSendRecvItem *it = xmalloc(nitems * sizeof *it);
    msg *m = xmalloc(nitems * sizeof *m);
    for (uint32_t k = 0; k < BATCH_PER_PEER; k++)
        for (uint32_t d = 1; d <= npeers; d++) { /* interleaved: sends and receives, peers mixed */
            uint32_t to = (e->rank + d) % e->n, from = (e->rank + e->n - d) % e->n;
            spec so = batch_spec(e->rank, to, k), si = batch_spec(from, e->rank, k);
            m[i] = msg_new(so.count, so.dt, e->rank, to, k, true);
            it[i] = (HcclSendRecvItem){HCCL_SEND, m[i].dev, so.count, so.dt, to};
            i++;
            m[i] = msg_new(si.count, si.dt, from, e->rank, k, false);
            it[i] = (HcclSendRecvItem){HCCL_RECV, m[i].dev, si.count, si.dt, from};
            i++;
        }
    HCCL_OK(HcclBatchSendRecv(it, nitems, e->comm, e->stream));
    sync_ok(e, "HcclBatchSendRecv");
    for (i = 0; i < nitems; i++) {
        if (it[i].sendRecvType == HCCL_RECV)
            msg_check(&m[i], "HcclBatchSendRecv");
        msg_free(&m[i]);
    }
    printf("rank %u: HcclBatchSendRecv of %u items to %u peers\n", e->rank, nitems, npeers);
    free(it);
    free(m);
}

/* ---- plan reuse ------------------------------------------------------------------------------- */

enum { REUSE_CALLS = 1000, REUSE_COUNT = 4096 };

static void scen_planreuse(prog_env *e)
{
    uint32_t a = e->rank & ~1u, b = a + 1;
    if (b >= e->n)
        return;
    bool sender = e->rank == a;
    msg buf[2];
    for (int i = 0; i < 2; i++)
        buf[i] = msg_new(REUSE_COUNT, HCCL_DATA_TYPE_FP32, a, b, (uint32_t)i, sender);
    uint64_t warm = 0;
    for (int i = 0; i < REUSE_CALLS; i++) {
        if (i == 2)
            warm = HcclExtPlanCompileCount();
        msg *m = &buf[i & 1];
        if (sender)
            HCCL_OK(HcclSend(m->dev, REUSE_COUNT, HCCL_DATA_TYPE_FP32, b, e->comm, e->stream));
        else
            HCCL_OK(HcclRecv(m->dev, REUSE_COUNT, HCCL_DATA_TYPE_FP32, a, e->comm, e->stream));
    }
    sync_ok(e, "1,000 HcclSend/HcclRecv");
    uint64_t after = HcclExtPlanCompileCount();
    printf("rank %u: plans compiled after 2 calls: %llu, after %d: %llu\n", e->rank, (unsigned long long)warm,
           REUSE_CALLS, (unsigned long long)after);
    FAILIF(after != warm, "%llu plans compiled over %d calls of one shape", (unsigned long long)(after - warm),
           REUSE_CALLS - 2);
    for (int i = 0; i < 2; i++) {
        if (!sender)
            msg_check(&buf[i], "1,000 HcclSend/HcclRecv");
        msg_free(&buf[i]);
    }
}

/* ---- failures --------------------------------------------------------------------------------- */

/* The call must fail on this rank (at enqueue or synchronize) with an error message. */
static void expect_failure(prog_env *e, HcclResult enq, const char *what)
{
    bool failed = prog_saw_failure(e, enq, what);
    if (failed)
        printf("rank %u: DETECTED\n", e->rank);
    FAILIF(!failed, "%s: no failure seen", what);
}

/* kind: 0 count, 1 dtype (eager sends), 2 count of a direct send. */
static void scen_mismatch(prog_env *e, int kind)
{
    if (e->rank > 1)
        return;
    uint64_t scount = kind == 2 ? 65536 : 256, rcount = kind == 1 ? scount : 2 * scount;
    HcclDataType rdt = kind == 1 ? HCCL_DATA_TYPE_INT32 : HCCL_DATA_TYPE_FP32;
    void *buf = dev_alloc(rcount * 4);
    HcclResult rc = e->rank == 0 ? HcclSend(buf, scount, HCCL_DATA_TYPE_FP32, 1, e->comm, e->stream)
                                 : HcclRecv(buf, rcount, rdt, 0, e->comm, e->stream);
    if (rc == HCCL_SUCCESS && e->rank == 0 && kind != 2) /* its send may be over: its next call fails */
        rc = HcclBarrier(e->comm, e->stream);
    expect_failure(e, rc, "mismatched HcclSend/HcclRecv");
    dev_free(buf);
}

/* Rank 1 blocks in p2p with rank 0 (a barrier first, so rank 0 is done with everything else). */
static void scen_destroy(prog_env *e, bool rank1_sends, bool eager)
{
    if (e->rank > 1)
        return;
    void *buf = dev_alloc(16384 * 4);
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    sync_ok(e, "barrier");
    if (e->rank == 0) {
        usleep(200 * 1000); /* lets rank 1 block first; either order must report the destroy */
        HCCL_OK(HcclCommDestroy(e->comm));
        e->comm = NULL;
        printf("rank 0: HcclCommDestroy returned\n");
    } else {
        HcclResult rc = HCCL_SUCCESS;
        for (int i = 0; i < (eager ? 65 : 1) && rc == HCCL_SUCCESS; i++)
            rc = rank1_sends ? HcclSend(buf, eager ? 256 : 16384, HCCL_DATA_TYPE_FP32, 0, e->comm, e->stream)
                             : HcclRecv(buf, 256, HCCL_DATA_TYPE_FP32, 0, e->comm, e->stream);
        expect_failure(e, rc, rank1_sends ? "HcclSend to a destroyed rank" : "HcclRecv from a destroyed rank");
    }
    dev_free(buf);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: p2p_check match|crossdeps|batch|planreuse|eager|mismatch-count|mismatch-dtype|"
                        "mismatch-direct|destroy-recv|destroy-send|destroy-eager\n");
        return 2;
    }
    prog_env e;
    prog_init(&e);
    const char *s = argv[1];
    if (e.n < 2) {
        FAILIF(1, "needs at least 2 ranks");
    } else if (!strcmp(s, "match")) {
        scen_match(&e);
    } else if (!strcmp(s, "crossdeps")) {
        FAILIF(e.n < 3, "crossdeps needs at least 3 ranks");
        if (e.n >= 3)
            scen_crossdeps(&e);
    } else if (!strcmp(s, "batch")) {
        scen_batch(&e);
    } else if (!strcmp(s, "planreuse")) {
        scen_planreuse(&e);
    } else if (!strcmp(s, "eager")) {
        scen_eager(&e);
    } else if (!strcmp(s, "mismatch-count") || !strcmp(s, "mismatch-dtype") || !strcmp(s, "mismatch-direct")) {
        scen_mismatch(&e, !strcmp(s, "mismatch-dtype") ? 1 : !strcmp(s, "mismatch-direct") ? 2 : 0);
    } else if (!strcmp(s, "destroy-recv") || !strcmp(s, "destroy-send") || !strcmp(s, "destroy-eager")) {
        scen_destroy(&e, strcmp(s, "destroy-recv") != 0, !strcmp(s, "destroy-eager"));
    } else {
        FAILIF(1, "unknown scenario %s", s);
    }
    printf("p2p_check %s: %s\n", s, g_bad ? "FAIL" : "PASS");
    fflush(stdout);
    prog_fini(&e);
    return g_bad;
}
