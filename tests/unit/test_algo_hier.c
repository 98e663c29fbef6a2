/* Hierarchical plans (algos/hier*.c) through the verifier: result, synchronisation, races and the
 * topology rule (across servers only copies into a peer's SCRATCH/OUT) on equal and unequal
 * server layouts, every root, in and out of place; and the bytes or transfers they put on the
 * network against the flat algorithm the selector would otherwise use. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "algos/algo_build.h"
#include "algos/cost.h"
#include "algos/hier_geo.h"
#include "algos/verify.h"

typedef struct layout {
    const char *name;
    uint32_t n;
    uint32_t so[9];
} layout;

static const layout g_layouts[] = {
    {"2x2", 4, {0, 0, 1, 1}},
    {"2x3", 6, {0, 0, 0, 1, 1, 1}},
    {"3x3", 9, {0, 0, 0, 1, 1, 1, 2, 2, 2}},
    {"4x2", 8, {0, 0, 1, 1, 2, 2, 3, 3}},
    {"2+1+2", 5, {0, 0, 1, 2, 2}},
    {"3+2+3", 8, {0, 0, 0, 1, 1, 2, 2, 2}},
    {"interleaved 2x3", 6, {7, 5, 7, 5, 7, 5}}, /* servers not in rank blocks, ids not 0-based */
};
#define NLAYOUTS (sizeof g_layouts / sizeof g_layouts[0])

static const algo_coll g_colls[] = {ALGO_COLL_ALLGATHER, ALGO_COLL_ALLGATHERV, ALGO_COLL_REDUCE_SCATTER,
                                    ALGO_COLL_REDUCE_SCATTERV, ALGO_COLL_BROADCAST, ALGO_COLL_REDUCE,
                                    ALGO_COLL_SCATTER, ALGO_COLL_ALLTOALL};
#define NCOLLS (sizeof g_colls / sizeof g_colls[0])

static bool rooted(algo_coll c)
{
    return c == ALGO_COLL_BROADCAST || c == ALGO_COLL_REDUCE || c == ALGO_COLL_SCATTER;
}

/* The flat algorithm across servers (what algo_select picks without hier). */
static algo_kind flat_kind(algo_coll c)
{
    switch (c) {
    case ALGO_COLL_REDUCE_SCATTER:
    case ALGO_COLL_REDUCE_SCATTERV:
    case ALGO_COLL_REDUCE: return ALGO_RING_PUSH;
    case ALGO_COLL_ALLTOALL: return ALGO_PAIRWISE;
    default: return ALGO_RING;
    }
}

static uint64_t g_vcounts[2 * 9];

/* AllGatherV / ReduceScatterV counts from c: irregular, some zero, with gaps between blocks. */
static void fill_v(algo_op *op, uint64_t c)
{
    uint32_t n = op->nranks;
    uint64_t cur = 0;
    for (uint32_t i = 0; i < n; i++) {
        g_vcounts[i] = (i * 5 + 1) % (c + 1);
        g_vcounts[n + i] = cur;
        cur += g_vcounts[i] + i % 3;
    }
    op->counts = g_vcounts;
    op->ncounts = 2 * n;
}

static algo_op mk(algo_coll c, uint32_t n, uint64_t count, uint32_t root, bool in_place)
{
    algo_op op = {.coll = c, .nranks = n, .count = count, .dtype = HAL_DT_FP32, .redop = HAL_OP_SUM,
                  .root = root, .in_place = in_place};
    if (c == ALGO_COLL_ALLGATHERV || c == ALGO_COLL_REDUCE_SCATTERV)
        fill_v(&op, count);
    return op;
}

static int check(const layout *L, algo_coll c, uint64_t count, uint32_t root, bool in_place, algo_verify_report *rep)
{
    algo_topo topo = {.nranks = L->n, .server_of = L->so};
    algo_op op = mk(c, L->n, count, root, in_place);
    int rc = algo_verify(&op, &topo, ALGO_HIER, rep);
    if (rc || strcmp(rep->name, "hier"))
        printf("FAIL hier %s on %s count=%llu root=%u %s: rc %d name %s\n%s", algo_coll_name(c), L->name,
               (unsigned long long)count, root, in_place ? "in-place" : "out-of-place", rc, rep->name, rep->msg);
    return rc || strcmp(rep->name, "hier") ? 1 : 0;
}

