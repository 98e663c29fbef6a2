/* config_check: HcclCommConfig fields that change behaviour, on 2 ranks under hcclrun:
 *
 *   hcclrun -n 2 config_check buffsize|algo|timeout
 *
 *   buffsize  hcclBufferSize = 1 MB (HCCL_BUFFSIZE=200 in the environment loses to it), with
 *             deterministic mesh, whose in-place AllReduce needs scratch for the rank's slice: a
 *             2 MiB slice fails with HCCL_E_MEMORY on every rank, a 256 KiB one runs and is right
 *   algo      hcclAlgo = ring beats HCCL_ALGO=fullmesh: one AllReduce (the suite checks the
 *             "compiled HcclAllReduce with ring" debug line)
 *   timeout   hcclExecTimeOut = 1 s: rank 1 never calls the AllReduce rank 0 waits in; rank 0's
 *             stream fails instead of waiting CANN's default 1836 s, and both ranks see the
 *             communicator's async error
 * Prints "config_check SCENARIO: PASS" on every rank, or FAIL lines and exits 1. */
#include <string.h>
#include <time.h>

#include "prog_common.h"

static int fails;

#define EXPECT(cond, ...)                                                                              \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            printf("[FAIL] " __VA_ARGS__);                                                             \
            printf("\n");                                                                              \
            fails++;                                                                                   \
        }                                                                                              \
    } while (0)

/* In-place fp32 sum AllReduce of rank-dependent integers; returns the call's result and checks
 * the data when it ran. */
static HcclResult allreduce(prog_env *e, uint64_t count)
{
    float *h = xmalloc(count * sizeof *h);
    for (uint64_t i = 0; i < count; i++)
        h[i] = (float)(i % 100) + (float)e->rank;
    void *buf = dev_alloc(count * sizeof *h);
    to_dev(buf, h, count * sizeof *h);
    HcclResult rc = HcclAllReduce(buf, buf, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->comm, e->stream);
    if (rc == HCCL_SUCCESS) {
        ACL_OK(aclrtSynchronizeStream(e->stream));
        to_host(h, buf, count * sizeof *h);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < count; i++)
            bad += h[i] != (float)((i % 100) * e->n) + (float)(e->n * (e->n - 1) / 2);
        EXPECT(!bad, "rank %u AllReduce count=%llu: %llu wrong elements", e->rank, (unsigned long long)count,
               (unsigned long long)bad);
    }
    dev_free(buf);
    free(h);
    return rc;
}

static void buffsize(void)
{
    setenv("HCCL_BUFFSIZE", "200", 1);
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    cfg.hcclBufferSize = 1;
    cfg.hcclDeterministic = 1;
    snprintf(cfg.hcclAlgo, sizeof cfg.hcclAlgo, "level0:NA;level1:fullmesh");
    prog_env e;
    prog_init_config(&e, &cfg);
    uint64_t big = (uint64_t)e.n << 19; /* 2 MiB of fp32 per rank's slice */
    HcclResult rc = allreduce(&e, big);
    EXPECT(rc == HCCL_E_MEMORY, "rank %u: AllReduce needing 2 MiB of scratch with hcclBufferSize=1 returned %d, "
           "want HCCL_E_MEMORY (%d)", e.rank, (int)rc, (int)HCCL_E_MEMORY);
    rc = allreduce(&e, (uint64_t)e.n << 16); /* 256 KiB */
    EXPECT(rc == HCCL_SUCCESS, "rank %u: AllReduce within hcclBufferSize=1 returned %d", e.rank, (int)rc);
    prog_fini(&e);
}

static void algo(void)
{
    setenv("HCCL_ALGO", "level0:NA;level1:fullmesh", 1);
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    snprintf(cfg.hcclAlgo, sizeof cfg.hcclAlgo, "level0:NA;level1:ring");
    prog_env e;
    prog_init_config(&e, &cfg);
    EXPECT(allreduce(&e, 1031) == HCCL_SUCCESS, "rank %u: AllReduce failed", e.rank);
    prog_fini(&e);
}

static void timeout(void)
{
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    cfg.hcclExecTimeOut = 1;
    prog_env e;
    prog_init_config(&e, &cfg);
    HcclResult async = HCCL_SUCCESS;
    if (e.rank == 0) {
        void *buf = dev_alloc(4096);
        HcclResult rc = HcclAllReduce(buf, buf, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e.comm, e.stream);
        aclError sync = aclrtSynchronizeStream(e.stream);
        EXPECT(rc != HCCL_SUCCESS || sync != ACL_SUCCESS, "rank 0: an AllReduce nobody joined succeeded");
        dev_free(buf);
    }
    /* Rank 1 takes no part: it waits until the failure reaches its side of the communicator
     * (the suite's hcclrun --timeout bounds this if it never does). */
    struct timespec ts = {0, 20 * 1000 * 1000};
    while (HcclGetCommAsyncError(e.comm, &async) == HCCL_SUCCESS && async == HCCL_SUCCESS)
        nanosleep(&ts, NULL);
    EXPECT(async != HCCL_SUCCESS, "rank %u: no async error", e.rank);
    char msg[512] = "";
    HcclExtGetCommErrorMessage(e.comm, msg, sizeof msg);
    printf("config_check timeout: rank %u async error %d: %s\n", e.rank, (int)async, msg);
    prog_fini(&e);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "buffsize"))
        buffsize();
    else if (!strcmp(what, "algo"))
        algo();
    else if (!strcmp(what, "timeout"))
        timeout();
    else {
        fprintf(stderr, "usage: config_check buffsize|algo|timeout\n");
        return 2;
    }
    printf("config_check %s: %s\n", what, fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
