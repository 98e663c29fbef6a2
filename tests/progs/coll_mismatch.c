/* Mismatched collectives across ranks must fail on every rank, in bounded time, naming the
 * calls; bad arguments must get an error code at once. Run with HCCL_EXEC_TIMEOUT set so a
 * detection bug still ends. */
#include "coll_misc.h"

#include <string.h>
#include <unistd.h>

enum { MM_COUNT = 256 };
enum { MM_EAGER = 64 }; /* 256 B of fp32: eager under every default crossover (512 B at least) */

/* After the mismatched call: the failure must show on this rank. 0 if it did. */
static int observe(prog_env *e, HcclResult enq, const char *what, double t0)
{
    bool failed = prog_saw_failure(e, enq, what);
    printf("rank %u: MISMATCH %s after %.2f s\n", e->rank, failed ? "DETECTED" : "NOT DETECTED", prog_now_s() - t0);
    return failed ? 0 : 1;
}

/* A one-way Broadcast (docs/runtime.md, "One-way calls") completes on its root without waiting
 * for its receivers, so what only a root could see (another rank running another call, or taking
 * another root) shows at the root's next call that waits: the failure must show at the call, its
 * synchronize, or the HcclBarrier after it. With HCCL_EAGER_ONEWAY=0, at the call as before. */
static int observe_or_next(prog_env *e, HcclResult enq, const char *what, double t0)
{
    const char *ow = getenv("HCCL_EAGER_ONEWAY");
    if ((ow && !strcmp(ow, "0")) || prog_saw_failure(e, enq, what))
        return observe(e, enq, what, t0);
    char next[128];
    snprintf(next, sizeof next, "HcclBarrier after %s", what);
    return observe(e, HcclBarrier(e->comm, e->stream), next, t0);
}

static HcclResult ar(prog_env *e, void *buf, uint64_t cnt)
{
    return HcclAllReduce(buf, buf, cnt, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->comm, e->stream);
}

/* Rank 0's end where it destroys instead of its next call: synchronize, HcclCommDestroy, both said. */
static int sync_then_destroy(prog_env *e, const char *calls, double t0)
{
    aclError se = aclrtSynchronizeStream(e->stream);
    HcclResult dr = HcclCommDestroy(e->comm);
    e->comm = NULL;
    printf("rank 0: %s synchronize=%d, then HcclCommDestroy returned %d after %.2f s\n", calls, (int)se, (int)dr,
           prog_now_s() - t0);
    return se != ACL_SUCCESS || dr != HCCL_SUCCESS;
}

/* (a) rank 0 skips one of 10 AllReduces, then calls HcclBarrier; (b) rank 0 destroys instead. */
static int skip_or_destroy(prog_env *e, bool destroy, void *buf, double t0)
{
    HcclResult last = HCCL_SUCCESS;
    for (int i = 0; i < 10; i++) {
        if (e->rank == 0 && i == 5)
            continue;
        last = ar(e, buf, MM_COUNT);
        if (last != HCCL_SUCCESS)
            break;
    }
    if (e->rank != 0)
        return observe(e, last, "10th HcclAllReduce", t0);
    if (!destroy)
        return observe(e, HcclBarrier(e->comm, e->stream), "HcclBarrier after 9 HcclAllReduce", t0);
    return sync_then_destroy(e, "9 HcclAllReduce", t0);
}

/* (f) rank 0 runs 9 AllReduces and exits without HcclCommDestroy (a crash, as the others see it):
 * their 10th AllReduce must fail within seconds naming rank 0, not wait out HCCL_EXEC_TIMEOUT. */
static int exit_early(prog_env *e, void *buf, double t0)
{
    HcclResult last = HCCL_SUCCESS;
    for (int i = 0; i < (e->rank == 0 ? 9 : 10) && last == HCCL_SUCCESS; i++)
        last = ar(e, buf, MM_COUNT);
    if (e->rank != 0)
        return observe(e, last, "10th HcclAllReduce", t0);
    aclError se = aclrtSynchronizeStream(e->stream);
    printf("rank 0: 9 HcclAllReduce synchronize=%d; exiting without HcclCommDestroy\n", (int)se);
    fflush(stdout);
    _exit(se == ACL_SUCCESS ? 0 : 1);
}