/* Every layout x collective x counts {0, 1, 7, 1031} x every root x in/out of place. */
Test(algo_hier, verifies_everywhere)
{
    static const uint64_t counts[] = {0, 1, 7, 1031};
    int fails = 0, runs = 0;
    for (size_t li = 0; li < NLAYOUTS; li++)
        for (size_t ci = 0; ci < NCOLLS; ci++)
            for (size_t k = 0; k < 4; k++) {
                const layout *L = &g_layouts[li];
                uint32_t nroots = rooted(g_colls[ci]) ? L->n : 1;
                for (uint32_t root = 0; root < nroots; root++)
                    for (int inp = 0; inp < 2; inp++) {
                        algo_op probe = mk(g_colls[ci], L->n, 1, root, inp);
                        if (!algo_supports(ALGO_HIER, &probe))
                            continue;
                        algo_verify_report rep;
                        fails += check(L, g_colls[ci], counts[k], root, inp, &rep);
                        runs++;
                    }
            }
    cr_expect_eq(fails, 0, "%d of %d configurations failed (printed above)", fails, runs);
    cr_expect_gt(runs, 500);
}

/* Network bytes (or, where the flat algorithm already sends the minimum, the busiest rank's
 * network bytes or the number of network transfers) below the flat algorithm's. */
Test(algo_hier, less_on_the_network)
{
    for (size_t li = 0; li < NLAYOUTS; li++)
        for (size_t ci = 0; ci < NCOLLS; ci++) {
            const layout *L = &g_layouts[li];
            algo_coll c = g_colls[ci];
            algo_topo topo = {.nranks = L->n, .server_of = L->so};
            for (uint32_t root = 0; root < (rooted(c) ? L->n : 1); root++) {
                algo_op op = mk(c, L->n, 1031, root, false);
                algo_verify_report h, f;
                cr_assert_eq(algo_verify(&op, &topo, ALGO_HIER, &h), 0, "%s %s: %s", L->name, algo_coll_name(c), h.msg);
                cr_assert_eq(algo_verify(&op, &topo, flat_kind(c), &f), 0, "%s %s flat: %s", L->name,
                             algo_coll_name(c), f.msg);
                const uint64_t *hb = h.link_bytes, *fb = f.link_bytes;
                const char *what = "net bytes";
                bool less = hb[ALGO_LINK_NET] < fb[ALGO_LINK_NET];
                if (c == ALGO_COLL_BROADCAST) {
                    /* A chain may move the minimum too; hier splits it over the root server's
                     * ranks (a root alone on its server must send it all itself). */
                    uint32_t m0 = 0;
                    for (uint32_t q = 0; q < L->n; q++)
                        m0 += L->so[q] == L->so[root];
                    bool alone = m0 == 1;
                    less = hb[ALGO_LINK_NET] <= fb[ALGO_LINK_NET] &&
                           (alone ? h.max_rank_tx[ALGO_LINK_NET] <= f.max_rank_tx[ALGO_LINK_NET]
                                  : h.max_rank_tx[ALGO_LINK_NET] < f.max_rank_tx[ALGO_LINK_NET]);
                    what = "busiest rank's net bytes";
                } else if (c == ALGO_COLL_SCATTER || c == ALGO_COLL_ALLTOALL) {
                    /* Direct writes move the minimum too; hier aggregates them per server (runs
                     * of consecutive ranks: none in the interleaved layout). */
                    bool inter = !strncmp(L->name, "interleaved", 11);
                    less = hb[ALGO_LINK_NET] == fb[ALGO_LINK_NET] &&
                           (inter ? h.link_xfers[ALGO_LINK_NET] <= f.link_xfers[ALGO_LINK_NET]
                                  : h.link_xfers[ALGO_LINK_NET] < f.link_xfers[ALGO_LINK_NET]);
                    what = "net transfers";
                }
                cr_expect(less, "%s %s root %u: %s not below flat %s (net bytes %llu vs %llu, busiest %llu vs %llu, "
                          "xfers %llu vs %llu)", L->name, algo_coll_name(c), root, what, algo_kind_name(flat_kind(c)),
                          (unsigned long long)hb[ALGO_LINK_NET], (unsigned long long)fb[ALGO_LINK_NET],
                          (unsigned long long)h.max_rank_tx[ALGO_LINK_NET],
                          (unsigned long long)f.max_rank_tx[ALGO_LINK_NET], (unsigned long long)h.link_xfers[ALGO_LINK_NET],
                          (unsigned long long)f.link_xfers[ALGO_LINK_NET]);
            }
        }
}

