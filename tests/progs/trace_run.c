/* trace_run: three collectives for the timeline-trace test (tests/multirank/test_trace.c), run by
 * hcclrun with HCCL_TRACE set: HcclAllReduce (1024 x fp32, sum), HcclAllGather (256 x fp32 per
 * rank), HcclBroadcast (512 x int32 from rank 0), each checked. Prints "trace_run: PASS". */
#include "prog_common.h"

static void check(bool ok, const char *what, uint32_t rank)
{
    if (!ok) {
        fprintf(stderr, "trace_run: rank %u: %s gave a wrong result\n", rank, what);
        exit(1);
    }
}

int main(void)
{
    prog_env e;
    prog_init(&e);
    enum { AR = 1024, AG = 256, BC = 512 };
    float host[AR * 8];
    int32_t ibuf[BC];
    float *a = dev_alloc(AR * sizeof(float)), *g = dev_alloc(AG * e.n * sizeof(float));
    int32_t *b = dev_alloc(BC * sizeof(int32_t));
    for (int i = 0; i < AR; i++)
        host[i] = (float)(e.rank + 1);
    for (int i = 0; i < BC; i++)
        ibuf[i] = e.rank == 0 ? i : -1;
    ACL_OK(aclrtMemcpy(a, AR * sizeof(float), host, AR * sizeof(float), ACL_MEMCPY_HOST_TO_DEVICE));
    ACL_OK(aclrtMemcpy(b, sizeof ibuf, ibuf, sizeof ibuf, ACL_MEMCPY_HOST_TO_DEVICE));

    HCCL_OK(HcclAllReduce(a, a, AR, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e.comm, e.stream));
    HCCL_OK(HcclAllGather(a, g, AG, HCCL_DATA_TYPE_FP32, e.comm, e.stream));
    HCCL_OK(HcclBroadcast(b, BC, HCCL_DATA_TYPE_INT32, 0, e.comm, e.stream));
    ACL_OK(aclrtSynchronizeStream(e.stream));

    float sum = (float)(e.n * (e.n + 1) / 2);
    ACL_OK(aclrtMemcpy(host, sizeof host, g, AG * e.n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST));
    for (uint32_t i = 0; i < AG * e.n; i++)
        check(host[i] == sum, "HcclAllReduce + HcclAllGather", e.rank);
    ACL_OK(aclrtMemcpy(ibuf, sizeof ibuf, b, sizeof ibuf, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < BC; i++)
        check(ibuf[i] == i, "HcclBroadcast", e.rank);

    ACL_OK(aclrtFree(a));
    ACL_OK(aclrtFree(g));
    ACL_OK(aclrtFree(b));
    prog_fini(&e);
    printf("trace_run: PASS\n");
    return 0;
}
