/* Pairwise AlltoAll(V/VC) over 1..64 ranks, and SENDRECV (p2p) patterns through the verifier. */
#include <string.h>

#include "test_algo_util.h"

Test(algo_pairwise, alltoall) { cr_assert_eq(ta_sweep(ALGO_PAIRWISE, ALGO_COLL_ALLTOALL), 0); }
Test(algo_pairwise, alltoallv) { cr_assert_eq(ta_sweep(ALGO_PAIRWISE, ALGO_COLL_ALLTOALLV), 0); }
Test(algo_pairwise, alltoallvc) { cr_assert_eq(ta_sweep(ALGO_PAIRWISE, ALGO_COLL_ALLTOALLVC), 0); }

Test(algo_pairwise, only_alltoall)
{
    algo_op op = {.coll = ALGO_COLL_ALLREDUCE, .nranks = 4, .count = 8, .dtype = HAL_DT_FP32};
    algo_plan *p = NULL;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_PAIRWISE, &p), HAL_E_NOT_SUPPORTED);
    op.coll = ALGO_COLL_ALLTOALL;
    op.in_place = true;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_PAIRWISE, &p), HAL_E_NOT_SUPPORTED);
    cr_expect_null(p);
}

/* items[r] (up to 2n per rank) for n ranks, each rank's OUT/IN packed by item order. */
typedef struct p2p_case {
    uint32_t n;
    algo_p2p_item items[TA_MAX_N][2 * TA_MAX_N];
    uint32_t nitems[TA_MAX_N];
    uint64_t in_off[TA_MAX_N], out_off[TA_MAX_N]; /* next free byte per rank */
} p2p_case;

static void add_pair(p2p_case *c, uint32_t from, uint32_t to, uint64_t count)
{
    c->items[from][c->nitems[from]++] = (algo_p2p_item){.is_send = 1, .peer = to, .count = count, .offset = c->in_off[from]};
    c->in_off[from] += (count + 1) * 4; /* a gap between items */
    c->items[to][c->nitems[to]++] = (algo_p2p_item){.is_send = 0, .peer = from, .count = count, .offset = c->out_off[to]};
    c->out_off[to] += (count + 2) * 4;
}

static int verify_p2p(p2p_case *c)
{
    algo_op ops[TA_MAX_N];
    for (uint32_t r = 0; r < c->n; r++)
        ops[r] = (algo_op){.coll = ALGO_COLL_SENDRECV, .nranks = c->n, .rank = r, .dtype = HAL_DT_FP32,
                           .items = c->items[r], .nitems = c->nitems[r]};
    algo_verify_report rep;
    int rc = algo_verify_ops(ops, NULL, ALGO_AUTO, NULL, &rep);
    if (rc)
        printf("p2p n=%u: rc %d\n%s", c->n, rc, rep.msg);
    return rc;
}

Test(algo_p2p, send_recv_pair)
{
    static p2p_case c;
    memset(&c, 0, sizeof(c));
    c.n = 2;
    add_pair(&c, 0, 1, 33);
    cr_expect_eq(verify_p2p(&c), 0);
}

Test(algo_p2p, full_duplex_and_self)
{
    static p2p_case c;
    memset(&c, 0, sizeof(c));
    c.n = 3;
    add_pair(&c, 0, 0, 5); /* to itself */
    add_pair(&c, 0, 1, 7);
    add_pair(&c, 1, 0, 9); /* both directions at once: must not deadlock */
    add_pair(&c, 2, 1, 0); /* an empty message */
    cr_expect_eq(verify_p2p(&c), 0);
}

Test(algo_p2p, ring_exchange_all_sizes)
{
    static p2p_case c;
    for (uint32_t n = 1; n <= TA_MAX_N; n++) {
        memset(&c, 0, sizeof(c));
        c.n = n;
        for (uint32_t r = 0; r < n; r++)
            add_pair(&c, r, (r + 1) % n, r + 1);
        cr_assert_eq(verify_p2p(&c), 0, "n=%u", n);
    }
}

Test(algo_p2p, all_pairs)
{
    static p2p_case c;
    memset(&c, 0, sizeof(c));
    c.n = 9;
    add_pair(&c, 0, 0, 3);
    for (uint32_t a = 0; a < c.n; a++)
        for (uint32_t b = 0; b < c.n; b++)
            if (a || b)
                add_pair(&c, a, b, (a * 3 + b) % 11);
    cr_expect_eq(verify_p2p(&c), 0);
}

/* Several items of one direction with one peer match in issue order, each with its own size. */
Test(algo_p2p, several_items_per_peer)
{
    static p2p_case c;
    memset(&c, 0, sizeof(c));
    c.n = 11;
    add_pair(&c, 0, 1, 5);
    add_pair(&c, 1, 0, 4);
    add_pair(&c, 0, 1, 11); /* the second send 0 -> 1 meets the second receive at 1 from 0 */
    add_pair(&c, 0, 2, 3);
    add_pair(&c, 0, 0, 2);
    add_pair(&c, 0, 1, 0);
    add_pair(&c, 0, 0, 6); /* the second send to itself meets the second receive from itself */
    for (uint32_t k = 0; k < 12; k++)
        add_pair(&c, 2, k % 2, k + 1);
    for (uint32_t q = 1; q < c.n; q++) /* more send peers than streams: they share streams */
        add_pair(&c, 0, q, q);
    cr_expect_eq(verify_p2p(&c), 0);
}

Test(algo_p2p, bad_items)
{
    algo_p2p_item it[2] = {{.is_send = 1, .peer = 1, .count = 4}, {.is_send = 1, .peer = 1, .count = 4}};
    algo_op op = {.coll = ALGO_COLL_SENDRECV, .nranks = 2, .rank = 0, .dtype = HAL_DT_FP32, .items = it, .nitems = 2};
    algo_plan *p = NULL;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_P2P, &p), 0); /* two sends to one peer: allowed */
    algo_plan_free(p);
    p = NULL;
    it[1].peer = 5;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_P2P, &p), HAL_E_PARAM); /* peer out of range */
    it[1] = (algo_p2p_item){.is_send = 1, .peer = 0, .count = 4};
    cr_expect_eq(algo_compile(&op, NULL, ALGO_P2P, &p), HAL_E_PARAM); /* send to self without a recv */
    op.nitems = 1;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_P2P, &p), 0);
    cr_expect_eq(p->streams[0].steps[0].kind, ALGO_STEP_PUBLISH);
    algo_plan_free(p);
}
