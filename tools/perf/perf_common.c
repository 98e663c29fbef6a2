/* Flags, size sweep, timing and the nccl-tests-style report shared by every *_perf program.
 *
 *   -b minbytes (8)  -e maxbytes (32M)  -f stepfactor | -i stepbytes (1M)  -n iters (20)
 *   -w warmup iters (5)  -c check iters (1; 0 = no check, #wrong N/A)  -d dtype|all (float)
 *   -o sum|prod|max|min|all (sum)  -r root|all (0)  -p npus per node (accepted, informational)
 *   -m 0|1: measure single-thread memcpy of each size as a reference (1)
 * Time: ACL timeline events around `iters` back-to-back calls on the stream, averaged over
 * ranks. Rank 0 prints. Exit status 1 if any element was wrong or a call failed. */
#include "perf_int.h"

#include <getopt.h>
#include <hccl/hccl_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct perf_args {
    size_t minb, maxb, stepb;
    double factor;
    int iters, warmup, check, memcpy_ref;
    HcclDataType dts[12];
    int ndts;
    HcclReduceOp ops[4];
    int nops;
    int root; /* -1 = all */
    int npus;
} perf_args;

#define PERF_OK(call)                                                                              \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_);             \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'G': case 'g': v *= 1024.0;  /* fall through */
    case 'M': case 'm': v *= 1024.0;  /* fall through */
    case 'K': case 'k': v *= 1024.0; break;
    default: break;
    }
    return (size_t)v;
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: hcclrun -n N %s [-b minbytes] [-e maxbytes] [-f factor | -i stepbytes] [-n iters] "
            "[-w warmup] [-c checkiters] [-d dtype|all] [-o sum|prod|max|min|all] [-r root|all] [-p npus] [-m 0|1]\n",
            prog);
    exit(2);
}

