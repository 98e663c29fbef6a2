/* coll_vops SCENARIO [ARGS]: V-collectives under hcclrun on N ranks.
 *   mismatch-alltoallv | mismatch-alltoallvc | mismatch-allgatherv | mismatch-reducescatterv |
 *   mismatch-alltoallv-self (rank 1's sendCounts[1] differs from its recvCounts[1])
 *       rank 0 and its peers disagree about one count (rank 0 sends 1000 elements where the
 *       receiver expects 10, or the other way round). Every rank must see the call fail (from
 *       the call, aclrtSynchronizeStream and HcclGetCommAsyncError), and every rank's receive
 *       buffer tail and the canary allocation placed right after it must be intact.
 *       Run with HCCL_EXEC_TIMEOUT set so that a detection bug fails instead of hanging.
 *   random-alltoallv CALLS [CHECK_EVERY]
 *       CALLS AlltoAllV with counts drawn from a seeded generator (the same on every rank, so the
 *       tables agree), data verified every CHECK_EVERY calls; the plan compile count must not grow
 *       after the first call, and RSS must not grow between call CALLS/10 and the end.
 *   random-allgatherv CALLS
 *       the same for AllGatherV (counts and gaps drawn per call), every call checked.
 *   random-reducescatterv CALLS
 *       the same for ReduceScatterV (int32 sums; some blocks empty, gaps between blocks), every
 *       call's result and untouched tail checked; run it under HCCL_ALGO / HCCL_DETERMINISTIC to
 *       cover each algorithm.
 *   backtoback CALLS
 *       AllGatherV, ReduceScatterV and AlltoAllVC back to back, both sides of the eager crossover,
 *       in and out of place, checked after one synchronize (coll_vops_seq.c).
 *   mixed CALLS
 *       the same among Broadcasts (the root kept for runs of calls: one-way runs) and AllReduces,
 *       small and large, zero counts included.
 *   a2av-reuse ROUNDS
 *       rounds of 8 AlltoAllV into one OUT, small and large blocks alternating, the last call's
 *       blocks checked after each round (coll_vops_seq.c).
 *   rsv-scratch
 *       ReduceScatterV whose scratch need (deterministic ring: the whole IN) grows with the counts,
 *       under HCCL_BUFFSIZE=1: a call needing 2 MiB fails with HCCL_E_MEMORY on every rank, the
 *       same cached plan then serves a small call correctly.
 *   cache-lru CALLS [evict]
 *       AllReduces alternating between two shapes, queued, then synchronized one by one; with
 *       "evict" (run with HCCL_PLAN_CACHE_SIZE=1) each synchronized call compiles, else none does.
 * Prints "coll_vops SCENARIO: PASS" or "... FAIL" and exits non-zero on failure. */
#include "coll_vops.h"

#include <string.h>

#define BIG 1000u   /* what the disagreeing side says */
#define SMALL 10u   /* what everyone else says */
#define TAIL 256u   /* float elements after the described receive region, in the same allocation */
#define CANARY_BYTES 4096u

static const uint8_t k_pattern = 0x5c;

typedef struct guard {
    float *recv;      /* described region + TAIL */
    uint8_t *canary;  /* allocated right after recv */
    size_t described; /* elements the receiver described */
} guard;

static void guard_init(guard *g, size_t described)
{
    size_t bytes = (described + TAIL) * sizeof(float);
    g->described = described;
    g->recv = dev_alloc(bytes);
    g->canary = dev_alloc(CANARY_BYTES);
    ACL_OK(aclrtMemset(g->recv, bytes, k_pattern, bytes));
    ACL_OK(aclrtMemset(g->canary, CANARY_BYTES, k_pattern, CANARY_BYTES));
}

/* 0 if the tail and the canary still hold the pattern. */
static int guard_check(prog_env *e, guard *g)
{
    size_t tail_bytes = TAIL * sizeof(float);
    uint8_t *h = xmalloc(tail_bytes + CANARY_BYTES);
    to_host(h, (char *)g->recv + g->described * sizeof(float), tail_bytes);
    to_host(h + tail_bytes, g->canary, CANARY_BYTES);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < tail_bytes + CANARY_BYTES; i++)
        if (h[i] != k_pattern && !bad++)
            first = i;
    printf("rank %u: receive tail and canary %s", e->rank, bad ? "CORRUPTED" : "INTACT");
    if (bad)
        printf(" (%zu bytes changed, first at %s+%zu)", bad, first < tail_bytes ? "tail" : "canary",
               first < tail_bytes ? first : first - tail_bytes);
    printf("\n");
    free(h);
    dev_free(g->recv);
    dev_free(g->canary);
    return bad != 0;
}

