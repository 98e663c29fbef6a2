/* The seeds' two-machine walkthrough, generalised to N ranks:
 *   AllReduce: every rank contributes its rank id; all get 0+1+...+(N-1)   (N=2: 0+1=1)
 *   Broadcast: rank 0's [42, 100, 256] reaches every rank
 *   AllGather: rank r contributes r*10; all get [0, 10, 20, ...]           (N=2: [0, 10])
 * Run: hcclrun -n 8 ./samples/basics/basics
 * An ordinary Ascend-style program: ACL for devices/streams/memory, HCCL for the collectives. */
#include <stdio.h>
#include <stdlib.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#define ACL_OK(call)                                                                  \
    do {                                                                              \
        aclError e_ = (call);                                                         \
        if (e_ != ACL_SUCCESS) {                                                      \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, (int)e_, aclGetRecentErrMsg()); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define HCCL_OK(call)                                                                        \
    do {                                                                                     \
        HcclResult r_ = (call);                                                              \
        if (r_ != HCCL_SUCCESS) {                                                            \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, (int)r_, HcclGetErrorString(r_)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static void to_device(void *dev, const void *host, size_t bytes)
{
    ACL_OK(aclrtMemcpy(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
}

static void to_host(void *host, const void *dev, size_t bytes)
{
    ACL_OK(aclrtMemcpy(host, bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
}

static int all_reduce(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n)
{
    float *buf;
    float v = (float)rank, got;
    ACL_OK(aclrtMalloc((void **)&buf, sizeof v, ACL_MEM_MALLOC_HUGE_FIRST));
    to_device(buf, &v, sizeof v);
    HCCL_OK(HcclAllReduce(buf, buf, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream));
    ACL_OK(aclrtSynchronizeStream(stream));
    to_host(&got, buf, sizeof got);
    ACL_OK(aclrtFree(buf));
    float want = (float)n * (float)(n - 1) / 2.0f;
    printf("AllReduce(sum of rank ids) = %g (expected %g)\n", got, want);
    return got == want ? 0 : 1;
}

static int broadcast(HcclComm comm, aclrtStream stream, uint32_t rank)
{
    int32_t data[3] = {0, 0, 0}, want[3] = {42, 100, 256};
    int32_t *buf;
    if (rank == 0)
        for (int i = 0; i < 3; i++)
            data[i] = want[i];
    ACL_OK(aclrtMalloc((void **)&buf, sizeof data, ACL_MEM_MALLOC_HUGE_FIRST));
    to_device(buf, data, sizeof data);
    HCCL_OK(HcclBroadcast(buf, 3, HCCL_DATA_TYPE_INT32, 0, comm, stream));
    ACL_OK(aclrtSynchronizeStream(stream));
    to_host(data, buf, sizeof data);
    ACL_OK(aclrtFree(buf));
    printf("Broadcast from rank 0 = [%d, %d, %d]\n", data[0], data[1], data[2]);
    return data[0] == 42 && data[1] == 100 && data[2] == 256 ? 0 : 1;
}

static int all_gather(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n)
{
    int32_t mine = (int32_t)rank * 10;
    int32_t *in, *out, *got = calloc(n, sizeof *got);
    ACL_OK(aclrtMalloc((void **)&in, sizeof mine, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_OK(aclrtMalloc((void **)&out, n * sizeof *got, ACL_MEM_MALLOC_HUGE_FIRST));
    to_device(in, &mine, sizeof mine);
    HCCL_OK(HcclAllGather(in, out, 1, HCCL_DATA_TYPE_INT32, comm, stream));
    ACL_OK(aclrtSynchronizeStream(stream));
    to_host(got, out, n * sizeof *got);
    int bad = 0;
    printf("AllGather = [");
    for (uint32_t i = 0; i < n; i++) {
        printf(i ? ", %d" : "%d", got[i]);
        bad |= got[i] != (int32_t)i * 10;
    }
    printf("]\n");
    ACL_OK(aclrtFree(in));
    ACL_OK(aclrtFree(out));
    free(got);
    return bad;
}

int main(void)
{
    uint32_t rank, n, local_rank, local_n;
    HCCL_OK(HcclExtGetLaunchEnv(&rank, &n, &local_rank, &local_n));
    ACL_OK(aclInit(NULL));
    ACL_OK(aclrtSetDevice((int32_t)local_rank));
    aclrtStream stream;
    ACL_OK(aclrtCreateStream(&stream));

    HcclRootInfo root;
    HCCL_OK(HcclExtShareRootInfo(rank, &root)); /* rank 0: HcclGetRootInfo; others receive it */
    HcclComm comm;
    HCCL_OK(HcclCommInitRootInfo(n, &root, rank, &comm));

    int bad = all_reduce(comm, stream, rank, n) | broadcast(comm, stream, rank) | all_gather(comm, stream, rank, n);

    HCCL_OK(HcclCommDestroy(comm));
    ACL_OK(aclrtDestroyStream(stream));
    ACL_OK(aclrtResetDevice((int32_t)local_rank));
    ACL_OK(aclFinalize());
    printf(bad ? "FAILED\n" : "OK\n");
    return bad;
}
