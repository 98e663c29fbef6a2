/* hal/ascend over hal/net: 2 emulated servers x 2 ranks (hcclrun --servers 2) with HCCL_HAL=ascend,
 * so every byte between servers crosses a TCP link and its signals land through hal/ascend's
 * notify_host_record (a record on a private ACL stream). Every collective and point to point checked
 * element by element, the 8-bit float reductions, mismatch detection, the exec timeout, a rank
 * that never joins (connect timeout) and dead peers (exit, kill -9). Failures must come from detection, not from
 * HCCL_EXEC_TIMEOUT: it is 120 s while hcclrun stops every rank after 60 s. Same programs as
 * test_coll_servers (hal/emu); docs/ascend.md. */
#include "multirank/mr_run.h"

#define ASC "HCCL_HAL=ascend"
#define SERVERS "--servers 2 "
#define ALL "--colls allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,alltoallv," \
            "alltoallvc,allgatherv,reducescatterv,barrier"

static unsigned count_of(const char *hay, const char *needle)
{
    unsigned k = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        k++;
    return k;
}

static void check(const char *prog, const char *args, const char *what, const char *needle)
{
    char p[512];
    snprintf(p, sizeof p, SERVERS "%s", prog);
    mr_result r = mr_run_t(ASC, 4, 400, p, args);
    cr_expect_eq(r.status, 0, "%s over hal/ascend on 2 x 2: hcclrun exited with %d", what, r.status);
    cr_expect_eq(count_of(r.out, needle), 4, "%s over hal/ascend on 2 x 2: not every rank printed \"%s\"", what,
                 needle);
    free(r.out);
}

/* Every collective x dtype x op x placement x counts 0, 1, 7 and a large one (PROD and the types
 * SDMA cannot reduce take the host fallback). */
Test(ascend_net, matrix_2x2, .timeout = 500) { check(MR_COLL_CHECK, ALL, "coll_check", " 0 failed ("); }
Test(ascend_net, p2p_2x2, .timeout = 300)
{
    check(MR_COLL_CHECK, "--colls sendrecv,batchsendrecv,group", "coll_check p2p", " 0 failed (");
}
Test(ascend_net, fp8_2x2, .timeout = 300)
{
    check(OH_BUILD_DIR "/tests/progs/fp8_check", "", "fp8_check", " passed, 0 failed\n");
}

static void mismatch(const char *kind, const char *needle)
{
    char args[64];
    snprintf(args, sizeof args, "mismatch-%s", kind);
    mr_result r = mr_run_t(ASC " HCCL_EXEC_TIMEOUT=120", 4, 60, SERVERS MR_COLL_MISC, args);
    cr_expect_eq(r.status, 0, "mismatch-%s over hal/ascend on 2 x 2: hcclrun exited with %d", kind, r.status);
    cr_expect(strstr(r.out, "NOT DETECTED") == NULL, "mismatch-%s: some rank did not see the failure", kind);
    cr_expect(strstr(r.out, needle) != NULL, "mismatch-%s: no \"%s\" in the output", kind, needle);
    free(r.out);
}

Test(ascend_net, mismatch_op, .timeout = 150) { mismatch("op", "called HcclBroadcast"); }
Test(ascend_net, mismatch_count, .timeout = 150) { mismatch("count", "count=512"); }
Test(ascend_net, mismatch_skip, .timeout = 150) { mismatch("skip", "called HcclBarrier"); }
Test(ascend_net, peer_destroys, .timeout = 150) { mismatch("destroy", "HcclCommDestroy"); }
/* Rank 0 exits: the ranks of the other server see their link to it fail (watchdog), and the
 * waits of all three end through the abort flag (hal/ascend/asc_abort.c). */
Test(ascend_net, peer_exits, .timeout = 150) { mismatch("exit", "rank 0 ("); }

/* hcclExecTimeOut=1 (config_check timeout): a wait nobody answers fails with HAL_E_TIMEOUT on
 * every rank of both servers, the async error naming the op. */
Test(ascend_net, exec_timeout, .timeout = 120)
{
    mr_result r = mr_run_t(ASC, 4, 60, SERVERS OH_BUILD_DIR "/tests/progs/config_check", "timeout");
    cr_expect_eq(r.status, 0, "hcclrun exited with %d", r.status);
    cr_expect_eq(count_of(r.out, "config_check timeout: PASS"), 4, "not every rank saw its op time out");
    cr_expect_geq(count_of(r.out, "failed on the device: HAL_E_TIMEOUT"), 4, "the timeout is not named");
    free(r.out);
}

#define MR_NET_FAULTS OH_BUILD_DIR "/tests/progs/net_faults"

Test(ascend_net, absent_rank_times_out_naming_it, .timeout = 120)
{
    mr_result r = mr_run_t(ASC " HCCL_CONNECT_TIMEOUT=3", 4, 60, SERVERS MR_NET_FAULTS, "absent");
    cr_expect_eq(r.status, 0, "hcclrun exited with %d", r.status);
    cr_expect_eq(count_of(r.out, "HcclCommInitRootInfo returned 9 (timeout)"), 3,
                 "not every present rank got HCCL_E_TIMEOUT");
    cr_expect_geq(count_of(r.out, "ranks never seen: 3 "), 3, "the missing rank is not named by every present rank");
    cr_expect_eq(count_of(r.out, "net_faults absent: PASS"), 3);
    free(r.out);
}

/* kill -9 of rank 3 (server 1) with 64 MiB AllReduces in flight: every survivor's op fails and
 * HcclCommDestroy returns, before hcclrun's 60 s (HCCL_EXEC_TIMEOUT is 120 s). */
Test(ascend_net, killed_rank_fails_survivors, .timeout = 150)
{
    mr_result r = mr_run_t(ASC " HCCL_EXEC_TIMEOUT=120", 4, 60,
                           SERVERS "/bin/sh -c 'if [ \"$RANK\" = 3 ]; then \"$0\" \"$@\"; echo \"rank 3: status "
                           "$?\"; exit 0; fi; exec \"$0\" \"$@\"' " MR_NET_FAULTS, "kill");
    cr_expect_eq(r.status, 0, "hcclrun exited with %d", r.status);
    cr_expect(strstr(r.out, "rank 3: status 137") != NULL, "rank 3 was not killed by SIGKILL");
    cr_expect_eq(count_of(r.out, "net_faults kill: PASS"), 3, "not every survivor saw its op fail");
    cr_expect_eq(count_of(r.out, "HcclCommDestroy returned 0"), 3, "HcclCommDestroy failed on a survivor");
    free(r.out);
}