/* After the disagreeing call: the failure must show on this rank. 0 if it did. */
static int observe(prog_env *e, HcclResult enq, const char *what)
{
    bool failed = prog_saw_failure(e, enq, what);
    printf("rank %u: V MISMATCH %s\n", e->rank, failed ? "DETECTED" : "NOT DETECTED");
    return failed ? 0 : 1;
}

/* A rank outside the disagreeing pair of an eager AlltoAllV may complete its own call: every block
 * it sends and receives agrees, and nothing waits for the pair (docs/runtime.md, "V-ops"). The
 * communicator has failed all the same: its next call must fail. 0 if the failure showed. */
static int observe_bystander(prog_env *e, HcclResult enq, const char *what)
{
    bool failed = prog_saw_failure(e, enq, what);
    if (!failed) {
        printf("rank %u: %s completed here; the next call must fail\n", e->rank, what);
        failed = prog_saw_failure(e, HcclBarrier(e->comm, e->stream), "HcclBarrier after it");
    }
    printf("rank %u: V MISMATCH %s\n", e->rank, failed ? "DETECTED" : "NOT DETECTED");
    return failed ? 0 : 1;
}

static void prefix(const uint64_t *cnt, uint64_t *dsp, uint32_t n)
{
    for (uint32_t j = 0, cur = 0; j < n; cur += (uint32_t)cnt[j], j++)
        dsp[j] = cur;
}

static uint64_t total(const uint64_t *cnt, uint32_t n)
{
    uint64_t t = 0;
    for (uint32_t j = 0; j < n; j++)
        t += cnt[j];
    return t;
}

/* Rank 0 sends BIG to rank 1, which expects SMALL; every other pair agrees on SMALL. self: rank 1
 * instead sends BIG to itself while expecting SMALL from itself. */
static int mm_alltoallv(prog_env *e, bool vc, bool self)
{
    uint32_t n = e->n, r = e->rank;
    uint64_t *m = xmalloc((size_t)n * n * sizeof *m), sc[64] = {0}, sd[64] = {0}, rc[64] = {0}, rd[64] = {0};
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            m[i * n + j] = !self && i == 0 && j == 1 && r != 1 ? BIG : SMALL; /* rank 1's view says SMALL */
    for (uint32_t j = 0; j < n; j++) {
        sc[j] = m[r * n + j];
        rc[j] = m[j * n + r];
    }
    if (self && r == 1)
        sc[1] = BIG;
    prefix(sc, sd, n);
    prefix(rc, rd, n);
    guard g;
    guard_init(&g, total(rc, n));
    float *send = dev_alloc(total(sc, n) * sizeof(float));
    ACL_OK(aclrtMemset(send, total(sc, n) * sizeof(float), 0x11, total(sc, n) * sizeof(float)));
    HcclResult rc_ = vc ? HcclAlltoAllVC(send, m, HCCL_DATA_TYPE_FP32, g.recv, HCCL_DATA_TYPE_FP32, e->comm, e->stream)
                        : HcclAlltoAllV(send, sc, sd, HCCL_DATA_TYPE_FP32, g.recv, rc, rd, HCCL_DATA_TYPE_FP32,
                                        e->comm, e->stream);
    const char *what = vc ? "HcclAlltoAllVC" : "HcclAlltoAllV";
    int bad = !vc && !self && r > 1 ? observe_bystander(e, rc_, what) : observe(e, rc_, what);
    bad |= guard_check(e, &g);
    dev_free(send);
    free(m);
    return bad;
}

/* AllGatherV: rank 0 says rank 1 contributes SMALL, everyone else (rank 1 too) says BIG.
 * ReduceScatterV: rank 0 says rank 1's block is SMALL, everyone else says BIG. */
