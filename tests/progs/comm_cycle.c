/* comm_cycle: destroy and re-create communicators, run by hcclrun on N ranks.
 *   comm_cycle [--cycles N] [--warmup W] [--stagger SEED] [--count C]
 *       every cycle: share root info (rank 0 HcclGetRootInfo) -> HcclCommInitRootInfo ->
 *       HcclAllReduce verified -> HcclCommDestroy. --stagger: a seeded random delay of up to 2 ms
 *       before destroy on odd ranks and before init on even ranks, so ranks destroy, and start
 *       the next communicator, in every interleaving. After W warm-up cycles and at the end it
 *       compares RSS, open fds and threads (a small tolerance, no timing); prints cycles/s.
 *   comm_cycle --stale
 *       a destroyed handle is refused (HCCL_E_PARA) by HcclAllReduce, HcclGetRankSize and
 *       HcclCommDestroy, before and after a new communicator exists, and the new one still works;
 *       HcclCommGetHandleWithName returns the handle itself, and nothing once destroyed.
 * Prints "comm_cycle: PASS" on success and exits non-zero on failure. */
#include <dirent.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prog_common.h"

#define RSS_TOLERANCE_KIB (4 * 1024)
#if defined(__SANITIZE_ADDRESS__)
#define RSS_CHECKED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSS_CHECKED 0
#endif
#endif
#ifndef RSS_CHECKED
#define RSS_CHECKED 1
#endif

typedef struct usage {
    long rss_kib;
    int fds;
    int threads;
} usage;

static usage usage_now(void)
{
    usage u = {0, 0, 0};
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld kB", &u.rss_kib);
        sscanf(line, "Threads: %d", &u.threads);
    }
    if (f)
        fclose(f);
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            u.fds++;
    if (d)
        closedir(d);
    return u;
}

/* Deterministic per (seed, rank, cycle): the same interleavings on every run of one seed. */
static void stagger_sleep(unsigned seed, uint32_t rank, int cycle)
{
    uint32_t x = seed * 2654435761u ^ rank * 40503u ^ (uint32_t)cycle * 2246822519u;
    x ^= x >> 15;
    x *= 2654435761u;
    x ^= x >> 13;
    struct timespec ts = {0, (long)(x % 2000u) * 1000};
    nanosleep(&ts, NULL);
}

static HcclComm init_comm(uint32_t rank, uint32_t n)
{
    HcclRootInfo root;
    HCCL_OK(HcclExtShareRootInfo(rank, &root));
    HcclComm comm = NULL;
    HCCL_OK(HcclCommInitRootInfo(n, &root, rank, &comm));
    return comm;
}

/* AllReduce(sum) of (rank + 1 + cycle) * (i % 7 + 1): exact in fp32. Returns 0 when correct. */
static int allreduce_check(HcclComm comm, aclrtStream s, uint32_t rank, uint32_t n, int cycle, uint64_t count,
                           float *host, void *buf)
{
    for (uint64_t i = 0; i < count; i++)
        host[i] = (float)((rank + 1 + (uint32_t)cycle) * (i % 7 + 1));
    to_dev(buf, host, count * sizeof *host);
    HCCL_OK(HcclAllReduce(buf, buf, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s));
    ACL_OK(aclrtSynchronizeStream(s));
    to_host(host, buf, count * sizeof *host);
    float base = (float)(n * (n + 1) / 2 + n * (uint32_t)cycle);
    for (uint64_t i = 0; i < count; i++)
        if (host[i] != base * (float)(i % 7 + 1)) {
            fprintf(stderr, "rank %u: cycle %d: element %llu = %g, want %g\n", rank, cycle, (unsigned long long)i,
                    (double)host[i], (double)(base * (float)(i % 7 + 1)));
            return 1;
        }
    return 0;
}

static int run_cycles(prog_env *e, int cycles, int warmup, int stagger, unsigned seed, uint64_t count)
{
    float *host = xmalloc(count * sizeof *host);
    void *buf = dev_alloc(count * sizeof *host);
    usage first = usage_now();
    double t0 = prog_now_s();
    int bad = 0;
    for (int cyc = 0; cyc < cycles && !bad; cyc++) {
        if (cyc == warmup) {
            first = usage_now();
            t0 = prog_now_s();
        }
        if (stagger && e->rank % 2 == 0)
            stagger_sleep(seed, e->rank, cyc);
        HcclComm comm = init_comm(e->rank, e->n);
        bad = allreduce_check(comm, e->stream, e->rank, e->n, cyc, count, host, buf);
        if (stagger && e->rank % 2 == 1)
            stagger_sleep(seed, e->rank, cyc);
        HCCL_OK(HcclCommDestroy(comm));
    }
    double dt = prog_now_s() - t0;
    usage last = usage_now();
    int measured = cycles - warmup;
    printf("rank %u: %d cycles (%d measured) %.1f cycles/s; rss %ld -> %ld KiB, fds %d -> %d, threads %d -> %d\n",
           e->rank, cycles, measured, measured > 0 && dt > 0 ? measured / dt : 0.0, first.rss_kib, last.rss_kib,
           first.fds, last.fds, first.threads, last.threads);
    if (!RSS_CHECKED)
        printf("rank %u: RSS not compared: AddressSanitizer's allocator grows RSS by itself\n", e->rank);
    if (!bad && ((RSS_CHECKED && last.rss_kib > first.rss_kib + RSS_TOLERANCE_KIB) || last.fds > first.fds ||
                 last.threads > first.threads)) {
        fprintf(stderr, "rank %u: resources grew over %d cycles (RSS tolerance %d KiB, fds and threads exact)\n",
                e->rank, measured, RSS_TOLERANCE_KIB);
        bad = 1;
    }
    dev_free(buf);
    free(host);
    return bad;
}

