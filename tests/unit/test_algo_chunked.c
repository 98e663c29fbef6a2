/* Plans for several servers within a scratch budget (algo_topo.scratch_max, HCCL_BUFFSIZE):
 * ring_push, hier and the rank-ordered chain (deterministic mode) through the verifier with
 * budgets far below the data, 1..9 ranks on uneven servers, counts 0/1/7/257, in and out
 * of place, every root. Each plan must verify (results, races, copy-only links, credits balanced)
 * and use no more scratch than the budget; deterministic plans must reduce in rank order. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "algos/verify.h"

#define MAX_N 9

/* Uneven servers: sizes 2, 1, 3, 2, 1, 3, ... in rank order (all ranks on server 0 for n == 1). */
static void uneven(uint32_t n, uint32_t *so)
{
    static const uint32_t sizes[] = {2, 1, 3};
    uint32_t s = 0, left = sizes[0];
    for (uint32_t r = 0; r < n; r++) {
        if (!left) {
            s++;
            left = sizes[s % 3];
        }
        so[r] = s;
        left--;
    }
}

static int check(algo_kind kind, algo_coll coll, uint32_t n, const uint32_t *so, uint64_t count, uint32_t root,
                 bool in_place, bool det, uint64_t budget)
{
    algo_op op = {.coll = coll, .nranks = n, .count = count, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                  .root = root, .in_place = in_place, .deterministic = det};
    algo_topo topo = {.nranks = n, .server_of = so, .eager_max = 0, .scratch_max = budget};
    algo_verify_report rep;
    int rc = algo_verify(&op, &topo, kind, &rep);
    bool over = rc == 0 && rep.max_scratch_bytes > budget;
    if (rc == 0 && !over)
        return 0;
    printf("FAIL %s %s n=%u count=%llu root=%u %s%s budget=%llu: rc %d, scratch %llu\n%s", algo_kind_name(kind),
           algo_coll_name(coll), n, (unsigned long long)count, root, in_place ? "in-place" : "out-of-place",
           det ? " deterministic" : "", (unsigned long long)budget, rc, (unsigned long long)rep.max_scratch_bytes,
           rep.msg);
    return 1;
}

static const algo_coll colls[] = {ALGO_COLL_ALLREDUCE, ALGO_COLL_REDUCE_SCATTER, ALGO_COLL_REDUCE};

/* Every n in 1..9 on uneven servers x counts x roots x in/out of place, with two budgets: 64
 * bytes (a few elements per slot: many rounds) and 1000 bytes. */
static int sweep(algo_kind kind, bool det)
{
    int fails = 0;
    uint32_t so[MAX_N];
    for (uint32_t n = 1; n <= MAX_N; n++) {
        uint64_t counts[] = {0, 1, 7, 257};
        uint64_t budgets[] = {64, 1000};
        uint32_t roots[3] = {0, n - 1, n / 2};
        uneven(n, so);
        for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
            for (size_t ci = 0; ci < 4; ci++)
                for (size_t bi = 0; bi < 2; bi++)
                    for (uint32_t ri = 0; ri < (colls[c] == ALGO_COLL_REDUCE ? 3u : 1u); ri++)
                        for (int inp = 0; inp < 2; inp++) {
                            fails += check(kind, colls[c], n, so, counts[ci], roots[ri], inp, det, budgets[bi]);
                            if (fails > 5)
                                return fails;
                        }
    }
    return fails;
}

Test(algo_chunked, ring_push) { cr_assert_eq(sweep(ALGO_RING_PUSH, false), 0, "see the failures above"); }
Test(algo_chunked, ring_push_deterministic) { cr_assert_eq(sweep(ALGO_RING_PUSH, true), 0, "see the failures above"); }

/* hier: S servers of m ranks, in rank order and interleaved (server r % S), budgets 64 and 1000
 * bytes (rounds, so phases 1-2 and 3 run on two slave streams) and none (one round, one stream). */
static int sweep_hier(bool det)
{
    /* S >= 4: small slices take halving-doubling (S = 5, 6, 7: extras fold into partners) */
    static const uint32_t shapes[][2] = {{2, 1}, {2, 2}, {3, 1}, {2, 3}, {3, 2}, {4, 2}, {3, 3}, {5, 1}, {6, 1},
                                         {7, 1}, {4, 1}};
    uint64_t counts[] = {0, 1, 7, 257};
    uint64_t budgets[] = {64, 1000, 0};
    int fails = 0;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        uint32_t S = shapes[sh][0], m = shapes[sh][1], n = S * m, so[MAX_N];
        for (int inter = 0; inter < 2; inter++) {
            for (uint32_t r = 0; r < n; r++)
                so[r] = inter ? r % S : r / m;
            for (size_t ci = 0; ci < 4; ci++)
                for (size_t bi = 0; bi < 3; bi++)
                    for (int inp = 0; inp < 2; inp++) {
                        uint64_t budget = budgets[bi] ? budgets[bi] : UINT64_MAX;
                        fails += check(ALGO_HIER, ALGO_COLL_ALLREDUCE, n, so, counts[ci], 0, inp, det, budget);
                        if (fails > 5)
                            return fails;
                    }
        }
    }
    return fails;
}

