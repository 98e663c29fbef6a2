/* Launches the host runs at once (runtime/stream/rt_prog_submit.c, rt_prog_run_now; hal
 * prog_run_now): where the ranks of a server each have a CPU, a small launch on an idle stream,
 * nothing of its communicator in flight, runs to its end on the calling thread instead of going
 * through the stream's queue. Two ranks (threads, HcclCommInitAll) issue small AllReduces and
 * Broadcasts back to back on three buffer pairs and check every element; some of those launches
 * ran at once. Sends larger than an eager box never do (the caller would copy them itself). */
#include <criterion/criterion.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/pair_ranks.h"
#include "hal/emu/emu_internal.h"
#include "runtime/stream/rt_launch.h"

#define NR 2
#define COUNT 8
#define CALLS 300
#define BIG (256 * 1024) /* int32 elements: 1 MiB, past an eager box */

typedef pair_rank rank_t;

/* AllReduce (sum) of pair p, then a Broadcast of its OUT from rank p % NR, CALLS / 2 times each. */
static void small_calls(rank_t *r)
{
    for (int i = 0; i < CALLS / 2; i++) {
        int p = i % PAIR_RANKS_PAIRS;
        cr_assert_eq(HcclAllReduce(r->in[p], r->out[p], COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, r->comm, r->s),
                     HCCL_SUCCESS);
        cr_assert_eq(HcclBroadcast(r->out[p], COUNT, HCCL_DATA_TYPE_INT32, (uint32_t)p % NR, r->comm, r->s),
                     HCCL_SUCCESS);
    }
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    for (int p = 0; p < PAIR_RANKS_PAIRS; p++) {
        cr_assert_eq(aclrtMemcpy(r->host, COUNT * sizeof(int32_t), r->out[p], COUNT * sizeof(int32_t),
                                 ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        for (int j = 0; j < COUNT && r->bad < 3; j++) {
            int32_t want = 0;
            for (uint32_t q = 0; q < NR; q++)
                want += pair_ranks_value(p, q, j);
            if (r->host[j] != want) {
                cr_log_error("rank %u pair %d: element %d is %d, want %d", r->rank, p, j, r->host[j], want);
                r->bad++;
            }
        }
    }
}

/* A ring of 1 MiB sends: rank r sends pair 0's IN to r + 1 and receives into pair 0's OUT. */
static void big_sends(rank_t *r)
{
    for (int i = 0; i < 4; i++) {
        HcclSendRecvItem it[2] = {{HCCL_SEND, r->in[0], BIG, HCCL_DATA_TYPE_INT32, (r->rank + 1) % NR},
                                  {HCCL_RECV, r->out[0], BIG, HCCL_DATA_TYPE_INT32, (r->rank + NR - 1) % NR}};
        cr_assert_eq(HcclBatchSendRecv(it, 2, r->comm, r->s), HCCL_SUCCESS);
    }
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
}

typedef struct job {
    rank_t *r;
    bool big;
} job;

static void *rank_main(void *arg)
{
    job *jb = arg;
    cr_assert_eq(aclrtSetDevice((int32_t)jb->r->rank), ACL_SUCCESS);
    pair_ranks_fill(jb->r, COUNT);
    if (jb->big)
        big_sends(jb->r);
    else
        small_calls(jb->r);
    return NULL;
}

/* Programs run at once while both ranks ran `big` or small calls. */
static uint64_t runs_now_in(bool big)
{
    rank_t ranks[NR];
    pair_ranks_open(ranks, NR, BIG * sizeof(int32_t));
    job jobs[NR];
    for (uint32_t i = 0; i < NR; i++)
        jobs[i] = (job){&ranks[i], big};
    uint64_t before = emu_prog_test_runs_now();
    pair_ranks_run(ranks, NR, rank_main, jobs, sizeof *jobs);
    uint64_t ran = emu_prog_test_runs_now() - before;
    pair_ranks_close(ranks, NR);
    return ran;
}

Test(launch_run_now, small_calls_run_on_the_calling_thread, .timeout = 120)
{
    if (!rt_ranks_fit_cpus(NR))
        cr_skip_test("fewer CPUs than %d ranks: launches go through the stream's queue", NR);
    uint64_t ran = runs_now_in(false);
    cr_expect_gt(ran, 0, "none of %d small launches ran at once", 2 * NR * CALLS / 2);
}

Test(launch_run_now, large_sends_are_queued, .timeout = 120)
{
    uint64_t ran = runs_now_in(true);
    cr_expect_eq(ran, 0, "%llu launches of 1 MiB sends ran on the calling thread", (unsigned long long)ran);
}
