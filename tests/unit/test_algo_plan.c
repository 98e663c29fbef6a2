/* Plan basics: compile errors, the prologue, count 0, huge counts, buffer extents, names, the
 * HCCL_ALGO parser and the selector. */
#include <criterion/criterion.h>
#include <string.h>

#include "algos/verify.h"

static algo_op mkop(algo_coll c, uint32_t n, uint32_t r, uint64_t count)
{
    return (algo_op){.coll = c, .nranks = n, .rank = r, .count = count, .dtype = HAL_DT_FP32};
}

static uint64_t data_steps(const algo_plan *p)
{
    uint64_t k = 0;
    for (uint32_t s = 0; s < p->nstreams; s++)
        for (uint32_t i = 0; i < p->streams[s].nsteps; i++)
            k += p->streams[s].steps[i].kind <= ALGO_STEP_REDUCE;
    return k;
}

Test(algo_plan, bad_ops)
{
    algo_plan *p = (algo_plan *)1;
    algo_op op = mkop(ALGO_COLL_ALLREDUCE, 4, 4, 8);
    cr_expect_eq(algo_compile(&op, NULL, ALGO_RING, &p), HAL_E_PARAM);
    cr_expect_null(p);
    op = mkop(ALGO_COLL_ALLREDUCE, 4, 0, 8);
    op.dtype = (hal_dtype)13;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_RING, &p), HAL_E_PARAM);
    op = mkop(ALGO_COLL_BROADCAST, 4, 0, 8);
    op.root = 4;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_RING, &p), HAL_E_PARAM);
    uint64_t short_counts[7] = {0};
    op = mkop(ALGO_COLL_REDUCE_SCATTERV, 4, 0, 8); /* counts given but too few (none at all is fine) */
    op.counts = short_counts;
    op.ncounts = 7;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_RING, &p), HAL_E_PARAM);
    op = mkop(ALGO_COLL_ALLREDUCE, 4, 0, UINT64_MAX / 2);
    cr_expect_eq(algo_compile(&op, NULL, ALGO_RING, &p), HAL_E_PARAM);
    op = mkop(ALGO_COLL_ALLREDUCE, 4, 0, 8);
    cr_expect_eq(algo_compile(&op, NULL, ALGO_AUTO, &p), HAL_E_NOT_SUPPORTED);
    cr_expect_eq(algo_compile(&op, NULL, ALGO_P2P, &p), HAL_E_NOT_SUPPORTED);
    op.coll = ALGO_COLL_SENDRECV;
    cr_expect_eq(algo_compile(&op, NULL, ALGO_RING, &p), HAL_E_NOT_SUPPORTED);
}

Test(algo_plan, prologue_and_copies)
{
    algo_op op = mkop(ALGO_COLL_ALLREDUCE, 4, 2, 8);
    uint64_t counts[2] = {1, 2};
    op.counts = counts; /* not used by allreduce but copied into the plan anyway */
    op.ncounts = 2;
    algo_plan *p;
    cr_assert_eq(algo_compile(&op, NULL, ALGO_RING, &p), 0);
    cr_expect_str_eq(p->name, "ring");
    cr_expect_eq(p->algo, ALGO_RING);
    cr_expect_neq(p->op.counts, counts);
    cr_expect_eq(p->op.counts[1], 2);
    const algo_step *st = p->streams[0].steps;
    cr_expect_eq(st[0].kind, ALGO_STEP_PUBLISH);
    /* ring: PUB to both neighbours, then FETCH left (1) first, then right (3) */
    cr_expect_eq(st[1].kind, ALGO_STEP_SIGNAL);
    cr_expect_eq(st[1].u.sync.slot, ALGO_SLOT_PUB);
    cr_expect_eq(st[2].kind, ALGO_STEP_SIGNAL);
    cr_expect_eq(st[3].kind, ALGO_STEP_FETCH);
    cr_expect_eq(st[3].u.fetch.peer, 1);
    cr_expect_eq(st[4].kind, ALGO_STEP_FETCH);
    cr_expect_eq(st[4].u.fetch.peer, 3);
    cr_expect_leq(p->nslots, ALGO_MAX_SLOTS);
    algo_plan_free(p);
    algo_plan_free(NULL);
}

