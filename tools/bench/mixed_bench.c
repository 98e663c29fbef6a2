/* mixed_bench: small Broadcasts interleaved with AllReduces, as a training step issues them (a flag,
 * then gradients), where a loop of one collective (the perf tools) says nothing about what a
 * protocol costs at the end of a run: every -k Broadcasts of -b bytes (root 0), one AllReduce of
 * as many bytes (fp32 sum). Timed as the perf tools: warm-up, barrier, -n rounds back to back, one
 * synchronize, host clock, the slowest rank. Public API only; run under hcclrun.
 *
 *   hcclrun -n N build/tools/bench/mixed_bench [-k broadcasts per AllReduce (1)] [-b bytes (8)]
 *                                             [-n rounds (100)] [-w warm-up rounds (10)]
 *
 * Output (rank 0): "mixed k K bytes B ranks N: us/round R us/broadcast P" (R / K). Compare runs
 * with HCCL_EAGER_ONEWAY=0 to see what one-way calls gain or cost (docs/perf-history.md). No assertions. */
#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/oh_clock.h"

#define OK(call)                                                                                     \
    do {                                                                                             \
        int rc_ = (int)(call);                                                                       \
        if (rc_ != 0) {                                                                              \
            fprintf(stderr, "mixed_bench: %s failed: %d\n", #call, rc_);                            \
            exit(2);                                                                                 \
        }                                                                                            \
    } while (0)

typedef struct args {
    int k, rounds, warmup;
    size_t bytes;
} args;

static void parse(int argc, char **argv, args *a)
{
    *a = (args){1, 100, 10, 8};
    int o;
    while ((o = getopt(argc, argv, "k:b:n:w:")) != -1) {
        long v = atol(optarg);
        if (v < (o == 'w' ? 0 : 1)) {
            fprintf(stderr, "mixed_bench: bad value '%s' for -%c\n", optarg, o);
            exit(2);
        }
        switch (o) {
        case 'k': a->k = (int)v; break;
        case 'b': a->bytes = (size_t)v; break;
        case 'n': a->rounds = (int)v; break;
        case 'w': a->warmup = (int)v; break;
        default: fprintf(stderr, "usage: mixed_bench [-k K] [-b bytes] [-n rounds] [-w warm-up]\n"); exit(2);
        }
    }
}

static void rounds(const args *a, int n, void *bc, void *ar, HcclComm comm, aclrtStream s)
{
    uint64_t count = a->bytes / 4 ? a->bytes / 4 : 1;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < a->k; j++)
            OK(HcclBroadcast(bc, count, HCCL_DATA_TYPE_FP32, 0, comm, s));
        OK(HcclAllReduce(ar, ar, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s));
    }
}

int main(int argc, char **argv)
{
    args a;
    parse(argc, argv, &a);
    uint32_t rank, n, lr, ln;
    HcclRootInfo root;
    HcclComm comm;
    aclrtStream s;
    OK(HcclExtGetLaunchEnv(&rank, &n, &lr, &ln));
    OK(aclInit(NULL));
    OK(aclrtSetDevice((int32_t)lr));
    OK(aclrtCreateStream(&s));
    OK(HcclExtShareRootInfo(rank, &root));
    OK(HcclCommInitRootInfo(n, &root, rank, &comm));
    void *bc, *ar;
    double *t;
    size_t bytes = a.bytes < 8 ? 8 : a.bytes;
    OK(aclrtMalloc(&bc, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&ar, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc((void **)&t, sizeof *t, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMemset(ar, bytes, 0, bytes));
    double host_t = 0;
    OK(aclrtMemcpy(t, sizeof *t, &host_t, sizeof host_t, ACL_MEMCPY_HOST_TO_DEVICE));
    OK(HcclAllReduce(t, t, 1, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_MAX, comm, s)); /* its plan, before timing */
    rounds(&a, a.warmup, bc, ar, comm, s);
    OK(HcclBarrier(comm, s));
    OK(aclrtSynchronizeStream(s));
    double t0 = oh_now_s();
    rounds(&a, a.rounds, bc, ar, comm, s);
    OK(aclrtSynchronizeStream(s));
    host_t = (oh_now_s() - t0) * 1e6 / a.rounds;
    OK(aclrtMemcpy(t, sizeof *t, &host_t, sizeof host_t, ACL_MEMCPY_HOST_TO_DEVICE));
    OK(HcclAllReduce(t, t, 1, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_MAX, comm, s));
    OK(aclrtSynchronizeStream(s));
    OK(aclrtMemcpy(&host_t, sizeof host_t, t, sizeof *t, ACL_MEMCPY_DEVICE_TO_HOST));
    if (rank == 0)
        printf("mixed k %d bytes %zu ranks %u: us/round %.2f us/broadcast %.2f\n", a.k, a.bytes, n, host_t,
               host_t / a.k);
    OK(HcclCommDestroy(comm));
    OK(aclrtFree(bc));
    OK(aclrtFree(ar));
    OK(aclrtFree(t));
    OK(aclrtDestroyStream(s));
    OK(aclrtResetDevice((int32_t)lr));
    OK(aclFinalize());
    return 0;
}
