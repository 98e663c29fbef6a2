/* coll_misc SCENARIO: run by hcclrun on N ranks.
 *   ordering   a collective behind a blocking host function returns at once, leaves its output
 *              untouched until the hold is released, and is correct after synchronize
 *   overlap    a collective on the comm stream and a host "compute" task on another stream,
 *              joined by an event: ordering of host timestamps only
 *   planreuse  a second call of the same shape compiles nothing (HcclExtPlanCompileCount)
 *   twocomms   the world communicator and a sub-communicator (HcclCreateSubCommConfig, first
 *              half of the ranks) used alternately on two streams
 *   barrier    no rank leaves HcclBarrier before rank 0, held back by a host function, enters it
 *   twostreams one communicator's collectives alternating between two streams (coll_streams.c)
 *   eagerseq   42 collectives back to back across the eager crossover, checked after (coll_eager.c)
 *   onewayseq  9S + 13 one-way Broadcasts/Scatters (runs of one root around the S one-way slots,
 *              changing roots) and AllReduces back to back, checked after (coll_eager.c)
 *   onewayreduce 4S + n + 14 Reduces (runs of one root around the S gather slots, a root that
 *              stalls, changing roots) between Broadcasts and AllReduces, checked after (coll_eager.c)
 *   eagerchain eager calls whose IN the call or copy before them writes, between calls that may
 *              run ahead, checked after (coll_eager.c)
 *   deepqueue  1000 AllReduces issued without a synchronize: more than the runtime queues (coll_eager.c)
 *   mismatch-skip|mismatch-destroy|mismatch-op|mismatch-count|mismatch-root   (coll_mismatch.c)
 *   badinput   bad arguments get an error code at once (coll_mismatch.c)
 *   random-SEED 160 calls drawn from SEED (every collective and V form, Send/Recv, Barrier, dtypes,
 *              sizes across the crossovers, runs, two streams, sub-communicators, stalls) back to
 *              back, checked, the communicators made again between some rounds (coll_random.c);
 *              random-SEED-mismatch: one rank's call differs; random-SEED-exit: one rank leaves
 *   threads-N-random-SEED  the same on N ranks that are threads of this one process (HcclCommInitAll),
 *              run with hcclrun -n 1 or alone (coll_random.c)
 * Prints "coll_misc SCENARIO: PASS" or "... FAIL" and exits non-zero on failure. */
#include "coll_misc.h"

#include <errno.h>
#include <string.h>
#include <time.h>

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void hold_init(hold *h)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->m, NULL);
    pthread_cond_init(&h->cv, NULL);
}

void hold_fn(void *arg)
{
    hold *h = arg;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    pthread_mutex_lock(&h->m);
    h->entered = 1;
    pthread_cond_broadcast(&h->cv);
    while (!h->released && !h->timed_out)
        if (pthread_cond_timedwait(&h->cv, &h->m, &dl) == ETIMEDOUT)
            h->timed_out = 1;
    pthread_mutex_unlock(&h->m);
}

void hold_wait_entered(hold *h)
{
    pthread_mutex_lock(&h->m);
    while (!h->entered)
        pthread_cond_wait(&h->cv, &h->m);
    pthread_mutex_unlock(&h->m);
}

void hold_release(hold *h)
{
    pthread_mutex_lock(&h->m);
    h->released = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->m);
}

/* int32 AllReduce(sum) input: rank r element i = r*1000 + i + salt. */
static int32_t *ar_input(uint32_t r, uint64_t cnt, int32_t salt)
{
    int32_t *h = xmalloc(cnt * sizeof *h);
    for (uint64_t i = 0; i < cnt; i++)
        h[i] = (int32_t)(r * 1000 + i) + salt;
    return h;
}

static int ar_check(const char *what, uint32_t n, const int32_t *dev, uint64_t cnt, int32_t salt)
{
    int32_t *got = xmalloc(cnt * sizeof *got);
    to_host(got, dev, cnt * sizeof *got);
    int bad = 0;
    for (uint64_t i = 0; i < cnt && bad < 4; i++) {
        int32_t want = 0;
        for (uint32_t r = 0; r < n; r++)
            want += (int32_t)(r * 1000 + i) + salt;
        FAILIF(got[i] != want, "%s: element %llu got %d want %d", what, (unsigned long long)i, got[i], want);
    }
    free(got);
    return bad;
}