/* Rank 0 asks for deterministic reductions, the others do not: their plans would differ, so the
 * signature carries the mode and the AllReduce fails on every rank naming it. */
static int determinism(prog_env *e, void *buf, double t0)
{
    uint32_t *ids = xmalloc(e->n * sizeof *ids);
    for (uint32_t i = 0; i < e->n; i++)
        ids[i] = i;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    cfg.hcclDeterministic = e->rank == 0 ? 1 : 0;
    HcclComm world = e->comm, sub = NULL;
    HCCL_OK(HcclCreateSubCommConfig(&world, e->n, ids, 7, e->rank, &cfg, &sub));
    e->comm = sub;
    int bad = observe(e, ar(e, buf, MM_COUNT), e->rank == 0 ? "deterministic HcclAllReduce" : "HcclAllReduce", t0);
    e->comm = world;
    HCCL_OK(HcclCommDestroy(sub));
    free(ids);
    return bad;
}

/* AlltoAllV of `block` fp32 elements per peer, in and out of buffers of its own. */
static HcclResult a2av_blocks(prog_env *e, uint64_t block, float **in, float **out)
{
    uint64_t cnt[64], dsp[64];
    for (uint32_t q = 0; q < e->n; q++) {
        cnt[q] = block;
        dsp[q] = block * q;
    }
    size_t bytes = (size_t)block * e->n * sizeof(float);
    *in = dev_alloc(bytes);
    *out = dev_alloc(bytes);
    ACL_OK(aclrtMemset(*in, bytes, 0, bytes));
    return HcclAlltoAllV(*in, cnt, dsp, HCCL_DATA_TYPE_FP32, *out, cnt, dsp, HCCL_DATA_TYPE_FP32, e->comm, e->stream);
}

typedef enum { PROTO_ALLREDUCE, PROTO_ALLTOALLV, PROTO_CROSSOVER } proto_case;

/* Rank 0 configures the eager protocol otherwise than the others (HCCL_EAGER_MAX_BYTES, read when
 * a communicator is created), which cannot meet; the signature carries the protocol, so the call
 * fails on every rank. Rank 0 with it off: an AllReduce compiles to a mesh plan there and to eager
 * plans elsewhere, so does an AlltoAllV of 8-element blocks (whose eager ranks publish no record).
 * Rank 0 with a crossover of 64 KiB: its AlltoAllV sends 16 KiB blocks through the inboxes that the
 * others (crossovers of 8 KiB or less) expect straight into their OUT. */
static int protocol(prog_env *e, void *buf, proto_case pc, double t0)
{
    uint32_t *ids = xmalloc(e->n * sizeof *ids);
    for (uint32_t i = 0; i < e->n; i++)
        ids[i] = i;
    if (e->rank == 0)
        setenv("HCCL_EAGER_MAX_BYTES", pc == PROTO_CROSSOVER ? "65536" : "0", 1);
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    HcclComm world = e->comm, sub = NULL;
    HCCL_OK(HcclCreateSubCommConfig(&world, e->n, ids, 8, e->rank, &cfg, &sub));
    e->comm = sub;
    float *in = NULL, *out = NULL;
    HcclResult rc = pc == PROTO_ALLREDUCE ? ar(e, buf, MM_EAGER)
                                          : a2av_blocks(e, pc == PROTO_CROSSOVER ? 4096 : 8, &in, &out);
    const char *names[] = {"HcclAllReduce", "HcclAlltoAllV", "HcclAlltoAllV (16 KiB blocks)"};
    char what[96];
    snprintf(what, sizeof what, "%s, rank %u's HCCL_EAGER_MAX_BYTES %s", names[pc], e->rank,
             e->rank ? "unset" : pc == PROTO_CROSSOVER ? "65536" : "0");
    int bad = observe(e, rc, what, t0);
    e->comm = world;
    HCCL_OK(HcclCommDestroy(sub));
    if (in) {
        dev_free(in);
        dev_free(out);
    }
    free(ids);
    return bad;
}

/* Counts on both sides of the eager crossover (rank 0 small: an eager plan; the others large: a
 * mesh plan, which publishes this call's addresses): the signature check still fails the call on
 * every rank, whichever plan each rank runs. coll: allreduce, allgather, broadcast (root 0, the
 * eager one) or reduce (root n-1, a mesh one). */
