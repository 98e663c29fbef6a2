/* The eager algorithm: every collective it does, verified for 1..9, 12 and 16 ranks, counts (zero, odd, a
 * full box), roots, in/out of place, several dtypes and reduce ops, V-ops over irregular tables; the
 * inbox rules the verifier enforces; full end (plan.h, INBOX) of eager and of the mesh plans that
 * run next to them; and the selector's crossover. */
#include "test_algo_util.h"

static const algo_coll k_eager_colls[] = {ALGO_COLL_ALLREDUCE, ALGO_COLL_BROADCAST, ALGO_COLL_ALLGATHER,
                                          ALGO_COLL_REDUCE_SCATTER, ALGO_COLL_REDUCE, ALGO_COLL_SCATTER,
                                          ALGO_COLL_ALLTOALL};
#define NCOLLS (sizeof k_eager_colls / sizeof k_eager_colls[0])

/* Verifies one configuration with `kind`; 1 on failure (printed). Also requires full end. */
static int check_one(algo_kind kind, algo_coll coll, uint32_t n, uint64_t count, uint32_t root, bool inp,
                     hal_dtype dt, hal_redop op, bool det)
{
    algo_op o = {.coll = coll, .nranks = n, .count = count, .dtype = dt, .redop = op, .root = root,
                 .in_place = inp, .deterministic = det};
    algo_verify_report rep;
    int rc = algo_verify(&o, NULL, kind, &rep);
    if (rc == 0 && rep.full_end)
        return 0;
    printf("FAIL %s %s n=%u count=%llu root=%u %s dt=%d op=%d det=%d: rc %d full_end %d\n%s", algo_kind_name(kind),
           algo_coll_name(coll), n, (unsigned long long)count, root, inp ? "in-place" : "out-of-place", dt, op, det,
           rc, rep.full_end, rep.msg);
    return 1;
}

/* Rank counts swept: every one up to 9, then 12 and ALGO_MESH_MAX_RANKS (the selector takes eager
 * and mesh up to there). The dtype, op and deterministic sweeps stop at 9 (NARROW): an element's
 * size and the fold order do not depend on n, and 12 and 16 would more than double the suite's time. */
static const uint32_t k_ranks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, ALGO_MESH_MAX_RANKS};
#define NARROW 9u
#define WIDE ALGO_MESH_MAX_RANKS

static int sweep(algo_kind kind, algo_coll coll, hal_dtype dt, hal_redop op, bool det, uint32_t max_n)
{
    int fails = 0;
    uint64_t esz = hal_dtype_size(dt);
    for (size_t ni = 0; ni < sizeof k_ranks / sizeof k_ranks[0] && k_ranks[ni] <= max_n; ni++) {
        uint32_t n = k_ranks[ni];
        uint64_t counts[5] = {0, 1, n + 1, 97, ALGO_EAGER_BOX / esz}; /* the last fills a box */
        uint32_t roots[3] = {0, n - 1, n / 2};
        uint32_t nr = ta_rooted(coll) ? 3 : 1;
        /* A zero-count call never reaches mesh while eager is on (it is eager whatever the
         * crossover), and mesh's empty plan does not end full: it is left out for mesh. */
        for (uint32_t ci = kind == ALGO_MESH ? 1 : 0; ci < 5; ci++)
            for (uint32_t ri = 0; ri < nr; ri++)
                for (int inp = 0; inp < 2; inp++) {
                    algo_op probe = {.coll = coll, .nranks = n, .count = counts[ci], .dtype = dt, .in_place = inp};
                    if (!algo_supports(kind, &probe))
                        continue;
                    fails += check_one(kind, coll, n, counts[ci], roots[ri], inp, dt, op, det);
                    if (fails > 5)
                        return fails;
                }
    }
    return fails;
}

Test(algo_eager, every_collective_fp32_sum)
{
    for (size_t i = 0; i < NCOLLS; i++)
        cr_expect_eq(sweep(ALGO_EAGER, k_eager_colls[i], HAL_DT_FP32, HAL_OP_SUM, false, WIDE), 0, "%s: see above",
                     algo_coll_name(k_eager_colls[i]));
}