/* The collective waits behind a held stream. If only_rank0, the others just synchronize. */
static int ordering_case(prog_env *e, bool only_rank0)
{
    int bad = 0;
    const uint64_t cnt = 4099;
    int32_t *in = ar_input(e->rank, cnt, 7), *sent = xmalloc(cnt * 4), *got = xmalloc(cnt * 4);
    void *send = dev_alloc(cnt * 4), *recv = dev_alloc(cnt * 4);
    to_dev(send, in, cnt * 4);
    fill_sentinel(sent, cnt * 4);
    to_dev(recv, sent, cnt * 4);
    bool holding = !only_rank0 || e->rank == 0;
    hold h;
    hold_init(&h);
    if (holding)
        ACL_OK(aclrtLaunchHostFunc(e->stream, hold_fn, &h));
    HcclResult rc = HcclAllReduce(send, recv, cnt, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream);
    FAILIF(rc != HCCL_SUCCESS, "HcclAllReduce behind a held stream returned %d", (int)rc);
    if (holding) {
        hold_wait_entered(&h);
        aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
        ACL_OK(aclrtStreamQuery(e->stream, &st));
        FAILIF(st != ACL_STREAM_STATUS_NOT_READY, "aclrtStreamQuery says complete while the stream is held");
        to_host(got, recv, cnt * 4);
        FAILIF(memcmp(got, sent, cnt * 4) != 0, "recvBuf changed before the hold was released");
        hold_release(&h);
    }
    aclError se = aclrtSynchronizeStream(e->stream);
    FAILIF(se != ACL_SUCCESS, "aclrtSynchronizeStream returned %d", (int)se);
    FAILIF(h.timed_out, "the hold timed out (30 s): the program's own release never ran");
    bad |= ar_check("AllReduce after release", e->n, recv, cnt, 7);
    dev_free(send);
    dev_free(recv);
    free(in);
    free(sent);
    free(got);
    return bad;
}

static int scen_ordering(prog_env *e)
{
    return ordering_case(e, false) | ordering_case(e, true);
}

typedef struct stamp {
    int64_t t;
} stamp;

static void stamp_fn(void *arg)
{
    ((stamp *)arg)->t = now_ns();
}

typedef struct compute {
    int64_t start, end;
    volatile double acc;
} compute;

static void compute_fn(void *arg)
{
    compute *c = arg;
    c->start = now_ns();
    double a = 0;
    for (int i = 0; i < 20000000; i++)
        a += (double)(i & 7) * 0.5;
    c->acc = a;
    c->end = now_ns();
}

static int scen_overlap(prog_env *e)
{
    int bad = 0;
    const uint64_t cnt = 1 << 20;
    aclrtStream comp;
    aclrtEvent done;
    ACL_OK(aclrtCreateStream(&comp));
    ACL_OK(aclrtCreateEvent(&done));
    int32_t *in = ar_input(e->rank, cnt, 3);
    void *send = dev_alloc(cnt * 4), *recv = dev_alloc(cnt * 4);
    to_dev(send, in, cnt * 4);
    stamp before = {0}, after = {0}, joined = {0};
    compute cp;
    memset(&cp, 0, sizeof cp);
    ACL_OK(aclrtLaunchHostFunc(comp, compute_fn, &cp));
    ACL_OK(aclrtLaunchHostFunc(e->stream, stamp_fn, &before));
    HCCL_OK(HcclAllReduce(send, recv, cnt, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream));
    ACL_OK(aclrtLaunchHostFunc(e->stream, stamp_fn, &after));
    ACL_OK(aclrtRecordEvent(done, e->stream));
    ACL_OK(aclrtStreamWaitEvent(comp, done));
    ACL_OK(aclrtLaunchHostFunc(comp, stamp_fn, &joined));
    ACL_OK(aclrtSynchronizeStream(comp));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    FAILIF(!(before.t && after.t && before.t <= after.t), "comm stream stamps out of order");
    FAILIF(!(cp.start && cp.start <= cp.end), "compute task did not run in order");
    FAILIF(!(joined.t >= after.t && joined.t >= cp.end), "the joined task ran before the collective or compute");
    bad |= ar_check("AllReduce next to compute", e->n, recv, cnt, 3);
    printf("overlap: collective %.3f ms, compute %.3f ms, overlapped: %s (informational)\n",
           (double)(after.t - before.t) / 1e6, (double)(cp.end - cp.start) / 1e6,
           cp.start < after.t && before.t < cp.end ? "yes" : "no");
    dev_free(send);
    dev_free(recv);
    free(in);
    ACL_OK(aclrtDestroyEvent(done));
    ACL_OK(aclrtDestroyStream(comp));
    return bad;
}