static int mm_layout(prog_env *e, bool gather)
{
    uint32_t n = e->n, r = e->rank;
    uint64_t cnt[64] = {0}, dsp[64] = {0};
    for (uint32_t j = 0; j < n; j++)
        cnt[j] = j == 1 ? (r == 0 ? SMALL : BIG) : SMALL;
    prefix(cnt, dsp, n);
    guard g;
    HcclResult rc;
    if (gather) {
        guard_init(&g, total(cnt, n));
        float *send = dev_alloc(cnt[r] * sizeof(float));
        ACL_OK(aclrtMemset(send, cnt[r] * sizeof(float), 0x11, cnt[r] * sizeof(float)));
        rc = HcclAllGatherV(send, cnt[r], g.recv, cnt, dsp, HCCL_DATA_TYPE_FP32, e->comm, e->stream);
        int bad = observe(e, rc, "HcclAllGatherV");
        dev_free(send);
        return bad | guard_check(e, &g);
    }
    guard_init(&g, cnt[r]);
    float *send = dev_alloc(total(cnt, n) * sizeof(float));
    ACL_OK(aclrtMemset(send, total(cnt, n) * sizeof(float), 0, total(cnt, n) * sizeof(float)));
    rc = HcclReduceScatterV(send, cnt, dsp, g.recv, cnt[r], HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, e->comm, e->stream);
    int bad = observe(e, rc, "HcclReduceScatterV");
    dev_free(send);
    return bad | guard_check(e, &g);
}

/* ---- random AlltoAllV -------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define RMAX 48u /* elements per pair at most */
#define RGAP 3u  /* gap elements at most between blocks */

/* Call `it`'s tables for rank r: the matrix row/column from a generator every rank seeds alike,
 * displacements with random gaps (recv blocks in reverse peer order, so displs really matter). */
static void rand_tables(uint32_t it, uint32_t n, uint32_t r, uint64_t *sc, uint64_t *sd, uint64_t *rc,
                        uint64_t *rd)
{
    uint64_t s = 0x5eed0000ull + it;
    uint64_t m[64 * 64];
    for (uint32_t i = 0; i < n * n; i++) {
        uint64_t x = splitmix(&s);
        m[i] = x % 5 == 0 ? 0 : (x >> 8) % (RMAX + 1); /* some empty blocks */
    }
    uint64_t g = splitmix(&s) ^ r, cur = 0;
    for (uint32_t j = 0; j < n; j++) {
        sc[j] = m[r * n + j];
        sd[j] = cur;
        cur += sc[j] + splitmix(&g) % (RGAP + 1);
    }
    cur = 0;
    for (uint32_t j = n; j-- > 0;) {
        rc[j] = m[j * n + r];
        rd[j] = cur;
        cur += rc[j] + splitmix(&g) % (RGAP + 1);
    }
}

static int32_t val(uint32_t it, uint32_t src, uint32_t dst, uint64_t i)
{
    return (int32_t)((it * 7919u + src * 131u + dst * 17u) * 1024u + (uint32_t)i);
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * 4;
}

/* Checks call it's receive buffer on the host: blocks from every sender, gaps untouched. 0 ok. */
static int rand_verify(prog_env *e, uint32_t it, const int32_t *got, const uint64_t *rc, const uint64_t *rd,
                       size_t cap)
{
    uint32_t n = e->n;
    uint8_t *covered = calloc(cap, 1);
    int bad = 0;
    for (uint32_t j = 0; j < n && !bad; j++)
        for (uint64_t i = 0; i < rc[j]; i++) {
            covered[rd[j] + i] = 1;
            if (got[rd[j] + i] != val(it, j, e->rank, i)) {
                printf("FAIL call %u rank %u: element %llu from rank %u is %d, want %d\n", it, e->rank,
                       (unsigned long long)i, j, got[rd[j] + i], val(it, j, e->rank, i));
                bad = 1;
                break;
            }
        }
    for (size_t k = 0; k < cap && !bad; k++)
        if (!covered[k] && got[k] != -1) {
            printf("FAIL call %u rank %u: gap element %zu was written (%d)\n", it, e->rank, k, got[k]);
            bad = 1;
        }
    free(covered);
    return bad;
}