Test(algo_eager, dtypes_and_ops)
{
    const hal_dtype dts[] = {HAL_DT_INT8, HAL_DT_FP16, HAL_DT_INT64, HAL_DT_BF16, HAL_DT_FP64, HAL_DT_INT128};
    const hal_redop ops[] = {HAL_OP_PROD, HAL_OP_MAX, HAL_OP_MIN};
    /* An eager plan depends on the element size, not on the op (the device reduces): each dtype
     * is swept with one op, and every op comes round twice. */
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        hal_redop op = ops[d % (sizeof ops / sizeof ops[0])];
        cr_expect_eq(sweep(ALGO_EAGER, ALGO_COLL_ALLREDUCE, dts[d], op, false, NARROW), 0, "see above");
        cr_expect_eq(sweep(ALGO_EAGER, ALGO_COLL_REDUCE_SCATTER, dts[d], op, false, NARROW), 0, "see above");
    }
    cr_expect_eq(sweep(ALGO_EAGER, ALGO_COLL_ALLGATHER, HAL_DT_INT8, HAL_OP_SUM, false, NARROW), 0, "see above");
    cr_expect_eq(sweep(ALGO_EAGER, ALGO_COLL_ALLTOALL, HAL_DT_INT128, HAL_OP_SUM, false, NARROW), 0, "see above");
}

/* Eager folds in rank order, so deterministic mode (a non-commutative fold in the verifier)
 * holds for free. */
Test(algo_eager, deterministic)
{
    cr_expect_eq(sweep(ALGO_EAGER, ALGO_COLL_ALLREDUCE, HAL_DT_FP32, HAL_OP_SUM, true, NARROW), 0, "see above");
    cr_expect_eq(sweep(ALGO_EAGER, ALGO_COLL_REDUCE_SCATTER, HAL_DT_FP32, HAL_OP_SUM, true, NARROW), 0, "see above");
    cr_expect_eq(sweep(ALGO_EAGER, ALGO_COLL_REDUCE, HAL_DT_FP32, HAL_OP_SUM, true, NARROW), 0, "see above");
}

/* Eager calls reuse the inbox because every plan that can run next to them ends full: the mesh
 * plans the selector picks on one server for n <= ALGO_MESH_MAX_RANKS (plan.h, INBOX). */
Test(algo_eager, mesh_plans_end_full)
{
    for (size_t i = 0; i < NCOLLS; i++)
        cr_expect_eq(sweep(ALGO_MESH, k_eager_colls[i], HAL_DT_FP32, HAL_OP_SUM, false, WIDE), 0, "%s: see above",
                     algo_coll_name(k_eager_colls[i]));
    cr_expect_eq(sweep(ALGO_MESH, ALGO_COLL_ALLREDUCE, HAL_DT_FP32, HAL_OP_SUM, true, WIDE), 0, "see above");
}

Test(algo_eager, v_ops_end_full_with_mesh)
{
    cr_expect_eq(ta_sweep(ALGO_MESH, ALGO_COLL_ALLGATHERV), 0); /* compile + verify */
    uint64_t m[2 * ALGO_MESH_MAX_RANKS];
    for (uint32_t n = 1; n <= ALGO_MESH_MAX_RANKS; n++) {
        const algo_coll vc[] = {ALGO_COLL_ALLGATHERV, ALGO_COLL_REDUCE_SCATTERV, ALGO_COLL_ALLTOALLVC};
        for (size_t k = 0; k < 3; k++) {
            uint64_t mm[ALGO_MESH_MAX_RANKS * ALGO_MESH_MAX_RANKS];
            algo_op op = {.coll = vc[k], .nranks = n, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM};
            if (vc[k] == ALGO_COLL_ALLTOALLVC) {
                for (uint32_t i = 0; i < n * n; i++)
                    mm[i] = i % 3;
                op.counts = mm, op.ncounts = n * n;
            } else {
                for (uint32_t i = 0; i < n; i++)
                    m[i] = i % 3, m[n + i] = i == 0 ? 0 : m[n + i - 1] + m[i - 1];
                op.counts = m, op.ncounts = 2 * n;
            }
            algo_verify_report rep;
            cr_expect_eq(algo_verify(&op, NULL, ALGO_MESH, &rep), 0, "%s n=%u: %s", algo_coll_name(vc[k]), n, rep.msg);
            cr_expect(rep.full_end, "%s n=%u does not end full", algo_coll_name(vc[k]), n);
        }
    }
}

