/* Destroy and re-create: no signal or write of a destroyed communicator reaches the next one, in
 * any interleaving of ranks, and a destroyed handle is refused without being read. The rank
 * program (tests/progs/comm_cycle.c) checks every AllReduce and that RSS, fds and threads stay
 * flat after warm-up; the 1,000-cycle run is a benchmark by hand (docs/runtime.md, "Lifetime"). */
#include "multirank/mr_run.h"

#define MR_COMM_CYCLE OH_BUILD_DIR "/tests/progs/comm_cycle"

static void cycles(unsigned n, const char *args)
{
    mr_result r = mr_run_t("", n, 120, MR_COMM_CYCLE, args);
    cr_expect_eq(r.status, 0, "comm_cycle %s on %u ranks: hcclrun exited with %d", args, n, r.status);
    cr_expect(strstr(r.out, "FAIL") == NULL, "comm_cycle %s on %u ranks: a rank failed", args, n);
    for (unsigned rank = 0; rank < n; rank++) {
        char pass[64];
        snprintf(pass, sizeof pass, "comm_cycle rank %u: PASS", rank);
        cr_expect(strstr(r.out, pass) != NULL, "comm_cycle %s: rank %u did not pass", args, rank);
    }
    free(r.out);
}

Test(comm_lifecycle, cycles_n2, .timeout = 150) { cycles(2, "--cycles 200"); }
Test(comm_lifecycle, cycles_n4, .timeout = 150) { cycles(4, "--cycles 150"); }
/* Seeded random delays before destroy (odd ranks) and before init (even ranks). */
Test(comm_lifecycle, cycles_staggered_n2, .timeout = 150) { cycles(2, "--cycles 200 --stagger 1"); }
Test(comm_lifecycle, cycles_staggered_n4, .timeout = 150) { cycles(4, "--cycles 150 --stagger 2"); }
Test(comm_lifecycle, stale_handles_n2, .timeout = 150) { cycles(2, "--stale"); }
Test(comm_lifecycle, stale_handles_n4, .timeout = 150) { cycles(4, "--stale"); }

/* The same loop with the ranks as threads of one process (one device each): peers' control
 * blocks and notifies are then memory of this very process. Rank 0 posts each cycle's root info
 * without waiting for the others, so destroys of one cycle overlap inits of the next. */
#include <pthread.h>
#include <time.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#define T_CYCLES 60
#define T_COUNT 1000

typedef struct t_shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int posted;
    HcclRootInfo root[T_CYCLES];
    uint32_t n;
} t_shared;

typedef struct t_rank {
    t_shared *sh;
    uint32_t rank;
    int failures;
    char why[256];
} t_rank;

static void t_nap(uint32_t rank, int cyc)
{
    struct timespec ts = {0, (long)(((rank * 7919u + (uint32_t)cyc * 104729u) % 1500u) * 1000u)};
    nanosleep(&ts, NULL);
}

static int t_cycle(t_rank *t, aclrtStream s, void *buf, float *host, int cyc)
{
    t_shared *sh = t->sh;
    if (t->rank == 0) {
        HcclRootInfo r;
        if (HcclGetRootInfo(&r) != HCCL_SUCCESS)
            return snprintf(t->why, sizeof t->why, "cycle %d: HcclGetRootInfo failed", cyc);
        pthread_mutex_lock(&sh->mu);
        sh->root[cyc] = r;
        sh->posted = cyc + 1;
        pthread_cond_broadcast(&sh->cv);
        pthread_mutex_unlock(&sh->mu);
    }
    pthread_mutex_lock(&sh->mu);
    while (sh->posted <= cyc)
        pthread_cond_wait(&sh->cv, &sh->mu);
    HcclRootInfo root = sh->root[cyc];
    pthread_mutex_unlock(&sh->mu);
    if (t->rank % 2 == 0)
        t_nap(t->rank, cyc);
    HcclComm comm = NULL;
    HcclResult rc = HcclCommInitRootInfo(sh->n, &root, t->rank, &comm);
    if (rc != HCCL_SUCCESS)
        return snprintf(t->why, sizeof t->why, "cycle %d: init -> %d", cyc, (int)rc);
    for (int i = 0; i < T_COUNT; i++)
        host[i] = (float)((t->rank + 1) * (uint32_t)(i % 5 + 1));
    aclrtMemcpy(buf, T_COUNT * sizeof *host, host, T_COUNT * sizeof *host, ACL_MEMCPY_HOST_TO_DEVICE);
    rc = HcclAllReduce(buf, buf, T_COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s);
    aclError sync = aclrtSynchronizeStream(s);
    aclrtMemcpy(host, T_COUNT * sizeof *host, buf, T_COUNT * sizeof *host, ACL_MEMCPY_DEVICE_TO_HOST);
    float want = (float)(sh->n * (sh->n + 1) / 2);
    int bad = rc != HCCL_SUCCESS || sync != ACL_SUCCESS;
    for (int i = 0; !bad && i < T_COUNT; i++)
        bad = host[i] != want * (float)(i % 5 + 1);
    if (t->rank % 2 == 1)
        t_nap(t->rank, cyc);
    HcclResult drc = HcclCommDestroy(comm);
    if (bad || drc != HCCL_SUCCESS)
        return snprintf(t->why, sizeof t->why, "cycle %d: allreduce %d sync %d data %s destroy %d", cyc, (int)rc,
                        (int)sync, bad ? "wrong" : "ok", (int)drc);
    return 0;
}

static void *t_main(void *p)
{
    t_rank *t = p;
    aclrtSetDevice((int32_t)t->rank);
    aclrtStream s;
    aclrtCreateStream(&s);
    void *buf;
    aclrtMalloc(&buf, T_COUNT * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST);
    float *host = malloc(T_COUNT * sizeof *host);
    for (int cyc = 0; cyc < T_CYCLES && !t->failures; cyc++)
        t->failures += t_cycle(t, s, buf, host, cyc) != 0;
    free(host);
    aclrtFree(buf);
    aclrtDestroyStream(s);
    aclrtResetDevice((int32_t)t->rank);
    return NULL;
}

static void thread_cycles(uint32_t n)
{
    static t_shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cv, NULL);
    sh.n = n;
    t_rank t[8];
    pthread_t th[8];
    cr_assert_leq(n, 8);
    for (uint32_t i = 0; i < n; i++) {
        t[i] = (t_rank){&sh, i, 0, ""};
        cr_assert_eq(pthread_create(&th[i], NULL, t_main, &t[i]), 0);
    }
    for (uint32_t i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(t[i].failures, 0, "rank %u: %s", i, t[i].why);
    }
}

Test(comm_lifecycle, thread_ranks_cycles_n2, .timeout = 120) { thread_cycles(2); }
Test(comm_lifecycle, thread_ranks_cycles_n4, .timeout = 120) { thread_cycles(4); }
