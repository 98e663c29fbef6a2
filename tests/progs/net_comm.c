/* net_comm SCENARIO: communicators across emulated servers (issue #9), run by hcclrun.
 *   allreduce COUNT   one fp32 sum AllReduce of COUNT elements (rank r contributes r+1 + i%7),
 *                     checked element by element, then HcclCommDestroy: with HCCL_DEBUG=INFO the
 *                     destroy logs the payload bytes this rank's links sent to other servers.
 *   realloc CYCLES    CYCLES times: allocate fresh input and output buffers (sizes varying, so the
 *                     allocator puts them where earlier ones were, at other extents), one
 *                     out-of-place fp32 sum AllReduce checked element by element, free both; prints
 *                     how many cycles reused an address. With HCCL_DEBUG=INFO the destroy logs the
 *                     registrations the links' cache still holds: freed buffers must not be among them.
 *   twocomms          two communicators over all ranks, one AllReduce on each (checked): with
 *                     HCCL_DEBUG=INFO each logs its own HCCL_NET choice.
 *   init-fails        HcclCommInitRootInfo must fail (e.g. HCCL_NET=roce without a device);
 *                     prints the code.
 *   ranktable         HcclCommInitClusterInfo(RANK_TABLE_FILE, RANK_ID) on device DEVICE_ID (CANN's
 *                     variables, set by hcclrun --ranktable; without them the launcher's rank and
 *                     local rank, HcclExtGetLaunchEnv: mpirun, srun...), then an AllReduce and an
 *                     AllGather checked element by element.
 * Prints "net_comm SCENARIO: PASS" on success and exits non-zero on failure. */
#include <string.h>

#include "prog_common.h"

static int check_allreduce(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n, uint64_t count)
{
    size_t bytes = (size_t)count * sizeof(float);
    float *host = xmalloc(bytes ? bytes : 1);
    for (uint64_t i = 0; i < count; i++)
        host[i] = (float)(rank + 1 + i % 7);
    void *buf = dev_alloc(bytes);
    to_dev(buf, host, bytes);
    HCCL_OK(HcclAllReduce(buf, buf, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream));
    ACL_OK(aclrtSynchronizeStream(stream));
    to_host(host, buf, bytes);
    int bad = 0;
    for (uint64_t i = 0; i < count && bad < 5; i++) {
        float want = (float)(n * (n + 1) / 2 + n * (i % 7));
        if (host[i] != want) {
            fprintf(stderr, "rank %u: AllReduce element %llu is %g, expected %g\n", rank, (unsigned long long)i,
                    host[i], want);
            bad++;
        }
    }
    dev_free(buf);
    free(host);
    return bad;
}

static int check_allgather(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n, uint64_t count)
{
    size_t bytes = (size_t)count * sizeof(int32_t);
    int32_t *host = xmalloc(bytes * n);
    for (uint64_t i = 0; i < count; i++)
        host[i] = (int32_t)(rank * 1000003u + i);
    void *in = dev_alloc(bytes), *out = dev_alloc(bytes * n);
    to_dev(in, host, bytes);
    HCCL_OK(HcclAllGather(in, out, count, HCCL_DATA_TYPE_INT32, comm, stream));
    ACL_OK(aclrtSynchronizeStream(stream));
    to_host(host, out, bytes * n);
    int bad = 0;
    for (uint32_t r = 0; r < n; r++)
        for (uint64_t i = 0; i < count && bad < 5; i++)
            if (host[r * count + i] != (int32_t)(r * 1000003u + i)) {
                fprintf(stderr, "rank %u: AllGather element %llu of rank %u is wrong\n", rank, (unsigned long long)i, r);
                bad++;
            }
    dev_free(in);
    dev_free(out);
    free(host);
    return bad;
}

/* One out-of-place AllReduce over fresh buffers, freed afterwards; *in_at: where the input was. */
static int realloc_cycle(prog_env *e, uint64_t count, void **in_at)
{
    size_t bytes = (size_t)count * sizeof(float);
    float *host = xmalloc(bytes);
    for (uint64_t i = 0; i < count; i++)
        host[i] = (float)(e->rank + 1 + i % 7);
    void *in = dev_alloc(bytes), *out = dev_alloc(bytes);
    *in_at = in;
    to_dev(in, host, bytes);
    ACL_OK(aclrtMemset(out, bytes, 0xff, bytes)); /* what was there before must not survive */
    HCCL_OK(HcclAllReduce(in, out, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->comm, e->stream));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    to_host(host, out, bytes);
    int bad = 0;
    for (uint64_t i = 0; i < count && bad < 5; i++) {
        float want = (float)(e->n * (e->n + 1) / 2 + e->n * (i % 7));
        if (host[i] != want) {
            fprintf(stderr, "rank %u: AllReduce of %llu element %llu is %g, expected %g\n", e->rank,
                    (unsigned long long)count, (unsigned long long)i, host[i], want);
            bad++;
        }
    }
    dev_free(in);
    dev_free(out);
    free(host);
    return bad;
}