Test(algo_plan, count_zero_moves_nothing)
{
    for (int k = ALGO_RING; k <= ALGO_MESH; k++)
        for (int c = 0; c < ALGO_COLL_COUNT; c++) {
            if (c == ALGO_COLL_ALLTOALLV || c == ALGO_COLL_ALLTOALLVC || c == ALGO_COLL_ALLGATHERV ||
                c == ALGO_COLL_REDUCE_SCATTERV || c == ALGO_COLL_SENDRECV)
                continue;
            algo_op op = mkop((algo_coll)c, 5, 1, 0);
            algo_plan *p;
            cr_assert_eq(algo_compile(&op, NULL, (algo_kind)k, &p), 0);
            cr_expect_eq(data_steps(p), 0);
            cr_expect_eq(p->streams[0].steps[0].kind, ALGO_STEP_PUBLISH);
            cr_expect_gt(p->streams[0].nsteps, 1, "still checks its neighbours");
            algo_plan_free(p);
            algo_verify_report rep;
            cr_expect_eq(algo_verify(&op, NULL, (algo_kind)k, &rep), 0, "%s", rep.msg);
        }
}

/* Offsets beyond 4 GiB: sync and counts only (no symbolic buffers at this size). */
Test(algo_plan, huge_counts)
{
    algo_verify_opts o = {.skip_data = true};
    for (int k = ALGO_RING; k <= ALGO_MESH; k++) {
        algo_op ops[3];
        for (uint32_t r = 0; r < 3; r++)
            ops[r] = mkop(ALGO_COLL_ALLGATHER, 3, r, (1ull << 33) + 7);
        algo_verify_report rep;
        cr_expect_eq(algo_verify_ops(ops, NULL, (algo_kind)k, &o, &rep), 0, "%s", rep.msg);
        cr_expect_eq(rep.max_rank_sent, (k == ALGO_RING ? 2 : 2) * ((1ull << 33) + 7) * 4);
        algo_plan *p;
        cr_assert_eq(algo_compile(&ops[2], NULL, (algo_kind)k, &p), 0);
        uint64_t maxoff = 0;
        for (uint32_t s = 0; s < p->nstreams; s++)
            for (uint32_t i = 0; i < p->streams[s].nsteps; i++)
                if (p->streams[s].steps[i].kind == ALGO_STEP_COPY && p->streams[s].steps[i].u.copy.dst.offset > maxoff)
                    maxoff = p->streams[s].steps[i].u.copy.dst.offset;
        cr_expect_eq(maxoff, 2 * ((1ull << 33) + 7) * 4);
        algo_plan_free(p);
    }
}

Test(algo_plan, buffer_elems)
{
    uint64_t in, out;
    algo_op op = mkop(ALGO_COLL_ALLGATHER, 4, 1, 10);
    algo_buffer_elems(&op, &in, &out);
    cr_expect(in == 10 && out == 40);
    op.coll = ALGO_COLL_REDUCE_SCATTER;
    algo_buffer_elems(&op, &in, &out);
    cr_expect(in == 40 && out == 10);
    op.coll = ALGO_COLL_SCATTER; /* not root: no IN */
    algo_buffer_elems(&op, &in, &out);
    cr_expect(in == 0 && out == 10);
    op.coll = ALGO_COLL_REDUCE;
    algo_buffer_elems(&op, &in, &out);
    cr_expect(in == 10 && out == 0);
    uint64_t v[16] = {1, 2, 3, 4, 0, 5, 10, 20, /* recv */ 4, 3, 2, 1, 30, 0, 10, 20};
    op = mkop(ALGO_COLL_ALLTOALLV, 4, 1, 0);
    op.counts = v;
    op.ncounts = 16;
    algo_buffer_elems(&op, &in, &out);
    cr_expect(in == 24 && out == 34, "in %llu out %llu", (unsigned long long)in, (unsigned long long)out);
}

