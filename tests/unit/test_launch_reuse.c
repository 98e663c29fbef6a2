/* What the host saves per launch must never change a result: a pooled launch context reuses the
 * program it built for the same plan (rt_prog.c) across other buffers, in-place calls, the other
 * inbox slot (seq parity), p2p launches in between and plan evictions, and so does a p2p
 * launch's; rt_check_buffer's cache of good buffers (rt_buf_cache.c) forgets a buffer once it is
 * freed and never stretches a buffer or hands it to another device. Ranks are threads of this
 * process (HcclCommInitAll), so the process-wide build counter (rt_prog_build_count) sees every
 * rank. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/pair_ranks.h"
#include "runtime/rt_internal.h"

#define NRANKS 2
#define PAIRS PAIR_RANKS_PAIRS /* buffer pairs a rank cycles through */
#define SMALL 7         /* eager */
#define BIG 70001       /* 280 KB of int32: a mesh plan */
#define GUARD 16        /* elements after count that must keep their sentinel */
#define SENTINEL (-77)

typedef pair_rank rank_t;

static int32_t value(int call, uint32_t rank, uint64_t j)
{
    return (int32_t)((uint32_t)call * 131u + rank * 17u + (uint32_t)(j % 1000));
}

static void put(void *dev, const void *host, size_t bytes)
{
    cr_assert_eq(aclrtMemcpy(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
}

typedef struct op_t {
    int call, p;
    uint64_t count;
    bool in_place;
} op_t;

static int32_t *out_of(rank_t *r, const op_t *o)
{
    return o->in_place ? r->in[o->p] : r->out[o->p];
}

/* Inputs of an AllReduce (sum) of count elements on pair p, sentinels in the GUARD elements after
 * count (and in OUT), then the call; nothing is synchronized. */
static void issue(rank_t *r, const op_t *o)
{
    size_t bytes = (o->count + GUARD) * sizeof(int32_t);
    int32_t *h = r->host;
    for (uint64_t j = 0; j < o->count + GUARD; j++)
        h[j] = j < o->count ? value(o->call, r->rank, j) : SENTINEL;
    put(r->in[o->p], h, bytes);
    if (!o->in_place) {
        for (uint64_t j = 0; j < o->count + GUARD; j++)
            h[j] = SENTINEL;
        put(r->out[o->p], h, bytes);
    }
    cr_assert_eq(HcclAllReduce(r->in[o->p], out_of(r, o), o->count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
                               r->comm, r->s), HCCL_SUCCESS);
    r->calls++;
}

/* After a synchronize: the sums, and the GUARD elements untouched. */
static void check(rank_t *r, const op_t *o)
{
    size_t bytes = (o->count + GUARD) * sizeof(int32_t);
    int32_t *h = r->host;
    cr_assert_eq(aclrtMemcpy(h, bytes, out_of(r, o), bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (uint64_t j = 0; j < o->count + GUARD && r->bad < 3; j++) {
        int32_t want = j < o->count ? 0 : SENTINEL;
        for (uint32_t q = 0; j < o->count && q < NRANKS; q++)
            want += value(o->call, q, j);
        if (h[j] != want) {
            cr_log_error("rank %u call %d (pair %d, count %llu, %s): element %llu is %d, want %d", r->rank, o->call,
                         o->p, (unsigned long long)o->count, o->in_place ? "in place" : "out of place",
                         (unsigned long long)j, h[j], want);
            r->bad++;
        }
    }
}

static void allreduce(rank_t *r, int call, int p, uint64_t count, bool in_place)
{
    op_t o = {call, p, count, in_place};
    issue(r, &o);
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    check(r, &o);
}

/* Rank 0 sends SMALL elements of pair p's IN to rank 1's OUT: a p2p launch takes a pooled context
 * and builds its own program in it. */
static void p2p(rank_t *r, int p)
{
    if (r->rank == 0)
        cr_assert_eq(HcclSend(r->in[p], SMALL, HCCL_DATA_TYPE_INT32, 1, r->comm, r->s), HCCL_SUCCESS);
    else
        cr_assert_eq(HcclRecv(r->out[p], SMALL, HCCL_DATA_TYPE_INT32, 0, r->comm, r->s), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
}

/* BURST calls of one shape issued back to back (no synchronize), cycling the pairs, out of place:
 * every call on pair p sums the same inputs (call number p), so each OUT is checked once at the
 * end. Most of them take a context that never ran the plan while the call before is in flight.
 * Eager, then mesh (whose descriptors reach peers' buffers through the context's bindings). */
#define BURST 100
static void burst(rank_t *r, uint64_t count)
{
    op_t ops[PAIRS];
    for (int p = 0; p < PAIRS; p++) {
        ops[p] = (op_t){p, p, count, false};
        issue(r, &ops[p]);
    }
    for (int i = PAIRS; i < BURST; i++)
        cr_assert_eq(HcclAllReduce(r->in[i % PAIRS], r->out[i % PAIRS], count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
                                   r->comm, r->s), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    for (int p = 0; p < PAIRS; p++)
        check(r, &ops[p]);
}

/* p2p on pair p: `count` elements of IN to the peer and to itself, the peer's received into OUT
 * and its own right after. Each pair's IN holds its own values (p2p_fill), so a launch that sent
 * or received through the buffers of the call its program was built for leaves other pairs' OUT
 * wrong. */
#define P2P_DIRECT (BIG / 2 - GUARD) /* 140 KB: past the eager limit, two fit one OUT */
static void p2p_fill(rank_t *r, int p, uint64_t count)
{
    int32_t *h = r->host;
    for (uint64_t j = 0; j < count; j++)
        h[j] = value(p, r->rank, j);
    put(r->in[p], h, count * sizeof *h);
    for (uint64_t j = 0; j < 2 * count + GUARD; j++)
        h[j] = SENTINEL;
    put(r->out[p], h, (2 * count + GUARD) * sizeof *h);
}

static void p2p_issue(rank_t *r, int p, uint64_t count)
{
    uint32_t peer = 1 - r->rank;
    HcclSendRecvItem items[4] = {
        {HCCL_SEND, r->in[p], count, HCCL_DATA_TYPE_INT32, peer},
        {HCCL_RECV, r->out[p], count, HCCL_DATA_TYPE_INT32, peer},
        {HCCL_SEND, r->in[p], count, HCCL_DATA_TYPE_INT32, r->rank},
        {HCCL_RECV, r->out[p] + count, count, HCCL_DATA_TYPE_INT32, r->rank},
    };
    cr_assert_eq(HcclBatchSendRecv(items, 4, r->comm, r->s), HCCL_SUCCESS);
}

/* After a synchronize: the peer's values, then this rank's, then the sentinels. */
static void p2p_check(rank_t *r, int p, uint64_t count)
{
    uint32_t peer = 1 - r->rank;
    int32_t *h = r->host;
    size_t bytes = (2 * count + GUARD) * sizeof *h;
    cr_assert_eq(aclrtMemcpy(h, bytes, r->out[p], bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (uint64_t j = 0; j < 2 * count + GUARD && r->bad < 3; j++) {
        int32_t want = j < count ? value(p, peer, j) : j < 2 * count ? value(p, r->rank, j - count) : SENTINEL;
        if (h[j] != want) {
            cr_log_error("rank %u pair %d (p2p, count %llu): element %llu is %d, want %d", r->rank, p,
                         (unsigned long long)count, (unsigned long long)j, h[j], want);
            r->bad++;
        }
    }
}

/* BURST p2p launches back to back, cycling the pairs. Eager (SMALL), then direct (a pooled
 * context binds the receiver's buffer through its item at FETCH). */
static void p2p_burst(rank_t *r, uint64_t count)
{
    for (int p = 0; p < PAIRS; p++)
        p2p_fill(r, p, count);
    for (int i = 0; i < BURST; i++)
        p2p_issue(r, i % PAIRS, count);
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    for (int p = 0; p < PAIRS; p++)
        p2p_check(r, p, count);
}

typedef enum { SC_WARM, SC_STEADY, SC_MIXED, SC_EVICT, SC_BIG, SC_BURST, SC_P2P_BURST, SC_P2P_EVICT } scenario;
typedef struct job {
    rank_t *r;
    scenario sc;
} job;

static void *rank_main(void *arg)
{
    job *jb = arg;
    rank_t *r = jb->r;
    cr_assert_eq(aclrtSetDevice((int32_t)r->rank), ACL_SUCCESS);
    switch (jb->sc) {
    case SC_WARM:
        allreduce(r, 0, 0, SMALL, false);
        break;
    case SC_BIG:
        allreduce(r, 1, 1, BIG, false);
        break;
    case SC_BURST:
        burst(r, SMALL);
        burst(r, BIG);
        break;
    case SC_P2P_BURST:
        p2p_burst(r, SMALL);
        p2p_burst(r, P2P_DIRECT);
        break;
    case SC_P2P_EVICT: /* HCCL_PLAN_CACHE_SIZE=1, three shapes, two in flight at a time (as SC_EVICT) */
        for (int k = 0; k < 30; k++) {
            uint64_t ca = SMALL + 2 * (uint64_t)(k % 3), cb = SMALL + 2 * (uint64_t)((k + 1) % 3);
            p2p_fill(r, 0, ca);
            p2p_fill(r, 1, cb);
            p2p_issue(r, 0, ca);
            p2p_issue(r, 1, cb);
            cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
            p2p_check(r, 0, ca);
            p2p_check(r, 1, cb);
        }
        break;
    case SC_STEADY: /* one shape; other buffers and the other inbox slot every call */
        for (int i = 1; i <= 60; i++)
            allreduce(r, i, i % PAIRS, SMALL, false);
        break;
    case SC_MIXED: /* shapes, in place, pairs and p2p interleaved */
        for (int i = 1; i <= 80; i++) {
            if (i % 7 == 0)
                p2p(r, i % PAIRS);
            allreduce(r, i, (i / 2) % PAIRS, i % 10 == 9 ? BIG : SMALL, i % 4 == 3);
        }
        break;
    case SC_EVICT: /* HCCL_PLAN_CACHE_SIZE=1, three shapes, two calls in flight at a time */
        for (int k = 0; k < 30; k++) {
            op_t a = {2 * k + 1, 0, SMALL + 2 * (uint64_t)(k % 3), false};
            op_t b = {2 * k + 2, 1, SMALL + 2 * (uint64_t)((k + 1) % 3), false};
            issue(r, &a);
            issue(r, &b);
            cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
            check(r, &a);
            check(r, &b);
        }
        break;
    }
    return NULL;
}

static void run(rank_t *ranks, scenario sc)
{
    job jobs[NRANKS];
    for (uint32_t i = 0; i < NRANKS; i++)
        jobs[i] = (job){&ranks[i], sc};
    pair_ranks_run(ranks, NRANKS, rank_main, jobs, sizeof *jobs);
}

static void setup(rank_t *ranks)
{
    pair_ranks_open(ranks, NRANKS, (BIG + GUARD) * sizeof(int32_t));
    run(ranks, SC_WARM);
}

static void teardown(rank_t *ranks)
{
    pair_ranks_close(ranks, NRANKS);
}

/* Every rank runs scenario sc on a fresh communicator (results checked as it runs). */
static void run_once(scenario sc)
{
    rank_t ranks[NRANKS];
    setup(ranks);
    run(ranks, sc);
    teardown(ranks);
}

/* Programs built while every rank runs scenario sc (results checked as it runs). */
static uint64_t builds_in(scenario sc)
{
    rank_t ranks[NRANKS];
    setup(ranks);
    uint64_t before = rt_prog_build_count();
    run(ranks, sc);
    uint64_t builds = rt_prog_build_count() - before;
    teardown(ranks);
    return builds;
}

/* A synchronized loop of one shape gets back the context it used last: its program serves every
 * call, whatever the buffers and the inbox slot. */
Test(launch_reuse, one_shape_builds_once, .timeout = 120)
{
    uint64_t builds = builds_in(SC_STEADY);
    cr_expect_leq(builds, NRANKS, "%llu programs built for 60 calls of one shape", (unsigned long long)builds);
}

/* Back to back, a launch copies the program of the launch before it (rt_prog_clone.c) instead of
 * building its own: a burst of one shape builds once per rank and shape, the results stay exact. */
Test(launch_reuse, burst_copies_the_program, .timeout = 120)
{
    uint64_t builds = builds_in(SC_BURST);
    cr_expect_leq(builds, 2 * NRANKS, "%llu programs built for two bursts of %d back-to-back calls of one shape",
                  (unsigned long long)builds, BURST);
}

/* The same for p2p launches: their items' buffers are rebound, their flag waits set per call. */
Test(launch_reuse, p2p_burst_copies_the_program, .timeout = 120)
{
    uint64_t builds = builds_in(SC_P2P_BURST);
    cr_expect_leq(builds, 2 * NRANKS, "%llu programs built for two bursts of %d back-to-back p2p launches of one shape",
                  (unsigned long long)builds, BURST);
}

/* The same with p2p plans: a pooled context's p2p program never serves a plan compiled where its
 * own was evicted. */
Test(launch_reuse, evicted_p2p_plans_rebuild, .timeout = 120)
{
    setenv("HCCL_PLAN_CACHE_SIZE", "1", 1);
    run_once(SC_P2P_EVICT);
}

Test(launch_reuse, shapes_in_place_and_p2p_interleaved, .timeout = 120)
{
    run_once(SC_MIXED);
}

/* A plan compiled after another was evicted may land at the evicted one's address while a pooled
 * context still holds the program it built for that one: it must not serve the new plan. Two
 * contexts take turns, each rotating through three shapes. */
Test(launch_reuse, evicted_plans_rebuild, .timeout = 120)
{
    setenv("HCCL_PLAN_CACHE_SIZE", "1", 1);
    run_once(SC_EVICT);
}

/* --- rt_check_buffer's cache --- */

static HcclComm one_rank_comm(aclrtStream *s)
{
    int32_t dev = 0;
    HcclComm comm;
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(HcclCommInitAll(1, &dev, &comm), HCCL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(aclrtCreateStream(s), ACL_SUCCESS);
    return comm;
}

Test(launch_reuse, freed_buffer_is_refused, .timeout = 60)
{
    aclrtStream s;
    HcclComm comm = one_rank_comm(&s);
    void *buf;
    cr_assert_eq(aclrtMalloc(&buf, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(HcclAllReduce(buf, buf, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(buf), ACL_SUCCESS);
    cr_expect_eq(HcclAllReduce(buf, buf, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_E_PARA,
                 "a freed buffer checked good before must be refused");
    cr_assert_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    aclrtDestroyStream(s);
    aclFinalize();
}

/* Point to point keeps its own repeated-call check (rt_p2p.c): after two good calls, the same call
 * with a count past its buffers or another peer is refused, and so is the same call again once its
 * send buffer was freed. */
Test(launch_reuse, freed_p2p_buffer_is_refused, .timeout = 60)
{
    aclrtStream s;
    HcclComm comm = one_rank_comm(&s);
    void *src, *dst;
    cr_assert_eq(aclrtMalloc(&src, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(aclrtMalloc(&dst, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    HcclSendRecvItem it[2] = {{HCCL_SEND, src, 1024, HCCL_DATA_TYPE_FP32, 0},
                              {HCCL_RECV, dst, 1024, HCCL_DATA_TYPE_FP32, 0}};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(HcclBatchSendRecv(it, 2, comm, s), HCCL_SUCCESS);
    it[0].count = it[1].count = 1025;
    cr_expect_eq(HcclBatchSendRecv(it, 2, comm, s), HCCL_E_PARA, "4 bytes past known buffers must be refused");
    it[0].count = it[1].count = 1024;
    it[1].remoteRank = 1;
    cr_expect_eq(HcclBatchSendRecv(it, 2, comm, s), HCCL_E_PARA, "a receive from rank 1 of 1 must be refused");
    it[1].remoteRank = 0;
    cr_assert_eq(HcclBatchSendRecv(it, 2, comm, s), HCCL_SUCCESS);
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(aclrtFree(src), ACL_SUCCESS);
    cr_expect_eq(HcclBatchSendRecv(it, 2, comm, s), HCCL_E_PARA, "a freed send buffer checked good before must be "
                 "refused");
    cr_assert_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    aclrtFree(dst);
    aclrtDestroyStream(s);
    aclFinalize();
}

Test(launch_reuse, known_buffer_is_not_stretched, .timeout = 60)
{
    aclrtStream s;
    HcclComm comm = one_rank_comm(&s);
    char *buf;
    cr_assert_eq(aclrtMalloc((void **)&buf, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    cr_assert_eq(HcclAllReduce(buf, buf, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s), HCCL_SUCCESS);
    cr_expect_eq(HcclAllReduce(buf + 2048, buf + 2048, 512, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s),
                 HCCL_SUCCESS, "the second half of a known buffer is good");
    cr_expect_eq(HcclAllReduce(buf + 2048, buf + 2048, 513, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s),
                 HCCL_E_PARA, "4 bytes past a known buffer must be refused");
    cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
    cr_assert_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
    aclrtFree(buf);
    aclrtDestroyStream(s);
    aclFinalize();
}

/* One thread issues both ranks' calls (they only enqueue): device 0's buffer, known good for rank
 * 0, is refused for rank 1, whose call then runs on its own buffer. */
Test(launch_reuse, known_buffer_stays_with_its_device, .timeout = 60)
{
    int32_t devs[2] = {0, 1};
    HcclComm comms[2];
    aclrtStream s[2];
    void *buf[2];
    cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
    cr_assert_eq(HcclCommInitAll(2, devs, comms), HCCL_SUCCESS);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(aclrtSetDevice(i), ACL_SUCCESS);
        cr_assert_eq(aclrtCreateStream(&s[i]), ACL_SUCCESS);
        cr_assert_eq(aclrtMalloc(&buf[i], 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        cr_assert_eq(aclrtMemset(buf[i], 4096, 0, 4096), ACL_SUCCESS);
    }
    cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
    cr_assert_eq(HcclAllReduce(buf[0], buf[0], 16, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comms[0], s[0]),
                 HCCL_SUCCESS);
    cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
    cr_expect_eq(HcclAllReduce(buf[0], buf[0], 16, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comms[1], s[1]),
                 HCCL_E_PARA, "device 0's buffer must be refused for device 1's rank");
    cr_assert_eq(HcclAllReduce(buf[1], buf[1], 16, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comms[1], s[1]),
                 HCCL_SUCCESS);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(aclrtSetDevice(i), ACL_SUCCESS);
        cr_assert_eq(aclrtSynchronizeStream(s[i]), ACL_SUCCESS);
        cr_assert_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
        aclrtFree(buf[i]);
        aclrtDestroyStream(s[i]);
    }
    aclFinalize();
}

/* On the emulator eager calls run in header mode (rt_publish.c): the writer's signature rides in
 * its box header of every peer's inbox, and no record is published; a mesh call publishes one. */
Test(launch_reuse, eager_call_travels_in_box_headers, .timeout = 60)
{
    rank_t ranks[NRANKS];
    setup(ranks); /* op #1: SMALL, eager */
    run(ranks, SC_BIG); /* op #2: BIG, mesh */
    rt_comm *c[NRANKS];
    for (uint32_t i = 0; i < NRANKS; i++)
        cr_assert_eq(rt_comm_get(ranks[i].comm, "test", &c[i]), HCCL_SUCCESS);
    cr_assert(c[0]->eager_hdr, "the emulator's task functions reach peers' inboxes");
    cr_expect_neq(atomic_load(&rt_ctrl_pub(c[0]->ctrl, 1)->ready), 1, "the eager op published a record");
    cr_expect_eq(atomic_load(&rt_ctrl_pub(c[0]->ctrl, 2)->ready), 2, "the mesh op published no record");
    const rt_sig *h = rt_inbox_box(c[1], c[1]->inbox, 1, 0);
    cr_expect_eq(h->seq, 1);
    cr_expect_eq(h->cmd, HCCL_CMD_ALLREDUCE);
    cr_expect_eq(h->count, SMALL);
    cr_expect_eq(h->eager, 1);
    teardown(ranks);
}
