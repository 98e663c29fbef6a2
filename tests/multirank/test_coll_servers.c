/* Emulated multi-server jobs (hcclrun --servers): ranks of different servers never map each
 * other's memory, so every byte between them crosses a hal/net TCP link (runtime/net). Every
 * collective checked element by element on 2 servers x 2 ranks and on 3 servers of 2+1+2, AllReduce
 * hierarchical on 2 x 3 and flat (ring_push) on 2 x 2;
 * mismatches and a dead rank on the other server fail every rank. See docs/testing.md. */
#include "multirank/mr_run.h"

#define ALL "--colls allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,alltoallv," \
            "alltoallvc,allgatherv,reducescatterv,barrier"

static void servers_check(unsigned n, const char *servers, const char *args)
{
    char prog[512], what[96];
    snprintf(prog, sizeof prog, "--servers %s %s", servers, MR_COLL_CHECK);
    snprintf(what, sizeof what, "coll_check on %u ranks, servers %s", n, servers);
    mr_expect_ok(mr_run_t("", n, 240, prog, args), what, " 0 failed");
}

/* Counts 0, 1, 7 for every dtype x op; 1048579 for fp32 sum, bf16 max, int8 sum, int64 prod. */
Test(servers, two_by_two, .timeout = 300) { servers_check(4, "2", ALL); }
Test(servers, uneven_2_1_2, .timeout = 300)
{
    servers_check(5, "2+1+2", ALL " --dtypes fp32,bf16,int8,int64,fp16 --counts 0,1,7,1048579");
}

/* AllReduce takes hier on equal servers (2x2 above too), ring_push when forced (our token). */
Test(servers, hier_2x3, .timeout = 300)
{
    servers_check(6, "2", "--colls allreduce,barrier --dtypes fp32,bf16,int8,int64 --counts 0,1,7,1048579");
}
Test(servers, ring_push_forced, .timeout = 300)
{
    char prog[512];
    snprintf(prog, sizeof prog, "--servers 2 %s", MR_COLL_CHECK);
    mr_expect_ok(mr_run_t("HCCL_ALGO='level0:NA;level1:ring_push'", 4, 240, prog,
                          "--colls allreduce --dtypes fp32,int8 --counts 0,1,7,1048579"),
                 "forced ring_push across servers", " 0 failed");
}

static void mismatch(const char *kind, const char *needle)
{
    char prog[512], args[64];
    snprintf(prog, sizeof prog, "--servers 2 %s", MR_COLL_MISC);
    snprintf(args, sizeof args, "mismatch-%s", kind);
    mr_result r = mr_run_t("HCCL_EXEC_TIMEOUT=60", 4, 120, prog, args);
    cr_expect_eq(r.status, 0, "mismatch-%s across servers: hcclrun exited with %d", kind, r.status);
    cr_expect(strstr(r.out, "NOT DETECTED") == NULL, "mismatch-%s: some rank did not see the failure", kind);
    cr_expect(strstr(r.out, needle) != NULL, "mismatch-%s: no \"%s\" in the output", kind, needle);
    free(r.out);
}

Test(servers, mismatch_op, .timeout = 150) { mismatch("op", "called HcclBroadcast"); }
Test(servers, mismatch_count, .timeout = 150) { mismatch("count", "count=512"); }
Test(servers, mismatch_skip, .timeout = 150) { mismatch("skip", "called HcclBarrier"); }
Test(servers, peer_destroys, .timeout = 150) { mismatch("destroy", "HcclCommDestroy"); }
/* Rank 0 dies: the ranks of the other server see their link to it fail (watchdog, ~1 s). */
Test(servers, peer_exits, .timeout = 150) { mismatch("exit", "rank 0 ("); }