static int random_alltoallv(prog_env *e, uint32_t calls, uint32_t every)
{
    uint32_t n = e->n, r = e->rank;
    size_t cap = (size_t)n * (RMAX + RGAP);
    int32_t *sendh = xmalloc(cap * sizeof *sendh), *recvh = xmalloc(cap * sizeof *recvh);
    int32_t *sendd = dev_alloc(cap * sizeof *sendd), *recvd = dev_alloc(cap * sizeof *recvd);
    uint64_t sc[64] = {0}, sd[64] = {0}, rc[64] = {0}, rd[64] = {0};
    uint64_t compiles_after_first = 0;
    long rss_early = 0;
    int bad = 0;
    double t0 = prog_now_s();
    for (uint32_t it = 0; it < calls && !bad; it++) {
        rand_tables(it, n, r, sc, sd, rc, rd);
        bool check = it % every == 0 || it + 1 == calls;
        if (check) {
            ACL_OK(aclrtSynchronizeStream(e->stream)); /* earlier calls still use both buffers */
            for (uint32_t j = 0; j < n; j++)
                for (uint64_t i = 0; i < sc[j]; i++)
                    sendh[sd[j] + i] = val(it, r, j, i);
            to_dev(sendd, sendh, cap * sizeof *sendh);
            ACL_OK(aclrtMemset(recvd, cap * sizeof *recvd, 0xff, cap * sizeof *recvd));
        }
        HCCL_OK(HcclAlltoAllV(sendd, sc, sd, HCCL_DATA_TYPE_INT32, recvd, rc, rd, HCCL_DATA_TYPE_INT32, e->comm,
                              e->stream));
        if (check) {
            ACL_OK(aclrtSynchronizeStream(e->stream));
            to_host(recvh, recvd, cap * sizeof *recvh);
            bad |= rand_verify(e, it, recvh, rc, rd, cap);
        }
        if (it == 0)
            compiles_after_first = HcclExtPlanCompileCount();
        if (it + 1 == calls / 10) {
            ACL_OK(aclrtSynchronizeStream(e->stream));
            rss_early = rss_kib();
        }
    }
    ACL_OK(aclrtSynchronizeStream(e->stream));
    uint64_t compiles_end = HcclExtPlanCompileCount();
    long rss_end = rss_kib();
    printf("rank %u: %u AlltoAllV calls with random counts in %.2f s: plan compiles %llu after the first call, "
           "%llu at the end; RSS %ld KiB after %u calls, %ld KiB at the end\n", r, calls, prog_now_s() - t0,
           (unsigned long long)compiles_after_first, (unsigned long long)compiles_end, rss_early, calls / 10,
           rss_end);
    if (compiles_end != compiles_after_first) {
        printf("FAIL rank %u: plans were compiled after the first call\n", r);
        bad = 1;
    }
#ifdef __SANITIZE_ADDRESS__
    /* ASan's quarantine keeps freed blocks resident: RSS says nothing about leaks there. */
    printf("rank %u: RSS check skipped under AddressSanitizer\n", r);
    rss_early = 0;
#endif
    if (rss_early && rss_end - rss_early > 4096) {
        printf("FAIL rank %u: RSS grew by %ld KiB\n", r, rss_end - rss_early);
        bad = 1;
    }
    dev_free(sendd);
    dev_free(recvd);
    free(sendh);
    free(recvh);
    return bad;
}

/* CALLS AllGatherV with counts and displacement gaps drawn per call (alike on every rank), every
 * call checked: its plan too is compiled once, whatever the counts. */