Test(algo_plan, names)
{
    cr_expect_str_eq(algo_kind_name(ALGO_MESH), "mesh");
    cr_expect_str_eq(algo_kind_name((algo_kind)99), "unknown");
    cr_expect_str_eq(algo_coll_name(ALGO_COLL_ALLREDUCE), "HcclAllReduce");
    cr_expect_str_eq(algo_coll_name(ALGO_COLL_SENDRECV), "HcclBatchSendRecv");
}

static algo_kind parse(const char *s, algo_coll c, int want_rc)
{
    algo_kind k = (algo_kind)77;
    cr_expect_eq(algo_parse_env(s, c, &k), want_rc, "'%s'", s ? s : "(null)");
    return k;
}

Test(algo_env, global_form)
{
    cr_expect_eq(parse(NULL, ALGO_COLL_ALLREDUCE, 0), ALGO_AUTO);
    cr_expect_eq(parse("", ALGO_COLL_ALLREDUCE, 0), ALGO_AUTO);
    cr_expect_eq(parse("level0:NA;level1:ring", ALGO_COLL_ALLREDUCE, 0), ALGO_RING);
    cr_expect_eq(parse("level0:NA;level1:ring", ALGO_COLL_ALLTOALL, 0), ALGO_RING);
    cr_expect_eq(parse("level0:NA;level1:fullmesh", ALGO_COLL_BROADCAST, 0), ALGO_MESH);
    cr_expect_eq(parse("level0:NA;level1:pairwise", ALGO_COLL_ALLTOALLV, 0), ALGO_PAIRWISE);
    cr_expect_eq(parse("level0:NA;level1:NHR", ALGO_COLL_ALLREDUCE, 0), ALGO_AUTO);
    cr_expect_eq(parse("level0:NA;level1:H-D_R;level2:ring", ALGO_COLL_ALLREDUCE, 0), ALGO_AUTO);
    cr_expect_eq(parse("level1:ring", ALGO_COLL_ALLREDUCE, 0), ALGO_RING);
    cr_expect_eq(parse(" level0:NA ; level1:ring ", ALGO_COLL_ALLREDUCE, 0), ALGO_RING);
    cr_expect_eq(parse("level0:NA;level1:null", ALGO_COLL_ALLREDUCE, 0), ALGO_AUTO);
}

Test(algo_env, per_op_form)
{
    const char *s = "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:fullmesh/alltoall=level0:NA;level1:pairwise";
    cr_expect_eq(parse(s, ALGO_COLL_ALLREDUCE, 0), ALGO_RING);
    cr_expect_eq(parse(s, ALGO_COLL_ALLGATHER, 0), ALGO_MESH);
    cr_expect_eq(parse(s, ALGO_COLL_ALLGATHERV, 0), ALGO_MESH);
    cr_expect_eq(parse(s, ALGO_COLL_ALLTOALLVC, 0), ALGO_PAIRWISE);
    cr_expect_eq(parse(s, ALGO_COLL_BROADCAST, 0), ALGO_AUTO);
    cr_expect_eq(parse("reducescatter=level0:NA;level1:ring", ALGO_COLL_REDUCE_SCATTERV, 0), ALGO_RING);
    cr_expect_eq(parse("reduce=level0:NA;level1:ring", ALGO_COLL_REDUCE_SCATTER, 0), ALGO_AUTO);
}