enum { MM_BIG = 1 << 16 }; /* 256 KiB of fp32: past any crossover (at most one 64 KiB box) */

/* Every rank passes its own rank as the root (a common bug), or (swap) the next rank's: with
 * one-way Broadcasts every rank roots a call nobody receives, or waits for a rank that waits too.
 * Three calls, so the roots' signals are left over when the barrier runs; or (agree) one such call,
 * then two where every rank takes root 0, whose receivers find rank 0's signal of the first call
 * first: it must not pass for the second call's data, so they fail at the call. */
static int roots_disagree(prog_env *e, void *buf, const char *how, double t0)
{
    bool swap = !strcmp(how, "swap"), agree = !strcmp(how, "self-then-0");
    uint32_t root = swap ? (e->rank + 1) % e->n : e->rank;
    HcclResult rc = HCCL_SUCCESS;
    for (int i = 0; i < 3 && rc == HCCL_SUCCESS; i++)
        rc = HcclBroadcast(buf, MM_COUNT, HCCL_DATA_TYPE_FP32, agree && i ? 0 : root, e->comm, e->stream);
    const char *what = swap ? "HcclBroadcast root = next rank" : "HcclBroadcast root = own rank";
    return agree && e->rank ? observe(e, rc, what, t0) : observe_or_next(e, rc, what, t0);
}

/* Rank 0 takes another root than the others, then every rank destroys the communicator: the
 * destroy of a rank that rooted the call compares its receivers' records of it (rt_oneway.c), so
 * the mismatch is still reported (in the log: nothing is left to return it). */
static int roots_then_destroy(prog_env *e, void *buf)
{
    uint32_t root = e->rank == 0 ? 0 : e->n - 1;
    HcclResult rc = HcclBroadcast(buf, MM_COUNT, HCCL_DATA_TYPE_FP32, root, e->comm, e->stream);
    aclError se = aclrtSynchronizeStream(e->stream);
    HcclResult dr = HcclCommDestroy(e->comm);
    e->comm = NULL;
    printf("rank %u: HcclBroadcast root %u: enqueue=%d synchronize=%d, HcclCommDestroy=%d\n", e->rank, root, (int)rc,
           (int)se, (int)dr);
    return 0;
}

/* Rank 0 roots one-way Broadcasts and destroys the communicator instead of its 10th: the others'
 * 10th waits for a header rank 0 never writes, and must end naming the destroy (its FINALIZE
 * record, then a wake of the receivers' flag waits: rt_comm_api.c). */
static int oneway_then_destroy(prog_env *e, void *buf, double t0)
{
    HcclResult last = HCCL_SUCCESS;
    for (int i = 0; i < (e->rank == 0 ? 9 : 10) && last == HCCL_SUCCESS; i++)
        last = HcclBroadcast(buf, MM_COUNT, HCCL_DATA_TYPE_FP32, 0, e->comm, e->stream);
    if (e->rank != 0)
        return observe(e, last, "10th HcclBroadcast", t0);
    return sync_then_destroy(e, "9 one-way HcclBroadcast", t0);
}

/* Two agreed Broadcasts and a barrier: a run of calls that can go one-way, longer than one, so the
 * next such call goes one-way from the first (docs/runtime.md, "One-way calls"), as the rooted
 * mismatches below must. The barrier ends on a rank only once it signalled every peer: ranks it
 * signalled first may already have run the mismatching calls and failed the communicator, which
 * fails the barrier still running here. False then: the mismatch shows at this synchronize. */
static bool prime_oneway(prog_env *e, void *buf)
{
    for (int i = 0; i < 2; i++)
        HCCL_OK(HcclBroadcast(buf, MM_COUNT, HCCL_DATA_TYPE_FP32, 0, e->comm, e->stream));
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    return aclrtSynchronizeStream(e->stream) == ACL_SUCCESS;
}

