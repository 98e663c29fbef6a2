/* Deterministic mode (algo_op.deterministic) through the verifier: with the flag set, REDUCE is
 * modelled as a non-commutative, non-associative fold and the reference is the rank-ordered fold
 * ((x0 op x1) op x2) ..., so these sweeps check the order, not only the contributions. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "algos/verify.h"

#define MAX_N 17

/* ReduceScatterV counts [counts(n), displs(n)]: irregular, some zero, gaps of 0..2 elements. */
static void fill_v_counts(algo_op *op, uint64_t *m, uint64_t c)
{
    uint32_t n = op->nranks;
    uint64_t cur = 0;
    for (uint32_t i = 0; i < n; i++) {
        m[i] = (i * 5 + 1) % (c + 1);
        m[n + i] = cur;
        cur += m[i] + (i % 3);
    }
    op->counts = m;
    op->ncounts = 2 * n;
}

static const algo_coll reductions[] = {ALGO_COLL_ALLREDUCE, ALGO_COLL_REDUCE, ALGO_COLL_REDUCE_SCATTER,
                                       ALGO_COLL_REDUCE_SCATTERV};

static int check_det(algo_kind kind, algo_coll coll, uint32_t n, uint64_t count, uint32_t root, bool in_place)
{
    static uint64_t m[2 * MAX_N];
    algo_op op = {.coll = coll, .nranks = n, .count = count, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                  .root = root, .in_place = in_place, .deterministic = true};
    if (coll == ALGO_COLL_REDUCE_SCATTERV)
        fill_v_counts(&op, m, count);
    algo_verify_report rep;
    int rc = algo_verify(&op, NULL, kind, &rep);
    if (rc == 0)
        return 0;
    printf("FAIL deterministic %s %s n=%u count=%llu root=%u %s: rc %d\n%s", algo_kind_name(kind),
           algo_coll_name(coll), n, (unsigned long long)count, root, in_place ? "in-place" : "out-of-place", rc,
           rep.msg);
    return 1;
}

static int sweep_det(algo_kind kind)
{
    int fails = 0;
    for (uint32_t n = 1; n <= MAX_N; n++) {
        uint64_t counts[5] = {0, 1, n - 1, n + 1, 97};
        uint32_t roots[3] = {0, n - 1, n / 2};
        for (size_t c = 0; c < sizeof reductions / sizeof reductions[0]; c++)
            for (uint32_t ci = 0; ci < 5; ci++)
                for (uint32_t ri = 0; ri < (reductions[c] == ALGO_COLL_REDUCE ? 3u : 1u); ri++)
                    for (int inp = 0; inp < 2; inp++) {
                        fails += check_det(kind, reductions[c], n, counts[ci], roots[ri], inp);
                        if (fails > 5)
                            return fails;
                    }
    }
    return fails;
}

Test(algo_ordered, ring) { cr_assert_eq(sweep_det(ALGO_RING), 0, "see the failures above"); }
Test(algo_ordered, mesh) { cr_assert_eq(sweep_det(ALGO_MESH), 0, "see the failures above"); }

/* The order check can fail: the default mesh plans (rotating order) and ring plans (order per
 * block) marked deterministic after compilation must be rejected as wrong values. */
static void expect_order_rejected(algo_kind kind, algo_coll coll)
{
    enum { N = 4 };
    algo_plan *plans[N] = {0};
    algo_topo topo = {.nranks = N};
    for (uint32_t r = 0; r < N; r++) {
        algo_op op = {.coll = coll, .nranks = N, .rank = r, .count = 8, .dtype = HAL_DT_FP32,
                      .redop = HAL_OP_SUM};
        cr_assert_eq(algo_compile(&op, &topo, kind, &plans[r]), 0);
        plans[r]->op.deterministic = true;
    }
    algo_verify_report rep;
    int rc = algo_verify_plans(plans, N, &topo, NULL, &rep);
    cr_expect_eq(rc, ALGO_VERIFY_FAILED, "%s %s: unordered plans passed the order check", algo_kind_name(kind),
                 algo_coll_name(coll));
    cr_expect(strstr(rep.msg, "wrong value") != NULL, "%s", rep.msg);
    for (uint32_t r = 0; r < N; r++)
        algo_plan_free(plans[r]);
}

Test(algo_ordered, unordered_mesh_allreduce_rejected) { expect_order_rejected(ALGO_MESH, ALGO_COLL_ALLREDUCE); }
Test(algo_ordered, unordered_ring_reducescatter_rejected)
{
    expect_order_rejected(ALGO_RING, ALGO_COLL_REDUCE_SCATTER);
}

/* The flag is part of what a plan is: same shape, flag set -> a different (ordered) plan. */
Test(algo_ordered, flag_changes_the_plan)
{
    algo_op op = {.coll = ALGO_COLL_ALLREDUCE, .nranks = 3, .rank = 2, .count = 9, .dtype = HAL_DT_BF16,
                  .redop = HAL_OP_SUM};
    algo_topo topo = {.nranks = 3};
    algo_plan *plain = NULL, *ordered = NULL;
    cr_assert_eq(algo_compile(&op, &topo, ALGO_MESH, &plain), 0);
    op.deterministic = true;
    cr_assert_eq(algo_compile(&op, &topo, ALGO_MESH, &ordered), 0);
    /* rank 2's first reduction: its own IN first by default, rank 0 then rank 1 when ordered */
    const algo_step *first[2] = {NULL, NULL};
    const algo_plan *plans[2] = {plain, ordered};
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < plans[k]->streams[0].nsteps && !first[k]; i++)
            if (plans[k]->streams[0].steps[i].kind == ALGO_STEP_REDUCE)
                first[k] = &plans[k]->streams[0].steps[i];
    cr_assert(first[0] && first[1]);
    cr_expect_eq(first[0]->u.reduce.src.owner, ALGO_SELF);
    cr_expect(first[1]->u.reduce.has_src2);
    cr_expect_eq(first[1]->u.reduce.src.owner, 0);
    cr_expect_eq(first[1]->u.reduce.src2.owner, 1);
    algo_plan_free(plain);
    algo_plan_free(ordered);
}
