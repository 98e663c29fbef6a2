/* A V-op's program holds offsets and sizes from the tables it was built for, so a launch reuses one
 * (its pooled context's, or the launch before's: rt_prog.c) as it is for the same tables, and with
 * its descriptors bound again for other tables of the same shape (rt_prog_vop.c: the same blocks
 * empty, within and past the eager crossover). Here three ranks (threads, HcclCommInitAll) run
 * AllGatherV and AlltoAllV with table sets that differ in counts, in shape, or only in
 * displacements, or not at all, back to back on three buffer pairs: every element of every OUT is
 * checked (written where the tables say, untouched elsewhere), and a burst of one table set, or of
 * table sets of one shape in turn, builds once per rank, not once per call (rt_prog_build_count). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "common/pair_ranks.h"
#include "runtime/rt_internal.h"

#define NR 3
#define PAIRS PAIR_RANKS_PAIRS
#define NTABS 6
#define BUF 16384 /* int32 elements per buffer */
#define SENTINEL (-55)
#define BURST 40

/* Table set t: rank r sends cnt[t][r][q] elements to rank q (AlltoAllV); AllGatherV gathers
 * cnt[t][r][0] from rank r. Sets 0 and 1 have the same counts and differ in displacements (gap);
 * set 2 has a zero; set 3's blocks are past the eager crossover (a mesh AllGatherV; AlltoAllV sends
 * those straight into the receiver's OUT). Set 4 has set 0's shape, set 5 set 3's, with other
 * counts: each entry on the same side of every crossover (512 B, 2 KiB, 8 KiB, and 16 KiB / 3 B for
 * the exchanges where ranks share CPUs: algos/plan.h). */
static const uint64_t cnt[NTABS][NR][NR] = {
    {{5, 3, 7}, {2, 4, 6}, {1, 8, 3}},
    {{5, 3, 7}, {2, 4, 6}, {1, 8, 3}},
    {{1, 0, 9}, {9, 1, 0}, {0, 9, 1}},
    {{3000, 100, 2000}, {2500, 900, 3100}, {1200, 2800, 700}},
    {{4, 6, 2}, {3, 5, 1}, {7, 2, 9}},
    {{2600, 60, 1500}, {3200, 600, 2200}, {1000, 3300, 600}},
};
static const uint64_t gap[NTABS] = {0, 11, 3, 5, 7, 2};

typedef pair_rank rank_t;

typedef enum { OP_AGV, OP_A2AV } vop;

static int32_t value(int call, uint32_t from, uint32_t to, uint64_t j)
{
    return (int32_t)((uint32_t)call * 1009u + from * 101u + to * 7u + (uint32_t)(j % 997));
}

/* Displacements of table set t, blocks in rank order with gap elements before each. */
static void displs(int t, const uint64_t *counts, uint64_t *d)
{
    uint64_t at = 0;
    for (uint32_t q = 0; q < NR; q++) {
        at += gap[t] * (q + 1);
        d[q] = at;
        at += counts[q];
    }
}

/* What one call of op with table set t makes rank r's OUT hold (SENTINEL where nothing lands). */
static void expected(vop op, int t, int call, uint32_t r, int32_t *want)
{
    uint64_t rc[NR], rd[NR];
    for (uint32_t q = 0; q < NR; q++)
        rc[q] = op == OP_AGV ? cnt[t][q][0] : cnt[t][q][r];
    displs(t, rc, rd);
    for (uint64_t j = 0; j < BUF; j++)
        want[j] = SENTINEL;
    for (uint32_t q = 0; q < NR; q++)
        for (uint64_t j = 0; j < rc[q]; j++)
            want[rd[q] + j] = value(call, q, op == OP_AGV ? 0 : r, j);
}

