/* The ring of a communicator's pending launches (runtime/stream/rt_launch_pending.c): oldest first
 * through wrap-around and growth, and, through the public API, more point-to-point launches behind
 * a held stream than its first capacity (they are not throttled), every one delivered in order. */
#include <criterion/criterion.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/comm_fixture.h"
#include "runtime/stream/rt_launch.h"

#define LAUNCHES 700 /* past two doublings of the first ring (2 * RT_LAUNCH_INFLIGHT_MAX) */

static void push(rt_comm *c, rt_launch_ctx *ctx)
{
    cr_assert_eq(rt_pending_reserve(c), HCCL_SUCCESS);
    rt_pending_push(c, ctx);
}

/* Launch i carries seq i + 1: the ring must hold seqs first..last in order, oldest at 0. */
static void expect_run(const rt_comm *c, uint64_t first, uint64_t last)
{
    cr_assert_eq(c->npending, last - first + 1);
    for (uint32_t i = 0; i < c->npending; i++)
        cr_assert_eq(rt_pending_at(c, i)->seq, first + i, "at %u: seq %llu, not %llu", i,
                     (unsigned long long)rt_pending_at(c, i)->seq, (unsigned long long)(first + i));
    cr_assert_eq(rt_pending_newest(c)->seq, last);
    cr_assert_null(rt_pending_at(c, c->npending), "past the newest");
}

Test(launch_pending, oldest_first_through_wrap_and_growth)
{
    static rt_launch_ctx ctx[LAUNCHES];
    rt_comm c;
    memset(&c, 0, sizeof c);
    for (uint32_t i = 0; i < LAUNCHES; i++)
        ctx[i].seq = i + 1;
    cr_assert_null(rt_pending_newest(&c), "an empty ring has no newest");
    cr_assert_null(rt_pending_pop(&c));
    /* Fill part of the first ring and take most of it back: the oldest is now far from slot 0, so
     * the next pushes wrap around, and the growth after them must unroll the ring in order. */
    uint32_t pushed = 0, popped = 0;
    for (; pushed < 200; pushed++)
        push(&c, &ctx[pushed]);
    for (; popped < 150; popped++)
        cr_assert_eq(rt_pending_pop(&c)->seq, popped + 1);
    uint32_t first_cap = c.pending_cap;
    for (; pushed < LAUNCHES; pushed++) {
        push(&c, &ctx[pushed]);
        cr_assert_eq(rt_pending_at(&c, 0)->seq, popped + 1, "the oldest moved at push %u", pushed);
    }
    cr_assert_gt(c.pending_cap, first_cap, "the ring never grew");
    expect_run(&c, popped + 1, LAUNCHES);
    while (c.npending)
        cr_assert_eq(rt_pending_pop(&c)->seq, ++popped);
    cr_assert_eq(popped, LAUNCHES);
    rt_pending_free(&c);
    cr_assert_null(c.pending);
}

#define NRANKS 2
#define COUNT 5 /* int32 elements a message */

static sem_t g_release[NRANKS];

static void hold_fn(void *arg)
{
    sem_t *release = arg;
    while (sem_wait(release) != 0)
        ;
}

static int32_t value(int k, int j)
{
    return k * 7919 + j;
}

/* Rank 0 sends LAUNCHES messages to rank 1, which receives them, each into its own place; both
 * streams held until every call is issued, so all of them are pending at once. */
Test(launch_pending, sends_behind_a_hold_past_the_first_ring, .timeout = 120)
{
    HcclComm comms[NRANKS];
    comm_fixture_init_all(NRANKS, comms);
    size_t msg = COUNT * sizeof(int32_t), all = LAUNCHES * msg;
    int32_t *host = malloc(all);
    cr_assert_not_null(host);
    for (int k = 0; k < LAUNCHES; k++)
        for (int j = 0; j < COUNT; j++)
            host[k * COUNT + j] = value(k, j);
    aclrtStream s[NRANKS];
    int32_t *buf[NRANKS];
    for (uint32_t r = 0; r < NRANKS; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtCreateStream(&s[r]), ACL_SUCCESS);
        cr_assert_eq(aclrtMalloc((void **)&buf[r], all, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        cr_assert_eq(aclrtMemset(buf[r], all, 0, all), ACL_SUCCESS);
        sem_init(&g_release[r], 0, 0);
        cr_assert_eq(aclrtLaunchHostFunc(s[r], hold_fn, &g_release[r]), ACL_SUCCESS);
    }
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(buf[0], all, host, all, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    for (int k = 0; k < LAUNCHES; k++)
        cr_assert_eq(HcclSend(buf[0] + k * COUNT, COUNT, HCCL_DATA_TYPE_INT32, 1, comms[0], s[0]), HCCL_SUCCESS,
                     "send %d", k);
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    for (int k = 0; k < LAUNCHES; k++)
        cr_assert_eq(HcclRecv(buf[1] + k * COUNT, COUNT, HCCL_DATA_TYPE_INT32, 0, comms[1], s[1]), HCCL_SUCCESS,
                     "recv %d", k);
    for (uint32_t r = 0; r < NRANKS; r++)
        sem_post(&g_release[r]);
    for (uint32_t r = 0; r < NRANKS; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(s[r]), ACL_SUCCESS, "rank %u", r);
    }
    memset(host, 0, all);
    cr_assert_eq(aclrtMemcpy(host, all, buf[1], all, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (int k = 0; k < LAUNCHES; k++)
        for (int j = 0; j < COUNT; j++)
            cr_assert_eq(host[k * COUNT + j], value(k, j), "message %d element %d: %d", k, j, host[k * COUNT + j]);
    for (uint32_t r = 0; r < NRANKS; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtFree(buf[r]), ACL_SUCCESS);
        cr_assert_eq(aclrtDestroyStream(s[r]), ACL_SUCCESS);
        cr_assert_eq(HcclCommDestroy(comms[r]), HCCL_SUCCESS);
        sem_destroy(&g_release[r]);
    }
    free(host);
    aclFinalize();
}
