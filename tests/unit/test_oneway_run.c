/* Which calls go one-way (runtime/rt_oneway.c, rt_oneway_expect_run): an eager Broadcast or Scatter
 * goes one-way only in a run of such calls, from its second call, or from its first when the run
 * before was longer than one call; anything else (an AllReduce, a Broadcast too large to go
 * one-way) ends the run, and a call of another root goes full and starts a new run (the roots
 * share the inboxes' one-way slots). A lone Broadcast between AllReduces stays the full exchange,
 * as its drain would cost a round trip more. At 2 and 3 ranks, threads of this process
 * (HcclCommInitAll); each call is synchronized and checked, and whether it went one-way is read
 * off the count of one-way calls (rt_comm.oneway_calls) on every rank. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/comm_fixture.h"
#include "runtime/rt_internal.h"

#define MAX_RANKS 3
#define BIG 4096 /* int32: 16 KiB, eager but past the one-way size */

typedef enum { BC, SC, BC_BIG, AR, RD } call_kind;

typedef struct step {
    call_kind kind;
    int oneway; /* expected: 1 one-way, 0 full, -1 not a rooted call */
    uint32_t root;
} step;

/* Root 0: runs of 1, 1, 3 (one-way from the second), then 1 (first, after a run of 3), 1, then 2
 * mixed (Broadcast then Scatter) ended by a Broadcast too large, then 2 again (from the first).
 * Then roots change: a run of root 1 from its first call (after a run of 2), a call of root 0
 * (full) that starts a run of 2, one of root 1 (full) that ends it, and after a run of 1 a lone
 * call of root 1 stays full. Then Reduces (one-way gathers, the other direction): a Reduce of root
 * 1 after its Broadcasts starts a new run (its first call full, its second one-way), and so does
 * a Broadcast of root 1 after them, and a Reduce after that again; after an AllReduce a Reduce goes
 * one-way from the first (the run before was 2 long); a Reduce of root 0 goes full. */
static const step k_steps[] = {
    {BC, 0, 0}, {AR, -1, 0}, {BC, 0, 0}, {AR, -1, 0}, {BC, 0, 0}, {BC, 1, 0}, {BC, 1, 0}, {AR, -1, 0},
    {BC, 1, 0}, {AR, -1, 0}, {BC, 0, 0}, {SC, 1, 0}, {BC_BIG, 0, 0}, {BC, 1, 0}, {SC, 1, 0}, {AR, -1, 0},
    {BC, 1, 1}, {BC, 1, 1}, {BC, 0, 0}, {SC, 1, 0}, {BC, 0, 1}, {AR, -1, 0}, {BC, 0, 1}, {SC, 1, 1},
    {RD, 0, 1}, {RD, 1, 1}, {RD, 1, 1}, {BC, 0, 1}, {BC, 1, 1}, {RD, 0, 1}, {RD, 1, 1}, {AR, -1, 0},
    {RD, 1, 1}, {RD, 0, 0}, {RD, 1, 0},
};
#define NSTEPS (sizeof k_steps / sizeof k_steps[0])

typedef struct rank_t {
    HcclComm comm;
    uint32_t rank, n;
    aclrtStream s;
    int32_t *buf, *out;
    int32_t host[BIG];
    int went[NSTEPS]; /* what each call did, as this rank saw it */
    int bad;
} rank_t;

static int32_t value(size_t call, uint64_t j)
{
    return (int32_t)(call * 1009u + j);
}