static int random_allgatherv(prog_env *e, uint32_t calls)
{
    uint32_t n = e->n, r = e->rank;
    size_t cap = (size_t)n * (RMAX + RGAP);
    int32_t *h = xmalloc(cap * sizeof *h);
    int32_t *sendd = dev_alloc(RMAX * sizeof *sendd), *recvd = dev_alloc(cap * sizeof *recvd);
    uint64_t cnt[64] = {0}, dsp[64] = {0}, compiles_after_first = 0;
    int bad = 0;
    for (uint32_t it = 0; it < calls && !bad; it++) {
        uint64_t s = 0xa11ull + it, cur = 0;
        for (uint32_t j = 0; j < n; j++) {
            cnt[j] = splitmix(&s) % (RMAX + 1);
            dsp[j] = cur;
            cur += cnt[j] + splitmix(&s) % (RGAP + 1);
        }
        for (uint64_t i = 0; i < cnt[r]; i++)
            h[i] = val(it, r, 0, i);
        to_dev(sendd, h, RMAX * sizeof *h);
        ACL_OK(aclrtMemset(recvd, cap * sizeof *recvd, 0xff, cap * sizeof *recvd));
        HCCL_OK(HcclAllGatherV(sendd, cnt[r], recvd, cnt, dsp, HCCL_DATA_TYPE_INT32, e->comm, e->stream));
        ACL_OK(aclrtSynchronizeStream(e->stream));
        to_host(h, recvd, cap * sizeof *h);
        for (uint32_t j = 0; j < n && !bad; j++)
            for (uint64_t i = 0; i < cnt[j]; i++)
                if (h[dsp[j] + i] != val(it, j, 0, i)) {
                    printf("FAIL call %u rank %u: element %llu of rank %u's block is %d\n", it, r,
                           (unsigned long long)i, j, h[dsp[j] + i]);
                    bad = 1;
                    break;
                }
        for (size_t k = dsp[n - 1] + cnt[n - 1]; k < cap && !bad; k++)
            if (h[k] != -1) {
                printf("FAIL call %u rank %u: element %zu past the last block was written\n", it, r, k);
                bad = 1;
            }
        if (it == 0)
            compiles_after_first = HcclExtPlanCompileCount();
    }
    uint64_t compiles_end = HcclExtPlanCompileCount();
    printf("rank %u: %u AllGatherV calls with random counts: plan compiles %llu after the first call, %llu at the "
           "end\n", r, calls, (unsigned long long)compiles_after_first, (unsigned long long)compiles_end);
    bad |= compiles_end != compiles_after_first;
    dev_free(sendd);
    dev_free(recvd);
    free(h);
    return bad;
}

/* ReduceScatterV tables of call it (alike on every rank): some empty blocks, gaps between. */
static void rsv_tables(uint32_t it, uint32_t n, uint64_t *cnt, uint64_t *dsp)
{
    uint64_t s = 0x5c5ull + it, cur = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t x = splitmix(&s);
        cnt[j] = x % 5 == 0 ? 0 : (x >> 8) % (RMAX + 1);
        dsp[j] = cur;
        cur += cnt[j] + splitmix(&s) % (RGAP + 1);
    }
}

/* 0 if rank r's OUT holds the sum over ranks of their block r and nothing past it was written. */
static int rsv_verify(prog_env *e, uint32_t it, const int32_t *got, uint64_t cnt, size_t cap)
{
    for (uint64_t i = 0; i < cnt; i++) {
        uint32_t want = 0;
        for (uint32_t s = 0; s < e->n; s++)
            want += (uint32_t)val(it, s, e->rank, i);
        if (got[i] != (int32_t)want) {
            printf("FAIL call %u rank %u: element %llu is %d, want %d\n", it, e->rank, (unsigned long long)i, got[i],
                   (int32_t)want);
            return 1;
        }
    }
    for (size_t k = cnt; k < cap; k++)
        if (got[k] != -1) {
            printf("FAIL call %u rank %u: element %zu past its block was written\n", it, e->rank, k);
            return 1;
        }
    return 0;
}

static int random_reducescatterv(prog_env *e, uint32_t calls)
{
    uint32_t n = e->n, r = e->rank;
    size_t cap = (size_t)n * (RMAX + RGAP);
    int32_t *h = xmalloc(cap * sizeof *h);
    int32_t *sendd = dev_alloc(cap * sizeof *sendd), *recvd = dev_alloc(RMAX * sizeof *recvd);
    uint64_t cnt[64] = {0}, dsp[64] = {0}, compiles_after_first = 0;
    int bad = 0;
    for (uint32_t it = 0; it < calls && !bad; it++) {
        rsv_tables(it, n, cnt, dsp);
        memset(h, 0x5a, cap * sizeof *h); /* gaps: whatever they hold must not reach a result */
        for (uint32_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < cnt[j]; i++)
                h[dsp[j] + i] = val(it, r, j, i);
        to_dev(sendd, h, cap * sizeof *h);
        ACL_OK(aclrtMemset(recvd, RMAX * sizeof *recvd, 0xff, RMAX * sizeof *recvd));
        HCCL_OK(HcclReduceScatterV(sendd, cnt, dsp, recvd, cnt[r], HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm,
                                   e->stream));
        ACL_OK(aclrtSynchronizeStream(e->stream));
        to_host(h, recvd, RMAX * sizeof *h);
        bad |= rsv_verify(e, it, h, cnt[r], RMAX);
        if (it == 0)
            compiles_after_first = HcclExtPlanCompileCount();
    }
    uint64_t compiles_end = HcclExtPlanCompileCount();
    printf("rank %u: %u ReduceScatterV calls with random counts: plan compiles %llu after the first call, %llu at "
           "the end\n", r, calls, (unsigned long long)compiles_after_first, (unsigned long long)compiles_end);
    if (compiles_end != compiles_after_first) {
        printf("FAIL rank %u: plans were compiled after the first call\n", r);
        bad = 1;
    }
    dev_free(sendd);
    dev_free(recvd);
    free(h);
    return bad;
}

