/* The collective matrix, mismatch detection and timeouts on hal/ascend: libhccl's Ascend backend
 * driving the emulated NPUs through CANN's public ACL API only (HCCL_HAL=ascend; the libascendcl.so
 * loaded is ours). Same programs as test_coll_ranks / test_coll_mismatch; docs/ascend.md. */
#include "multirank/mr_run.h"

#define ASC "HCCL_HAL=ascend"
#define NON_P2P "--colls allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,alltoallv," \
                "alltoallvc,allgatherv,reducescatterv,barrier"
#define P2P "--colls sendrecv,batchsendrecv,group"

static void coll_check(unsigned n, const char *args)
{
    char what[96];
    snprintf(what, sizeof what, "coll_check on %u ranks over hal/ascend", n);
    mr_expect_ok(mr_run_t(ASC, n, 400, MR_COLL_CHECK, args), what, " 0 failed");
}

/* Every collective x dtype x op x placement x count 0/1/7 (+ one large count per reducing collective):
 * PROD and the types SDMA cannot reduce take the host fallback. */
Test(ascend_coll, n2, .timeout = 500) { coll_check(2, NON_P2P); }
Test(ascend_coll, n4, .timeout = 500) { coll_check(4, NON_P2P); }
Test(ascend_p2p, n2, .timeout = 300) { coll_check(2, P2P); }
Test(ascend_p2p, n4, .timeout = 300) { coll_check(4, P2P); }
/* Odd counts, ring and mesh, wider types. */
Test(ascend_coll, ring_n3_odd, .timeout = 400)
{
    coll_check(3, "--algo ring --colls allreduce,reducescatter,allgather --counts 0,1,7,65539 "
                  "--dtypes fp32,bf16,fp16,int8,int64,uint16,fp64");
}
Test(ascend_coll, mesh_n4_prod, .timeout = 400)
{
    coll_check(4, "--algo mesh --colls allreduce,reduce,reducescatter --ops prod,max --counts 1,7,65539 "
                  "--dtypes fp32,fp16,bf16,int32,int64,uint8");
}

static void mismatch(unsigned n, const char *kind, const char *needle)
{
    char args[64];
    snprintf(args, sizeof args, "mismatch-%s", kind);
    mr_result r = mr_run(ASC " HCCL_EXEC_TIMEOUT=60", n, MR_COLL_MISC, args);
    cr_expect_eq(r.status, 0, "mismatch-%s on %u ranks over hal/ascend: hcclrun exited with %d", kind, n, r.status);
    cr_expect(strstr(r.out, "NOT DETECTED") == NULL, "mismatch-%s: some rank did not see the failure", kind);
    cr_expect(strstr(r.out, needle) != NULL, "mismatch-%s: the output does not mention \"%s\"", kind, needle);
    free(r.out);
}

Test(ascend_mismatch, skip_then_barrier_n2, .timeout = 150) { mismatch(2, "skip", "called HcclBarrier"); }
Test(ascend_mismatch, broadcast_vs_allreduce_n4, .timeout = 150) { mismatch(4, "op", "called HcclBroadcast"); }
Test(ascend_mismatch, counts_n2, .timeout = 150) { mismatch(2, "count", "count=512"); }
Test(ascend_mismatch, roots_n3, .timeout = 150) { mismatch(3, "root", "root=0"); }
