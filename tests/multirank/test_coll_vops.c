/* V-collectives whose ranks disagree about counts fail on every rank before any byte lands
 * outside a receive buffer (canary allocations stay intact), with one line naming both ranks and
 * the entry; AlltoAllV with counts changing every call compiles one plan and keeps RSS flat; the
 * plan cache evicts only plans no launch holds. HCCL_EXEC_TIMEOUT bounds a detection bug,
 * hcclrun --timeout a hang. */
#include "multirank/mr_run.h"

#define MR_COLL_VOPS OH_BUILD_DIR "/tests/progs/coll_vops"

/* extra: more environment, e.g. a crossover that makes every rank's call eager. */
static void vmismatch_env(unsigned n, const char *algo, const char *extra, const char *coll,
                          const char *const *needles)
{
    char env[192], args[64];
    snprintf(env, sizeof env, "HCCL_EXEC_TIMEOUT=60 %s%s%s%s", extra, algo ? " HCCL_ALGO='level0:NA;level1:" : "",
             algo ? algo : "", algo ? "'" : "");
    snprintf(args, sizeof args, "mismatch-%s", coll);
    mr_result r = mr_run_t(env, n, 120, MR_COLL_VOPS, args);
    cr_expect_eq(r.status, 0, "%s on %u ranks (algo %s): hcclrun exited with %d", args, n, algo ? algo : "auto",
                 r.status);
    cr_expect(strstr(r.out, "NOT DETECTED") == NULL, "%s: some rank did not see the failure", args);
    cr_expect(strstr(r.out, "CORRUPTED") == NULL, "%s: bytes outside a described receive region changed", args);
    for (const char *const *s = needles; *s; s++)
        cr_expect(strstr(r.out, *s) != NULL, "%s: the output does not mention \"%s\"", args, *s);
    free(r.out);
}

static void vmismatch(unsigned n, const char *algo, const char *coll, const char *const *needles)
{
    vmismatch_env(n, algo, "", coll, needles);
}

static const char *const a2av_w[] = {
    "rank 0 sends 1000 elements to rank 1, rank 1 expects 10 from rank 0 (HcclAlltoAllV, op #1)", NULL};
static const char *const a2av_self_w[] = {
    "rank 1 sends 1000 elements to rank 1, rank 1 expects 10 from rank 1 (HcclAlltoAllV, op #1)", NULL};
static const char *const a2avc_w[] = {
    "rank 0 has sendCountMatrix[0][1]=1000 where rank 1 has 10 (HcclAlltoAllVC, op #1)", NULL};
/* On more ranks a third rank may notice first: it names the same entry with its own view. */
static const char *const a2avc4_w[] = {"sendCountMatrix[0][1]=", "(HcclAlltoAllVC, op #1)", NULL};
static const char *const agv_w[] = {"rank 0 has recvCounts[1]=10 where rank ", "has 1000 (HcclAllGatherV, op #1)",
                                    NULL};
static const char *const rsv_w[] = {"rank 0 has sendCounts[1]=10 where rank ",
                                    "has 1000 (HcclReduceScatterV, op #1)", NULL};

Test(vops, alltoallv_disagree_n2, .timeout = 150) { vmismatch(2, NULL, "alltoallv", a2av_w); }
Test(vops, alltoallv_disagree_n4, .timeout = 150) { vmismatch(4, NULL, "alltoallv", a2av_w); }
Test(vops, alltoallv_self_disagree_n2, .timeout = 150) { vmismatch(2, NULL, "alltoallv-self", a2av_self_w); }
Test(vops, alltoallvc_disagree_n2, .timeout = 150) { vmismatch(2, NULL, "alltoallvc", a2avc_w); }
Test(vops, alltoallvc_disagree_n4, .timeout = 150) { vmismatch(4, NULL, "alltoallvc", a2avc4_w); }
Test(vops, allgatherv_disagree_n2, .timeout = 150) { vmismatch(2, NULL, "allgatherv", agv_w); }
Test(vops, allgatherv_disagree_n4, .timeout = 150) { vmismatch(4, NULL, "allgatherv", agv_w); }
Test(vops, reducescatterv_disagree_n2, .timeout = 150) { vmismatch(2, NULL, "reducescatterv", rsv_w); }
Test(vops, reducescatterv_disagree_n4, .timeout = 150) { vmismatch(4, NULL, "reducescatterv", rsv_w); }
/* Both sides eager (every block within the crossover): an eager header carries a hash of the
 * tables, not the tables; the entry is still named, from the tables the peer published. Where the
 * crossover splits them (the default at 2 ranks: 1000 elements past it, 10 within), one side runs
 * eager and the other mesh, and the entry is named as well (the cases above). */
