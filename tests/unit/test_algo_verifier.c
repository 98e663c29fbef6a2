/* The verifier must catch broken plans: each test breaks a correct plan in one way and checks the
 * failure is reported for the right reason (and the unbroken plan passes, so these cannot pass
 * vacuously). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "algos/algo_build.h"
#include "algos/verify.h"

#define MAXN 8

typedef struct plans {
    uint32_t n;
    algo_plan *p[MAXN];
} plans;

static void compile_all(plans *ps, algo_coll coll, algo_kind kind, uint32_t n, uint64_t count)
{
    ps->n = n;
    for (uint32_t r = 0; r < n; r++) {
        algo_op op = {.coll = coll, .nranks = n, .rank = r, .count = count, .dtype = HAL_DT_FP32};
        cr_assert_eq(algo_compile(&op, NULL, kind, &ps->p[r]), 0);
    }
}

static void free_all(plans *ps)
{
    for (uint32_t r = 0; r < ps->n; r++)
        algo_plan_free(ps->p[r]);
}

static int verify(plans *ps, algo_verify_report *rep)
{
    return algo_verify_plans(ps->p, ps->n, NULL, NULL, rep);
}

static void expect_fail(plans *ps, const char *why)
{
    algo_verify_report rep;
    int rc = verify(ps, &rep);
    cr_expect_eq(rc, ALGO_VERIFY_FAILED, "expected a failure (%s), got rc %d", why, rc);
    cr_expect(!rep.ok);
    cr_expect(strstr(rep.msg, why) != NULL, "expected '%s' in:\n%s", why, rep.msg);
    free_all(ps);
}

static void remove_step(algo_plan *p, uint32_t s, uint32_t idx)
{
    algo_step_list *l = &p->streams[s];
    memmove(&l->steps[idx], &l->steps[idx + 1], (l->nsteps - idx - 1) * sizeof(algo_step));
    l->nsteps--;
}

static void insert_step(algo_plan *p, uint32_t s, uint32_t idx, algo_step st)
{
    algo_step_list *l = &p->streams[s];
    if (l->nsteps == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->steps = realloc(l->steps, l->cap * sizeof(algo_step));
    }
    memmove(&l->steps[idx + 1], &l->steps[idx], (l->nsteps - idx) * sizeof(algo_step));
    l->steps[idx] = st;
    l->nsteps++;
}

static int find_step(const algo_plan *p, uint32_t s, algo_step_kind k, int nth)
{
    for (uint32_t i = 0; i < p->streams[s].nsteps; i++)
        if (p->streams[s].steps[i].kind == k && nth-- == 0)
            return (int)i;
    return -1;
}

static algo_step sync(algo_step_kind k, uint32_t peer, uint32_t slot)
{
    algo_step st = {.kind = (uint8_t)k};
    st.u.sync.peer = peer;
    st.u.sync.slot = slot;
    return st;
}

Test(algo_verifier, correct_plans_pass)
{
    plans ps;
    algo_verify_report rep;
    compile_all(&ps, ALGO_COLL_ALLREDUCE, ALGO_MESH, 4, 10);
    cr_expect_eq(verify(&ps, &rep), 0, "%s", rep.msg);
    cr_expect(rep.ok);
    cr_expect_gt(rep.link_bytes[ALGO_LINK_INTRA], 0);
    free_all(&ps);
}

Test(algo_verifier, unmatched_wait_is_a_deadlock)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_RING, 3, 6);
    insert_step(ps.p[1], 0, ps.p[1]->streams[0].nsteps, sync(ALGO_STEP_WAIT, 2, ALGO_SLOT_DATA));
    expect_fail(&ps, "deadlock");
}

Test(algo_verifier, wait_cycle_is_a_deadlock)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_RING, 2, 4);
    /* Both ranks wait for the other before they signal anything. */
    insert_step(ps.p[0], 0, 1, sync(ALGO_STEP_WAIT, 1, ALGO_SLOT_READY));
    insert_step(ps.p[1], 0, 1, sync(ALGO_STEP_WAIT, 0, ALGO_SLOT_READY));
    insert_step(ps.p[0], 0, ps.p[0]->streams[0].nsteps, sync(ALGO_STEP_SIGNAL, 1, ALGO_SLOT_READY));
    insert_step(ps.p[1], 0, ps.p[1]->streams[0].nsteps, sync(ALGO_STEP_SIGNAL, 0, ALGO_SLOT_READY));
    expect_fail(&ps, "deadlock");
}