Test(algo_eager, not_for_unsupported)
{
    algo_op op = {.coll = ALGO_COLL_ALLGATHERV, .nranks = 2, .dtype = HAL_DT_FP32};
    cr_expect_not(algo_supports(ALGO_EAGER, &op), "no counts and not chosen by the runtime");
    op.coll = ALGO_COLL_ALLTOALL, op.in_place = true, op.count = 1;
    cr_expect_not(algo_supports(ALGO_EAGER, &op));
    op.in_place = false, op.count = ALGO_EAGER_BOX / 4 + 1;
    cr_expect_not(algo_supports(ALGO_EAGER, &op), "more than a box");
    algo_plan *p = NULL;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_EAGER, &p), HAL_E_NOT_SUPPORTED);
}

static algo_topo topo4k = {.nranks = 4, .server_of = NULL};

Test(algo_eager, select_crossover)
{
    algo_topo topo = {.nranks = 4, .server_of = NULL, .eager_max = 4096};
    algo_op op = {.coll = ALGO_COLL_ALLREDUCE, .nranks = 4, .count = 1024, .dtype = HAL_DT_FP32};
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_EAGER, "4096 B <= 4096");
    op.count = 1025;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_MESH, "past the crossover");
    op.count = 0;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_EAGER, "an empty call is eager too");
    op.count = 8;
    cr_expect_eq(algo_select(&op, &topo, ALGO_RING), ALGO_RING, "forced wins");
    cr_expect_eq(algo_select(&op, NULL, ALGO_AUTO), ALGO_MESH, "no topology: no crossover");
    topo.eager_max = 0;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_MESH, "0 = off");
    topo.eager_max = 1u << 30;
    op.count = ALGO_EAGER_BOX / 4 + 1;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_MESH, "never more than a box");
    uint32_t so[4] = {0, 0, 1, 1};
    algo_topo two = {.nranks = 4, .server_of = so, .eager_max = 4096};
    op.count = 8;
    cr_expect_neq(algo_select(&op, &two, ALGO_AUTO), ALGO_EAGER, "two servers: no eager");
    algo_topo big = {.nranks = ALGO_MESH_MAX_RANKS, .eager_max = 4096};
    op.nranks = ALGO_MESH_MAX_RANKS;
    cr_expect_eq(algo_select(&op, &big, ALGO_AUTO), ALGO_EAGER, "16 ranks on one server: eager");
    big.nranks = op.nranks = ALGO_MESH_MAX_RANKS + 1;
    cr_expect_eq(algo_select(&op, &big, ALGO_AUTO), ALGO_RING, "n > 16: ring plans do not end full");
    cr_expect_str_eq(algo_kind_name(ALGO_EAGER), "eager");
}

/* V-ops whose tables every rank knows go eager by their largest block; AlltoAllV, whose ranks know
 * only their own row and column, at any size (its plan chooses per block). Compiled without counts,
 * the runtime's choice decides. */
Test(algo_eager, select_v_ops)
{
    topo4k.eager_max = 4096;
    algo_op op = {.coll = ALGO_COLL_ALLGATHERV, .nranks = 4, .dtype = HAL_DT_FP32};
    uint64_t c[8] = {1, 1024, 0, 3, 0, 1, 1025, 1028};
    op.counts = c, op.ncounts = 8;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_EAGER, "largest block 4096 B");
    op.coll = ALGO_COLL_REDUCE_SCATTERV;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_EAGER, "ReduceScatterV too");
    c[2] = 1025;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_MESH, "one block past the crossover");
    uint64_t m[16] = {0};
    op.coll = ALGO_COLL_ALLTOALLVC, op.counts = m, op.ncounts = 16;
    m[9] = 1024;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_EAGER, "AlltoAllVC: every matrix entry fits");
    m[14] = 1025;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_MESH, "AlltoAllVC: one entry past it");
    uint64_t v[16] = {1, 1, 1, 1, 0, 1, 2, 3, 5000, 1, 1, 1, 0, 1, 2, 3};
    op.coll = ALGO_COLL_ALLTOALLV, op.counts = v;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_EAGER, "AlltoAllV: any size");
    op.counts = NULL, op.ncounts = 0;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_EAGER, "AlltoAllV without counts too");
    op.coll = ALGO_COLL_ALLGATHERV, op.counts = NULL, op.ncounts = 0;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_MESH, "no counts: mesh");
    op.v_eager = true;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_EAGER, "no counts, the runtime's choice: eager");
    topo4k.eager_max = 0;
    cr_expect_eq(algo_select(&op, &topo4k, ALGO_AUTO), ALGO_MESH, "eager off");
}