/* One-way Reduces (a gather: docs/runtime.md, "One-way calls"), root n-1, 8 fp32 (what a writer's
 * part of the box holds at every rank count): two agreed ones and a barrier start a run, as
 * prime_oneway's Broadcasts do. Then:
 *   gather-op         the root calls HcclAllReduce where the others' Reduce goes one-way;
 *   gather-writer-op  rank 0 calls HcclAllReduce where the root waits for its header;
 *   gather-count      rank 0's Reduce has twice the count (its header says so);
 *   gather-destroy    rank 0 destroys the communicator instead of its 10th Reduce, which the root
 *                     waits for in its flag wait.
 * A writer's Reduce completes without waiting for the root: its failure shows at the call, its
 * synchronize, or the HcclBarrier after it (observe_or_next). */
enum { MM_GATHER = 8 };

static HcclResult red(prog_env *e, void *buf, uint64_t cnt)
{
    return HcclReduce(buf, (float *)buf + MM_COUNT, cnt, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->n - 1, e->comm,
                      e->stream);
}

static int gather_mismatch(prog_env *e, void *buf, const char *how, double t0)
{
    for (int i = 0; i < 2; i++)
        HCCL_OK(red(e, buf, MM_GATHER));
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    if (aclrtSynchronizeStream(e->stream) != ACL_SUCCESS)
        return observe(e, HCCL_SUCCESS, "the barrier before the mismatch (peers failed the communicator)", t0);
    bool root = e->rank == e->n - 1, odd = e->rank == (!strcmp(how, "op") ? e->n - 1 : 0);
    if (!strcmp(how, "destroy")) {
        HcclResult last = HCCL_SUCCESS;
        for (int i = 0; i < (e->rank == 0 ? 9 : 10) && last == HCCL_SUCCESS; i++)
            last = red(e, buf, MM_GATHER);
        if (e->rank == 0)
            return sync_then_destroy(e, "9 one-way HcclReduce", t0);
        return root ? observe(e, last, "10th HcclReduce", t0) : observe_or_next(e, last, "10th HcclReduce", t0);
    }
    HcclResult rc;
    if (!strcmp(how, "count"))
        rc = red(e, buf, odd ? 2 * MM_GATHER : MM_GATHER);
    else
        rc = odd ? ar(e, buf, MM_GATHER) : red(e, buf, MM_GATHER);
    bool other_call = odd && strcmp(how, "count"); /* an AllReduce waits; a Reduce's writer does not */
    const char *what = other_call ? "HcclAllReduce" : "HcclReduce";
    return root || other_call ? observe(e, rc, what, t0) : observe_or_next(e, rc, what, t0);
}

static int cross_count(prog_env *e, const char *coll, double t0)
{
    uint64_t cnt = e->rank == 0 ? MM_EAGER : MM_BIG;
    void *in = dev_alloc((size_t)MM_BIG * sizeof(float)), *out = dev_alloc((size_t)e->n * MM_BIG * sizeof(float));
    HcclResult rc;
    if (!strcmp(coll, "allgather"))
        rc = HcclAllGather(in, out, cnt, HCCL_DATA_TYPE_FP32, e->comm, e->stream);
    else if (!strcmp(coll, "broadcast"))
        rc = HcclBroadcast(in, cnt, HCCL_DATA_TYPE_FP32, 0, e->comm, e->stream);
    else if (!strcmp(coll, "reduce"))
        rc = HcclReduce(in, out, cnt, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->n - 1, e->comm, e->stream);
    else
        rc = HcclAllReduce(in, out, cnt, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->comm, e->stream);
    char what[96];
    snprintf(what, sizeof what, "%s count %llu", coll, (unsigned long long)cnt);
    int bad = observe_or_next(e, rc, what, t0);
    dev_free(in);
    dev_free(out);
    return bad;
}