/* Under HCCL_BUFFSIZE=1 (MiB) with a plan that accumulates the whole IN in scratch: 2 MiB of
 * blocks must be refused on every rank before anything moves, and a small call must then work
 * with the same plan (no new compile: the need is checked per call, not per plan). */
static int rsv_scratch(prog_env *e)
{
    uint32_t n = e->n, r = e->rank;
    uint64_t cnt[64], dsp[64], big = (2u << 20) / sizeof(int32_t) / n + 1;
    for (uint32_t j = 0; j < n; j++)
        cnt[j] = big, dsp[j] = j * big;
    int32_t *sendd = dev_alloc(n * big * sizeof *sendd), *recvd = dev_alloc(big * sizeof *recvd);
    HcclResult rc = HcclReduceScatterV(sendd, cnt, dsp, recvd, big, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm,
                                       e->stream);
    int bad = rc != HCCL_E_MEMORY;
    printf("rank %u: ReduceScatterV needing %llu bytes of scratch returned %d (want HCCL_E_MEMORY %d)\n", r,
           (unsigned long long)(n * big * sizeof(int32_t)), (int)rc, (int)HCCL_E_MEMORY);
    uint64_t compiles = HcclExtPlanCompileCount();
    uint32_t it = 1;
    rsv_tables(it, n, cnt, dsp);
    int32_t h[64 * (RMAX + RGAP)];
    memset(h, 0x5a, sizeof h);
    for (uint32_t j = 0; j < n; j++)
        for (uint64_t i = 0; i < cnt[j]; i++)
            h[dsp[j] + i] = val(it, r, j, i);
    to_dev(sendd, h, sizeof h < n * big * sizeof(int32_t) ? sizeof h : n * big * sizeof(int32_t));
    ACL_OK(aclrtMemset(recvd, RMAX * sizeof *recvd, 0xff, RMAX * sizeof *recvd));
    rc = HcclReduceScatterV(sendd, cnt, dsp, recvd, cnt[r], HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream);
    if (rc != HCCL_SUCCESS || aclrtSynchronizeStream(e->stream) != ACL_SUCCESS) {
        printf("FAIL rank %u: the small ReduceScatterV after the refused one failed (%d)\n", r, (int)rc);
        bad = 1;
    } else {
        to_host(h, recvd, RMAX * sizeof *h);
        bad |= rsv_verify(e, it, h, cnt[r], RMAX);
    }
    printf("rank %u: the small call compiled %llu plans (want 0: the refused call's plan is cached)\n", r,
           (unsigned long long)(HcclExtPlanCompileCount() - compiles));
    bad |= HcclExtPlanCompileCount() != compiles;
    dev_free(sendd);
    dev_free(recvd);
    return bad;
}

/* ---- plan cache bound -------------------------------------------------------------------- */

/* CALLS AllReduces alternating between two shapes, first queued without synchronizing, so that
 * many launches hold their plans while the cache wants to evict them (a plan freed under a launch
 * would show as wrong data or a crash), then CALLS more one at a time: with HCCL_PLAN_CACHE_SIZE=1
 * each of those must compile (the other shape was evicted), with the default limit none. */