Test(algo_chunked, hier) { cr_assert_eq(sweep_hier(false), 0, "see the failures above"); }
Test(algo_chunked, hier_deterministic) { cr_assert_eq(sweep_hier(true), 0, "see the failures above"); }

/* The structure the sweeps rely on: a budget far below the data gives credit waits (slots
 * reused) in ring_push and two slave streams in hier; without a budget, neither. */
static uint32_t count_waits(const algo_plan *p, uint32_t slot)
{
    uint32_t k = 0;
    for (uint32_t s = 0; s < p->nstreams; s++)
        for (uint32_t i = 0; i < p->streams[s].nsteps; i++)
            k += p->streams[s].steps[i].kind == ALGO_STEP_WAIT && p->streams[s].steps[i].u.sync.slot == slot;
    return k;
}

Test(algo_chunked, budget_shapes_the_plan)
{
    uint32_t so[4] = {0, 0, 1, 1};
    algo_op op = {.coll = ALGO_COLL_ALLREDUCE, .nranks = 4, .rank = 1, .count = 1031, .dtype = HAL_DT_FP32,
                  .redop = HAL_OP_SUM};
    algo_topo tight = {.nranks = 4, .server_of = so, .scratch_max = 64}, free_ = {.nranks = 4, .server_of = so};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, &tight, ALGO_RING_PUSH, &p), 0);
    cr_expect_leq(p->scratch_bytes, 64);
    cr_expect_gt(count_waits(p, 2 /* READY */), 0, "ring_push within 64 bytes reuses its slots");
    algo_plan_free(p);
    cr_assert_eq(algo_compile(&op, &free_, ALGO_RING_PUSH, &p), 0);
    cr_expect_eq(count_waits(p, 2), 0);
    cr_expect_eq(p->scratch_bytes, 3 * 258 * 4, "one round: n-1 slots of a chunk");
    algo_plan_free(p);
    cr_assert_eq(algo_compile(&op, &tight, ALGO_HIER, &p), 0);
    cr_expect_eq(p->nstreams, 3, "hier in rounds: phases 1-2 and 3 on two slave streams");
    cr_expect_leq(p->scratch_bytes, 64);
    algo_plan_free(p);
    cr_assert_eq(algo_compile(&op, &free_, ALGO_HIER, &p), 0);
    cr_expect_eq(p->nstreams, 1, "4 KB: one round, one stream");
    algo_plan_free(p);
}

/* The cost model pipelines large buffers only. */
Test(algo_chunked, pipeline_chunks)
{
    cr_expect_eq(algo_cost_hier_chunks(NULL, 4096, 2, 2), 1);
    cr_expect_gt(algo_cost_hier_chunks(NULL, 256u << 20, 2, 2), 1);
    cr_expect_eq(algo_cost_hier_chunks(NULL, 256u << 20, 2, 1), 1, "m = 1: no intra stage to overlap");
}

/* Does rank r's plan copy anything into rank q's memory? */
static bool writes_to(const algo_plan *p, uint32_t q)
{
    for (uint32_t s = 0; s < p->nstreams; s++)
        for (uint32_t i = 0; i < p->streams[s].nsteps; i++) {
            const algo_step *st = &p->streams[s].steps[i];
            if (st->kind == ALGO_STEP_COPY && st->u.copy.dst.owner == (int32_t)q)
                return true;
        }
    return false;
}

/* The inter stage by the cost model: on 5 servers a small AllReduce takes halving-doubling (the
 * member of server 0 writes to servers 1 (halving), 2 (doubling) and 4 (unfold its extra)); a
 * large one the ring (server 0 writes only to server 1). */
Test(algo_chunked, inter_stage_choice)
{
    uint32_t so[5] = {0, 1, 2, 3, 4};
    algo_topo topo = {.nranks = 5, .server_of = so};
    algo_op op = {.coll = ALGO_COLL_ALLREDUCE, .nranks = 5, .rank = 0, .count = 64, .dtype = HAL_DT_FP32,
                  .redop = HAL_OP_SUM};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, &topo, ALGO_HIER, &p), 0);
    cr_expect(writes_to(p, 1) && writes_to(p, 2) && writes_to(p, 4), "256 bytes: halving-doubling");
    algo_plan_free(p);
    op.count = 64u << 20;
    cr_assert_eq(algo_compile(&op, &topo, ALGO_HIER, &p), 0);
    cr_expect(writes_to(p, 1) && !writes_to(p, 2) && !writes_to(p, 4), "256 MB: the ring");
    algo_plan_free(p);
    cr_expect(!algo_cost_inter_hd(NULL, 4096, 2, 1, 4096, 1), "2 servers: the same steps, the ring");
    cr_expect(algo_cost_inter_hd(NULL, 4096, 4, 1, 4096, 1), "4 servers: fewer steps, the same bytes");
}