static int scen_realloc(unsigned cycles)
{
    prog_env e;
    prog_init(&e);
    int bad = 0;
    unsigned reused = 0;
    void *first = NULL;
    for (unsigned i = 0; i < cycles && !bad; i++) {
        void *at;
        bad += realloc_cycle(&e, 4099 + (i % 5) * 1024, &at);
        reused += i > 0 && at == first;
        first = i == 0 ? at : first;
    }
    printf("rank %u: %u of %u cycles reused an address\n", e.rank, reused, cycles);
    prog_fini(&e);
    return bad;
}

static int scen_allreduce(uint64_t count)
{
    prog_env e;
    prog_init(&e);
    int bad = check_allreduce(e.comm, e.stream, e.rank, e.n, count);
    prog_fini(&e);
    return bad;
}

static int scen_twocomms(void)
{
    prog_env e;
    prog_init(&e);
    HcclRootInfo root;
    HCCL_OK(HcclExtShareRootInfo(e.rank, &root));
    HcclComm second = NULL;
    HCCL_OK(HcclCommInitRootInfo(e.n, &root, e.rank, &second));
    int bad = check_allreduce(e.comm, e.stream, e.rank, e.n, 4099);
    bad += check_allreduce(second, e.stream, e.rank, e.n, 4099);
    HCCL_OK(HcclCommDestroy(second));
    prog_fini(&e);
    return bad;
}

static int scen_init_fails(void)
{
    uint32_t rank, n, local, local_n;
    HCCL_OK(HcclExtGetLaunchEnv(&rank, &n, &local, &local_n));
    ACL_OK(aclInit(NULL));
    ACL_OK(aclrtSetDevice((int32_t)local));
    HcclRootInfo root;
    HCCL_OK(HcclExtShareRootInfo(rank, &root));
    HcclComm comm = NULL;
    HcclResult rc = HcclCommInitRootInfo(n, &root, rank, &comm);
    printf("rank %u: HcclCommInitRootInfo returned %d (%s)\n", rank, (int)rc, HcclGetErrorString(rc));
    if (rc == HCCL_SUCCESS)
        HCCL_OK(HcclCommDestroy(comm));
    ACL_OK(aclrtResetDevice((int32_t)local));
    ACL_OK(aclFinalize());
    return rc == HCCL_SUCCESS;
}

/* CANN's variable if set, else the launcher's rank (or local rank for the device). */
static uint32_t env_or_launch(const char *name, bool local)
{
    const char *v = getenv(name);
    if (v && *v)
        return (uint32_t)strtoul(v, NULL, 10);
    uint32_t rank, n, lr, ln;
    HCCL_OK(HcclExtGetLaunchEnv(&rank, &n, &lr, &ln));
    return local ? lr : rank;
}

static int scen_ranktable(void)
{
    const char *file = getenv("RANK_TABLE_FILE");
    uint32_t rank = env_or_launch("RANK_ID", false), dev = env_or_launch("DEVICE_ID", true);
    if (!file) {
        fprintf(stderr, "net_comm ranktable: RANK_TABLE_FILE is not set\n");
        return 1;
    }
    ACL_OK(aclInit(NULL));
    ACL_OK(aclrtSetDevice((int32_t)dev));
    aclrtStream stream;
    ACL_OK(aclrtCreateStream(&stream));
    HcclComm comm = NULL;
    HCCL_OK(HcclCommInitClusterInfo(file, rank, &comm));
    uint32_t n = 0;
    HCCL_OK(HcclGetRankSize(comm, &n));
    int bad = check_allreduce(comm, stream, rank, n, 65537);
    bad += check_allgather(comm, stream, rank, n, 1031);
    HCCL_OK(HcclCommDestroy(comm));
    ACL_OK(aclrtDestroyStream(stream));
    ACL_OK(aclrtResetDevice((int32_t)dev));
    ACL_OK(aclFinalize());
    return bad;
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    int bad;
    if (!strcmp(s, "allreduce") && argc > 2)
        bad = scen_allreduce(strtoull(argv[2], NULL, 10));
    else if (!strcmp(s, "realloc") && argc > 2)
        bad = scen_realloc((unsigned)strtoul(argv[2], NULL, 10));
    else if (!strcmp(s, "twocomms"))
        bad = scen_twocomms();
    else if (!strcmp(s, "init-fails"))
        bad = scen_init_fails();
    else if (!strcmp(s, "ranktable"))
        bad = scen_ranktable();
    else {
        fprintf(stderr, "usage: net_comm allreduce COUNT | realloc CYCLES | twocomms | init-fails | ranktable\n");
        return 2;
    }
    printf("net_comm %s: %s\n", s, bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