int misc_mismatch(prog_env *e, const char *kind)
{
    if (e->n < 2) {
        printf("mismatch-%s needs at least 2 ranks\n", kind);
        return 1;
    }
    void *buf = dev_alloc(2 * MM_COUNT * sizeof(float));
    ACL_OK(aclrtMemset(buf, 2 * MM_COUNT * sizeof(float), 0, 2 * MM_COUNT * sizeof(float)));
    double t0 = prog_now_s();
    int bad;
    HcclResult rc;
    if ((!strcmp(kind, "op") || !strncmp(kind, "root", 4) || !strcmp(kind, "oneway-destroy")) &&
        !prime_oneway(e, buf)) {
        bad = observe(e, HCCL_SUCCESS, "the barrier before the mismatch (peers failed the communicator)", t0);
    } else if (!strcmp(kind, "skip") || !strcmp(kind, "destroy")) {
        bad = skip_or_destroy(e, !strcmp(kind, "destroy"), buf, t0);
    } else if (!strcmp(kind, "exit")) {
        bad = exit_early(e, buf, t0);
    } else if (!strcmp(kind, "op")) {
        rc = e->rank == 0 ? HcclBroadcast(buf, MM_COUNT, HCCL_DATA_TYPE_FP32, 0, e->comm, e->stream)
                          : ar(e, buf, MM_COUNT);
        bad = observe_or_next(e, rc, e->rank == 0 ? "HcclBroadcast" : "HcclAllReduce", t0);
    } else if (!strcmp(kind, "count")) {
        rc = ar(e, buf, e->rank == 0 ? MM_COUNT : 2 * MM_COUNT);
        bad = observe(e, rc, e->rank == 0 ? "HcclAllReduce count 256" : "HcclAllReduce count 512", t0);
    } else if (!strcmp(kind, "protocol") || !strcmp(kind, "protocol-alltoallv") || !strcmp(kind, "protocol-crossover")) {
        proto_case pc = !strcmp(kind, "protocol-alltoallv") ? PROTO_ALLTOALLV
                        : !strcmp(kind, "protocol-crossover") ? PROTO_CROSSOVER : PROTO_ALLREDUCE;
        bad = protocol(e, buf, pc, t0);
    } else if (!strncmp(kind, "xcount-", 7)) {
        bad = cross_count(e, kind + 7, t0);
    } else if (!strcmp(kind, "determinism")) {
        bad = determinism(e, buf, t0);
    } else if (!strcmp(kind, "root")) {
        uint32_t root = e->rank == 0 ? 0 : e->n - 1;
        rc = HcclBroadcast(buf, MM_COUNT, HCCL_DATA_TYPE_FP32, root, e->comm, e->stream);
        bad = observe_or_next(e, rc, root == 0 ? "HcclBroadcast root 0" : "HcclBroadcast root N-1", t0);
    } else if (!strncmp(kind, "root-s", 6)) { /* root-self, root-swap, root-self-then-0 */
        bad = roots_disagree(e, buf, kind + 5, t0);
    } else if (!strcmp(kind, "root-destroy")) {
        bad = roots_then_destroy(e, buf);
    } else if (!strcmp(kind, "oneway-destroy")) {
        bad = oneway_then_destroy(e, buf, t0);
    } else if (!strncmp(kind, "gather-", 7)) { /* gather-op, gather-writer-op, gather-count, gather-destroy */
        bad = gather_mismatch(e, buf, !strcmp(kind + 7, "writer-op") ? "writer" : kind + 7, t0);
    } else {
        printf("unknown mismatch kind %s\n", kind);
        bad = 1;
    }
    dev_free(buf);
    return bad;
}

/* ---- bad input ----------------------------------------------------------------------------- */

typedef struct bi_ctx {
    prog_env *e;
    int bad;
} bi_ctx;

static void expect(bi_ctx *b, const char *what, HcclResult got, HcclResult want, double t0)
{
    double dt = prog_now_s() - t0;
    bool ok = got == want && dt < 10.0;
    if (!ok || b->e->rank == 0)
        printf("%s %s: returned %d (%s), want %d, %.3f ms\n", ok ? "ok  " : "FAIL", what, (int)got,
               HcclGetErrorString(got), (int)want, dt * 1e3);
    b->bad |= !ok;
}