static void put(rank_t *r, size_t call, uint64_t count)
{
    for (uint64_t j = 0; j < count; j++)
        r->host[j] = r->rank == k_steps[call].root ? value(call, j) : -1;
    cr_assert_eq(aclrtMemcpy(r->buf, count * 4, r->host, count * 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
}

/* The receivers' data: a Broadcast's whole buffer, a Scatter's block of this rank. */
static void check(rank_t *r, size_t call, const int32_t *dev, uint64_t count, uint64_t first)
{
    cr_assert_eq(aclrtMemcpy(r->host, count * 4, dev, count * 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (uint64_t j = 0; j < count; j++)
        r->bad += r->host[j] != value(call, first + j);
}

/* A Reduce's root: the root's values plus -1 from every other rank. */
static void check_sum(rank_t *r, size_t call)
{
    cr_assert_eq(aclrtMemcpy(r->host, 8, r->out, 8, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (uint64_t j = 0; j < 2; j++)
        r->bad += r->host[j] != value(call, j) - (int32_t)(r->n - 1);
}

static HcclResult issue(rank_t *r, size_t i)
{
    uint32_t root = k_steps[i].root;
    switch (k_steps[i].kind) {
    case BC: put(r, i, 2); return HcclBroadcast(r->buf, 2, HCCL_DATA_TYPE_INT32, root, r->comm, r->s);
    case BC_BIG: put(r, i, BIG); return HcclBroadcast(r->buf, BIG, HCCL_DATA_TYPE_INT32, root, r->comm, r->s);
    case SC: put(r, i, 2 * r->n); return HcclScatter(r->buf, r->out, 2, HCCL_DATA_TYPE_INT32, root, r->comm, r->s);
    case AR: put(r, i, 2); return HcclAllReduce(r->buf, r->out, 2, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, r->comm, r->s);
    case RD:
        put(r, i, 2);
        return HcclReduce(r->buf, r->out, 2, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, root, r->comm, r->s);
    }
    return HCCL_E_PARA;
}

static void *rank_main(void *arg)
{
    rank_t *r = arg;
    cr_assert_eq(aclrtSetDevice((int32_t)r->rank), ACL_SUCCESS);
    rt_comm *c;
    cr_assert_eq(rt_comm_get(r->comm, "test", &c), HCCL_SUCCESS);
    for (size_t i = 0; i < NSTEPS; i++) {
        uint64_t before = c->oneway_calls;
        cr_assert_eq(issue(r, i), HCCL_SUCCESS, "call %zu", i);
        cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS, "call %zu", i);
        r->went[i] = k_steps[i].kind == AR ? -1 : (int)(c->oneway_calls - before);
        if (k_steps[i].kind == BC || k_steps[i].kind == BC_BIG)
            check(r, i, r->buf, k_steps[i].kind == BC ? 2 : BIG, 0);
        else if (k_steps[i].kind == SC)
            check(r, i, r->out, 2, 2 * r->rank);
        else if (k_steps[i].kind == RD && r->rank == k_steps[i].root)
            check_sum(r, i);
    }
    return NULL;
}

static void run_steps(uint32_t n)
{
    rank_t *ranks = calloc(n, sizeof *ranks);
    cr_assert_not_null(ranks);
    HcclComm comms[MAX_RANKS];
    comm_fixture_init_all(n, comms);
    pthread_t th[MAX_RANKS];
    for (uint32_t i = 0; i < n; i++) {
        rank_t *r = &ranks[i];
        r->comm = comms[i], r->rank = i, r->n = n;
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        cr_assert_eq(aclrtCreateStream(&r->s), ACL_SUCCESS);
        cr_assert_eq(aclrtMalloc((void **)&r->buf, BIG * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        cr_assert_eq(aclrtMalloc((void **)&r->out, BIG * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    }
    rt_comm *c0;
    cr_assert_eq(rt_comm_get(comms[0], "test", &c0), HCCL_SUCCESS);
    if (!c0->oneway)
        cr_skip_test("one-way calls are off here (HCCL_EAGER_ONEWAY=0, or no header mode)");
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, rank_main, &ranks[i]), 0);
    for (uint32_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    for (uint32_t i = 0; i < n; i++) {
        cr_expect_eq(ranks[i].bad, 0, "rank %u: %d wrong elements", i, ranks[i].bad);
        for (size_t k = 0; k < NSTEPS; k++)
            cr_expect_eq(ranks[i].went[k], k_steps[k].oneway, "rank %u, call %zu: one-way %d, expected %d", i, k,
                         ranks[i].went[k], k_steps[k].oneway);
    }
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        cr_assert_eq(HcclCommDestroy(ranks[i].comm), HCCL_SUCCESS);
        aclrtFree(ranks[i].buf);
        aclrtFree(ranks[i].out);
        aclrtDestroyStream(ranks[i].s);
    }
    aclFinalize();
    free(ranks);
}

Test(oneway_run, lone_calls_stay_full_n3, .timeout = 120) { run_steps(3); }
Test(oneway_run, lone_calls_stay_full_n2, .timeout = 120) { run_steps(2); }