Test(algo_verifier, unconsumed_signal)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_RING, 3, 6);
    insert_step(ps.p[0], 0, ps.p[0]->streams[0].nsteps, sync(ALGO_STEP_SIGNAL, 2, ALGO_SLOT_DONE));
    expect_fail(&ps, "1 times, 0 consumed");
}

Test(algo_verifier, missing_contribution)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLREDUCE, ALGO_MESH, 4, 8);
    int i = find_step(ps.p[2], 0, ALGO_STEP_REDUCE, 1);
    cr_assert_geq(i, 0);
    remove_step(ps.p[2], 0, (uint32_t)i);
    expect_fail(&ps, "wrong value");
}

Test(algo_verifier, double_counting)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_REDUCE_SCATTER, ALGO_MESH, 4, 5);
    /* The second reduce accumulates (dst op= src); repeating it counts one peer twice. (The first,
     * out of place, writes dst = mine op peer and would be idempotent.) */
    int i = find_step(ps.p[1], 0, ALGO_STEP_REDUCE, 1);
    cr_assert_geq(i, 0);
    cr_assert(!ps.p[1]->streams[0].steps[i].u.reduce.has_src2);
    insert_step(ps.p[1], 0, (uint32_t)i, ps.p[1]->streams[0].steps[i]);
    expect_fail(&ps, "wrong value");
}

Test(algo_verifier, wrong_origin)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_MESH, 3, 4);
    /* Rank 1 writes its block one element off in rank 2's OUT (stream 1 serves peer 2). */
    algo_step_list *l = &ps.p[1]->streams[1];
    cr_assert(l->nsteps > 0 && l->steps[0].kind == ALGO_STEP_COPY);
    l->steps[0].u.copy.dst.offset += 4;
    l->steps[0].u.copy.bytes -= 4;
    expect_fail(&ps, "rank 2 OUT[");
}

/* Two ranks write the same region of rank 0's OUT with nothing ordering them. */
Test(algo_verifier, unordered_writes_race)
{
    plans ps = {.n = 3};
    for (uint32_t r = 0; r < 3; r++) {
        algo_op op = {.coll = ALGO_COLL_ALLREDUCE, .nranks = 3, .rank = r, .count = 4, .dtype = HAL_DT_FP32};
        algo_b b;
        cr_assert_eq(algo_b_init(&b, &op, ALGO_MESH), 0);
        algo_b_fetch_all(&b);
        algo_b_prologue(&b);
        if (r != 0) {
            algo_b_copy(&b, 0, algo_b_ref(&b, ALGO_BUF_OUT, 0, 0), algo_b_ref(&b, ALGO_BUF_IN, r, 0), 4);
            algo_b_signal(&b, 0, 0, ALGO_SLOT_DATA);
        } else {
            algo_b_wait(&b, 0, 1, ALGO_SLOT_DATA);
            algo_b_wait(&b, 0, 2, ALGO_SLOT_DATA);
        }
        algo_b_epilogue(&b, 0);
        cr_assert_eq(algo_b_finish(&b, &ps.p[r]), 0);
    }
    expect_fail(&ps, "race on rank 0");
}

/* A local race: two slave streams reduce into the same slice. */
Test(algo_verifier, local_streams_race)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_MESH, 4, 4);
    /* Make stream 2 of rank 0 write where stream 1 writes (both into rank 1's OUT). */
    algo_step_list *l1 = &ps.p[0]->streams[1], *l2 = &ps.p[0]->streams[2];
    l2->steps[0].u.copy.dst = l1->steps[0].u.copy.dst;
    expect_fail(&ps, "race on rank 1");
}

Test(algo_verifier, access_without_fetch)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_MESH, 3, 4);
    /* Move rank 0's FETCH of rank 1 after its data steps: the fork already used rank 1's OUT. */
    algo_plan *p = ps.p[0];
    int i = find_step(p, 0, ALGO_STEP_FETCH, 0);
    while (i >= 0 && p->streams[0].steps[i].u.fetch.peer != 1)
        i = find_step(p, 0, ALGO_STEP_FETCH, 1);
    cr_assert_geq(i, 0);
    algo_step f = p->streams[0].steps[i];
    remove_step(p, 0, (uint32_t)i);
    insert_step(p, 0, p->streams[0].nsteps, f);
    expect_fail(&ps, "without an ordered FETCH");
}

