/* Large reductions across emulated servers within a small HCCL_BUFFSIZE (issue #9): with 1 MB of
 * scratch per rank, AllReduce, ReduceScatter and Reduce of 1.5M elements (6 MB of fp32 per rank)
 * must work, in rounds through reused scratch slots (ring_push, hier, docs/algorithms.md), checked
 * element by element by coll_check; deterministic mode across servers must give, bit for bit, the
 * rank-ordered sum and the same digests as the single-server mesh. Before the rounds existed these
 * calls failed with HCCL_E_MEMORY ("needs N bytes of scratch but HCCL_BUFFSIZE gives ..."). */
#include "multirank/mr_run.h"

#define MR_DET_CHECK OH_BUILD_DIR "/tests/progs/det_check"
#define BIG "--colls allreduce,reducescatter,reduce --counts 1500007"

static void big(const char *env, unsigned n, const char *servers, const char *args)
{
    char prog[512], what[160];
    snprintf(prog, sizeof prog, "--servers %s %s", servers, MR_COLL_CHECK);
    snprintf(what, sizeof what, "%s coll_check on %u ranks, servers %s, %s", env, n, servers, args);
    mr_result r = mr_run_t(env, n, 120, prog, args);
    cr_expect(strstr(r.out, "HCCL_BUFFSIZE gives") == NULL, "%s: a plan did not fit the scratch", what);
    mr_expect_ok(r, what, " 0 failed");
}

/* 2 x 2: AllReduce takes hier (pipelined rounds on two slave streams), the others ring_push. */
Test(bigsrv, two_by_two_1mb, .timeout = 150) { big("HCCL_BUFFSIZE=1", 4, "2", BIG " --dtypes fp32,bf16"); }
/* The flat ring for AllReduce too. */
Test(bigsrv, ring_push_1mb, .timeout = 150)
{
    big("HCCL_BUFFSIZE=1 HCCL_ALGO='level0:NA;level1:ring_push'", 4, "2", "--colls allreduce --dtypes fp32 --counts 1500007");
}
/* Uneven servers (no hier): ring_push for all three. */
Test(bigsrv, uneven_2_1_2_1mb, .timeout = 150)
{
    big("HCCL_BUFFSIZE=1", 5, "2+1+2", BIG " --dtypes fp32 --place out");
}

/* 4 servers x 2: hier's inter stage by halving-doubling (fewer steps than the ring at S = 4), in
 * rounds at 600011 elements within 1 MB. */
Test(bigsrv, halving_doubling_4x2_1mb, .timeout = 150)
{
    big("HCCL_BUFFSIZE=1", 8, "4", "--colls allreduce --dtypes fp32 --counts 0,1,7,65537,600011");
}

/* Runs det_check and returns rank k's digest for k < n (0 if missing). */
static void digests(const char *env, const char *servers, unsigned n, unsigned long long *d)
{
    char prog[512];
    if (servers)
        snprintf(prog, sizeof prog, "--servers %s %s", servers, MR_DET_CHECK);
    else
        snprintf(prog, sizeof prog, "%s", MR_DET_CHECK);
    mr_result r = mr_run_t(env, n, 120, prog, "--mode env --algo auto --count 200003");
    cr_expect_eq(r.status, 0, "det_check (%s, servers %s): exit %d (a result differs from the rank-ordered sum?)", env,
                 servers ? servers : "one", r.status);
    for (unsigned k = 0; k < n; k++) {
        char needle[64];
        snprintf(needle, sizeof needle, "det_check: rank %u digest ", k);
        const char *p = strstr(r.out, needle);
        cr_expect_not_null(p, "no digest from rank %u", k);
        d[k] = p ? strtoull(p + strlen(needle), NULL, 16) : 0;
    }
    free(r.out);
}

/* Deterministic across 2 x 2 servers within 1 MB (AllReduce, Reduce, ReduceScatter go through the
 * rank-ordered push chain in rounds; ReduceScatterV through ring_ordered, which fits at this count):
 * the same bits as mesh on one server. */
Test(bigsrv, deterministic_2x2_1mb, .timeout = 150)
{
    unsigned long long srv[4], one[4];
    digests("HCCL_BUFFSIZE=1", "2", 4, srv);
    digests("", NULL, 4, one);
    for (unsigned k = 0; k < 4; k++)
        cr_expect_eq(srv[k], one[k], "rank %u: across servers %016llx, one server %016llx", k, srv[k], one[k]);
}

/* Ranks with different HCCL_BUFFSIZE (1, 2, 3, 4 MB): the rounds depend on the scratch, so every
 * rank plans with the least of all ranks' (rt_comm scratch_budget); planning with its own made
 * ranks disagree on the rounds and wait for each other until the execution timeout. */
Test(bigsrv, buffsize_differs_per_rank, .timeout = 150)
{
    mr_result r = mr_run_t("", 4, 120, "--servers 2 sh -c 'HCCL_BUFFSIZE=$((1 + RANK)) exec \"$0\" \"$@\"' " MR_COLL_CHECK,
                           BIG " --dtypes fp32 --place out");
    mr_expect_ok(r, "coll_check with HCCL_BUFFSIZE 1..4 MB by rank on 2 servers", " 0 failed");
}