static void put(void *dev, const void *host, size_t bytes)
{
    cr_assert_eq(aclrtMemcpy(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
}

/* Fills pair p's IN with call's data for table set t and its OUT with sentinels (synchronous). */
static void fill(rank_t *r, vop op, int t, int call, int p)
{
    uint64_t sc[NR], sd[NR];
    for (uint32_t q = 0; q < NR; q++)
        sc[q] = op == OP_AGV ? (q ? 0 : cnt[t][r->rank][0]) : cnt[t][r->rank][q];
    displs(t, sc, sd);
    int32_t *h = r->host;
    for (uint64_t j = 0; j < BUF; j++)
        h[j] = SENTINEL;
    put(r->out[p], h, BUF * sizeof *h);
    for (uint32_t q = 0; q < NR; q++)
        for (uint64_t j = 0; j < sc[q]; j++)
            h[(op == OP_AGV ? 0 : sd[q]) + j] = value(call, r->rank, op == OP_AGV ? 0 : q, j);
    put(r->in[p], h, BUF * sizeof *h);
}

/* One call of op with table set t on pair p; nothing is synchronized. */
static void issue(rank_t *r, vop op, int t, int p)
{
    uint64_t sc[NR], sd[NR], rc[NR], rd[NR];
    for (uint32_t q = 0; q < NR; q++) {
        sc[q] = cnt[t][r->rank][q];
        rc[q] = op == OP_AGV ? cnt[t][q][0] : cnt[t][q][r->rank];
    }
    displs(t, sc, sd);
    displs(t, rc, rd);
    if (op == OP_AGV)
        cr_assert_eq(HcclAllGatherV(r->in[p], cnt[t][r->rank][0], r->out[p], rc, rd, HCCL_DATA_TYPE_INT32, r->comm,
                                    r->s), HCCL_SUCCESS);
    else
        cr_assert_eq(HcclAlltoAllV(r->in[p], sc, sd, HCCL_DATA_TYPE_INT32, r->out[p], rc, rd, HCCL_DATA_TYPE_INT32,
                                   r->comm, r->s), HCCL_SUCCESS);
}

static void check(rank_t *r, vop op, int t, int call, int p)
{
    int32_t *want = malloc(BUF * sizeof *want);
    cr_assert_not_null(want);
    expected(op, t, call, r->rank, want);
    cr_assert_eq(aclrtMemcpy(r->host, BUF * sizeof(int32_t), r->out[p], BUF * sizeof(int32_t),
                             ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (uint64_t j = 0; j < BUF && r->bad < 3; j++)
        if (r->host[j] != want[j]) {
            cr_log_error("rank %u %s table set %d call %d pair %d: element %llu is %d, want %d", r->rank,
                         op == OP_AGV ? "AllGatherV" : "AlltoAllV", t, call, p, (unsigned long long)j, r->host[j],
                         want[j]);
            r->bad++;
        }
    free(want);
}

/* Rounds of one call per pair, back to back, then a synchronize and the checks. In round k pair p
 * runs table set (p + k) % NTABS: launches meet pooled contexts and in-flight launches built for
 * every other set, and for the same set rounds later. */
static void rounds(rank_t *r, vop op)
{
    for (int k = 0; k < 2 * NTABS; k++) {
        for (int p = 0; p < PAIRS; p++)
            fill(r, op, (p + k) % NTABS, k * PAIRS + p, p);
        for (int p = 0; p < PAIRS; p++)
            issue(r, op, (p + k) % NTABS, p);
        cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
        for (int p = 0; p < PAIRS; p++)
            check(r, op, (p + k) % NTABS, k * PAIRS + p, p);
    }
}

/* BURST calls back to back, cycling the pairs, pair p with table set sets[p] (its inputs fixed). */
static void burst(rank_t *r, vop op, const int *sets)
{
    for (int p = 0; p < PAIRS; p++)
        fill(r, op, sets[p], p, p);
    for (int i = 0; i < BURST; i++)
        issue(r, op, sets[i % PAIRS], i % PAIRS);
    cr_assert_eq(aclrtSynchronizeStream(r->s), ACL_SUCCESS);
    for (int p = 0; p < PAIRS; p++)
        check(r, op, sets[p], p, p);
}

typedef struct job {
    rank_t *r;
    vop op;
    const int *sets; /* a burst's table sets, one per pair; NULL: rounds */
} job;

static void *rank_main(void *arg)
{
    job *jb = arg;
    cr_assert_eq(aclrtSetDevice((int32_t)jb->r->rank), ACL_SUCCESS);
    if (jb->sets)
        burst(jb->r, jb->op, jb->sets);
    else
        rounds(jb->r, jb->op);
    return NULL;
}

static void run(rank_t *ranks, vop op, const int *sets)
{
    job jobs[NR];
    for (uint32_t i = 0; i < NR; i++)
        jobs[i] = (job){&ranks[i], op, sets};
    pair_ranks_run(ranks, NR, rank_main, jobs, sizeof *jobs);
}

static void setup(rank_t *ranks)
{
    pair_ranks_open(ranks, NR, BUF * sizeof(int32_t));
}

static void teardown(rank_t *ranks)
{
    pair_ranks_close(ranks, NR);
}

static void rounds_of(vop op)
{
    rank_t ranks[NR];
    setup(ranks);
    run(ranks, op, NULL);
    teardown(ranks);
}

/* Programs built for a burst with table sets `sets` (results checked). */
static uint64_t burst_builds(vop op, const int *sets)
{
    rank_t ranks[NR];
    setup(ranks);
    uint64_t before = rt_prog_build_count();
    run(ranks, op, sets);
    uint64_t builds = rt_prog_build_count() - before;
    teardown(ranks);
    return builds;
}

Test(launch_reuse_v, allgatherv_tables_change_between_calls, .timeout = 120)
{
    rounds_of(OP_AGV);
}

Test(launch_reuse_v, alltoallv_tables_change_between_calls, .timeout = 120)
{
    rounds_of(OP_A2AV);
}

static const int one_table[PAIRS] = {0, 0, 0};

Test(launch_reuse_v, allgatherv_burst_of_one_table_builds_once, .timeout = 120)
{
    uint64_t builds = burst_builds(OP_AGV, one_table);
    cr_expect_leq(builds, 2 * NR, "%llu programs built for %d back-to-back AllGatherV of one table set",
                  (unsigned long long)builds, BURST);
}

Test(launch_reuse_v, alltoallv_burst_of_one_table_builds_once, .timeout = 120)
{
    uint64_t builds = burst_builds(OP_A2AV, one_table);
    cr_expect_leq(builds, 2 * NR, "%llu programs built for %d back-to-back AlltoAllV of one table set",
                  (unsigned long long)builds, BURST);
}

/* Every call's tables differ from the call's before (a mixture-of-experts layer's), in one shape:
 * blocks within the crossover only, then some past it, which AlltoAllV sends straight to OUT. */
static const int small_shape[PAIRS] = {0, 4, 1}, mixed_shape[PAIRS] = {3, 5, 3};

Test(launch_reuse_v, alltoallv_tables_of_one_shape_build_once, .timeout = 120)
{
    uint64_t small = burst_builds(OP_A2AV, small_shape), mixed = burst_builds(OP_A2AV, mixed_shape);
    cr_expect_leq(small, 2 * NR, "%llu programs built for %d back-to-back AlltoAllV, small blocks, other tables "
                  "each call", (unsigned long long)small, BURST);
    cr_expect_leq(mixed, 2 * NR, "%llu programs built for %d back-to-back AlltoAllV, blocks past the crossover, "
                  "other tables each call", (unsigned long long)mixed, BURST);
}

Test(launch_reuse_v, allgatherv_tables_of_one_shape_build_once, .timeout = 120)
{
    uint64_t builds = burst_builds(OP_AGV, small_shape);
    cr_expect_leq(builds, 2 * NR, "%llu programs built for %d back-to-back AllGatherV, other tables each call",
                  (unsigned long long)builds, BURST);
}
