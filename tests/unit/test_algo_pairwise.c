/* Pairwise AlltoAll(V/VC) over 1..64 ranks, and SENDRECV (p2p) patterns through the verifier. */
#include <string.h>

#include "test_algo_util.h"

Test(algo_pairwise, alltoall) { cr_assert_eq(ta_sweep(ALGO_PAIRWISE, ALGO_COLL_ALLTOALL), 0); }
Test(algo_pairwise, alltoallv) { cr_assert_eq(ta_sweep(ALGO_PAIRWISE, ALGO_COLL_ALLTOALLV), 0); }
Test(algo_pairwise, alltoallvc) { cr_assert_eq(ta_sweep(ALGO_PAIRWISE, ALGO_COLL_ALLTOALLVC), 0); }

static bool ref_eq(const algo_ref *a, const algo_ref *b)
{
    return a->buf == b->buf && a->owner == b->owner && a->vdispl == b->vdispl && a->offset == b->offset &&
           a->vsym.tab == b->vsym.tab && a->vsym.idx == b->vsym.idx;
}

static bool step_eq(const algo_step *a, const algo_step *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case ALGO_STEP_COPY:
        return ref_eq(&a->u.copy.dst, &b->u.copy.dst) && ref_eq(&a->u.copy.src, &b->u.copy.src) &&
               a->u.copy.bytes == b->u.copy.bytes && a->u.copy.vcount.tab == b->u.copy.vcount.tab &&
               a->u.copy.vcount.idx == b->u.copy.vcount.idx;
    case ALGO_STEP_REDUCE:
        return ref_eq(&a->u.reduce.dst, &b->u.reduce.dst) && ref_eq(&a->u.reduce.src, &b->u.reduce.src) &&
               a->u.reduce.has_src2 == b->u.reduce.has_src2 &&
               (!a->u.reduce.has_src2 || ref_eq(&a->u.reduce.src2, &b->u.reduce.src2)) &&
               a->u.reduce.count == b->u.reduce.count && a->u.reduce.vcount.tab == b->u.reduce.vcount.tab &&
               a->u.reduce.vcount.idx == b->u.reduce.vcount.idx;
    case ALGO_STEP_SIGNAL:
    case ALGO_STEP_WAIT: return a->u.sync.peer == b->u.sync.peer && a->u.sync.slot == b->u.sync.slot;
    case ALGO_STEP_FORK:
    case ALGO_STEP_JOIN: return a->u.fork.stream == b->u.fork.stream;
    case ALGO_STEP_FETCH: return a->u.fetch.peer == b->u.fetch.peer;
    default: return true;
    }
}

/* Steps of two plans are the same (the op copy aside): a cached plan can serve both calls. */
static bool same_steps(const algo_plan *a, const algo_plan *b)
{
    if (a->nstreams != b->nstreams || a->scratch_bytes != b->scratch_bytes || a->vscratch != b->vscratch)
        return false;
    for (uint32_t s = 0; s < a->nstreams; s++) {
        if (a->streams[s].nsteps != b->streams[s].nsteps)
            return false;
        for (uint32_t i = 0; i < a->streams[s].nsteps; i++)
            if (!step_eq(&a->streams[s].steps[i], &b->streams[s].steps[i]))
                return false;
    }
    return true;
}

static void fill_counts(algo_op *op, uint64_t *m, uint64_t *derived, uint32_t mul)
{
    uint32_t n = op->nranks;
    for (uint32_t i = 0; i < n * n; i++)
        m[i] = (i * mul + 7) % (mul * 3 + 1);
    op->counts = m;
    op->ncounts = n * n;
    if (op->coll == ALGO_COLL_ALLTOALLV)
        cr_assert_eq(algo_verify_derive(op, op->rank, op, derived), 0);
    if (op->coll == ALGO_COLL_ALLGATHERV || op->coll == ALGO_COLL_REDUCE_SCATTERV) { /* [counts, displs], gaps */
        for (uint32_t j = 0; j < n; j++)
            m[n + j] = j ? m[n + j - 1] + m[j - 1] + j % 2 : 0;
        op->ncounts = 2 * n;
    }
}

/* V-op plans (AlltoAllV/VC, AllGatherV, ReduceScatterV, the latter also deterministic and in
 * place) of every algorithm that serves them do not depend on the counts: compiled without counts,
 * or with two different count sets (some zero), they are step for step the same, scratch need
 * included (so the runtime caches one plan whatever the counts). */
