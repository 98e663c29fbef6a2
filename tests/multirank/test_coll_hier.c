/* Hierarchical collectives (algos/hier*.c) run across emulated servers (hcclrun --servers: every
 * byte between servers crosses a hal/net TCP link), results checked element by element by
 * coll_check, every root; HCCL_DEBUG=DEBUG logs "rank R: compiled <op> with <algo>" for each plan,
 * which proves hier ran. HCCL_ALGO level1:hier forces it at every count (the cost model would
 * pick the flat algorithm for some large ones); one run checks the default selection picks it. */
#include "multirank/mr_run.h"

#define HIER_COLLS "allgather,allgatherv,reducescatter,reducescatterv,broadcast,reduce,scatter,alltoall"

static const char *const hier_ops[] = {"HcclAllGather", "HcclAllGatherV", "HcclReduceScatter", "HcclReduceScatterV",
                                       "HcclBroadcast", "HcclReduce",     "HcclScatter",       "HcclAlltoAll",
                                       "HcclAllReduce"};

/* Runs coll_check on n ranks over `servers`; every rank must compile each of the first nops
 * ops of hier_ops with hier. */
static void hier_check(unsigned n, const char *servers, const char *algo, const char *colls, int nops,
                       const char *args)
{
    char prog[512], all[512], what[96], roots[64] = "";
    for (unsigned r = 0; r < n; r++)
        snprintf(roots + strlen(roots), sizeof roots - strlen(roots), "%s%u", r ? "," : "", r);
    snprintf(prog, sizeof prog, "--servers %s %s", servers, MR_COLL_CHECK);
    snprintf(all, sizeof all, "--algo %s --colls %s --roots %s %s", algo, colls, roots, args);
    snprintf(what, sizeof what, "coll_check --algo %s on %u ranks, servers %s", algo, n, servers);
    mr_result r = mr_run_t("HCCL_DEBUG=DEBUG", n, 120, prog, all);
    cr_expect_eq(r.status, 0, "%s: hcclrun exited with %d", what, r.status);
    unsigned ok = 0;
    for (const char *p = strstr(r.out, " passed, 0 failed ("); p; p = strstr(p + 1, " passed, 0 failed ("))
        ok++;
    cr_expect_eq(ok, n, "%s: %u of %u ranks report \"passed, 0 failed\"", what, ok, n);
    for (int i = 0; i < nops; i++)
        for (unsigned rank = 0; rank < n; rank++) {
            char needle[96];
            snprintf(needle, sizeof needle, "rank %u: compiled %s with hier\n", rank, hier_ops[i]);
            cr_expect(strstr(r.out, needle) != NULL, "%s: no \"%.*s\" in the log", what, (int)strlen(needle) - 1,
                      needle);
        }
    free(r.out);
}

#define CASES "--dtypes fp32,bf16,int8 --counts 0,1,7,65537"

/* 2 servers x 2 ranks, 2 x 3 (AllReduce's hier too: equal servers). */
Test(hier, two_by_two, .timeout = 150) { hier_check(4, "2", "hier", HIER_COLLS ",allreduce", 9, CASES); }
Test(hier, two_by_three, .timeout = 150) { hier_check(6, "2", "hier", HIER_COLLS ",allreduce", 9, CASES); }

/* Unequal servers: every collective but AllReduce (whose hier needs equal servers). */
Test(hier, uneven_3_2_3, .timeout = 150)
{
    hier_check(8, "3+2+3", "hier", HIER_COLLS, 8, "--dtypes fp32,int8 --counts 0,1,7,65537");
}

/* Nothing forced: the cost model picks hier for small messages on 3+2+3. */
Test(hier, selected_by_default, .timeout = 150)
{
    hier_check(8, "3+2+3", "auto", HIER_COLLS, 8, "--dtypes fp32 --ops sum --counts 7 --place out");
}
