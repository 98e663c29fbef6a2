/* From RT_LAUNCH_HELP_AT launches in flight (RT_LAUNCH_HELP_EARLY where the ranks fit the CPUs,
 * whatever the newest launch: rt_launch_help_from, checked first) the host runs its older
 * launches itself (rt_launch.c, help; hal event_help). That must never block a caller where a
 * device queue would not. One thread drives both ranks of a communicator (HcclCommInitAll), as
 * single-process programs do:
 *   - rank 0's calls run ahead of rank 1's by more than the threshold, so helping rank 0 meets
 *     waits that only rank 1's calls, issued later by the same thread, can satisfy;
 *   - calls queued behind a host function that holds each stream until this thread releases it.
 * Both end with every call's sums right. A helper that slept in a peer's wait, or ran the hold,
 * would hang here (the timeout fails the test). */
#include <criterion/criterion.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/comm_fixture.h"
#include "runtime/stream/rt_launch.h"

#define NRANKS 2
#define CALLS ((int)(3 * RT_LAUNCH_HELP_AT)) /* per rank, back to back */
#define COUNT 7                       /* int32 elements: eager */

typedef struct rank_t {
    HcclComm comm;
    aclrtStream s;
    int32_t *in[CALLS], *out[CALLS];
} rank_t;

/* A communicator as rt_launch_help_from sees it: n ranks, the last `remote` of them on other
 * servers, and a newest pending launch of a plan that goes one-way or not (none: no launch). */
typedef struct policy_comm {
    rt_comm c;
    algo_plan plan;
    rt_launch_ctx newest;
} policy_comm;

static uint32_t help_from(policy_comm *p, uint32_t n, uint32_t remote, int newest_oneway)
{
    memset(p, 0, sizeof *p);
    p->c.nranks = n;
    p->c.peers = calloc(n, sizeof *p->c.peers);
    cr_assert_not_null(p->c.peers);
    for (uint32_t q = n - remote; q < n; q++)
        p->c.peers[q].remote = true;
    rt_launch_help_setup(&p->c);
    if (newest_oneway >= 0) {
        p->plan.oneway = newest_oneway;
        p->newest.plan = &p->plan;
        cr_assert_eq(rt_pending_reserve(&p->c), HCCL_SUCCESS);
        rt_pending_push(&p->c, &p->newest);
    }
    uint32_t from = rt_launch_help_from(&p->c);
    rt_pending_free(&p->c);
    free(p->c.peers);
    return from;
}

Test(launch_help, early_where_waits_are_short)
{
    uint32_t cpus = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
    policy_comm p;
    /* As many ranks here as CPUs: early, whatever the newest launch. */
    cr_expect_eq(help_from(&p, cpus, 0, -1), RT_LAUNCH_HELP_EARLY);
    cr_expect_eq(help_from(&p, cpus, 0, 0), RT_LAUNCH_HELP_EARLY);
    cr_expect_eq(help_from(&p, cpus, 0, 1), RT_LAUNCH_HELP_EARLY);
    /* One more here: never early, not even after a one-way launch (batched helps cost less). */
    cr_expect_eq(help_from(&p, cpus + 1, 0, -1), RT_LAUNCH_HELP_AT);
    cr_expect_eq(help_from(&p, cpus + 1, 0, 0), RT_LAUNCH_HELP_AT);
    cr_expect_eq(help_from(&p, cpus + 1, 0, 1), RT_LAUNCH_HELP_AT);
    /* Ranks on other servers take no CPU of this one. */
    cr_expect_eq(help_from(&p, cpus + 3, 3, 0), RT_LAUNCH_HELP_EARLY);
    cr_expect_eq(help_from(&p, cpus + 3, 2, 0), RT_LAUNCH_HELP_AT);
}

static int32_t value(int call, uint32_t rank, int j)
{
    return call * 1009 + (int32_t)rank * 31 + j;
}