/* V-ops: count tables from ta_fill_counts (irregular, zero blocks, gaps) whose largest block is at
 * most c, up to a full box; every rank count to `max_n`, in and out of place. */
static int v_sweep(algo_coll coll, hal_dtype dt, hal_redop rop, bool det, uint32_t max_n)
{
    static uint64_t m[ALGO_MESH_MAX_RANKS * ALGO_MESH_MAX_RANKS];
    int fails = 0;
    for (size_t ni = 0; ni < sizeof k_ranks / sizeof k_ranks[0] && k_ranks[ni] <= max_n; ni++) {
        uint32_t n = k_ranks[ni];
        uint64_t sizes[5] = {0, 1, n + 1, 97, ALGO_EAGER_BOX / hal_dtype_size(dt)};
        for (uint32_t ci = 0; ci < 5; ci++)
            for (int inp = 0; inp < 2; inp++) {
                algo_op o = {.coll = coll, .nranks = n, .dtype = dt, .redop = rop, .in_place = inp,
                             .deterministic = det};
                ta_fill_counts(&o, m, sizes[ci]);
                if (!algo_supports(ALGO_EAGER, &o))
                    continue;
                algo_verify_report rep;
                int rc = algo_verify(&o, NULL, ALGO_EAGER, &rep);
                if (rc == 0 && rep.full_end)
                    continue;
                printf("FAIL eager %s n=%u size=%llu %s dt=%d: rc %d full_end %d\n%s", algo_coll_name(coll), n,
                       (unsigned long long)sizes[ci], inp ? "in-place" : "out-of-place", dt, rc, rep.full_end, rep.msg);
                if (++fails > 5)
                    return fails;
            }
    }
    return fails;
}

static const algo_coll k_eager_vcolls[] = {ALGO_COLL_ALLGATHERV, ALGO_COLL_REDUCE_SCATTERV, ALGO_COLL_ALLTOALLVC,
                                           ALGO_COLL_ALLTOALLV};

/* AlltoAllV's blocks up to a box take the inbox or the receiver's OUT by their size against the
 * crossover (no topology: ALGO_EAGER_DEFAULT_BYTES, 512 fp32): the full-box tables mix both. */
Test(algo_eager, v_ops)
{
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(v_sweep(k_eager_vcolls[i], HAL_DT_FP32, HAL_OP_SUM, false, WIDE), 0, "%s: see above",
                     algo_coll_name(k_eager_vcolls[i]));
    cr_expect_eq(v_sweep(ALGO_COLL_REDUCE_SCATTERV, HAL_DT_INT8, HAL_OP_MAX, false, NARROW), 0, "see above");
    cr_expect_eq(v_sweep(ALGO_COLL_REDUCE_SCATTERV, HAL_DT_BF16, HAL_OP_PROD, true, NARROW), 0, "see above");
    cr_expect_eq(v_sweep(ALGO_COLL_ALLGATHERV, HAL_DT_INT128, HAL_OP_SUM, false, NARROW), 0, "see above");
    cr_expect_eq(v_sweep(ALGO_COLL_ALLTOALLVC, HAL_DT_FP16, HAL_OP_SUM, false, NARROW), 0, "see above");
    cr_expect_eq(v_sweep(ALGO_COLL_ALLTOALLV, HAL_DT_INT8, HAL_OP_SUM, false, NARROW), 0, "see above");
}

