/* enqueue_bench: the host's cost of issuing one collective (checks, plan cache, launch context,
 * program build, submission), without the device's work and without waiting for peers: every
 * rank issues K calls while its stream is held by a host function, so nothing runs until the
 * round ends. Public API only; run under hcclrun (docs/runtime.md, "No rebuild on the hot path").
 *
 *   hcclrun -n N build/tools/bench/enqueue_bench [-b bytes (8)] [-k calls per round (100)]
 *                                               [-r rounds (30)] [-c allreduce|allgather|broadcast]
 *
 * K is at most the runtime's in-flight limit (RT_LAUNCH_INFLIGHT_MAX, 128): past it the host waits for
 * the held stream to make room, which the hold only allows after the round (a deadlock).
 * Output (each rank): "enqueue <coll> bytes B ns/call median M min X" over the rounds (3 warm-up
 * rounds not counted). No assertions: numbers only. */
#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_released;

static void hold_fn(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_mu);
    while (!g_released)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
}

static void release(void)
{
    pthread_mutex_lock(&g_mu);
    g_released = 1;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define OK(call, what)                                                                                     \
    do {                                                                                                   \
        if ((call) != 0) {                                                                                 \
            fprintf(stderr, "enqueue_bench: %s failed\n", what);                                           \
            return 1;                                                                                      \
        }                                                                                                  \
    } while (0)

typedef enum { C_ALLREDUCE, C_ALLGATHER, C_BROADCAST } coll;
static const char *const k_names[] = {"allreduce", "allgather", "broadcast"};

static HcclResult issue(coll c, void *in, void *out, uint64_t count, HcclComm comm, aclrtStream s)
{
    switch (c) {
    case C_ALLGATHER: return HcclAllGather(in, out, count, HCCL_DATA_TYPE_INT8, comm, s);
    case C_BROADCAST: return HcclBroadcast(in, count, HCCL_DATA_TYPE_INT8, 0, comm, s);
    default: return HcclAllReduce(in, out, count / 4 ? count / 4 : 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s);
    }
}

int main(int argc, char **argv)
{
    size_t bytes = 8;
    int k = 100, rounds = 30;
    coll c = C_ALLREDUCE;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-b"))
            bytes = (size_t)strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "-k"))
            k = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-c"))
            c = !strcmp(argv[i + 1], "allgather") ? C_ALLGATHER : !strcmp(argv[i + 1], "broadcast") ? C_BROADCAST
                                                                                                   : C_ALLREDUCE;
    }
    if (k < 1 || k > 128 || rounds < 1 || bytes < 1) {
        fprintf(stderr, "usage: enqueue_bench [-b bytes] [-k calls 1..128] [-r rounds] [-c allreduce|allgather|broadcast]\n");
        return 2;
    }
    uint32_t rank, n, lrank, ln;
    OK(HcclExtGetLaunchEnv(&rank, &n, &lrank, &ln), "HcclExtGetLaunchEnv (run under hcclrun)");
    OK(aclInit(NULL), "aclInit");
    OK(aclrtSetDevice((int32_t)lrank), "aclrtSetDevice");
    aclrtStream s;
    OK(aclrtCreateStream(&s), "aclrtCreateStream");
    HcclRootInfo root;
    OK(HcclExtShareRootInfo(rank, &root), "HcclExtShareRootInfo");
    HcclComm comm;
    OK(HcclCommInitRootInfo(n, &root, rank, &comm), "HcclCommInitRootInfo");
    void *in, *out;
    OK(aclrtMalloc(&in, bytes * n, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    OK(aclrtMalloc(&out, bytes * n, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    OK(aclrtMemset(in, bytes * n, 0, bytes * n), "aclrtMemset");
    double *per = malloc(sizeof(double) * (size_t)rounds);
    if (!per)
        return 1;
    for (int r = -3; r < rounds; r++) {
        g_released = 0;
        OK(aclrtLaunchHostFunc(s, hold_fn, NULL), "aclrtLaunchHostFunc");
        double t0 = now_ns();
        for (int i = 0; i < k; i++)
            OK(issue(c, in, out, bytes, comm, s), k_names[c]);
        double t1 = now_ns();
        release();
        OK(aclrtSynchronizeStream(s), "aclrtSynchronizeStream");
        if (r >= 0)
            per[r] = (t1 - t0) / k;
    }
    qsort(per, (size_t)rounds, sizeof *per, cmp);
    printf("rank %u: enqueue %s bytes %zu ns/call median %.0f min %.0f\n", rank, k_names[c], bytes, per[rounds / 2],
           per[0]);
    free(per);
    OK(HcclCommDestroy(comm), "HcclCommDestroy");
    aclrtFree(in);
    aclrtFree(out);
    aclrtDestroyStream(s);
    aclrtResetDevice((int32_t)lrank);
    aclFinalize();
    return 0;
}