Test(algo_pairwise, v_plans_independent_of_counts)
{
    static const algo_kind kinds[] = {ALGO_PAIRWISE, ALGO_MESH, ALGO_RING};
    static const algo_coll colls[] = {ALGO_COLL_ALLTOALLV, ALGO_COLL_ALLTOALLVC, ALGO_COLL_ALLGATHERV,
                                      ALGO_COLL_REDUCE_SCATTERV};
    static uint64_t m1[9 * 9], m2[9 * 9], c1[4 * 9], c2[4 * 9];
    for (uint32_t n = 1; n <= 9; n++)
        for (size_t k = 0; k < 3; k++)
            for (size_t c = 0; c < 4; c++)
                for (int variant = 0; variant < 4; variant++) { /* bit 0: deterministic, bit 1: in place */
                    bool det = variant & 1, inp = variant & 2;
                    if ((det || inp) && colls[c] != ALGO_COLL_REDUCE_SCATTERV)
                        continue; /* only reductions have a deterministic form; a2a has no in-place one */
                    algo_op op = {.coll = colls[c], .nranks = n, .rank = n / 2, .dtype = HAL_DT_FP32,
                                  .deterministic = det, .in_place = inp};
                    if (!algo_supports(kinds[k], &op))
                        continue; /* pairwise: all-to-all only */
                    cr_assert(algo_counts_symbolic(colls[c]));
                    algo_op o1 = op, o2 = op;
                    fill_counts(&o1, m1, c1, 1);
                    fill_counts(&o2, m2, c2, 13);
                    algo_plan *p0 = NULL, *p1 = NULL, *p2 = NULL;
                    cr_assert_eq(algo_compile(&op, NULL, kinds[k], &p0), 0, "%s n=%u without counts",
                                 algo_kind_name(kinds[k]), n);
                    cr_assert_eq(algo_compile(&o1, NULL, kinds[k], &p1), 0);
                    cr_assert_eq(algo_compile(&o2, NULL, kinds[k], &p2), 0);
                    cr_expect(same_steps(p0, p1) && same_steps(p0, p2), "%s %s n=%u%s%s: plans depend on the counts",
                              algo_kind_name(kinds[k]), algo_coll_name(colls[c]), n, det ? " deterministic" : "",
                              inp ? " in place" : "");
                    algo_plan_free(p0);
                    algo_plan_free(p1);
                    algo_plan_free(p2);
                }
}

/* The runtime's way: every rank's plan compiled once without counts, then bound to a call's
 * counts (here by pointing the plan's op at them, as the launch binds its V tables), verifies
 * against the reference for two different count sets with zeros, per algorithm and variant. */
static int verify_bound(algo_kind kind, algo_coll coll, uint32_t n, bool det, bool inp, uint32_t mul)
{
    static uint64_t m[9 * 9], derived[9][4 * 9];
    algo_plan *plans[9] = {0};
    int rc = 0;
    for (uint32_t r = 0; r < n && !rc; r++) {
        algo_op op = {.coll = coll, .nranks = n, .rank = r, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                      .deterministic = det, .in_place = inp};
        rc = algo_compile(&op, NULL, kind, &plans[r]);
        fill_counts(&op, m, derived[r], mul);
        if (!rc) {
            plans[r]->op.counts = op.counts;
            plans[r]->op.ncounts = op.ncounts;
        }
    }
    algo_verify_report rep = {0};
    if (!rc)
        rc = algo_verify_plans(plans, n, NULL, NULL, &rep);
    if (rc)
        printf("FAIL %s %s n=%u mul=%u%s%s: rc %d\n%s", algo_kind_name(kind), algo_coll_name(coll), n, mul,
               det ? " deterministic" : "", inp ? " in place" : "", rc, rep.msg);
    for (uint32_t r = 0; r < n; r++)
        algo_plan_free(plans[r]);
    return rc != 0;
}

Test(algo_pairwise, v_plans_compiled_without_counts_verify)
{
    static const algo_kind kinds[] = {ALGO_PAIRWISE, ALGO_MESH, ALGO_RING};
    static const algo_coll colls[] = {ALGO_COLL_ALLTOALLV, ALGO_COLL_ALLTOALLVC, ALGO_COLL_ALLGATHERV,
                                      ALGO_COLL_REDUCE_SCATTERV};
    int fails = 0;
    for (uint32_t n = 1; n <= 9; n++)
        for (size_t k = 0; k < 3; k++)
            for (size_t c = 0; c < 4; c++)
                for (int variant = 0; variant < 4; variant++) {
                    bool det = variant & 1, inp = variant & 2;
                    algo_op probe = {.coll = colls[c], .nranks = n, .in_place = inp};
                    if ((det && colls[c] != ALGO_COLL_REDUCE_SCATTERV) || !algo_supports(kinds[k], &probe))
                        continue;
                    fails += verify_bound(kinds[k], colls[c], n, det, inp, 1);
                    fails += verify_bound(kinds[k], colls[c], n, det, inp, 13);
                }
    cr_expect_eq(fails, 0, "see the failures above");
}

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