/* Rank 1 signals rank 0 before writing into it: rank 0 may end while the write is in flight. */
Test(algo_verifier, write_after_owner_end)
{
    plans ps = {.n = 2};
    for (uint32_t r = 0; r < 2; r++) {
        algo_op op = {.coll = ALGO_COLL_BROADCAST, .nranks = 2, .rank = r, .count = 4, .dtype = HAL_DT_FP32};
        algo_b b;
        cr_assert_eq(algo_b_init(&b, &op, ALGO_RING), 0);
        b.fetch[1 - r] = b.fetched_by[1 - r] = 1;
        algo_b_prologue(&b);
        if (r == 0) {
            algo_b_signal(&b, 0, 1, ALGO_SLOT_DATA);
            algo_b_copy(&b, 0, algo_b_ref(&b, ALGO_BUF_OUT, 1, 0), algo_b_ref(&b, ALGO_BUF_OUT, 0, 0), 4);
        } else {
            algo_b_wait(&b, 0, 0, ALGO_SLOT_DATA);
        }
        cr_assert_eq(algo_b_finish(&b, &ps.p[r]), 0);
    }
    expect_fail(&ps, "plan end");
}

Test(algo_verifier, slot_from_two_streams)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_MESH, 4, 4);
    /* Rank 0 signals rank 1 on DATA from stream 2 too, and rank 1 waits once more. */
    insert_step(ps.p[0], 2, ps.p[0]->streams[2].nsteps, sync(ALGO_STEP_SIGNAL, 1, ALGO_SLOT_DATA));
    insert_step(ps.p[1], 0, ps.p[1]->streams[0].nsteps, sync(ALGO_STEP_WAIT, 0, ALGO_SLOT_DATA));
    expect_fail(&ps, "two streams");
}

Test(algo_verifier, out_of_bounds)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLREDUCE, ALGO_RING, 2, 4);
    int i = find_step(ps.p[0], 0, ALGO_STEP_REDUCE, 0);
    cr_assert_geq(i, 0);
    ps.p[0]->streams[0].steps[i].u.reduce.count = 100;
    expect_fail(&ps, "out of its");
}

Test(algo_verifier, stray_write_outside_result)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLREDUCE, ALGO_RING, 2, 4);
    /* Rank 0 copies into its own IN (out of place: IN must stay as the user gave it). */
    algo_step st = {.kind = ALGO_STEP_COPY};
    st.u.copy.dst = (algo_ref){.buf = ALGO_BUF_IN, .owner = ALGO_SELF, .vdispl = -1, .offset = 0};
    st.u.copy.src = (algo_ref){.buf = ALGO_BUF_OUT, .owner = ALGO_SELF, .vdispl = -1, .offset = 8};
    st.u.copy.bytes = 4;
    insert_step(ps.p[0], 0, ps.p[0]->streams[0].nsteps, st);
    expect_fail(&ps, "rank 0 IN[0]");
}

Test(algo_verifier, join_without_fork)
{
    plans ps;
    compile_all(&ps, ALGO_COLL_ALLGATHER, ALGO_MESH, 3, 4);
    int i = find_step(ps.p[1], 0, ALGO_STEP_FORK, 0);
    cr_assert_geq(i, 0);
    remove_step(ps.p[1], 0, (uint32_t)i);
    expect_fail(&ps, "joined before its FORK");
}

Test(algo_verifier, counts_and_cost)
{
    uint32_t server_of[4] = {0, 0, 1, 1};
    algo_topo topo = {.nranks = 4, .server_of = server_of};
    algo_op op = {.coll = ALGO_COLL_ALLGATHER, .nranks = 4, .count = 1000, .dtype = HAL_DT_FP32};
    algo_verify_report rep;
    cr_assert_eq(algo_verify(&op, &topo, ALGO_RING, &rep), 0, "%s", rep.msg);
    /* Ring allgather: every rank forwards 3 blocks of 4000 B to its right neighbour; 1->2 and 3->0
     * cross servers. */
    cr_expect_eq(rep.link_bytes[ALGO_LINK_INTRA] + rep.link_bytes[ALGO_LINK_NET], 4 * 3 * 4000);
    cr_expect_eq(rep.link_bytes[ALGO_LINK_NET], 2 * 3 * 4000);
    cr_expect_eq(rep.max_rank_sent, 3 * 4000);
    cr_expect_gt(rep.crit_us, 0);
    algo_cost_result res;
    algo_cost_predict(&op, &rep, NULL, &res);
    cr_expect_gt(res.busbw_gbps, 0);
    cr_expect_leq(res.busbw_gbps, algo_cost_default()->gbps[ALGO_LINK_NET] * 1.0001);
}
