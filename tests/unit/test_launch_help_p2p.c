/* Point-to-point launches get the host's help too (rt_p2p.c, rt_launch_help): a loop of Send/Recv
 * calls then recycles its launch contexts instead of piling them up in flight. Without it every
 * call of such a loop allocated a fresh context (8 B Send/Recv pairs at 2 ranks cost 22-42 us a call
 * in page faults; docs/perf-history.md, twenty-eighth pass). And, as for collectives (test_launch_help),
 * the help never blocks a caller: one thread may issue a rank's sends far ahead of the receives it
 * issues later for the peer. */
#include <criterion/criterion.h>

#include "common/pair_ranks.h"
#include "runtime/rt_internal.h"
#include "runtime/stream/rt_launch.h"

#define NR 2
#define COUNT 5 /* int32 elements */
#define LOOP 600
#define AHEAD ((int)(3 * RT_LAUNCH_HELP_AT)) /* one thread: rank 0's sends before rank 1's receives */

/* After a synchronize: every OUT holds what the peer's IN of that pair held. */
static void check(pair_rank *r)
{
    for (int p = 0; p < PAIR_RANKS_PAIRS; p++) {
        int32_t h[COUNT];
        cr_assert_eq(aclrtMemcpy(h, sizeof h, r->out[p], sizeof h, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        for (int j = 0; j < COUNT && r->bad < 3; j++) {
            int32_t want = pair_ranks_value(p, 1 - r->rank, j);
            if (h[j] != want) {
                cr_log_error("rank %u pair %d element %d: %d, want %d", r->rank, p, j, h[j], want);
                r->bad++;
            }
        }
    }
}

/* Both directions at once (HcclBatchSendRecv) on pair p. */
static void exchange(pair_rank *r, int p)
{
    HcclSendRecvItem it[2] = {{HCCL_SEND, r->in[p], COUNT, HCCL_DATA_TYPE_INT32, 1 - r->rank},
                              {HCCL_RECV, r->out[p], COUNT, HCCL_DATA_TYPE_INT32, 1 - r->rank}};
    cr_assert_eq(HcclBatchSendRecv(it, 2, r->comm, r->s), HCCL_SUCCESS);
}

/* The two threads issue in steps of STEP calls (no synchronize): neither gets more than a step
 * ahead of the other, whoever the machine's other work deschedules. Without the steps, a thread
 * whose peer lost its CPU issued up to the in-flight limit before the throttle stopped it (472
 * contexts for 600 calls under ASan beside another test), help or none: its launches waited for
 * the peer's. */
#define STEP 8
static pthread_barrier_t g_step;

static void *loop_main(void *arg)
{
    pair_rank *r = *(pair_rank **)arg;
    cr_assert_eq(aclrtSetDevice((int32_t)r->rank), ACL_SUCCESS);
    pair_ranks_fill(r, COUNT);
    for (int i = 0; i < LOOP; i++) {
        if (i % STEP == 0)
            pthread_barrier_wait(&g_step);
        exchange(r, i % PAIR_RANKS_PAIRS);
    }
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    check(r);
    return NULL;
}

/* Each rank a thread, LOOP exchanges back to back, one synchronize: the contexts come back to the
 * pool warmed at init. Without the help each rank ran about 0.85 allocations a call. */
Test(launch_help_p2p, a_loop_recycles_its_contexts, .timeout = 120)
{
    pair_rank ranks[NR];
    pair_ranks_open(ranks, NR, COUNT * sizeof(int32_t));
    uint64_t before = rt_launch_ctx_alloc_count();
    pair_rank *jobs[NR] = {&ranks[0], &ranks[1]};
    cr_assert_eq(pthread_barrier_init(&g_step, NULL, NR), 0);
    pair_ranks_run(ranks, NR, loop_main, jobs, sizeof *jobs);
    pthread_barrier_destroy(&g_step);
    uint64_t allocs = rt_launch_ctx_alloc_count() - before;
    cr_expect_lt(allocs, LOOP / 4, "%llu launch contexts allocated for %d exchanges per rank",
                 (unsigned long long)allocs, LOOP);
    pair_ranks_close(ranks, NR);
}

/* One thread: rank 0's AHEAD sends, then rank 1's AHEAD receives (pair 0). Helping rank 0 meets
 * waits that only rank 1's receives, issued later by this thread, satisfy: it must leave them. */
Test(launch_help_p2p, one_thread_sends_ahead_of_the_receives, .timeout = 120)
{
    pair_rank ranks[NR];
    pair_ranks_open(ranks, NR, COUNT * sizeof(int32_t));
    for (uint32_t r = 0; r < NR; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        pair_ranks_fill(&ranks[r], COUNT);
    }
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    for (int k = 0; k < AHEAD; k++)
        cr_assert_eq(HcclSend(ranks[0].in[0], COUNT, HCCL_DATA_TYPE_INT32, 1, ranks[0].comm, ranks[0].s),
                     HCCL_SUCCESS, "send %d", k);
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    for (int k = 0; k < AHEAD; k++)
        cr_assert_eq(HcclRecv(ranks[1].out[0], COUNT, HCCL_DATA_TYPE_INT32, 0, ranks[1].comm, ranks[1].s),
                     HCCL_SUCCESS, "receive %d", k);
    for (uint32_t r = 0; r < NR; r++) {
        cr_assert_eq(aclrtSetDevice((int32_t)r), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(ranks[r].s), ACL_SUCCESS, "rank %u", r);
    }
    int32_t h[COUNT];
    cr_assert_eq(aclrtMemcpy(h, sizeof h, ranks[1].out[0], sizeof h, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (int j = 0; j < COUNT; j++)
        cr_expect_eq(h[j], pair_ranks_value(0, 0, j), "element %d: %d", j, h[j]);
    pair_ranks_close(ranks, NR);
}