/* Eager AlltoAllV: each peer's block has an inbox path (its small steps) and a direct one (its large
 * steps), on both ends; the crossover is the topology's. */
Test(algo_eager, alltoallv_paths)
{
    algo_topo topo = {.nranks = 3, .eager_max = 64};
    algo_op op = {.coll = ALGO_COLL_ALLTOALLV, .nranks = 3, .rank = 1, .dtype = HAL_DT_FP32};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, &topo, ALGO_EAGER, &p), 0);
    cr_expect_eq(p->v_small_bytes, 64);
    uint32_t small[ALGO_STEP_FETCH + 1] = {0}, large[ALGO_STEP_FETCH + 1] = {0};
    for (uint32_t k = 0; k < p->streams[0].nsteps; k++) {
        const algo_step *st = &p->streams[0].steps[k];
        small[st->kind] += st->when == ALGO_WHEN_SMALL;
        large[st->kind] += st->when == ALGO_WHEN_LARGE;
    }
    cr_expect_eq(small[ALGO_STEP_COPY], 4, "into 2 peers' inboxes, out of 2 boxes");
    cr_expect_eq(large[ALGO_STEP_COPY], 2, "into 2 peers' OUT");
    cr_expect_eq(large[ALGO_STEP_SIGNAL], 2, "their DATA signals");
    cr_expect_eq(large[ALGO_STEP_WAIT], 2, "and the waits for them");
    cr_expect_eq(small[ALGO_STEP_SIGNAL] + small[ALGO_STEP_WAIT] + small[ALGO_STEP_FETCH] + large[ALGO_STEP_FETCH], 0);
    algo_plan_free(p);
    for (uint32_t n = 2; n <= 5; n++) /* 16 fp32 per box at most: the sizes below mix both paths */
        for (uint64_t c = 1; c <= 40; c += 13) {
            static uint64_t m[5 * 5];
            algo_op o = {.coll = ALGO_COLL_ALLTOALLV, .nranks = n, .dtype = HAL_DT_FP32};
            ta_fill_counts(&o, m, c);
            algo_verify_report rep;
            topo.nranks = n;
            cr_expect_eq(algo_verify(&o, &topo, ALGO_EAGER, &rep), 0, "n=%u c=%llu: %s", n, (unsigned long long)c,
                         rep.msg);
            cr_expect(rep.full_end, "n=%u c=%llu does not end full", n, (unsigned long long)c);
        }
}

/* One plan serves every count table (the runtime compiles it without counts): it moves what each
 * call's tables say. */
Test(algo_eager, v_plans_are_count_free)
{
    for (size_t i = 0; i < 4; i++) {
        algo_op op = {.coll = k_eager_vcolls[i], .nranks = 3, .dtype = HAL_DT_FP32, .v_eager = true};
        algo_plan *p = NULL;
        cr_assert_eq(algo_compile(&op, NULL, ALGO_EAGER, &p), 0, "%s", algo_coll_name(op.coll));
        cr_expect_eq(p->inbox_bytes, ALGO_EAGER_BOX, "any table: a whole box may be used");
        for (uint32_t k = 0; k < p->streams[0].nsteps; k++) {
            const algo_step *st = &p->streams[0].steps[k];
            if (st->kind == ALGO_STEP_COPY)
                cr_expect(st->u.copy.vcount.tab != ALGO_VT_NONE, "%s: a copy of a fixed size", algo_coll_name(op.coll));
            if (st->kind == ALGO_STEP_REDUCE)
                cr_expect(st->u.reduce.vcount.tab != ALGO_VT_NONE, "%s: a reduction of a fixed size",
                          algo_coll_name(op.coll));
        }
        algo_plan_free(p);
    }
}