Test(algo_env, syntax_errors)
{
    const char *bad[] = {
        "ring", "level1", "level1:", "level1:foo", "level4:ring", "level1:ring;level1:NHR", "level0:NA;",
        "allreduce=level1:ring/", "bogus=level0:NA;level1:ring", "allreduce=", "=level1:ring",
        "allreduce=level1:ring/allreduce=level1:NHR", "allreduce=level1:ring/level1:ring", "levelx:ring",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        parse(bad[i], ALGO_COLL_ALLREDUCE, -1);
}

/* A refused spec says what is wrong: the token and what it may be (a user who wrote "mesh" reads
 * that the name is fullmesh). */
Test(algo_env, refusals_say_why)
{
    static const char *const cases[][2] = {
        {"level0:NA;level1:mesh", "unknown algorithm 'mesh' (ring, fullmesh, pairwise"},
        {"level4:ring", "'level4' is not level0, level1, level2 or level3"},
        {"level1:ring;level1:NHR", "level1 is given twice"},
        {"level0:NA;", "a ';' with no level after it"},
        {"ring", "'ring' is not level<0-3>:<algorithm>"},
        {"bogus=level0:NA;level1:ring", "unknown op 'bogus' (allreduce, allgather"},
        {"allreduce=level1:ring/allreduce=level1:NHR", "op 'allreduce' is given twice"},
        {"allreduce=level1:ring/", "a '/' with no op after it"},
        {"allreduce=", "no levels"},
        {"allreduce=level1:ring/level1:ring", "'level1:ring' is not <op>=<levels>"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[256] = "";
        algo_kind k = (algo_kind)77;
        cr_expect_eq(algo_parse_env_why(cases[i][0], ALGO_COLL_ALLREDUCE, &k, why, sizeof why), -1, "'%s'",
                     cases[i][0]);
        cr_expect_eq(k, ALGO_AUTO, "'%s' forced something", cases[i][0]);
        cr_expect(strstr(why, cases[i][1]) != NULL, "'%s': '%s' does not say '%s'", cases[i][0], why, cases[i][1]);
    }
    char why[8] = "x"; /* a short buffer gets a truncated, terminated reason */
    algo_kind k;
    cr_expect_eq(algo_parse_env_why("level1:foo", ALGO_COLL_ALLREDUCE, &k, why, sizeof why), -1);
    cr_expect_eq(strlen(why), sizeof why - 1, "'%s'", why);
    cr_expect_eq(algo_parse_env_why("level1:foo", ALGO_COLL_ALLREDUCE, &k, NULL, 0), -1, "no buffer, same verdict");
}

Test(algo_select, rules)
{
    algo_op op = mkop(ALGO_COLL_ALLREDUCE, 8, 0, 100);
    cr_expect_eq(algo_select(&op, NULL, ALGO_AUTO), ALGO_MESH);
    cr_expect_eq(algo_select(&op, NULL, ALGO_RING), ALGO_RING);
    cr_expect_eq(algo_select(&op, NULL, ALGO_PAIRWISE), ALGO_MESH, "forced but unsupported: falls back");
    op.nranks = ALGO_MESH_MAX_RANKS;
    cr_expect_eq(algo_select(&op, NULL, ALGO_AUTO), ALGO_MESH, "16 ranks on one server: mesh");
    op.nranks = ALGO_MESH_MAX_RANKS + 1;
    cr_expect_eq(algo_select(&op, NULL, ALGO_AUTO), ALGO_RING, "more: ring");
    uint32_t so[4] = {0, 0, 1, 1};
    algo_topo topo = {.nranks = 4, .server_of = so};
    op.nranks = 4;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_HIER, "servers of 2 ranks each: hierarchical");
    cr_expect_eq(algo_select(&op, &topo, ALGO_MESH), ALGO_HIER, "forced mesh would reduce across servers");
    op.coll = ALGO_COLL_REDUCE_SCATTER;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_HIER, "several servers: hierarchical (cost model)");
    cr_expect_eq(algo_select(&op, &topo, ALGO_RING_PUSH), ALGO_RING_PUSH, "forced flat: only copies cross ranks");
    op.deterministic = true;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_RING_PUSH, "deterministic: no hier ReduceScatter");
    op.deterministic = false;
    uint32_t uneven[4] = {0, 0, 0, 1};
    algo_topo topo3 = {.nranks = 4, .server_of = uneven};
    op.coll = ALGO_COLL_ALLREDUCE;
    cr_expect_eq(algo_select(&op, &topo3, ALGO_AUTO), ALGO_RING_PUSH, "unequal servers: no hier");
    op.coll = ALGO_COLL_ALLGATHER;
    cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_HIER);
    cr_expect_eq(algo_select(&op, &topo, ALGO_RING), ALGO_RING, "HCCL_ALGO ring still forces the flat ring");
    cr_expect_eq(algo_select(&op, &topo3, ALGO_AUTO), ALGO_HIER, "unequal servers: hier AllGather");
    op.coll = ALGO_COLL_ALLTOALL;
    cr_expect_eq(algo_select(&op, &topo, ALGO_PAIRWISE), ALGO_PAIRWISE);
    cr_expect_eq(algo_select(&op, NULL, ALGO_AUTO), ALGO_MESH);
    op.coll = ALGO_COLL_SENDRECV;
    cr_expect_eq(algo_select(&op, &topo, ALGO_RING), ALGO_P2P);
    op = mkop(ALGO_COLL_BROADCAST, 1, 0, 3);
    cr_expect_eq(algo_select(&op, NULL, ALGO_AUTO), ALGO_MESH);
}