#define EXPECT_RC(call, want)                                                                          \
    do {                                                                                               \
        HcclResult r_ = (call);                                                                        \
        if (r_ != (want)) {                                                                            \
            fprintf(stderr, "rank %u: %s returned %d, want %d\n", e->rank, #call, (int)r_, (int)(want)); \
            bad = 1;                                                                                   \
        }                                                                                              \
    } while (0)

static int run_stale(prog_env *e)
{
    enum { COUNT = 1024 };
    float *host = xmalloc(COUNT * sizeof *host);
    void *buf = dev_alloc(COUNT * sizeof *host);
    int bad = 0;
    uint32_t size = 0;
    HcclComm old = init_comm(e->rank, e->n);
    bad |= allreduce_check(old, e->stream, e->rank, e->n, 0, COUNT, host, buf);
    HCCL_OK(HcclCommDestroy(old));
    /* Destroyed, nothing new yet. */
    EXPECT_RC(HcclAllReduce(buf, buf, COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, old, e->stream), HCCL_E_PARA);
    EXPECT_RC(HcclGetRankSize(old, &size), HCCL_E_PARA);
    EXPECT_RC(HcclCommDestroy(old), HCCL_E_PARA);
    /* Values that were never handles: refused without being read. */
    EXPECT_RC(HcclGetRankSize((HcclComm)host, &size), HCCL_E_PARA);
    EXPECT_RC(HcclGetRankSize((HcclComm)(uintptr_t)0x1234, &size), HCCL_E_PARA);
    EXPECT_RC(HcclGetRankSize(NULL, &size), HCCL_E_PTR);
    /* A new communicator (in the destroyed one's table slot, the lowest free): the old handle still names
     * nothing, and destroying it leaves the new one alone. */
    HcclComm fresh = init_comm(e->rank, e->n);
    if (fresh == old) {
        fprintf(stderr, "rank %u: the new communicator got the destroyed one's handle\n", e->rank);
        bad = 1;
    }
    EXPECT_RC(HcclGetRankSize(old, &size), HCCL_E_PARA);
    EXPECT_RC(HcclCommDestroy(old), HCCL_E_PARA);
    EXPECT_RC(HcclAllReduce(buf, buf, COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, old, e->stream), HCCL_E_PARA);
    EXPECT_RC(HcclGetRankSize(fresh, &size), HCCL_SUCCESS);
    if (size != e->n)
        bad = 1;
    bad |= allreduce_check(fresh, e->stream, e->rank, e->n, 1, COUNT, host, buf);
    bad |= allreduce_check(fresh, e->stream, e->rank, e->n, 2, COUNT, host, buf);
    /* The name leads to the same handle, not to something else that reaches the communicator. */
    char name[COMM_NAME_MAX_LENGTH];
    HcclComm by_name = NULL;
    HCCL_OK(HcclGetCommName(fresh, name));
    EXPECT_RC(HcclCommGetHandleWithName(name, &by_name), HCCL_SUCCESS);
    if (by_name != fresh) {
        fprintf(stderr, "rank %u: HcclCommGetHandleWithName gave %p, HcclCommInitRootInfo %p\n", e->rank,
                (void *)by_name, (void *)fresh);
        bad = 1;
    }
    HCCL_OK(HcclCommDestroy(fresh));
    EXPECT_RC(HcclCommDestroy(fresh), HCCL_E_PARA);
    EXPECT_RC(HcclCommGetHandleWithName(name, &by_name), HCCL_E_NOT_FOUND);
    dev_free(buf);
    free(host);
    return bad;
}

int main(int argc, char **argv)
{
    int cycles = 100, warmup = 10, stagger = 0, stale = 0;
    unsigned seed = 0;
    uint64_t count = 4096;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cycles") && i + 1 < argc)
            cycles = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stagger") && i + 1 < argc)
            stagger = 1, seed = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--stale"))
            stale = 1;
        else {
            fprintf(stderr, "usage: comm_cycle [--cycles N] [--warmup W] [--stagger SEED] [--count C] | --stale\n");
            return 2;
        }
    }
    if (warmup >= cycles)
        warmup = cycles > 1 ? cycles / 2 : 0;
    prog_env e;
    memset(&e, 0, sizeof e);
    uint32_t local_n;
    HCCL_OK(HcclExtGetLaunchEnv(&e.rank, &e.n, &e.local_rank, &local_n));
    ACL_OK(aclInit(NULL));
    ACL_OK(aclrtSetDevice((int32_t)e.local_rank));
    ACL_OK(aclrtCreateStream(&e.stream));
    int bad = stale ? run_stale(&e) : run_cycles(&e, cycles, warmup, stagger, seed, count ? count : 1);
    prog_fini(&e);
    printf("comm_cycle rank %u: %s\n", e.rank, bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