/* AllGather and ReduceScatter move exactly the minimum across servers: every server receives
 * every other server's data once, (S-1) x n x block in total. */
Test(algo_hier, minimal_net_bytes)
{
    for (size_t li = 0; li < NLAYOUTS; li++) {
        const layout *L = &g_layouts[li];
        algo_topo topo = {.nranks = L->n, .server_of = L->so};
        algo_hgeo g;
        cr_assert(algo_hgeo_build(&topo, L->n, 0, &g));
        uint64_t S = g.S;
        algo_hgeo_free(&g);
        algo_coll cs[2] = {ALGO_COLL_ALLGATHER, ALGO_COLL_REDUCE_SCATTER};
        for (int i = 0; i < 2; i++) {
            algo_op op = mk(cs[i], L->n, 100, 0, false);
            algo_verify_report rep;
            cr_assert_eq(algo_verify(&op, &topo, ALGO_HIER, &rep), 0, "%s", rep.msg);
            cr_expect_eq(rep.link_bytes[ALGO_LINK_NET], (S - 1) * L->n * 100 * 4, "%s %s: %llu", L->name,
                         algo_coll_name(cs[i]), (unsigned long long)rep.link_bytes[ALGO_LINK_NET]);
        }
    }
}

/* Geometry: servers in order of first appearance, unequal sizes, groups by local index. */
Test(algo_hier, geometry)
{
    const uint32_t so[8] = {4, 4, 4, 9, 9, 1, 1, 1};
    algo_topo topo = {.nranks = 8, .server_of = so};
    algo_hgeo g;
    cr_assert(algo_hgeo_build(&topo, 8, 4, &g));
    cr_expect_eq(g.S, 3);
    cr_expect_eq(g.si, 1);
    cr_expect_eq(g.l, 1);
    cr_expect_eq(g.m, 2);
    cr_expect_eq(algo_hgeo_min(&g), 2);
    cr_expect_eq(algo_hgeo_max(&g), 3);
    cr_expect(!algo_hgeo_equal(&g));
    cr_expect_eq(g.local[0], 3);
    cr_expect_eq(g.group[0], 1);
    cr_expect_eq(g.group[2], 6);
    cr_expect_eq(algo_hgeo_rank(&g, 2, 2), 7);
    algo_hgeo_free(&g);
    cr_assert(algo_hgeo_build(&topo, 8, 2, &g));
    cr_expect_eq(g.group[1], ALGO_HGEO_NONE, "server 1 has no local index 2");
    algo_hgeo_free(&g);
    cr_expect(!algo_hgeo_build(NULL, 8, 0, &g), "no placement, no geometry");
}

/* Hier does not apply on one server, with a rank per server, or to deterministic reductions;
 * AllReduce still needs equal servers. */
Test(algo_hier, fits)
{
    const uint32_t one[4] = {0, 0, 0, 0}, each[3] = {0, 1, 2}, uneven[5] = {0, 0, 1, 2, 2};
    algo_topo t1 = {.nranks = 4, .server_of = one}, t2 = {.nranks = 3, .server_of = each},
              t3 = {.nranks = 5, .server_of = uneven};
    algo_op op = mk(ALGO_COLL_ALLGATHER, 4, 8, 0, false);
    cr_expect(!algo_hier_coll_fits(&op, &t1));
    op.nranks = 3;
    cr_expect(!algo_hier_coll_fits(&op, &t2));
    op.nranks = 5;
    cr_expect(algo_hier_coll_fits(&op, &t3));
    op.coll = ALGO_COLL_ALLREDUCE;
    cr_expect(!algo_hier_coll_fits(&op, &t3), "AllReduce's hier needs equal servers");
    op.coll = ALGO_COLL_REDUCE_SCATTER;
    op.deterministic = true;
    cr_expect(!algo_hier_coll_fits(&op, &t3));
    op.coll = ALGO_COLL_ALLTOALLV;
    op.deterministic = false;
    cr_expect(!algo_supports(ALGO_HIER, &op), "AlltoAllV has no hier plan");
}