/* Whatever the selector picks verifies, on one server and across servers. */
Test(algo_select, picks_verify)
{
    uint32_t so[16];
    for (uint32_t r = 0; r < 16; r++)
        so[r] = r / 4;
    algo_topo topo = {.nranks = 16, .server_of = so};
    for (int c = 0; c < ALGO_COLL_COUNT; c++) {
        if (c == ALGO_COLL_SENDRECV || c == ALGO_COLL_ALLTOALLV || c == ALGO_COLL_ALLTOALLVC ||
            c == ALGO_COLL_ALLGATHERV || c == ALGO_COLL_REDUCE_SCATTERV)
            continue;
        for (uint32_t n = 1; n <= 16; n += 5) {
            algo_op op = mkop((algo_coll)c, n, 0, 2 * n + 1);
            algo_verify_report rep;
            cr_expect_eq(algo_verify(&op, NULL, ALGO_AUTO, &rep), 0, "%s n=%u\n%s", algo_coll_name(op.coll), n, rep.msg);
            topo.nranks = n;
            cr_expect_eq(algo_verify(&op, &topo, ALGO_AUTO, &rep), 0, "%s n=%u\n%s", algo_coll_name(op.coll), n, rep.msg);
        }
    }
}

/* Across servers only copies into a peer's SCRATCH/OUT/INBOX: the verifier refuses the flat ring
 * (it reduces into its neighbour's OUT) and ring_push passes for every rank count, split, root,
 * reduce op, in/out of place and counts smaller than the rank count. */
Test(algo_verify, links_across_servers)
{
    uint32_t so[4] = {0, 0, 1, 1};
    algo_topo topo = {.nranks = 4, .server_of = so};
    algo_op op = mkop(ALGO_COLL_ALLREDUCE, 4, 0, 64);
    algo_verify_report rep;
    cr_expect_eq(algo_verify(&op, &topo, ALGO_RING, &rep), ALGO_VERIFY_FAILED);
    cr_expect(strstr(rep.msg, "another server"), "%s", rep.msg);
    cr_expect_eq(algo_verify(&op, NULL, ALGO_RING, &rep), 0, "one server: fine\n%s", rep.msg);
    op.coll = ALGO_COLL_ALLGATHER;
    cr_expect_eq(algo_verify(&op, &topo, ALGO_RING, &rep), 0, "copies only\n%s", rep.msg);
}