static void setup(rank_t *ranks)
{
    HcclComm comms[NRANKS];
    comm_fixture_init_all(NRANKS, comms);
    size_t bytes = COUNT * sizeof(int32_t);
    for (uint32_t r = 0; r < NRANKS; r++) {
        rank_t *rk = &ranks[r];
        rk->comm = comms[r];
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtCreateStream(&rk->s), ACL_SUCCESS);
        for (int k = 0; k < CALLS; k++) {
            int32_t h[COUNT];
            for (int j = 0; j < COUNT; j++)
                h[j] = value(k, r, j);
            cr_assert_eq(aclrtMalloc((void **)&rk->in[k], bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
            cr_assert_eq(aclrtMalloc((void **)&rk->out[k], bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
            cr_assert_eq(aclrtMemcpy(rk->in[k], bytes, h, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
        }
    }
}

/* Every call of rank r, back to back on its stream. */
static void issue_all(rank_t *ranks, uint32_t r)
{
    rank_t *rk = &ranks[r];
    cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
    for (int k = 0; k < CALLS; k++)
        cr_assert_eq(HcclAllReduce(rk->in[k], rk->out[k], COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, rk->comm,
                                   rk->s),
                     HCCL_SUCCESS, "rank %u call %d", r, k);
}

static void sync_and_check(rank_t *ranks)
{
    size_t bytes = COUNT * sizeof(int32_t);
    for (uint32_t r = 0; r < NRANKS; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(ranks[r].s), ACL_SUCCESS, "rank %u", r);
        for (int k = 0; k < CALLS; k++) {
            int32_t h[COUNT];
            cr_assert_eq(aclrtMemcpy(h, bytes, ranks[r].out[k], bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
            for (int j = 0; j < COUNT; j++)
                cr_assert_eq(h[j], value(k, 0, j) + value(k, 1, j), "rank %u call %d element %d: %d", r, k, j, h[j]);
        }
    }
}

static void teardown(rank_t *ranks)
{
    for (uint32_t r = 0; r < NRANKS; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        for (int k = 0; k < CALLS; k++) {
            cr_assert_eq(aclrtFree(ranks[r].in[k]), ACL_SUCCESS);
            cr_assert_eq(aclrtFree(ranks[r].out[k]), ACL_SUCCESS);
        }
        cr_assert_eq(aclrtDestroyStream(ranks[r].s), ACL_SUCCESS);
        cr_assert_eq(HcclCommDestroy(ranks[r].comm), HCCL_SUCCESS);
    }
    aclFinalize();
}

Test(launch_help, one_rank_runs_ahead_on_one_thread, .timeout = 120)
{
    static rank_t ranks[NRANKS];
    setup(ranks);
    issue_all(ranks, 0); /* its waits need rank 1's calls, not issued yet */
    issue_all(ranks, 1);
    sync_and_check(ranks);
    teardown(ranks);
}

static sem_t g_release[NRANKS];

static void hold_fn(void *arg)
{
    sem_t *release = arg;
    while (sem_wait(release) != 0)
        ;
}

Test(launch_help, calls_behind_holds_this_thread_releases, .timeout = 120)
{
    static rank_t ranks[NRANKS];
    setup(ranks);
    for (uint32_t r = 0; r < NRANKS; r++) {
        sem_init(&g_release[r], 0, 0);
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtLaunchHostFunc(ranks[r].s, hold_fn, &g_release[r]), ACL_SUCCESS);
    }
    issue_all(ranks, 0);
    issue_all(ranks, 1);
    for (uint32_t r = 0; r < NRANKS; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
        cr_assert_eq(aclrtStreamQuery(ranks[r].s, &st), ACL_SUCCESS);
        cr_assert_eq(st, ACL_STREAM_STATUS_NOT_READY, "rank %u ran past its hold", r);
        sem_post(&g_release[r]);
    }
    sync_and_check(ranks);
    for (uint32_t r = 0; r < NRANKS; r++)
        sem_destroy(&g_release[r]);
    teardown(ranks);
}
