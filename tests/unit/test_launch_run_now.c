/* Launches the host runs at once (runtime/stream/rt_prog_submit.c, rt_prog_run_now; hal
 * prog_run_now): a small launch on an idle stream, nothing of its communicator in flight, runs to
 * its end on the calling thread instead of going through the stream's queue. One rank's loop runs
 * every launch at once; two ranks (threads, HcclCommInitAll) issue small AllReduces and Broadcasts
 * back to back on three buffer pairs, at once or queued as their peers come, and check every
 * element. Sends larger than an eager box never run at once (the caller would copy them itself).
 * With more ranks than CPUs, launches that cannot run ahead of the ones before them (Broadcasts)
 * run at once, and those that could (out-of-place AllReduces) stay queued. */
#include <criterion/criterion.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/hal_testutil.h"
#include "common/pair_ranks.h"
#include "hal/emu/emu_internal.h"
#include "runtime/stream/rt_launch.h"

#define NR 2
#define COUNT 8
#define CALLS 300
#define QUEUED_CALLS 64 /* behind a hold: fewer than the launches a communicator keeps in flight */
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

/* CALLS out-of-place AllReduces (sum) of pair 0 on n ranks; OUT checked after the synchronize. */
static void ahead_calls(rank_t *r, uint32_t n)
{
    for (int i = 0; i < CALLS; i++)
        cr_assert_eq(HcclAllReduce(r->in[0], r->out[0], COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, r->comm, r->s),
                     HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(r->host, COUNT * sizeof(int32_t), r->out[0], COUNT * sizeof(int32_t),
                             ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (int j = 0; j < COUNT; j++) {
        int32_t want = 0;
        for (uint32_t q = 0; q < n; q++)
            want += pair_ranks_value(0, q, j);
        r->bad += r->host[j] != want;
    }
}

typedef enum call_kind { KIND_SMALL, KIND_BIG, KIND_AHEAD } call_kind;

typedef struct job {
    rank_t *r;
    call_kind kind;
    uint32_t n;
} job;

static void *rank_main(void *arg)
{
    job *jb = arg;
    cr_assert_eq(aclrtSetDevice((int32_t)jb->r->rank), ACL_SUCCESS);
    pair_ranks_fill(jb->r, COUNT);
    if (jb->kind == KIND_BIG)
        big_sends(jb->r);
    else if (jb->kind == KIND_AHEAD)
        ahead_calls(jb->r, jb->n);
    else
        small_calls(jb->r);
    return NULL;
}

/* Programs run at once while n ranks, one thread each, made calls of `kind`. */
static uint64_t runs_now_in(uint32_t n, call_kind kind)
{
    rank_t ranks[COMM_FIXTURE_MAX];
    pair_ranks_open(ranks, n, BIG * sizeof(int32_t));
    job jobs[COMM_FIXTURE_MAX];
    for (uint32_t i = 0; i < n; i++)
        jobs[i] = (job){&ranks[i], kind, n};
    uint64_t before = emu_prog_test_runs_now();
    pair_ranks_run(ranks, n, rank_main, jobs, sizeof *jobs);
    uint64_t ran = emu_prog_test_runs_now() - before;
    pair_ranks_close(ranks, n);
    return ran;
}

/* One more rank than this machine has CPUs; 0 where that is more ranks than the emulated devices
 * (HCCL_EMU_DEVICES) or the fixture opens. */
static uint32_t ranks_past_cpus(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t devices = 0;
    if (cpus <= 0 || aclrtGetDeviceCount(&devices) != ACL_SUCCESS)
        return 0;
    uint32_t n = (uint32_t)cpus + 1;
    return n <= devices && n <= COMM_FIXTURE_MAX ? n : 0;
}

/* Skips a test whose communicator needs one rank more than the CPUs where ranks_past_cpus gave 0. */
#define SKIP_UNLESS_PAST_THE_CPUS(n)                                                                       \
    do {                                                                                                   \
        if (!(n))                                                                                          \
            cr_skip_test("%ld CPUs: one rank more is past the emulated devices (HCCL_EMU_DEVICES) or "   \
                         "this fixture's %d ranks",                                                        \
                         sysconf(_SC_NPROCESSORS_ONLN), COMM_FIXTURE_MAX);                                 \
    } while (0)

/* Both ranks' small calls interleave launches run at once with queued ones (a peer a little late
 * queues the rest of a program, and the next launches go to the queue for a while): every element
 * is still right. How many ran at once depends on how the threads were scheduled: not checked. */
Test(launch_run_now, small_calls_at_two_ranks_stay_right, .timeout = 120)
{
    if (!rt_ranks_fit_cpus(NR))
        cr_skip_test("fewer CPUs than %d ranks: launches go through the stream's queue", NR);
    (void)runs_now_in(NR, KIND_SMALL);
}

/* One rank of its own communicator, its stream, and IN (7 j + 1) and OUT of COUNT int32 each. */
typedef struct one_rank {
    HcclComm comm;
    aclrtStream s;
    int32_t *in, *out;
} one_rank;

static one_rank one_rank_open(void)
{
    int32_t dev = 0, host[COUNT];
    one_rank o;
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(HcclCommInitAll(1, &dev, &o.comm), HCCL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(&o.s), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc((void **)&o.in, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc((void **)&o.out, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    for (int j = 0; j < COUNT; j++)
        host[j] = 7 * j + 1;
    cr_assert_eq(aclrtMemcpy(o.in, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    return o;
}

/* `calls` AllReduces of IN into OUT; returns the programs the HAL checked meanwhile. */
static uint64_t allreduces(const one_rank *o, int calls)
{
    uint64_t checks = emu_prog_test_checks();
    for (int i = 0; i < calls; i++)
        cr_assert_eq(HcclAllReduce(o->in, o->out, COUNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, o->comm, o->s),
                     HCCL_SUCCESS);
    return emu_prog_test_checks() - checks;
}

/* Synchronizes, checks OUT (one rank's sum is its IN) and closes. */
static void one_rank_close(one_rank *o)
{
    int32_t host[COUNT];
    cr_assert_eq(aclrtSynchronizeStream(o->s), ACL_SUCCESS);
    cr_assert_eq(aclrtMemcpy(host, sizeof host, o->out, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (int j = 0; j < COUNT; j++)
        cr_expect_eq(host[j], 7 * j + 1, "element %d is %d", j, host[j]);
    cr_assert_eq(HcclCommDestroy(o->comm), HCCL_SUCCESS);
    aclrtFree(o->in);
    aclrtFree(o->out);
    cr_assert_eq(aclrtDestroyStream(o->s), ACL_SUCCESS);
    aclFinalize();
}

/* One rank waits for nobody: every launch of a loop of small AllReduces on an idle stream runs at
 * once, and its data is there after the synchronize. */
Test(launch_run_now, one_ranks_calls_all_run_at_once, .timeout = 60)
{
    one_rank o = one_rank_open();
    uint64_t before = emu_prog_test_runs_now();
    uint64_t checks = allreduces(&o, CALLS);
    uint64_t ran = emu_prog_test_runs_now() - before;
    cr_expect_eq(ran, CALLS, "%llu of %d launches on an idle stream ran at once", (unsigned long long)ran, CALLS);
    /* the launches reuse one program as it is: the HAL checked it once (rt_prog_submit.c, settle) */
    cr_expect_leq(checks, 1, "%llu programs checked for %d launches of one program", (unsigned long long)checks,
                  CALLS);
    one_rank_close(&o);
}

/* QUEUED_CALLS AllReduces behind a hold of the stream, then the hold released and the stream
 * synchronized; returns the programs the HAL checked meanwhile, *ran the launches run at once. */
static uint64_t held_allreduces(const one_rank *o, uint64_t *ran)
{
    ht_gate g;
    ht_gate_init(&g);
    cr_assert_eq(aclrtLaunchHostFunc(o->s, ht_gate_fn, &g), ACL_SUCCESS);
    uint64_t before = emu_prog_test_runs_now();
    uint64_t checks = allreduces(o, QUEUED_CALLS);
    *ran = emu_prog_test_runs_now() - before;
    ht_gate_open(&g);
    cr_assert_eq(aclrtSynchronizeStream(o->s), ACL_SUCCESS);
    ht_gate_fini(&g);
    return checks;
}

/* Behind a held stream every launch goes to the queue, each in a launch context of its own. A
 * context's program is checked when it is built; the second round of launches reuses the same
 * contexts' programs as they are, and the HAL checks none of them again (HAL prog_launch_checked:
 * before it, every queued launch's program was checked). The data is right after both. */
Test(launch_run_now, queued_launches_check_their_program_once, .timeout = 60)
{
    one_rank o = one_rank_open();
    uint64_t ran = 0;
    uint64_t first = held_allreduces(&o, &ran);
    cr_expect_eq(ran, 0, "%llu launches behind a held stream ran at once", (unsigned long long)ran);
    cr_expect_geq(first, 1, "the first round built no program");
    uint64_t again = held_allreduces(&o, &ran);
    cr_expect_eq(ran, 0, "%llu launches behind a held stream ran at once", (unsigned long long)ran);
    cr_expect_eq(again, 0, "%llu programs checked for %d queued launches that reuse their contexts' programs",
                 (unsigned long long)again, QUEUED_CALLS);
    one_rank_close(&o);
}

Test(launch_run_now, large_sends_are_queued, .timeout = 120)
{
    uint64_t ran = runs_now_in(NR, KIND_BIG);
    cr_expect_eq(ran, 0, "%llu launches of 1 MiB sends ran on the calling thread", (unsigned long long)ran);
}

/* `calls` Broadcasts from rank 0 of pair k's IN (k = 0, 1, 2 in turn) on every rank, by one thread,
 * rank after rank (rank 0, the root, first), each rank's stream synchronized after its calls when
 * `sync_each`, else all at the end. */
static void broadcasts_in_turn(rank_t *ranks, uint32_t n, int calls, bool sync_each)
{
    for (uint32_t i = 0; i < n; i++) {
        rank_t *r = &ranks[i];
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        for (int k = 0; k < calls; k++)
            cr_assert_eq(HcclBroadcast(r->in[k % PAIR_RANKS_PAIRS], COUNT, HCCL_DATA_TYPE_INT32, 0, r->comm, r->s),
                         HCCL_SUCCESS);
        if (sync_each)
            cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    }
    for (uint32_t i = 0; !sync_each && i < n; i++) {
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(ranks[i].s), ACL_SUCCESS);
    }
}

/* More ranks than CPUs: a Broadcast cannot run ahead of the one before it (its root reads the
 * buffer the one before wrote on the others), so it runs at once. The first Broadcast of a run
 * goes full (every rank takes part); the next ones go one-way, so one thread can issue the root's
 * (into the receivers' inboxes: no wait) and then each receiver's (the root's data is there: no
 * wait either), and each runs to its end at once, but for the few launches after the first call's
 * that went to the queue (RT_RUN_NOW_BACKOFF). With the queue kept for every launch past the CPUs,
 * none did. */
Test(launch_run_now, broadcasts_run_at_once_past_the_cpus, .timeout = 120)
{
    uint32_t n = ranks_past_cpus();
    SKIP_UNLESS_PAST_THE_CPUS(n);
    rank_t ranks[COMM_FIXTURE_MAX];
    pair_ranks_open(ranks, n, COUNT * sizeof(int32_t));
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        pair_ranks_fill(&ranks[i], COUNT);
    }
    broadcasts_in_turn(ranks, n, 1, false); /* the run's first call: every rank takes part */
    int calls = CALLS / 10;
    uint64_t before = emu_prog_test_runs_now();
    broadcasts_in_turn(ranks, n, calls, true);
    uint64_t ran = emu_prog_test_runs_now() - before;
    uint32_t least = n * (uint32_t)(calls - RT_RUN_NOW_BACKOFF);
    cr_expect_geq(ran, least, "%llu of %u Broadcasts on %u ranks ran at once, want at least %u",
                  (unsigned long long)ran, n * (uint32_t)calls, n, least);
    for (uint32_t i = 0; i < n; i++) {
        rank_t *r = &ranks[i];
        cr_assert_eq(aclrtSetDevice((int32_t)i), ACL_SUCCESS);
        for (int p = 0; p < PAIR_RANKS_PAIRS; p++) {
            cr_assert_eq(aclrtMemcpy(r->host, COUNT * sizeof(int32_t), r->in[p], COUNT * sizeof(int32_t),
                                     ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
            for (int j = 0; j < COUNT; j++)
                cr_expect_eq(r->host[j], pair_ranks_value(p, 0, j), "rank %u pair %d element %d: %d", i, p, j,
                             r->host[j]);
        }
    }
    pair_ranks_close(ranks, n);
}

/* More ranks than CPUs: an out-of-place AllReduce's sends could pass the launches before it, which
 * the queue lets them do while its peers wait for a CPU: none runs at once, and all are right. */
Test(launch_run_now, allreduces_that_run_ahead_stay_queued_past_the_cpus, .timeout = 120)
{
    uint32_t n = ranks_past_cpus();
    SKIP_UNLESS_PAST_THE_CPUS(n);
    uint64_t ran = runs_now_in(n, KIND_AHEAD);
    cr_expect_eq(ran, 0, "%llu out-of-place AllReduces on %u ranks ran at once", (unsigned long long)ran, n);
}