#define EXPECT(b, want, call)                                                               \
    do {                                                                                    \
        double t0_ = prog_now_s();                                                          \
        expect(b, #call, (call), want, t0_);                                                \
    } while (0)

static void bad_collectives(bi_ctx *b, void *d, void *small, void *host)
{
    prog_env *e = b->e;
    HcclComm cm = e->comm;
    aclrtStream st = e->stream;
    const HcclDataType F = HCCL_DATA_TYPE_FP32;
    EXPECT(b, HCCL_E_PTR, HcclAllReduce(d, d, 8, F, HCCL_REDUCE_SUM, NULL, st));
    EXPECT(b, HCCL_E_PTR, HcclAllReduce(NULL, d, 8, F, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PTR, HcclAllReduce(d, NULL, 8, F, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PTR, HcclBroadcast(NULL, 8, F, 0, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(d, d, UINT64_MAX / 2, F, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllGather(d, d, UINT64_MAX / 3, F, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllGather(d, d, UINT64_C(1) << 60, F, cm, st)); /* x 4 B x ranks > 2^62 */
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(small, small, 1000, F, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(d, d, 8, (HcclDataType)13, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(d, d, 8, (HcclDataType)99, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(d, d, 8, HCCL_DATA_TYPE_RESERVED, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(d, d, 8, F, (HcclReduceOp)7, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(d, d, 8, F, HCCL_REDUCE_RESERVED, cm, st));
    EXPECT(b, HCCL_E_NOT_SUPPORT, HcclAllReduce(d, d, 8, HCCL_DATA_TYPE_HIF8, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclBroadcast(d, 8, F, e->n, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclReduce(d, d, 8, F, HCCL_REDUCE_SUM, e->n + 5, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclScatter(d, d, 8, F, UINT32_MAX, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(host, host, 8, F, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclAllReduce(d, host, 8, F, HCCL_REDUCE_SUM, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclSend(d, 8, F, e->n, cm, st));
    EXPECT(b, HCCL_E_PARA, HcclRecv(d, 8, F, e->n + 1, cm, st));
    EXPECT(b, HCCL_E_PTR, HcclAlltoAllV(d, NULL, NULL, F, d, NULL, NULL, F, cm, st));
    EXPECT(b, HCCL_E_PTR, HcclBatchSendRecv(NULL, 2, cm, st));
    EXPECT(b, HCCL_E_PTR, HcclBarrier(NULL, st));
}

static void bad_comm_calls(bi_ctx *b)
{
    prog_env *e = b->e;
    uint32_t x;
    HcclComm c2 = NULL;
    HcclRootInfo root;
    memset(&root, 0, sizeof root);
    EXPECT(b, HCCL_E_PTR, HcclGetRankSize(NULL, &x));
    EXPECT(b, HCCL_E_PTR, HcclGetRankSize(e->comm, NULL));
    EXPECT(b, HCCL_E_PTR, HcclGetRankId(e->comm, NULL));
    EXPECT(b, HCCL_E_PTR, HcclGetCommAsyncError(e->comm, NULL));
    EXPECT(b, HCCL_E_PTR, HcclGetRootInfo(NULL));
    EXPECT(b, HCCL_E_PARA, HcclCommInitRootInfo(e->n, &root, e->n, &c2));
    EXPECT(b, HCCL_E_PARA, HcclCommInitRootInfo(0, &root, 0, &c2));
    EXPECT(b, HCCL_E_PTR, HcclCommInitRootInfo(e->n, NULL, e->rank, &c2));
    EXPECT(b, HCCL_E_PTR, HcclCommInitRootInfo(e->n, &root, e->rank, NULL));
    if (c2) {
        printf("FAIL a bad HcclCommInitRootInfo produced a communicator\n");
        b->bad = 1;
    }
}

int misc_badinput(prog_env *e)
{
    bi_ctx b = {e, 0};
    void *d = dev_alloc(1024), *small = dev_alloc(4), *host = xmalloc(1024);
    float sent[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8];
    to_dev(d, sent, sizeof sent);
    bad_collectives(&b, d, small, host);
    bad_comm_calls(&b);
    /* Nothing above may have touched the buffer or poisoned the communicator. */
    to_host(got, d, sizeof got);
    if (memcmp(got, sent, sizeof got)) {
        printf("FAIL a rejected call modified its buffer\n");
        b.bad = 1;
    }
    HcclResult rc = HcclAllReduce(d, d, 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->comm, e->stream);
    aclError se = aclrtSynchronizeStream(e->stream);
    to_host(got, d, sizeof got);
    for (int i = 0; i < 8; i++)
        if (rc != HCCL_SUCCESS || se != ACL_SUCCESS || got[i] != sent[i] * (float)e->n) {
            printf("FAIL a valid HcclAllReduce after the bad calls: rc=%d sync=%d [%d]=%g\n", (int)rc, (int)se, i,
                   got[i]);
            b.bad = 1;
            break;
        }
    dev_free(d);
    dev_free(small);
    free(host);
    return b.bad;
}