static void parse(int argc, char **argv, perf_args *a)
{
    memset(a, 0, sizeof *a);
    a->minb = a->maxb = 32u << 20;
    a->stepb = 1u << 20;
    a->iters = 20, a->warmup = 5, a->check = 1, a->memcpy_ref = 1;
    a->dts[a->ndts++] = HCCL_DATA_TYPE_FP32;
    a->ops[a->nops++] = HCCL_REDUCE_SUM;
    static const char *const opn[] = {"sum", "prod", "max", "min"};
    int c;
    while ((c = getopt(argc, argv, "b:e:f:i:n:w:c:d:o:r:p:m:h")) != -1) {
        switch (c) {
        case 'b': a->minb = parse_size(optarg); break;
        case 'e': a->maxb = parse_size(optarg); break;
        case 'f': a->factor = atof(optarg); break;
        case 'i': a->stepb = parse_size(optarg); break;
        case 'n': a->iters = atoi(optarg); break;
        case 'w': a->warmup = atoi(optarg); break;
        case 'c': a->check = atoi(optarg); break;
        case 'p': a->npus = atoi(optarg); break;
        case 'm': a->memcpy_ref = atoi(optarg); break;
        case 'r': a->root = !strcmp(optarg, "all") ? -1 : atoi(optarg); break;
        case 'd':
            a->ndts = 0;
            if (!strcmp(optarg, "all"))
                for (int i = 0; i < 12; i++)
                    a->dts[a->ndts++] = perf_all_dtypes[i];
            else if (!perf_dtype_parse(optarg, &a->dts[a->ndts++]))
                usage(argv[0]);
            break;
        case 'o':
            a->nops = 0;
            for (int i = 0; i < 4; i++)
                if (!strcmp(optarg, "all") || !strcmp(optarg, opn[i]))
                    a->ops[a->nops++] = (HcclReduceOp)i;
            if (!a->nops)
                usage(argv[0]);
            break;
        default: usage(argv[0]);
        }
    }
    if (a->iters < 1 || a->minb > a->maxb || (a->factor != 0 && a->factor <= 1.0) || (!a->factor && !a->stepb))
        usage(argv[0]);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void barrier(const perf_env *e)
{
    PERF_OK(HcclBarrier(e->comm, e->stream));
    PERF_OK(aclrtSynchronizeStream(e->stream));
}

/* Sum of one double per rank (for averaging times and adding up wrong counts). */
static double sum_ranks(const perf_env *e, double v)
{
    void *d = NULL;
    PERF_OK(aclrtMalloc(&d, sizeof v, ACL_MEM_MALLOC_HUGE_FIRST));
    PERF_OK(aclrtMemcpy(d, sizeof v, &v, sizeof v, ACL_MEMCPY_HOST_TO_DEVICE));
    PERF_OK(HcclAllReduce(d, d, 1, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, e->comm, e->stream));
    PERF_OK(aclrtSynchronizeStream(e->stream));
    PERF_OK(aclrtMemcpy(&v, sizeof v, d, sizeof v, ACL_MEMCPY_DEVICE_TO_HOST));
    aclrtFree(d);
    return v;
}

/* Mean time of one call in microseconds, averaged over ranks; <0 if a call failed. */
static double time_point(const perf_env *e, const perf_args *a, perf_point *p)
{
    aclrtEvent start, end;
    PERF_OK(aclrtCreateEventWithFlag(&start, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));
    PERF_OK(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));
    int bad = 0;
    for (int i = 0; i < a->warmup && !bad; i++)
        bad = perf_call(e, p) != HCCL_SUCCESS;
    bad |= aclrtSynchronizeStream(e->stream) != ACL_SUCCESS;
    barrier(e);
    double t0 = now_s();
    PERF_OK(aclrtRecordEvent(start, e->stream));
    for (int i = 0; i < a->iters && !bad; i++)
        bad = perf_call(e, p) != HCCL_SUCCESS;
    PERF_OK(aclrtRecordEvent(end, e->stream));
    bad |= aclrtSynchronizeEvent(end) != ACL_SUCCESS;
    double host_us = (now_s() - t0) * 1e6;
    float ms = 0;
    double us = aclrtEventElapsedTime(&ms, start, end) == ACL_SUCCESS ? ms * 1e3 : host_us;
    aclrtDestroyEvent(start);
    aclrtDestroyEvent(end);
    if (bad) {
        fprintf(stderr, "rank %u: %s_perf: a call failed\n", e->rank, perf_name(p->kind));
        exit(1);
    }
    return sum_ranks(e, us / a->iters) / e->n;
}

/* Wrong elements summed over ranks after `check` checked runs. */
static double check_point(const perf_env *e, const perf_args *a, perf_point *p)
{
    uint64_t wrong = 0;
    for (int i = 0; i < a->check; i++) {
        perf_fill(e, p);
        barrier(e);
        PERF_OK(perf_call(e, p));
        PERF_OK(aclrtSynchronizeStream(e->stream));
        wrong += perf_check(e, p);
    }
    return sum_ranks(e, (double)wrong);
}

typedef struct totals {
    double bw_sum;
    int bw_count;
    double wrong;
} totals;

static void run_half(const perf_env *e, const perf_args *a, perf_point *p, totals *t)
{
    perf_alloc(e, p);
    double us = time_point(e, a, p);
    double wrong = a->check ? check_point(e, a, p) : -1;
    perf_release(p);
    double algbw = perf_alg_bytes(p->kind, p->count, p->es, e->n) / 1e9 / (us * 1e-6);
    double busbw = algbw * perf_bus_factor(p->kind, e->n);
    t->bw_sum += busbw;
    t->bw_count++;
    t->wrong += wrong > 0 ? wrong : 0;
    if (e->rank != 0)
        return;
    char w[32] = "N/A";
    if (wrong >= 0)
        snprintf(w, sizeof w, "%.0f", wrong);
    printf("  %8.2f  %6.2f  %6.2f  %6s", us, algbw, busbw, w);
}