#define ALL_EAGER "HCCL_EAGER_MAX_BYTES=65536"
Test(vops, allgatherv_disagree_eager_n2, .timeout = 150) { vmismatch_env(2, NULL, ALL_EAGER, "allgatherv", agv_w); }
Test(vops, reducescatterv_disagree_eager_n2, .timeout = 150)
{
    vmismatch_env(2, NULL, ALL_EAGER, "reducescatterv", rsv_w);
}
Test(vops, alltoallvc_disagree_eager_n2, .timeout = 150) { vmismatch_env(2, NULL, ALL_EAGER, "alltoallvc", a2avc_w); }
/* AlltoAllV in header mode with every block through the inboxes: no record, and its header has no
 * hash of tables that differ per rank; FETCH compares the tables the peer published. */
Test(vops, alltoallv_disagree_eager_n2, .timeout = 150) { vmismatch_env(2, NULL, ALL_EAGER, "alltoallv", a2av_w); }
Test(vops, alltoallv_disagree_eager_n4, .timeout = 150) { vmismatch_env(4, NULL, ALL_EAGER, "alltoallv", a2av_w); }

/* The other algorithms that serve V-ops: ring AllGatherV checks only its neighbours, pairwise and
 * ring all-to-all every peer. */
Test(vops, allgatherv_disagree_ring_n4, .timeout = 150) { vmismatch(4, "ring", "allgatherv", agv_w); }
Test(vops, reducescatterv_disagree_ring_n4, .timeout = 150) { vmismatch(4, "ring", "reducescatterv", rsv_w); }
Test(vops, alltoallv_disagree_ring_n4, .timeout = 150) { vmismatch(4, "ring", "alltoallv", a2av_w); }
Test(vops, alltoallv_disagree_pairwise_n4, .timeout = 150) { vmismatch(4, "pairwise", "alltoallv", a2av_w); }

/* AllGatherV, ReduceScatterV, AlltoAllVC and AlltoAllV back to back on both sides of the eager
 * crossover (eager calls run ahead and reuse the inbox slots; an AlltoAllV mixes inbox and direct
 * blocks), in and out of place, checked after one synchronize. */
static void backtoback(unsigned n)
{
    mr_expect_ok(mr_run_t("", n, 150, MR_COLL_VOPS, "backtoback 300"), "backtoback", "coll_vops backtoback: PASS");
}
Test(vops, backtoback_n2, .timeout = 200) { backtoback(2); }
Test(vops, backtoback_n3, .timeout = 200) { backtoback(3); }
Test(vops, backtoback_n8, .timeout = 200) { backtoback(8); }

/* The same among Broadcasts (in runs of one root: one-way runs start and drain between the V
 * calls) and AllReduces, small and large, zero counts included: every protocol's running ahead
 * past the others'. */
static void mixed(unsigned n)
{
    mr_expect_ok(mr_run_t("", n, 150, MR_COLL_VOPS, "mixed 660"), "mixed", "coll_vops mixed: PASS");
}
Test(vops, mixed_n3, .timeout = 200) { mixed(3); }
Test(vops, mixed_n5, .timeout = 200) { mixed(5); }
Test(vops, mixed_n8, .timeout = 200) { mixed(8); }

/* Eager AlltoAllV into one OUT, small and large blocks alternating (a2av-reuse): a call with a large
 * block to receive runs in order (with it running ahead, peers wrote its OUT while the call before
 * still copied its small blocks there: every rank but rank 0 failed in round 0 at 4 and 8 ranks;
 * at 2 ranks, where every rank has a CPU, the calls did not overlap). */
