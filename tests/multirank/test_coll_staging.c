/* Staging mode (HCCL_ASCEND_STAGING=on, runtime/stream/rt_staging*.c) on hal/ascend over the
 * emulator's ACL: every collective goes through the communicator's staging buffers, in chunks when
 * it does not fit (HCCL_BUFFSIZE=1: 256 KiB per staging buffer, so the large counts below chunk).
 * HCCL_EMU_ACL_STRICT_IPC=1 makes the emulator's ACL front refuse any copy that names another
 * process's device memory outside what this process imported by key, as CANN would: the matrix
 * passing under it proves that peers only touch what was exported at init, never a user buffer,
 * and the unstaged run failing under it proves the check bites. docs/ascend.md. */
#include "multirank/mr_run.h"

#define STAGED "HCCL_HAL=ascend HCCL_ASCEND_STAGING=on HCCL_BUFFSIZE=1 HCCL_EXEC_TIMEOUT=60"
#define STRICT "HCCL_EMU_ACL_STRICT_IPC=1"
#define COLLS "--colls allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,alltoallvc,allgatherv," \
              "reducescatterv,barrier"

static void check(const char *env, unsigned n, const char *args, const char *what)
{
    char full[256], label[128];
    snprintf(full, sizeof full, "%s %s", STAGED, env);
    snprintf(label, sizeof label, "%s on %u ranks", what, n);
    mr_expect_ok(mr_run_t(full, n, 400, MR_COLL_CHECK, args), label, " 0 failed");
}

/* Every collective x dtype x op x placement; counts 65539 and 300007 chunk (fp32 AllReduce: 2
 * chunks; AllGather on 4 ranks: 5). Strict: no peer ever named a user buffer. */
Test(staging_coll, matrix_n2_strict, .timeout = 500)
{
    check(STRICT, 2, COLLS " --counts 0,1,7,65539,300007", "staged matrix (strict)");
}
Test(staging_coll, matrix_n4_strict, .timeout = 500)
{
    check(STRICT, 4, COLLS " --counts 0,1,7,65539,300007", "staged matrix (strict)");
}
/* Every dtype of the big counts too (not only the representative subset), odd counts, ring. */
Test(staging_coll, big_all_n4_ring, .timeout = 500)
{
    check(STRICT, 4, "--algo ring --colls allreduce,reducescatter,allgather --counts 7,300007 --big-all "
                     "--dtypes fp32,bf16,int8,int64,fp64", "staged ring, every dtype (strict)");
}
/* AlltoAllV is staged whole (ranks cannot agree on chunks without a message): counts that fit. */
Test(staging_coll, alltoallv_fits, .timeout = 300)
{
    check(STRICT, 2, "--colls alltoallv --counts 0,1,7,3001", "staged AlltoAllV (strict)");
    check(STRICT, 4, "--colls alltoallv --counts 0,1,7,3001", "staged AlltoAllV (strict)");
}
/* ...and one that does not fit fails with the sizes named (on 2 ranks both sides refuse). */
Test(staging_coll, alltoallv_too_big, .timeout = 300)
{
    mr_result r = mr_run_t(STAGED, 2, 120, MR_COLL_CHECK, "--colls alltoallv --counts 300007 --dtypes fp32");
    cr_expect_neq(r.status, 0, "AlltoAllV larger than the staging buffer succeeded");
    cr_expect(strstr(r.out, "AlltoAllV is not cut into chunks") != NULL, "no error naming the staging limit");
    cr_expect(strstr(r.out, "raise HCCL_BUFFSIZE") != NULL, "the error does not say what to do");
    free(r.out);
}
/* The check can fail: without staging, peers copy straight into user buffers (zero copy) and the
 * eager inbox, neither imported by key, and the strict front refuses the first such copy. */
Test(staging_coll, strict_refuses_unstaged, .timeout = 300)
{
    mr_result r = mr_run_t("HCCL_HAL=ascend HCCL_ASCEND_STAGING=off HCCL_EXEC_TIMEOUT=5 " STRICT, 2, 120,
                           MR_COLL_CHECK, "--colls allreduce --counts 7,65539 --dtypes fp32 --ops sum");
    cr_expect_neq(r.status, 0, "unstaged zero copy passed the strict import check");
    cr_expect(strstr(r.out, "did not import by key") != NULL, "no strict-import refusal in the output");
    free(r.out);
}
/* Point to point: receives land in the receiver's staging OUT (fits or fails, not chunked:
 * HCCL_BUFFSIZE=8 gives 2 MiB, enough for the 3 receives of 65539 x 8 bytes on 4 ranks). */
Test(staging_coll, p2p_strict, .timeout = 300)
{
    check("HCCL_BUFFSIZE=8 " STRICT, 2, "--colls sendrecv,batchsendrecv,group --counts 0,1,7,65539",
          "staged p2p (strict)");
    check("HCCL_BUFFSIZE=8 " STRICT, 4, "--colls sendrecv,batchsendrecv,group --counts 0,1,7,65539",
          "staged p2p (strict)");
}
/* Staging on hal/emu (testing the mode without hal/ascend). */
Test(staging_coll, emu_n4, .timeout = 400)
{
    mr_expect_ok(mr_run_t("HCCL_HAL=emu HCCL_ASCEND_STAGING=on HCCL_BUFFSIZE=1", 4, 300, MR_COLL_CHECK,
                          COLLS " --counts 0,7,300007 --dtypes fp32,bf16,int8"),
                 "staged matrix on hal/emu, 4 ranks", " 0 failed");
}
/* A count mismatch is caught at the first chunk: the signature carries the call's count. */
Test(staging_mismatch, counts_n2, .timeout = 150)
{
    mr_result r = mr_run(STAGED, 2, MR_COLL_MISC, "mismatch-count");
    cr_expect_eq(r.status, 0, "mismatch-count with staging: hcclrun exited with %d", r.status);
    cr_expect(strstr(r.out, "NOT DETECTED") == NULL, "some rank did not see the failure");
    cr_expect(strstr(r.out, "count=512") != NULL, "the output does not name the count");
    free(r.out);
}
/* Two emulated servers of 2 (hal/emu: hal/ascend takes no link signals yet): peers on the other
 * server are reached through runtime/net as before, those of the same server through staging. */
Test(staging_coll, servers_2x2_emu, .timeout = 400)
{
    mr_expect_ok(mr_run_t("HCCL_HAL=emu HCCL_ASCEND_STAGING=on HCCL_BUFFSIZE=1", 4, 300,
                          "--servers 2 " MR_COLL_CHECK, COLLS " --counts 0,7,3001,300007 --dtypes fp32,int8"),
                 "staged matrix on 2 servers x 2 (hal/emu)", " 0 failed");
    mr_expect_ok(mr_run_t("HCCL_HAL=emu HCCL_ASCEND_STAGING=on HCCL_BUFFSIZE=1", 4, 300,
                          "--servers 2 " MR_COLL_CHECK, "--colls alltoallv,sendrecv,batchsendrecv,group --counts 0,7,3001"),
                 "staged AlltoAllV and p2p on 2 servers x 2 (hal/emu)", " 0 failed");
}