static void na_half(const perf_env *e)
{
    if (e->rank == 0)
        printf("  %8s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
}

/* One row: out of place then in place. */
static void run_row(const perf_env *e, const perf_args *a, perf_point *p, size_t bytes, totals *t)
{
    perf_sizes(p->kind, bytes, p->es, e->n, &p->count, &p->send_elems, &p->recv_elems);
    uint64_t big = p->send_elems > p->recv_elems ? p->send_elems : p->recv_elems;
    if (e->rank == 0)
        printf("%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)(big * p->es), (unsigned long long)p->count,
               perf_dtype_name(p->dt), perf_reduces(p->kind) ? (const char *[]){"sum", "prod", "max", "min"}[p->op]
                                                             : "none",
               perf_rooted(p->kind) ? (int)p->root : -1);
    for (int ip = 0; ip < 2; ip++) {
        p->inplace = ip == 1;
        bool has = ip ? perf_has_inplace(p->kind) : perf_has_outofplace(p->kind);
        if (has)
            run_half(e, a, p, t);
        else
            na_half(e);
    }
    if (e->rank == 0)
        printf("\n");
}

/* Single-thread host memcpy of `bytes`, GB/s (rank 0 only; the others wait in a barrier). */
static double memcpy_gbs(size_t bytes)
{
    /* One allocation, dst 2 KiB + 64 B off a 4 KiB multiple from src (no 4K aliasing). */
    char *src = malloc(2 * bytes + 8192), *dst = src + ((bytes + 4095) & ~(size_t)4095) + 2112;
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    memcpy(dst, src, bytes); /* warm-up, faults pages in */
    double t0 = now_s(), dt;
    long iters = 0;
    do { /* at least 3 copies and 50 ms, so small sizes are not timer noise */
        for (int k = 0; k < (bytes < 65536 ? 256 : 1); k++, iters++) {
            memcpy(dst, src, bytes);
            __asm__ volatile("" ::: "memory");
        }
        dt = now_s() - t0;
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
    printf("#%75s%35s\n", "out-of-place", "in-place");
    printf("#%11s  %12s  %8s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %6s  %6s  %6s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("#%11s  %12s  %8s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
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
    setvbuf(stdout, NULL, _IOLBF, 0);
    perf_args a;
    parse(argc, argv, &a);
    perf_env e;
    uint32_t lr, ln;
    HcclRootInfo root;
    PERF_OK(HcclExtGetLaunchEnv(&e.rank, &e.n, &lr, &ln));
    PERF_OK(aclInit(NULL));
    PERF_OK(aclrtSetDevice((int32_t)lr));
    PERF_OK(aclrtCreateStream(&e.stream));
    PERF_OK(HcclExtShareRootInfo(e.rank, &root));
    PERF_OK(HcclCommInitRootInfo(e.n, &root, e.rank, &e.comm));
    if (kind == PERF_SENDRECV && e.n < 2) {
        fprintf(stderr, "sendrecv_perf needs at least 2 ranks\n");
        return 2;
    }
    header(&e, &a, kind);
    totals t = {0, 0, 0};
    int nops = perf_reduces(kind) ? a.nops : 1;
    for (int d = 0; d < a.ndts; d++)
        for (int o = 0; o < nops; o++)
            for (uint32_t r = 0; r < (perf_rooted(kind) && a.root < 0 ? e.n : 1); r++) {
                perf_point p = {kind, a.dts[d], perf_dtype_size(a.dts[d]), a.ops[o],
                                a.root < 0 ? r : (uint32_t)a.root % e.n, false, 0, 0, 0, NULL, NULL, NULL, NULL};
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
    PERF_OK(HcclCommDestroy(e.comm));
    PERF_OK(aclrtDestroyStream(e.stream));
    PERF_OK(aclrtResetDevice((int32_t)lr));
    PERF_OK(aclFinalize());
    return t.wrong > 0 ? 1 : 0;
}
