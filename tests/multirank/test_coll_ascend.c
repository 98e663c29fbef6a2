/* The collective matrix, the 8-bit float reductions, mismatch detection and dead peers on hal/ascend:
 * libhccl's Ascend backend driving the emulated NPUs through CANN's public ACL API only
 * (HCCL_HAL=ascend; the libascendcl.so loaded is ours), on one server. Same programs as
 * test_coll_ranks / test_coll_mismatch; across servers: test_coll_ascend_net. docs/ascend.md. */
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

/* 8-bit floats (fp8e4m3, fp8e5m2, fp8e8m0): AllReduce, ReduceScatter, Reduce through the host
 * fallback, element by element against an independent reference (tests/progs/fp8_check.c). */
static void fp8(unsigned n)
{
    char what[64];
    snprintf(what, sizeof what, "fp8_check on %u ranks over hal/ascend", n);
    mr_expect_ok(mr_run_t(ASC, n, 300, OH_BUILD_DIR "/tests/progs/fp8_check", ""), what, " passed, 0 failed\n");
}
Test(ascend_fp8, n2, .timeout = 400) { fp8(2); }
Test(ascend_fp8, n4, .timeout = 400) { fp8(4); }

/* Dead peers on one server: the watchdog sees the process gone and sets the abort flag; the
 * survivors' waits end through it (hal/ascend/asc_abort.c), long before HCCL_EXEC_TIMEOUT (120 s;
 * hcclrun stops every rank after 60 s, so a detection that waited for it fails the test). */
static void peer_exits(unsigned n)
{
    mr_result r = mr_run_t(ASC " HCCL_EXEC_TIMEOUT=120", n, 60, MR_COLL_MISC, "mismatch-exit");
    cr_expect_eq(r.status, 0, "mismatch-exit on %u ranks over hal/ascend: hcclrun exited with %d", n, r.status);
    cr_expect(strstr(r.out, "NOT DETECTED") == NULL, "mismatch-exit: some rank did not see the failure");
    cr_expect(strstr(r.out, "rank 0 (pid") != NULL, "mismatch-exit: the dead rank is not named");
    cr_expect(strstr(r.out, "exited without HcclCommDestroy") != NULL, "mismatch-exit: no reason given");
    free(r.out);
}
Test(ascend_dead_peer, exits_n2, .timeout = 150) { peer_exits(2); }
Test(ascend_dead_peer, exits_n4, .timeout = 150) { peer_exits(4); }

/* kill -9 of the last rank with 64 MiB AllReduces in flight (tests/progs/net_faults.c kill). */
Test(ascend_dead_peer, killed_n3, .timeout = 150)
{
    mr_result r = mr_run_t(ASC " HCCL_EXEC_TIMEOUT=120", 3, 60,
                           "/bin/sh -c 'if [ \"$RANK\" = 2 ]; then \"$0\" \"$@\"; echo \"rank 2: status $?\"; exit 0; "
                           "fi; exec \"$0\" \"$@\"' " OH_BUILD_DIR "/tests/progs/net_faults",
                           "kill");
    cr_expect_eq(r.status, 0, "hcclrun exited with %d", r.status);
    cr_expect(strstr(r.out, "rank 2: status 137") != NULL, "rank 2 was not killed by SIGKILL");
    unsigned pass = 0;
    for (const char *p = strstr(r.out, "net_faults kill: PASS"); p; p = strstr(p + 1, "net_faults kill: PASS"))
        pass++;
    cr_expect_eq(pass, 2, "not every survivor saw its op fail");
    cr_expect(strstr(r.out, "exited without HcclCommDestroy") != NULL, "the dead rank's exit is not the reason");
    free(r.out);
}
