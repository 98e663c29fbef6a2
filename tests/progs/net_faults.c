/* net_faults SCENARIO: faults across emulated servers, run by hcclrun --servers (issue #9).
 *   absent  the last rank never calls HcclCommInitRootInfo (it exits at once, as a rank that
 *           crashed before init); every other rank's init must fail with HCCL_E_TIMEOUT (CANN's
 *           code) within HCCL_CONNECT_TIMEOUT; the root's log names the missing rank.
 *   kill    after one AllReduce that sets up every link, all ranks enqueue 64 MiB AllReduces and
 *           the last rank kills itself with SIGKILL at once (the test runs it under a shell that
 *           exits 0, so hcclrun does not stop the survivors): every survivor's op must fail,
 *           HcclGetCommAsyncError must report it, and HcclCommDestroy must return.
 * Each surviving rank prints "net_faults SCENARIO: PASS" (or FAIL) and the seconds it took. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "prog_common.h"

static int absent(void)
{
    uint32_t rank, n, local, local_n;
    HCCL_OK(HcclExtGetLaunchEnv(&rank, &n, &local, &local_n));
    if (rank == n - 1) {
        printf("rank %u: never joins\n", rank);
        exit(0); /* no PASS line: only the ranks that joined report */
    }
    ACL_OK(aclInit(NULL));
    ACL_OK(aclrtSetDevice((int32_t)local));
    HcclRootInfo root;
    HCCL_OK(HcclExtShareRootInfo(rank, &root));
    HcclComm comm = NULL;
    double t0 = prog_now_s();
    HcclResult rc = HcclCommInitRootInfo(n, &root, rank, &comm);
    printf("rank %u: HcclCommInitRootInfo returned %d (%s) after %.2f s\n", rank, (int)rc, HcclGetErrorString(rc),
           prog_now_s() - t0);
    if (rc == HCCL_SUCCESS)
        HCCL_OK(HcclCommDestroy(comm));
    ACL_OK(aclrtResetDevice((int32_t)local));
    ACL_OK(aclFinalize());
    return rc == HCCL_E_TIMEOUT ? 0 : 1;
}

enum { KILL_COUNT = 16u << 20, KILL_OPS = 4 }; /* 64 MiB of fp32 per AllReduce */

static int killed(void)
{
    prog_env e;
    prog_init(&e);
    void *buf = dev_alloc((size_t)KILL_COUNT * sizeof(float));
    ACL_OK(aclrtMemset(buf, (size_t)KILL_COUNT * sizeof(float), 0, (size_t)KILL_COUNT * sizeof(float)));
    HCCL_OK(HcclAllReduce(buf, buf, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e.comm, e.stream));
    ACL_OK(aclrtSynchronizeStream(e.stream));
    HCCL_OK(HcclBarrier(e.comm, e.stream));
    ACL_OK(aclrtSynchronizeStream(e.stream));
    double t0 = prog_now_s();
    HcclResult enq = HCCL_SUCCESS;
    for (int i = 0; i < KILL_OPS && enq == HCCL_SUCCESS; i++)
        enq = HcclAllReduce(buf, buf, KILL_COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e.comm, e.stream);
    if (e.rank == e.n - 1) {
        printf("rank %u: kill -9 myself with %d AllReduces of 64 MiB enqueued\n", e.rank, KILL_OPS);
        fflush(stdout);
        kill(getpid(), SIGKILL);
    }
    bool failed = prog_saw_failure(&e, enq, "64 MiB HcclAllReduce while the last rank is killed");
    double t_fail = prog_now_s() - t0;
    HcclResult dr = HcclCommDestroy(e.comm);
    e.comm = NULL;
    printf("rank %u: op failure %s after %.2f s; HcclCommDestroy returned %d after %.2f s\n", e.rank,
           failed ? "REPORTED" : "NOT REPORTED", t_fail, (int)dr, prog_now_s() - t0);
    dev_free(buf);
    prog_fini(&e);
    return failed ? 0 : 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || (strcmp(argv[1], "absent") && strcmp(argv[1], "kill"))) {
        fprintf(stderr, "usage: net_faults absent|kill\n");
        return 2;
    }
    int bad = !strcmp(argv[1], "absent") ? absent() : killed();
    printf("net_faults %s: %s\n", argv[1], bad ? "FAIL" : "PASS");
    return bad;
}