/* Nothing forced: small calls take hier wherever every server holds >= 2 ranks (a one-rank server
 * does all its server's inter-server work alone, so flat may be estimated as cheap), and whatever
 * the selector picks (hier or flat, by the cost estimate) verifies. */
Test(algo_hier, selection)
{
    static const uint64_t counts[] = {1, 7, 1031};
    for (size_t li = 0; li < NLAYOUTS; li++)
        for (size_t ci = 0; ci < NCOLLS; ci++) {
            const layout *L = &g_layouts[li];
            algo_topo topo = {.nranks = L->n, .server_of = L->so};
            algo_op op = mk(g_colls[ci], L->n, 7, L->n - 1, false);
            if (strcmp(L->name, "2+1+2"))
                cr_expect_eq(algo_select(&op, &topo, ALGO_AUTO), ALGO_HIER, "%s %s count 7", L->name,
                             algo_coll_name(g_colls[ci]));
            cr_expect_eq(algo_select(&op, &topo, ALGO_HIER), ALGO_HIER);
            cr_expect_neq(algo_select(&op, &topo, flat_kind(g_colls[ci])), ALGO_HIER, "a forced flat algorithm wins");
            for (size_t k = 0; k < 3; k++) {
                op = mk(g_colls[ci], L->n, counts[k], 0, false);
                algo_verify_report rep;
                cr_expect_eq(algo_verify(&op, &topo, ALGO_AUTO, &rep), 0, "%s %s auto: %s", L->name,
                             algo_coll_name(g_colls[ci]), rep.msg);
            }
        }
}

/* The cost estimate: hier below flat for small AllGather on 2x4; both finite, and huge without a
 * placement. */
Test(algo_hier, cost_estimate)
{
    const uint32_t so[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    algo_topo topo = {.nranks = 8, .server_of = so};
    algo_op op = mk(ALGO_COLL_ALLGATHER, 8, 256, 0, false);
    double h = algo_cost_estimate(&op, &topo, ALGO_HIER, NULL), f = algo_cost_estimate(&op, &topo, ALGO_RING, NULL);
    cr_expect(h > 0 && f > 0 && h < f && f < 1e9, "hier %.1f us, flat %.1f us", h, f);
    cr_expect_gt(algo_cost_estimate(&op, NULL, ALGO_HIER, NULL), 1e100);
}

/* A scratch budget that hier's leaders or agents would exceed keeps the selector on the flat plan
 * (the same verdict on every rank: every rank's plan is sized); with room, hier as above. */
Test(algo_hier, selection_within_scratch)
{
    static const algo_coll colls[] = {ALGO_COLL_REDUCE_SCATTER, ALGO_COLL_REDUCE, ALGO_COLL_SCATTER, ALGO_COLL_ALLTOALL};
    const layout *L = &g_layouts[0];
    for (size_t ci = 0; ci < sizeof colls / sizeof colls[0]; ci++) {
        algo_op op = mk(colls[ci], L->n, 7, 0, false);
        algo_topo roomy = {.nranks = L->n, .server_of = L->so, .scratch_max = 1u << 20};
        algo_topo tight = {.nranks = L->n, .server_of = L->so, .scratch_max = 4};
        cr_expect_eq(algo_select(&op, &roomy, ALGO_AUTO), ALGO_HIER, "%s %s with 1 MiB of scratch", L->name,
                     algo_coll_name(colls[ci]));
        cr_expect_eq(algo_select(&op, &tight, ALGO_AUTO), flat_kind(colls[ci]), "%s %s with 4 bytes of scratch",
                     L->name, algo_coll_name(colls[ci]));
    }
}