/* Forced from 3 ranks (several servers); AUTO picks hier there now (test_algo_hier). */
Test(algo_verify, ring_push)
{
    static const algo_coll colls[] = {ALGO_COLL_ALLREDUCE, ALGO_COLL_REDUCE_SCATTER, ALGO_COLL_REDUCE};
    static const uint64_t counts[] = {1, 5, 37};
    uint32_t so[9];
    for (uint32_t n = 1; n <= 9; n++) {
        for (uint32_t r = 0; r < n; r++)
            so[r] = r < 2 ? 0 : r < 3 ? 1 : 2 + r % 2; /* 2+1+... uneven servers */
        algo_topo topo = {.nranks = n, .server_of = so};
        for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                for (int inp = 0; inp < 2; inp++) {
                    algo_op op = mkop(colls[c], n, 0, counts[k]);
                    op.in_place = inp;
                    op.redop = k == 1 ? HAL_OP_MAX : HAL_OP_SUM;
                    op.root = n - 1;
                    algo_verify_report rep;
                    cr_expect_eq(algo_verify(&op, &topo, n < 3 ? ALGO_AUTO : ALGO_RING_PUSH, &rep), 0, "%s n=%u count=%llu inplace=%d\n%s",
                                 algo_coll_name(op.coll), n, (unsigned long long)counts[k], inp, rep.msg);
                    cr_expect(n < 3 || !strcmp(rep.name, "ring_push"), "%s", rep.name);
                    cr_expect_eq(rep.link_bytes[ALGO_LINK_SELF] + rep.link_bytes[ALGO_LINK_INTRA] +
                                 rep.link_bytes[ALGO_LINK_NET] > 0 || n == 1, 1);
                }
    }
}

/* Hierarchical AllReduce verifies on S servers x m ranks, and sends exactly 2(S-1)/S of the data
 * per server across servers: total 2(S-1) x data, where the flat ring_push sends about 2 x data
 * per server boundary. */
Test(algo_verify, hier_allreduce)
{
    static const uint32_t shapes[][2] = {{2, 2}, {2, 3}, {3, 2}, {4, 2}, {2, 4}, {3, 3}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        uint32_t S = shapes[i][0], m = shapes[i][1], n = S * m, so[16];
        for (uint32_t r = 0; r < n; r++)
            so[r] = r / m;
        algo_topo topo = {.nranks = n, .server_of = so};
        static const uint64_t counts[] = {1, 5, 37, 0};
        for (size_t k = 0; k < 4; k++)
            for (int inp = 0; inp < 2; inp++) {
                algo_op op = mkop(ALGO_COLL_ALLREDUCE, n, 0, counts[k] ? counts[k] : (uint64_t)n * 24);
                op.in_place = inp;
                algo_verify_report rep;
                cr_expect_eq(algo_verify(&op, &topo, ALGO_AUTO, &rep), 0, "%ux%u count=%llu inplace=%d\n%s", S, m,
                             (unsigned long long)op.count, inp, rep.msg);
                cr_expect_str_eq(rep.name, "hier");
                if (counts[k])
                    continue;
                uint64_t data = op.count * 4;
                cr_expect_eq(rep.link_bytes[ALGO_LINK_NET], 2ull * (S - 1) * data, "%ux%u: %llu net bytes", S, m,
                             (unsigned long long)rep.link_bytes[ALGO_LINK_NET]);
                algo_verify_report flat;
                cr_expect_eq(algo_verify(&op, &topo, ALGO_RING_PUSH, &flat), 0, "%s", flat.msg);
                cr_expect_gt(flat.link_bytes[ALGO_LINK_NET], rep.link_bytes[ALGO_LINK_NET], "%ux%u: flat %llu", S, m,
                             (unsigned long long)flat.link_bytes[ALGO_LINK_NET]);
            }
    }
}