static void a2av_reuse(unsigned n)
{
    mr_expect_ok(mr_run_t("", n, 150, MR_COLL_VOPS, "a2av-reuse 50"), "a2av-reuse", "coll_vops a2av-reuse: PASS");
}
Test(vops, a2av_reuse_n4, .timeout = 200) { a2av_reuse(4); }
Test(vops, a2av_reuse_n8, .timeout = 200) { a2av_reuse(8); }

/* 10,000 calls on 2 ranks, every one checked; fewer on 4 ranks, every 7th checked so that calls
 * also overlap on the stream. */
Test(vops, random_alltoallv_n2, .timeout = 200)
{
    mr_expect_ok(mr_run_t("", 2, 150, MR_COLL_VOPS, "random-alltoallv 10000 1"), "random-alltoallv n=2",
                 "coll_vops random-alltoallv: PASS");
}

Test(vops, random_alltoallv_n4, .timeout = 200)
{
    mr_expect_ok(mr_run_t("", 4, 150, MR_COLL_VOPS, "random-alltoallv 2000 7"), "random-alltoallv n=4",
                 "coll_vops random-alltoallv: PASS");
}

Test(vops, random_allgatherv_n3, .timeout = 200)
{
    mr_expect_ok(mr_run_t("", 3, 150, MR_COLL_VOPS, "random-allgatherv 500"), "random-allgatherv n=3",
                 "coll_vops random-allgatherv: PASS");
}

/* ReduceScatterV: 500 calls with random counts (some zero) on 3 ranks, every result checked and no
 * plan compiled after the first call, for each algorithm that compiles it and in deterministic
 * mode (mesh's ordered reduction, ring's rank-ordered chain). */
static void random_rsv(const char *env, const char *what)
{
    mr_expect_ok(mr_run_t(env, 3, 150, MR_COLL_VOPS, "random-reducescatterv 500"), what,
                 "coll_vops random-reducescatterv: PASS");
}

Test(vops, random_reducescatterv_mesh_n3, .timeout = 200)
{
    random_rsv("HCCL_ALGO='level0:NA;level1:fullmesh'", "random-reducescatterv mesh");
}
Test(vops, random_reducescatterv_ring_n3, .timeout = 200)
{
    random_rsv("HCCL_ALGO='level0:NA;level1:ring'", "random-reducescatterv ring");
}
Test(vops, random_reducescatterv_det_mesh_n3, .timeout = 200)
{
    random_rsv("HCCL_DETERMINISTIC=1 HCCL_ALGO='level0:NA;level1:fullmesh'",
               "random-reducescatterv deterministic mesh");
}
Test(vops, random_reducescatterv_det_ring_n3, .timeout = 200)
{
    random_rsv("HCCL_DETERMINISTIC=1 HCCL_ALGO='level0:NA;level1:ring'", "random-reducescatterv deterministic ring");
}

/* The ordered chain's scratch need grows with the counts: checked per call, on every rank. */
Test(vops, reducescatterv_scratch_per_call_n3, .timeout = 150)
{
    mr_expect_ok(mr_run_t("HCCL_BUFFSIZE=1 HCCL_EXEC_TIMEOUT=60 HCCL_DETERMINISTIC=1 HCCL_ALGO='level0:NA;level1:ring'",
                          3, 120, MR_COLL_VOPS, "rsv-scratch"),
                 "rsv-scratch", "coll_vops rsv-scratch: PASS");
}

Test(vops, plan_cache_keeps_shapes, .timeout = 150)
{
    mr_expect_ok(mr_run_t("", 2, 120, MR_COLL_VOPS, "cache-lru 200"), "cache-lru", "coll_vops cache-lru: PASS");
}

Test(vops, plan_cache_evicts_unheld, .timeout = 150)
{
    mr_expect_ok(mr_run_t("HCCL_PLAN_CACHE_SIZE=1", 4, 120, MR_COLL_VOPS, "cache-lru 200 evict"), "cache-lru evict",
                 "coll_vops cache-lru: PASS");
}