/* Hand-made plans breaking the inbox rules are refused. */
static algo_plan *two_rank_plan(uint32_t r, algo_ref dst, algo_ref src, uint64_t bytes)
{
    algo_op op = {.coll = ALGO_COLL_ALLGATHER, .nranks = 2, .rank = r, .count = 1, .dtype = HAL_DT_FP32};
    algo_plan *p = NULL;
    cr_assert_eq(algo_compile(&op, NULL, ALGO_EAGER, &p), 0);
    if (r == 0) { /* replace rank 0's write into rank 1's inbox */
        for (uint32_t i = 0; i < p->streams[0].nsteps; i++) {
            algo_step *st = &p->streams[0].steps[i];
            if (st->kind == ALGO_STEP_COPY && st->u.copy.dst.buf == ALGO_BUF_INBOX) {
                st->u.copy.dst = dst;
                st->u.copy.src = src;
                st->u.copy.bytes = bytes;
                break;
            }
        }
    }
    return p;
}

static void expect_refused(algo_ref dst, algo_ref src, uint64_t bytes, const char *what)
{
    algo_plan *plans[2] = {two_rank_plan(0, dst, src, bytes), two_rank_plan(1, dst, src, bytes)};
    algo_verify_report rep;
    cr_expect_eq(algo_verify_plans(plans, 2, NULL, NULL, &rep), ALGO_VERIFY_FAILED, "%s accepted", what);
    cr_expect(strstr(rep.msg, "INBOX") != NULL, "%s: %s", what, rep.msg);
    algo_plan_free(plans[0]);
    algo_plan_free(plans[1]);
}

Test(algo_eager, verifier_inbox_rules)
{
    algo_ref in = {.buf = ALGO_BUF_IN, .owner = ALGO_SELF, .vdispl = -1};
    algo_ref peer_box1 = {.buf = ALGO_BUF_INBOX, .owner = 1, .vdispl = -1, .offset = ALGO_EAGER_BOX};
    expect_refused(peer_box1, in, 4, "writing another rank's box");
    algo_ref peer_box0 = {.buf = ALGO_BUF_INBOX, .owner = 1, .vdispl = -1, .offset = 0};
    expect_refused(in, peer_box0, 4, "reading a peer's inbox");
    expect_refused(peer_box0, in, 8, "past the declared box bytes");
}

/* The default crossover where ranks share CPUs (algos/plan.h): 8 KiB blocks for the rooted
 * collectives (one-way Broadcast, Scatter and Reduce included) at every rank count; for the
 * exchanges 16 KiB of boxes in all, n blocks, at most 8 KiB each. */
static uint64_t dflt(algo_coll c, uint32_t n)
{
    algo_topo topo = {.nranks = n, .eager_max = ALGO_EAGER_AUTO, .oneway = true};
    algo_op op = {.coll = c, .nranks = n, .dtype = HAL_DT_FP32};
    return algo_eager_default(&op, &topo);
}

/* The choice for `count` fp32 elements of c at n ranks, crossover unset; concurrent: every rank has
 * a CPU of its own. */
static algo_kind choice(algo_coll c, uint32_t n, uint64_t count, bool concurrent)
{
    algo_topo topo = {.nranks = n, .eager_max = ALGO_EAGER_AUTO, .oneway = true, .ranks_concurrent = concurrent};
    algo_op op = {.coll = c, .nranks = n, .count = count, .dtype = HAL_DT_FP32};
    return algo_select(&op, &topo, ALGO_AUTO);
}

static algo_kind auto_choice(algo_coll c, uint32_t n, uint64_t count)
{
    return choice(c, n, count, false);
}

