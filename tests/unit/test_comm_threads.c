/* Communicators in one process: HcclCommInitAll over several devices, one thread per rank. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#define MAX_RANKS 8

typedef struct rank_ctx {
    HcclComm comm;
    int32_t dev;
    uint32_t rank, n;
    uint64_t count;
    int ok;
    HcclResult rc;
} rank_ctx;

/* AllReduce(sum) of rank-dependent int32 data, then Broadcast from the last rank. */
static void *rank_main(void *p)
{
    rank_ctx *r = p;
    r->ok = 0;
    cr_assert_eq(aclrtSetDevice(r->dev), ACL_SUCCESS);
    aclrtStream s;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    size_t bytes = r->count * sizeof(int32_t);
    int32_t *host = malloc(bytes ? bytes : 4);
    void *buf;
    cr_assert_eq(aclrtMalloc(&buf, bytes ? bytes : 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    for (uint64_t i = 0; i < r->count; i++)
        host[i] = (int32_t)(i % 1000) * (int32_t)(r->rank + 1);
    if (bytes)
        cr_assert_eq(aclrtMemcpy(buf, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    r->rc = HcclAllReduce(buf, buf, r->count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, r->comm, s);
    if (r->rc == HCCL_SUCCESS)
        r->rc = HcclBroadcast(buf, r->count, HCCL_DATA_TYPE_INT32, r->n - 1, r->comm, s);
    aclError sync = aclrtSynchronizeStream(s);
    if (r->rc == HCCL_SUCCESS && sync == ACL_SUCCESS) {
        if (bytes)
            aclrtMemcpy(host, bytes, buf, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
        int32_t factor = (int32_t)(r->n * (r->n + 1) / 2);
        r->ok = 1;
        for (uint64_t i = 0; i < r->count; i++)
            if (host[i] != (int32_t)(i % 1000) * factor) {
                r->ok = 0;
                cr_log_error("rank %u: element %llu = %d, want %d", r->rank, (unsigned long long)i, host[i],
                             (int32_t)(i % 1000) * factor);
                break;
            }
    }
    aclrtFree(buf);
    free(host);
    aclrtDestroyStream(s);
    return NULL;
}

static void run_ranks(uint32_t n, uint64_t count)
{
    int32_t devs[MAX_RANKS];
    HcclComm comms[MAX_RANKS];
    for (uint32_t i = 0; i < n; i++)
        devs[i] = (int32_t)i;
    cr_assert_eq(HcclCommInitAll(n, devs, comms), HCCL_SUCCESS);
    rank_ctx ctx[MAX_RANKS];
    pthread_t th[MAX_RANKS];
    for (uint32_t i = 0; i < n; i++) {
        ctx[i] = (rank_ctx){comms[i], devs[i], i, n, count, 0, HCCL_SUCCESS};
        pthread_create(&th[i], NULL, rank_main, &ctx[i]);
    }
    for (uint32_t i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(ctx[i].rc, HCCL_SUCCESS, "rank %u returned %d", i, ctx[i].rc);
        cr_expect(ctx[i].ok, "rank %u has wrong data", i);
    }
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
}

Test(comm_threads, one_rank) { run_ranks(1, 1000); }
Test(comm_threads, two_ranks_small) { run_ranks(2, 7); }
Test(comm_threads, two_ranks_zero) { run_ranks(2, 0); }
Test(comm_threads, three_ranks) { run_ranks(3, 100003); }
Test(comm_threads, four_ranks_large) { run_ranks(4, (1u << 20) + 3); }
Test(comm_threads, eight_ranks) { run_ranks(8, 4099); }


/* Rank 0 calls Broadcast while the others call AllReduce: every rank's stream fails and the
 * communicator names both calls; nobody hangs. */
typedef struct mm_ctx {
    HcclComm comm;
    int32_t dev;
    uint32_t rank;
    HcclResult call; /* the call itself fails once a peer has already failed the communicator */
    aclError sync;
    HcclResult async;
    char msg[512];
} mm_ctx;

static void *mismatch_rank(void *p)
{
    mm_ctx *m = p;
    aclrtSetDevice(m->dev);
    aclrtStream s;
    aclrtCreateStream(&s);
    void *buf;
    aclrtMalloc(&buf, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
    if (m->rank == 0)
        m->call = HcclBroadcast(buf, 1024, HCCL_DATA_TYPE_FP32, 0, m->comm, s);
    else
        m->call = HcclAllReduce(buf, buf, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, m->comm, s);
    m->sync = aclrtSynchronizeStream(s);
    /* A one-way Broadcast's root sees the failure at its next call that waits (docs/runtime.md,
     * "One-way calls"). */
    if (m->call == HCCL_SUCCESS && m->sync == ACL_SUCCESS && m->rank == 0) {
        m->call = HcclBarrier(m->comm, s);
        m->sync = aclrtSynchronizeStream(s);
    }
    HcclGetCommAsyncError(m->comm, &m->async);
    HcclExtGetCommErrorMessage(m->comm, m->msg, sizeof m->msg);
    aclrtFree(buf);
    aclrtDestroyStream(s);
    return NULL;
}

Test(comm_threads, mismatch_fails_every_rank)
{
    enum { N = 4 };
    int32_t devs[N] = {0, 1, 2, 3};
    HcclComm comms[N];
    cr_assert_eq(HcclCommInitAll(N, devs, comms), HCCL_SUCCESS);
    mm_ctx m[N];
    pthread_t th[N];
    for (uint32_t i = 0; i < N; i++) {
        m[i] = (mm_ctx){.comm = comms[i], .dev = devs[i], .rank = i};
        pthread_create(&th[i], NULL, mismatch_rank, &m[i]);
    }
    for (uint32_t i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_expect(m[i].call != HCCL_SUCCESS || m[i].sync != ACL_SUCCESS, "rank %u: neither call nor sync failed", i);
        cr_expect_neq(m[i].async, HCCL_SUCCESS, "rank %u: no async error", i);
        cr_expect(strstr(m[i].msg, "HcclBroadcast") && strstr(m[i].msg, "HcclAllReduce"),
                  "rank %u: message does not name both calls: '%s'", i, m[i].msg);
    }
    for (uint32_t i = 0; i < N; i++)
        cr_assert_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
}

Test(comm_threads, plan_cache_reuses_shapes)
{
    int32_t devs[1] = {0};
    HcclComm comm;
    cr_assert_eq(HcclCommInitAll(1, devs, &comm), HCCL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtStream s;
    cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
    void *a, *b;
    cr_assert_eq(aclrtMalloc(&a, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&b, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    uint64_t c0 = HcclExtPlanCompileCount();
    cr_assert_eq(HcclAllReduce(a, b, 100, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_SUCCESS);
    uint64_t c1 = HcclExtPlanCompileCount();
    /* Same shape, other buffers: compiles nothing. */
    cr_assert_eq(HcclAllReduce(b, a, 100, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_SUCCESS);
    uint64_t c2 = HcclExtPlanCompileCount();
    cr_assert_eq(HcclAllReduce(a, b, 101, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_SUCCESS);
    uint64_t c3 = HcclExtPlanCompileCount();
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_expect_eq(c1, c0 + 1);
    cr_expect_eq(c2, c1, "second call of the same shape compiled a plan");
    cr_expect_eq(c3, c2 + 1, "a new count must compile a new plan");
    aclrtFree(a);
    aclrtFree(b);
    aclrtDestroyStream(s);
    cr_assert_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

/* Rank 1 calls AllReduce alone: its wait for rank 0 passes HCCL_EXEC_TIMEOUT (1 s here), the
 * stream fails and the communicator reports HCCL_E_TIMEOUT naming the op. */
Test(comm_threads, lone_rank_times_out)
{
    setenv("HCCL_EXEC_TIMEOUT", "1", 1);
    int32_t devs[2] = {0, 1};
    HcclComm comms[2];
    cr_assert_eq(HcclCommInitAll(2, devs, comms), HCCL_SUCCESS);
    mm_ctx m = {.comm = comms[1], .dev = 1, .rank = 1};
    pthread_t th;
    pthread_create(&th, NULL, mismatch_rank, &m);
    pthread_join(th, NULL);
    cr_expect_eq(m.call, HCCL_SUCCESS);
    cr_expect_neq(m.sync, ACL_SUCCESS, "a lone AllReduce must fail, not hang");
    cr_expect_eq(m.async, HCCL_E_TIMEOUT, "async error %d", m.async);
    cr_expect(strstr(m.msg, "HcclAllReduce") != NULL, "message does not name the op: '%s'", m.msg);
    for (uint32_t i = 0; i < 2; i++)
        cr_assert_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
}