static int cache_lru(prog_env *e, uint32_t calls, bool expect_evict)
{
    const uint64_t cnt[2] = {64, 100};
    int32_t *sendd[2], *recvd[2], *h = xmalloc(100 * sizeof *h);
    for (int k = 0; k < 2; k++) {
        for (uint64_t i = 0; i < cnt[k]; i++)
            h[i] = (int32_t)(e->rank * 1000 + i + (uint64_t)k);
        sendd[k] = dev_alloc(cnt[k] * sizeof(int32_t));
        recvd[k] = dev_alloc(cnt[k] * sizeof(int32_t));
        to_dev(sendd[k], h, cnt[k] * sizeof *h);
    }
    /* Phase 1: queued; how many plans compile depends on timing (held plans stay cached). */
    for (uint32_t it = 0; it < calls; it++)
        HCCL_OK(HcclAllReduce(sendd[it % 2], recvd[it % 2], cnt[it % 2], HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
                              e->comm, e->stream));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    /* Phase 2: one call at a time, so the previous launch has released its plan. */
    uint64_t c0 = HcclExtPlanCompileCount();
    for (uint32_t it = 0; it < calls; it++) {
        HCCL_OK(HcclAllReduce(sendd[it % 2], recvd[it % 2], cnt[it % 2], HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
                              e->comm, e->stream));
        ACL_OK(aclrtSynchronizeStream(e->stream));
    }
    uint64_t compiled = HcclExtPlanCompileCount() - c0;
    int bad = 0;
    for (int k = 0; k < 2 && !bad; k++) {
        to_host(h, recvd[k], cnt[k] * sizeof *h);
        for (uint64_t i = 0; i < cnt[k]; i++) {
            int32_t want = (int32_t)(1000 * (e->n * (e->n - 1) / 2) + e->n * (i + (uint64_t)k));
            if (h[i] != want) {
                printf("FAIL rank %u: shape %d element %llu is %d, want %d\n", e->rank, k, (unsigned long long)i,
                       h[i], want);
                bad = 1;
                break;
            }
        }
    }
    uint64_t want = expect_evict ? calls : 0;
    printf("rank %u: %u synchronized AllReduces over two shapes compiled %llu plans (want %llu: %s)\n", e->rank, calls,
           (unsigned long long)compiled, (unsigned long long)want,
           expect_evict ? "a cache of one plan evicts the other shape each call" : "both shapes stay cached");
    bad |= compiled != want;
    for (int k = 0; k < 2; k++) {
        dev_free(sendd[k]);
        dev_free(recvd[k]);
    }
    free(h);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: coll_vops SCENARIO [ARGS]\n");
        return 2;
    }
    prog_env e;
    prog_init(&e);
    const char *sc = argv[1];
    int bad;
    if (e.n > 64) {
        printf("coll_vops supports up to 64 ranks\n");
        bad = 1;
    } else if (!strncmp(sc, "mismatch-", 9) && e.n < 2) {
        printf("%s needs at least 2 ranks\n", sc);
        bad = 1;
    } else if (!strcmp(sc, "mismatch-alltoallv")) {
        bad = mm_alltoallv(&e, false, false);
    } else if (!strcmp(sc, "mismatch-alltoallv-self")) {
        bad = mm_alltoallv(&e, false, true);
    } else if (!strcmp(sc, "mismatch-alltoallvc")) {
        bad = mm_alltoallv(&e, true, false);
    } else if (!strcmp(sc, "mismatch-allgatherv")) {
        bad = mm_layout(&e, true);
    } else if (!strcmp(sc, "mismatch-reducescatterv")) {
        bad = mm_layout(&e, false);
    } else if (!strcmp(sc, "random-alltoallv")) {
        uint32_t calls = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000;
        uint32_t every = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 1;
        bad = random_alltoallv(&e, calls ? calls : 1, every ? every : 1);
    } else if (!strcmp(sc, "random-allgatherv")) {
        uint32_t calls = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 500;
        bad = random_allgatherv(&e, calls ? calls : 1);
    } else if (!strcmp(sc, "random-reducescatterv")) {
        uint32_t calls = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 500;
        bad = random_reducescatterv(&e, calls ? calls : 1);
    } else if (!strcmp(sc, "backtoback") || !strcmp(sc, "mixed")) {
        uint32_t calls = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 300;
        bad = vops_backtoback(&e, calls ? calls : 1, !strcmp(sc, "mixed"));
    } else if (!strcmp(sc, "a2av-reuse")) {
        uint32_t rounds = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 50;
        bad = vops_a2av_reuse(&e, rounds ? rounds : 1);
    } else if (!strcmp(sc, "rsv-scratch")) {
        bad = rsv_scratch(&e);
    } else if (!strcmp(sc, "cache-lru")) {
        uint32_t calls = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 200;
        bad = cache_lru(&e, calls ? calls : 2, argc > 3 && !strcmp(argv[3], "evict"));
    } else {
        printf("unknown scenario %s\n", sc);
        bad = 1;
    }
    printf("coll_vops %s: %s\n", sc, bad ? "FAIL" : "PASS");
    fflush(stdout);
    prog_fini(&e);
    return bad;
}
