/* Size sweep, timing and the nccl-tests-style report shared by every *_perf program (flags:
 * perf_args.c).
 * Time as nccl-tests: after a barrier, `iters` back-to-back calls, one synchronize, host clock
 * (with -z 1 a synchronize after every call); ACL timeline events around the same loop give the
 * device time printed at the end of the row. Both are combined over ranks per -a (default: the
 * slowest rank); with -P 1, every call's host time too, as percentiles (perf_pct.c). Rank 0
 * prints. Exit status 1 if any element was wrong, 2 on an error. */
#include "perf_int.h"

#include <hccl/hccl_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/out_settle.h"
#include "common/oh_clock.h"

#define PERF_OK(call)                                                                              \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_);             \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static void barrier(const perf_env *e)
{
    PERF_OK(HcclBarrier(e->comm, e->stream));
    PERF_OK(aclrtSynchronizeStream(e->stream));
}

/* Element-wise reduction of `n` (<= PERF_COMBINE_MAX) doubles over ranks (sum, min or max). */
static void reduce_ranks(const perf_env *e, double *v, uint64_t n, HcclReduceOp op)
{
    size_t bytes = n * sizeof *v;
    PERF_OK(aclrtMemcpy(e->combine, bytes, v, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    PERF_OK(HcclAllReduce(e->combine, e->combine, n, HCCL_DATA_TYPE_FP64, op, e->comm, e->stream));
    PERF_OK(aclrtSynchronizeStream(e->stream));
    PERF_OK(aclrtMemcpy(v, bytes, e->combine, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
}

/* A timed loop of one rank: its start and end on the host clock (s), and its device time per call
 * (us, < 0: none). */
typedef struct perf_loop {
    double t0, t1, dev_us;
} perf_loop;

/* The host and device time per call of `iters` calls, combined over ranks per -a; rank 0 (the
 * printer) gets the result in t[0] (host) and t[1] (device). A span is the last end minus the
 * first start (max of the ends and of the negated starts, one reduction); its device time is the
 * slowest rank's, as -a 3. */
static void combine_ranks(const perf_env *e, perf_avg mode, const perf_loop *l, int iters, double *t)
{
    t[0] = (l->t1 - l->t0) * 1e6 / iters;
    t[1] = l->dev_us;
    switch (mode) {
    case PERF_AVG_RANK0: break; /* only rank 0 prints: its own value is the answer */
    case PERF_AVG_MEAN:
        reduce_ranks(e, t, 2, HCCL_REDUCE_SUM);
        t[0] /= e->n;
        t[1] /= e->n;
        break;
    case PERF_AVG_MIN: reduce_ranks(e, t, 2, HCCL_REDUCE_MIN); break;
    case PERF_AVG_MAX: reduce_ranks(e, t, 2, HCCL_REDUCE_MAX); break;
    case PERF_AVG_SPAN: {
        double v[3] = {l->t1, -l->t0, l->dev_us};
        reduce_ranks(e, v, 3, HCCL_REDUCE_MAX);
        t[0] = (v[0] + v[1]) * 1e6 / iters;
        t[1] = v[2];
        break;
    }
    }
}

/* The first rank out of a timed loop combines while the others still time theirs. On a machine
 * with fewer cores than ranks, an allocation and a first-use plan compile there land in their
 * timed windows (8 B Broadcast, 4 ranks, 100 calls: medians 3.7-5.3 us with them, 2.1-2.6
 * without; docs/perf-history.md): the buffer and the reductions' plans are made before any loop. */
static void combine_setup(perf_env *e, const perf_args *a)
{
    PERF_OK(aclrtMalloc((void **)&e->combine, PERF_COMBINE_MAX * sizeof(double), ACL_MEM_MALLOC_HUGE_FIRST));
    perf_loop l = {0, 0, -1};
    double v[PERF_COMBINE_MAX] = {0};
    combine_ranks(e, a->average, &l, 1, v); /* time_point's */
    reduce_ranks(e, v, 1, HCCL_REDUCE_SUM); /* check_point's */
    if (a->percentiles)
        reduce_ranks(e, v, PERF_PCTS, HCCL_REDUCE_MAX); /* -P's */
}

/* Host-clock and device-event time of one call in microseconds, combined over ranks per -a; with
 * -P, the percentiles of every call's host time, each the largest over ranks. */
typedef struct perf_time {
    double host_us, dev_us; /* dev_us < 0: no event time */
    bool has_pct;
    double pct_us[PERF_PCTS];
} perf_time;

/* -R: the events around the timed calls, as a framework makes them, in turns of 8 (a framework
 * keeps one per call in flight; a few are enough for the stream to see them around every call).
 * 1: a record after every call. 2: also a compute stream, as a process group's: it records an
 * event that the collective stream waits for before every call, and waits for the record after.
 * The events are torch_npu's kind (its NPUEvent's default): aclrtCreateEventExWithFlag with
 * ACL_EVENT_SYNC, no time stamps. */
#define PERF_RECORD_RING 8

typedef struct perf_events {
    int mode; /* -R */
    aclrtStream compute;
    aclrtEvent after[PERF_RECORD_RING], before[PERF_RECORD_RING];
} perf_events;

static void events_open(perf_events *ev, int mode)
{
    *ev = (perf_events){.mode = mode}; /* events_call reads both rings' slots whatever the mode */
    for (int i = 0; i < PERF_RECORD_RING && mode; i++)
        PERF_OK(aclrtCreateEventExWithFlag(&ev->after[i], ACL_EVENT_SYNC));
    for (int i = 0; i < PERF_RECORD_RING && mode > 1; i++)
        PERF_OK(aclrtCreateEventExWithFlag(&ev->before[i], ACL_EVENT_SYNC));
    if (mode > 1)
        PERF_OK(aclrtCreateStream(&ev->compute));
}

static void events_close(perf_events *ev)
{
    if (ev->mode > 1) {
        PERF_OK(aclrtSynchronizeStream(ev->compute));
        PERF_OK(aclrtDestroyStream(ev->compute));
    }
    for (int i = 0; i < PERF_RECORD_RING && ev->mode; i++)
        PERF_OK(aclrtDestroyEvent(ev->after[i]));
    for (int i = 0; i < PERF_RECORD_RING && ev->mode > 1; i++)
        PERF_OK(aclrtDestroyEvent(ev->before[i]));
}

/* Timed call i with its events around it; nonzero if any call failed. */
static int events_call(const perf_events *ev, const perf_env *e, perf_point *p, int i)
{
    aclrtEvent before = ev->before[i % PERF_RECORD_RING], after = ev->after[i % PERF_RECORD_RING];
    if (ev->mode > 1 && (aclrtRecordEvent(before, ev->compute) != ACL_SUCCESS ||
                         aclrtStreamWaitEvent(e->stream, before) != ACL_SUCCESS))
        return 1;
    if (perf_call(e, p) != HCCL_SUCCESS)
        return 1;
    if (ev->mode && aclrtRecordEvent(after, e->stream) != ACL_SUCCESS)
        return 1;
    return ev->mode > 1 && aclrtStreamWaitEvent(ev->compute, after) != ACL_SUCCESS;
}

static perf_time time_point(const perf_env *e, const perf_args *a, perf_point *p)
{
    aclrtEvent start, end;
    PERF_OK(aclrtCreateEventWithFlag(&start, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));
    PERF_OK(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));
    perf_events ev;
    events_open(&ev, a->record);
    perf_stamps st;
    int bad = !perf_stamps_open(&st, a->iters, a->percentiles);
    for (int i = 0; i < a->warmup && !bad; i++)
        bad = perf_call(e, p) != HCCL_SUCCESS;
    bad |= aclrtSynchronizeStream(e->stream) != ACL_SUCCESS;
    barrier(e);
    double t0 = oh_now_s();
    PERF_OK(aclrtRecordEvent(start, e->stream));
    for (int i = 0; i < a->iters && !bad; i++) {
        perf_stamp(&st, i);
        bad = events_call(&ev, e, p, i);
        if (a->blocking && !bad)
            bad = aclrtSynchronizeStream(e->stream) != ACL_SUCCESS;
    }
    PERF_OK(aclrtRecordEvent(end, e->stream));
    bad |= aclrtSynchronizeEvent(end) != ACL_SUCCESS;
    perf_loop l = {t0, oh_now_s(), -1};
    float ms = 0;
    if (aclrtEventElapsedTime(&ms, start, end) == ACL_SUCCESS)
        l.dev_us = (double)ms * 1e3 / a->iters;
    PERF_OK(aclrtDestroyEvent(start));
    PERF_OK(aclrtDestroyEvent(end));
    events_close(&ev);
    if (bad) {
        fprintf(stderr, "rank %u: %s_perf: a call failed%s\n", e->rank, perf_name(p->kind),
                a->percentiles && !st.t ? " (or -P's stamps could not be allocated)" : "");
        exit(2);
    }
    double t[2];
    combine_ranks(e, a->average, &l, a->iters, t);
    perf_time r = {t[0], t[1], false, {0}};
    if (perf_stamps_close(&st, l.t1, r.pct_us)) {
        reduce_ranks(e, r.pct_us, PERF_PCTS, HCCL_REDUCE_MAX);
        r.has_pct = true;
    }
    return r;
}

/* Wrong elements summed over ranks after `check` checked runs. */
static double check_point(const perf_env *e, const perf_args *a, perf_point *p)
{
    uint64_t wrong = 0;
    bool vary = p->vary;
    p->vary = false; /* equal blocks: the layout perf_fill and perf_check know */
    for (int i = 0; i < a->check; i++) {
        perf_fill(e, p);
        barrier(e);
        PERF_OK(perf_call(e, p));
        PERF_OK(aclrtSynchronizeStream(e->stream));
        wrong += perf_check(e, p);
    }
    p->vary = vary;
    double w = (double)wrong;
    reduce_ranks(e, &w, 1, HCCL_REDUCE_SUM);
    return w;
}

typedef struct totals {
    double bw_sum;
    int bw_count;
    double wrong;
} totals;

/* Times, checks and prints one half of a row; its times in *out. */
static void run_half(const perf_env *e, const perf_args *a, perf_point *p, totals *t, perf_time *out)
{
    perf_alloc(e, p);
    perf_time tm = time_point(e, a, p);
    *out = tm;
    double wrong = a->check ? check_point(e, a, p) : -1;
    perf_release(p);
    double algbw = perf_alg_bytes(p->kind, p->count, p->es, e->n) / 1e9 / (tm.host_us * 1e-6);
    double busbw = algbw * perf_bus_factor(p->kind, e->n);
    t->bw_sum += busbw;
    t->bw_count++;
    t->wrong += wrong > 0 ? wrong : 0;
    if (e->rank == 0) {
        char w[32] = "N/A";
        if (wrong >= 0)
            snprintf(w, sizeof w, "%.0f", wrong);
        printf("  %8.2f  %6.2f  %6.2f  %6s", tm.host_us, algbw, busbw, w);
    }
}

/* -P's line under a row: each half's percentiles of every call's host time. */
static void print_pcts(const perf_time tm[2])
{
    if (!tm[0].has_pct && !tm[1].has_pct)
        return;
    printf("#  per call (us, the largest over ranks):");
    for (int ip = 0; ip < 2; ip++) {
        const double *v = tm[ip].pct_us;
        if (tm[ip].has_pct)
            printf(" %s p50 %.2f p90 %.2f p99 %.2f max %.2f", ip ? "in-place" : "out-of-place", v[0], v[1], v[2],
                   v[3]);
        else
            printf(" %s N/A", ip ? "in-place" : "out-of-place");
        printf("%s", ip ? "\n" : ";");
    }
}

static void na_half(const perf_env *e)
{
    if (e->rank == 0)
        printf("  %8s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
}

/* One row: out of place, in place, then the device-event times of both (appended at the end so
 * the nccl-tests columns keep their positions). */
static void run_row(const perf_env *e, const perf_args *a, perf_point *p, size_t bytes, totals *t)
{
    perf_sizes(p->kind, bytes, p->es, e->n, &p->count, &p->send_elems, &p->recv_elems);
    uint64_t big = p->send_elems > p->recv_elems ? p->send_elems : p->recv_elems;
    if (e->rank == 0)
        printf("%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)(big * p->es), (unsigned long long)p->count,
               perf_dtype_name(p->dt), perf_reduces(p->kind) ? (const char *[]){"sum", "prod", "max", "min"}[p->op]
                                                             : "none",
               perf_rooted(p->kind) ? (int)p->root : -1);
    perf_time tm[2] = {{-1, -1, false, {0}}, {-1, -1, false, {0}}};
    for (int ip = 0; ip < 2; ip++) {
        p->inplace = ip == 1;
        bool has = ip ? perf_has_inplace(p->kind) : perf_has_outofplace(p->kind);
        if (has)
            run_half(e, a, p, t, &tm[ip]);
        else
            na_half(e);
    }
    if (e->rank != 0)
        return;
    for (int ip = 0; ip < 2; ip++) {
        if (tm[ip].dev_us >= 0)
            printf("  %8.2f", tm[ip].dev_us);
        else
            printf("  %8s", "N/A");
    }
    printf("\n");
    print_pcts(tm);
    out_settle(e->rank);
}

/* Single-thread host memcpy of `bytes`, GB/s (rank 0 only; the others wait in a barrier). */
static double memcpy_gbs(size_t bytes)
{
    /* One allocation, dst 2 KiB + 64 B off a 4 KiB multiple from src (no 4K aliasing). */
    char *src = malloc(2 * bytes + 8192), *dst = src + ((bytes + 4095) & ~(size_t)4095) + 2112;
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    memcpy(dst, src, bytes); /* warm-up, faults pages in */
    double t0 = oh_now_s(), dt;
    long iters = 0;
    do { /* at least 3 copies and 50 ms, so small sizes are not timer noise */
        for (int k = 0; k < (bytes < 65536 ? 256 : 1); k++, iters++) {
            memcpy(dst, src, bytes);
            __asm__ volatile("" ::: "memory");
        }
        dt = oh_now_s() - t0;
    } while (iters < 3 || dt < 0.05);
    dt /= (double)iters;
    volatile char sink = dst[bytes / 2];
    (void)sink;
    free(src);
    return (double)bytes / 1e9 / dt;
}

static size_t next_size(const perf_args *a, size_t b)
{
    return a->factor ? (size_t)((double)b * a->factor) : b + a->stepb;
}

static void header(const perf_env *e, const perf_args *a, perf_kind kind)
{
    if (e->rank != 0)
        return;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    printf("# OpenHCCL %s_perf\n", perf_name(kind));
    printf("# nranks: %u npus: %d minBytes: %zu maxBytes: %zu step: %g(%s) warmup iters: %d iters: %d "
           "validation: %d\n", e->n, a->npus ? a->npus : (int)e->n, a->minb, a->maxb,
           a->factor ? a->factor : (double)a->stepb, a->factor ? "factor" : "bytes", a->warmup, a->iters, a->check);
    printf("#\n#  Rank %2u Pid %6d on %10s device %2u (and %u more ranks)\n#\n", e->rank, (int)getpid(), host,
           e->rank, e->n - 1);
    printf("# time: host clock of %s%s, %s over ranks (-a %d); devtime: ACL timeline events around the same "
           "loop\n#\n", a->blocking ? "calls with a synchronize after each (-z 1)" : "back-to-back calls (-z 0)",
           a->record == 1 ? ", an event recorded after each (-R 1; sync events, as torch_npu's)"
           : a->record    ? ", a process group's events around each (-R 2: a wait for a compute stream's record "
                            "before, a record after that the compute stream waits for; sync events, as torch_npu's)"
                          : "", perf_avg_name(a->average), (int)a->average);
    if (a->percentiles)
        printf("# per call (-P 1): each rank's host clock before every timed call; a call's time lasts to the "
               "next one's start (the last one's to the loop's end): p50, p90, p99 and the largest, each the "
               "largest over ranks\n#\n");
    if (kind == PERF_SENDRECV)
        printf("# calls: %s\n#\n", a->separate ? "HcclSend and HcclRecv, even ranks send first (-s 1)"
                                                : "one HcclBatchSendRecv of a send and a receive (-s 0)");
    if (perf_is_v(kind))
        printf("# tables: %s\n#\n", a->vary ? "other ones every timed call, blocks of count +- count/2 (-v 1); "
                                               "checked calls: equal blocks" : "equal blocks of count (-v 0)");
    printf("#%75s%35s%20s\n", "out-of-place", "in-place", "devtime");
    printf("#%11s  %12s  %8s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %8s\n", "size", "count", "type",
           "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "oop", "ip");
    printf("#%11s  %12s  %8s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %8s\n", "(B)", "(elements)", "",
           "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");
}

static void memcpy_section(const perf_env *e, const perf_args *a)
{
    if (!a->memcpy_ref)
        return;
    if (e->rank == 0) {
        printf("# Reference: single-thread host memcpy of the same sizes (one process, others idle)\n");
        printf("#%11s  %8s\n", "size(B)", "GB/s");
        for (size_t b = a->minb; b <= a->maxb; b = next_size(a, b)) {
            printf("#%11zu  %8.2f\n", b, memcpy_gbs(b));
            if (next_size(a, b) == b)
                break;
        }
    }
    barrier(e);
}

int perf_main(perf_kind kind, int argc, char **argv)
{
    out_settle_init();
    perf_args a;
    perf_parse_args(argc, argv, &a);
    perf_env e;
    uint32_t lr, ln;
    HcclRootInfo root;
    PERF_OK(HcclExtGetLaunchEnv(&e.rank, &e.n, &lr, &ln));
    PERF_OK(aclInit(NULL));
    PERF_OK(aclrtSetDevice((int32_t)lr));
    PERF_OK(aclrtCreateStream(&e.stream));
    PERF_OK(HcclExtShareRootInfo(e.rank, &root));
    PERF_OK(HcclCommInitRootInfo(e.n, &root, e.rank, &e.comm));
    combine_setup(&e, &a);
    if (kind == PERF_SENDRECV && e.n < 2) {
        fprintf(stderr, "sendrecv_perf needs at least 2 ranks\n");
        return 2;
    }
    if (perf_rooted(kind) && a.root >= (int)e.n) {
        fprintf(stderr, "%s_perf: bad value %d for -r: the root must be below the %u ranks, or all\n",
                perf_name(kind), a.root, e.n);
        return 2;
    }
    header(&e, &a, kind);
    out_settle(e.rank);
    totals t = {0, 0, 0};
    int nops = perf_reduces(kind) ? a.nops : 1;
    for (int d = 0; d < a.ndts; d++)
        for (int o = 0; o < nops; o++)
            for (uint32_t r = 0; r < (perf_rooted(kind) && a.root < 0 ? e.n : 1); r++) {
                perf_point p = {kind, a.dts[d], perf_dtype_size(a.dts[d]), a.ops[o],
                                a.root < 0 ? r : (uint32_t)a.root, false, 0, 0, 0, NULL, NULL, NULL, NULL,
                                a.separate != 0, a.vary != 0, {NULL}, 0};
                for (size_t b = a.minb; b <= a.maxb; b = next_size(&a, b)) {
                    run_row(&e, &a, &p, b, &t);
                    if (next_size(&a, b) == b)
                        break;
                }
            }
    memcpy_section(&e, &a);
    if (e.rank == 0) {
        printf("# Out of bounds values : %.0f %s\n", t.wrong, t.wrong > 0 ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n#\n", t.bw_count ? t.bw_sum / t.bw_count : 0.0);
    }
    PERF_OK(aclrtFree(e.combine));
    PERF_OK(HcclCommDestroy(e.comm));
    PERF_OK(aclrtDestroyStream(e.stream));
    PERF_OK(aclrtResetDevice((int32_t)lr));
    PERF_OK(aclFinalize());
    return t.wrong > 0 ? 1 : 0;
}