Test(algo_eager, default_crossover)
{
    const algo_coll rooted[] = {ALGO_COLL_BROADCAST, ALGO_COLL_REDUCE, ALGO_COLL_SCATTER};
    const algo_coll exchanges[] = {ALGO_COLL_ALLREDUCE, ALGO_COLL_ALLGATHER, ALGO_COLL_ALLTOALL,
                                   ALGO_COLL_REDUCE_SCATTER, ALGO_COLL_ALLGATHERV, ALGO_COLL_REDUCE_SCATTERV,
                                   ALGO_COLL_ALLTOALLV, ALGO_COLL_ALLTOALLVC};
    for (uint32_t n = 1; n <= ALGO_MESH_MAX_RANKS; n++) {
        for (size_t i = 0; i < sizeof rooted / sizeof rooted[0]; i++)
            cr_expect_eq(dflt(rooted[i], n), 8u << 10, "%s at %u ranks", algo_coll_name(rooted[i]), n);
        uint64_t want = n <= 2 ? 8u << 10 : (16u << 10) / n;
        for (size_t i = 0; i < sizeof exchanges / sizeof exchanges[0]; i++)
            cr_expect_eq(dflt(exchanges[i], n), want, "%s at %u ranks", algo_coll_name(exchanges[i]), n);
    }
    cr_expect_eq(auto_choice(ALGO_COLL_ALLGATHER, 2, 2048), ALGO_EAGER, "8 KiB blocks at 2 ranks: eager");
    cr_expect_eq(auto_choice(ALGO_COLL_ALLGATHER, 2, 2049), ALGO_MESH, "past 8 KiB at 2 ranks: mesh");
    cr_expect_eq(auto_choice(ALGO_COLL_ALLTOALL, 8, 512), ALGO_EAGER, "2 KiB blocks at 8 ranks: eager");
    cr_expect_eq(auto_choice(ALGO_COLL_ALLTOALL, 8, 513), ALGO_MESH, "past 2 KiB at 8 ranks: mesh");
    cr_expect_eq(auto_choice(ALGO_COLL_BROADCAST, 8, 2048), ALGO_EAGER, "8 KiB broadcast at 8 ranks: eager");
    cr_expect_eq(auto_choice(ALGO_COLL_BROADCAST, 8, 2049), ALGO_MESH, "past 8 KiB at 8 ranks: mesh");
    cr_expect_eq(auto_choice(ALGO_COLL_REDUCE, 8, 2048), ALGO_EAGER, "8 KiB Reduce at 8 ranks: eager");
    cr_expect_eq(auto_choice(ALGO_COLL_ALLREDUCE, 5, 819), ALGO_EAGER, "16 KiB / 5 at 5 ranks: eager");
    cr_expect_eq(auto_choice(ALGO_COLL_ALLREDUCE, 5, 820), ALGO_MESH, "past 16 KiB / 5 at 5 ranks: mesh");
    algo_op bc = {.coll = ALGO_COLL_BROADCAST, .nranks = 2, .dtype = HAL_DT_FP32};
    cr_expect_eq(algo_eager_default(&bc, NULL), 2u << 10, "no topology: 2 KiB");
}

/* Where every rank has a CPU: 512 B blocks, except for the calls that may go one-way (2 KiB). */
Test(algo_eager, concurrent_crossover)
{
    const algo_coll lower[] = {ALGO_COLL_ALLREDUCE, ALGO_COLL_ALLGATHER, ALGO_COLL_ALLTOALL, ALGO_COLL_REDUCE,
                               ALGO_COLL_REDUCE_SCATTER};
    for (size_t i = 0; i < sizeof lower / sizeof lower[0]; i++) {
        cr_expect_eq(choice(lower[i], 2, 128, true), ALGO_EAGER, "%s, 512 B", algo_coll_name(lower[i]));
        cr_expect_eq(choice(lower[i], 2, 129, true), ALGO_MESH, "%s, past 512 B", algo_coll_name(lower[i]));
        cr_expect_eq(choice(lower[i], 2, 129, false), ALGO_EAGER, "%s, past 512 B, ranks share CPUs",
                     algo_coll_name(lower[i]));
    }
    cr_expect_eq(choice(ALGO_COLL_BROADCAST, 2, 512, true), ALGO_EAGER, "Broadcast may go one-way: 2 KiB");
    cr_expect_eq(choice(ALGO_COLL_SCATTER, 2, 512, true), ALGO_EAGER, "Scatter may go one-way: 2 KiB");
    cr_expect_eq(choice(ALGO_COLL_BROADCAST, 2, 513, true), ALGO_MESH, "Broadcast past 2 KiB");
    algo_topo no_oneway = {.nranks = 2, .eager_max = ALGO_EAGER_AUTO, .ranks_concurrent = true};
    algo_op bc = {.coll = ALGO_COLL_BROADCAST, .nranks = 2, .dtype = HAL_DT_FP32};
    cr_expect_eq(algo_eager_default(&bc, &no_oneway), 512u, "Broadcast where nothing goes one-way");
}