static int one_ar(prog_env *e, uint64_t cnt, int32_t salt, const char *what)
{
    int32_t *in = ar_input(e->rank, cnt, salt);
    void *send = dev_alloc(cnt * 4), *recv = dev_alloc(cnt * 4);
    to_dev(send, in, cnt * 4);
    HCCL_OK(HcclAllReduce(send, recv, cnt, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    int bad = ar_check(what, e->n, recv, cnt, salt);
    dev_free(send);
    dev_free(recv);
    free(in);
    return bad;
}

static int scen_planreuse(prog_env *e)
{
    int bad = 0;
    uint64_t c0 = HcclExtPlanCompileCount();
    bad |= one_ar(e, 1000, 1, "first call");
    uint64_t c1 = HcclExtPlanCompileCount();
    bad |= one_ar(e, 1000, 2, "second call, other buffers");
    uint64_t c2 = HcclExtPlanCompileCount();
    bad |= one_ar(e, 1001, 3, "other shape");
    uint64_t c3 = HcclExtPlanCompileCount();
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    uint64_t c4 = HcclExtPlanCompileCount();
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    uint64_t c5 = HcclExtPlanCompileCount();
    printf("plan compiles: first %llu, same shape %llu, new shape %llu, barrier again %llu\n",
           (unsigned long long)(c1 - c0), (unsigned long long)(c2 - c1), (unsigned long long)(c3 - c2),
           (unsigned long long)(c5 - c4));
    FAILIF(c1 <= c0, "the first call of a shape compiled nothing");
    FAILIF(c2 != c1, "a second call of the same shape compiled %llu plan(s)", (unsigned long long)(c2 - c1));
    FAILIF(c3 <= c2, "a new shape compiled nothing");
    FAILIF(c5 != c4, "a repeated barrier compiled %llu plan(s)", (unsigned long long)(c5 - c4));
    return bad;
}

static int scen_twocomms(prog_env *e)
{
    int bad = 0;
    uint32_t h = e->n / 2 ? e->n / 2 : 1, *ids = xmalloc(h * sizeof *ids);
    for (uint32_t i = 0; i < h; i++)
        ids[i] = i;
    bool member = e->rank < h;
    HcclComm sub = NULL;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    if (member)
        HCCL_OK(HcclCreateSubCommConfig(&e->comm, h, ids, 1, e->rank, &cfg, &sub));
    aclrtStream s2;
    ACL_OK(aclrtCreateStream(&s2));
    enum { ITERS = 4, CNT = 777 };
    void *ws[ITERS], *wr[ITERS], *ss[ITERS], *sr[ITERS];
    for (int it = 0; it < ITERS; it++) {
        int32_t *in = ar_input(e->rank, CNT, 100 * it);
        ws[it] = dev_alloc(CNT * 4), wr[it] = dev_alloc(CNT * 4), ss[it] = dev_alloc(CNT * 4);
        sr[it] = dev_alloc(CNT * 4);
        to_dev(ws[it], in, CNT * 4);
        free(in);
        in = ar_input(e->rank, CNT, 100 * it + 50);
        to_dev(ss[it], in, CNT * 4);
        free(in);
        HCCL_OK(HcclAllReduce(ws[it], wr[it], CNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, e->comm, e->stream));
        if (member)
            HCCL_OK(HcclAllReduce(ss[it], sr[it], CNT, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, sub, s2));
    }
    ACL_OK(aclrtSynchronizeStream(e->stream));
    ACL_OK(aclrtSynchronizeStream(s2));
    for (int it = 0; it < ITERS; it++) {
        bad |= ar_check("world comm", e->n, wr[it], CNT, 100 * it);
        if (member)
            bad |= ar_check("sub comm", h, sr[it], CNT, 100 * it + 50);
        dev_free(ws[it]), dev_free(wr[it]), dev_free(ss[it]), dev_free(sr[it]);
    }
    if (sub)
        HCCL_OK(HcclCommDestroy(sub));
    ACL_OK(aclrtDestroyStream(s2));
    free(ids);
    printf("twocomms: sub-communicator of %u ranks, member: %s\n", h, member ? "yes" : "no");
    return bad;
}

static int scen_barrier(prog_env *e)
{
    int bad = 0;
    hold h;
    hold_init(&h);
    stamp left = {0};
    if (e->rank == 0)
        ACL_OK(aclrtLaunchHostFunc(e->stream, hold_fn, &h));
    HCCL_OK(HcclBarrier(e->comm, e->stream));
    ACL_OK(aclrtLaunchHostFunc(e->stream, stamp_fn, &left));
    int64_t t[2] = {0, 0}; /* [0] rank 0's release time, [1] when this rank left the barrier */
    if (e->rank == 0) {
        hold_wait_entered(&h);
        struct timespec nap = {0, 200 * 1000 * 1000}; /* a window, not synchronization */
        nanosleep(&nap, NULL);
        t[0] = now_ns();
        hold_release(&h);
    }
    ACL_OK(aclrtSynchronizeStream(e->stream));
    t[1] = left.t;
    int64_t *all = xmalloc(2 * e->n * sizeof *all);
    void *din = dev_alloc(sizeof t), *dout = dev_alloc(2 * e->n * sizeof *all);
    to_dev(din, t, sizeof t);
    HCCL_OK(HcclAllGather(din, dout, 2, HCCL_DATA_TYPE_INT64, e->comm, e->stream));
    ACL_OK(aclrtSynchronizeStream(e->stream));
    to_host(all, dout, 2 * e->n * sizeof *all);
    for (uint32_t r = 0; r < e->n; r++)
        FAILIF(all[2 * r + 1] < all[0], "rank %u left the barrier %.3f ms before rank 0 entered it", r,
               (double)(all[0] - all[2 * r + 1]) / 1e6);
    dev_free(din);
    dev_free(dout);
    free(all);
    return bad;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: coll_misc ordering|overlap|planreuse|twocomms|barrier|twostreams|framework|framework_lean|eagerseq|"
                        "onewayseq|"
                        "onewayreduce|eagerchain|deepqueue|badinput|mismatch-KIND|random-SEED[-mismatch|-exit]|"
                        "threads-N-random-SEED[-mismatch]\n");
        return 2;
    }
    const char *s = argv[1];
    if (!strncmp(s, "threads-", 8)) { /* one process, its ranks as threads: no launcher's communicator */
        int bad = misc_random_threads(s + 8);
        printf("coll_misc %s: %s\n", s, bad ? "FAIL" : "PASS");
        return bad ? 1 : 0;
    }
    prog_env e;
    prog_init(&e);
    int bad;
    if (!strcmp(s, "ordering")) bad = scen_ordering(&e);
    else if (!strcmp(s, "overlap")) bad = scen_overlap(&e);
    else if (!strcmp(s, "planreuse")) bad = scen_planreuse(&e);
    else if (!strcmp(s, "twocomms")) bad = scen_twocomms(&e);
    else if (!strcmp(s, "barrier")) bad = scen_barrier(&e);
    else if (!strcmp(s, "twostreams")) bad = misc_twostreams(&e);
    else if (!strcmp(s, "framework")) bad = misc_framework(&e);
    else if (!strcmp(s, "framework_lean")) bad = misc_framework_lean(&e);
    else if (!strcmp(s, "badinput")) bad = misc_badinput(&e);
    else if (!strcmp(s, "eagerseq")) bad = misc_eagerseq(&e);
    else if (!strcmp(s, "deepqueue")) bad = misc_deepqueue(&e);
    else if (!strcmp(s, "onewayseq")) bad = misc_onewayseq(&e);
    else if (!strcmp(s, "onewayreduce")) bad = misc_onewayreduce(&e);
    else if (!strcmp(s, "eagerchain")) bad = misc_eagerchain(&e);
    else if (!strncmp(s, "mismatch-", 9)) bad = misc_mismatch(&e, s + 9);
    else if (!strncmp(s, "random-", 7)) bad = misc_randomseq(&e, s + 7, true);
    else {
        fprintf(stderr, "coll_misc: unknown scenario %s\n", s);
        return 2;
    }
    prog_fini(&e);
    printf("coll_misc %s: %s\n", s, bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
