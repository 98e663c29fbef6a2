/* What compare.sh's peer benchmarks (tools/bench/mpi_coll_bench.c, gloo_coll_bench.cc) share: the
 * command line, nccl-tests' per-rank sizes and bus-bandwidth factors, buffers of real memory and
 * the output rows.
 * Header-only and valid C and C++: the peers are compiled apart by compare.sh (mpicc, g++). */
#ifndef TOOLS_COLL_BENCH_H
#define TOOLS_COLL_BENCH_H

#include "size_arg.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The V forms are timed with equal blocks: the sizes, factors and rows of their plain forms.
 * sendrecv is nccl-tests' ring: each rank sends to the next and receives from the one before. */
typedef enum {
    ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, ALLTOALL, REDUCE, SCATTER, SENDRECV,
    ALLGATHERV, REDUCESCATTERV, ALLTOALLV, ALLTOALLVC, NCOLL
} coll_kind;
static const char *const coll_names[NCOLL] = {"allreduce",  "allgather",      "reducescatter", "broadcast",
                                              "alltoall",   "reduce",         "scatter",       "sendrecv",
                                              "allgatherv", "reducescatterv", "alltoallv",     "alltoallvc"};

static inline coll_kind coll_bench_plain(coll_kind k)
{
    switch (k) {
    case ALLGATHERV: return ALLGATHER;
    case REDUCESCATTERV: return REDUCESCATTER;
    case ALLTOALLV:
    case ALLTOALLVC: return ALLTOALL;
    default: return k;
    }
}

typedef struct coll_bench_args {
    coll_kind coll;
    size_t minb, maxb;
    double factor;
    long iters, warmup;
    bool verify;   /* -v, where the benchmark offers it */
    bool in_place; /* -I, where the benchmark offers it: the peers' in-place form of the call */
    bool span;     /* -a 4: the first rank's start to the last rank's end (-a 3, the default: the
                      slowest rank's own loop), as the perf tools' -a */
} coll_bench_args;

/* Reports a bad argument and exits; never returns. */
typedef void (*coll_bench_fail_fn)(const char *what, const char *val);

static inline size_t coll_bench_size(const char *what, const char *s, coll_bench_fail_fn fail)
{
    double v = 0;
    if (!size_arg_parse(s, 0, 1e15, &v))
        fail(what, s);
    return (size_t)v;
}

static inline long coll_bench_long(const char *what, const char *s, long lo, coll_bench_fail_fn fail)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo)
        fail(what, s);
    return v;
}

static inline coll_kind coll_bench_kind(const char *s, coll_bench_fail_fn fail)
{
    for (int k = 0; k < NCOLL; k++)
        if (!strcmp(s, coll_names[k]))
            return (coll_kind)k;
    fail("-c (allreduce, allgather, reducescatter, broadcast, alltoall, reduce, scatter, sendrecv, allgatherv, "
         "reducescatterv, alltoallv, alltoallvc)", s);
    return NCOLL;
}

/* The flags a benchmark offers besides the common ones (coll_bench_parse). */
enum { COLL_BENCH_VERIFY = 1u, COLL_BENCH_IN_PLACE = 2u };

/* -c coll [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup] [-a 3|4], and -v and -I
 * where `offers` says so. */
static inline void coll_bench_parse(int argc, char **argv, unsigned offers, coll_bench_fail_fn fail,
                                    coll_bench_args *a)
{
    a->coll = NCOLL, a->minb = 8, a->maxb = 64u << 20, a->factor = 2.0, a->iters = 20, a->warmup = 5;
    a->verify = a->in_place = a->span = false;
    char opts[32] = "c:b:e:f:n:w:a:", flags[64] = "a flag (-c -b -e -f -n -w -a";
    if (offers & COLL_BENCH_VERIFY)
        strcat(opts, "v"), strcat(flags, " -v");
    if (offers & COLL_BENCH_IN_PLACE)
        strcat(opts, "I"), strcat(flags, " -I");
    strcat(flags, ")");
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, opts)) != -1) {
        switch (c) {
        case 'c': a->coll = coll_bench_kind(optarg, fail); break;
        case 'b': a->minb = coll_bench_size("-b", optarg, fail); break;
        case 'e': a->maxb = coll_bench_size("-e", optarg, fail); break;
        case 'f':
            a->factor = strtod(optarg, NULL);
            if (!(a->factor > 1.0))
                fail("-f (a factor > 1)", optarg);
            break;
        case 'n': a->iters = coll_bench_long("-n (>= 1)", optarg, 1, fail); break;
        case 'w': a->warmup = coll_bench_long("-w (>= 0)", optarg, 0, fail); break;
        case 'a':
            if (strcmp(optarg, "3") && strcmp(optarg, "4"))
                fail("-a (3: the slowest rank, 4: span)", optarg);
            a->span = optarg[0] == '4';
            break;
        case 'v': a->verify = true; break;
        case 'I': a->in_place = true; break;
        default: fail(flags, argv[optind - 1]);
        }
    }
    if (a->coll == NCOLL)
        fail("-c (required)", "");
    if (a->minb > a->maxb)
        fail("-b (larger than -e)", "");
}

/* nccl-tests' sizes for `bytes` of fp32 on n ranks: count = bytes / 4, per-rank blocks rounded
 * down to 16 bytes; count is what a row prints, send/recv the elements of each buffer. */
static inline void coll_bench_shape(coll_kind k, size_t bytes, int n, size_t *count, size_t *send, size_t *recv)
{
    size_t c = bytes / sizeof(float), blk = (c / (size_t)n) & ~(size_t)3, nn = (size_t)n;
    *count = *send = *recv = c;
    k = coll_bench_plain(k);
    if (k == ALLGATHER)
        *count = *send = blk, *recv = blk * nn;
    else if (k == REDUCESCATTER || k == SCATTER)
        *count = *recv = blk, *send = blk * nn;
    else if (k == ALLTOALL)
        *count = blk, *send = *recv = blk * nn;
}

/* A buffer of `elems` ones (one if none), every page written, as the perf tools and nccl-tests
 * write theirs; NULL without memory. A calloc'd buffer that nobody writes maps the kernel's one
 * zero page, so a send from it reads the same 4 KiB over and over from the cache: Open MPI's 1 MiB
 * AlltoAll at 4 ranks read 7.5 GB/s busbw that way against 3.3 from written memory (docs/perf-history.md,
 * thirty-fourth pass). Ones keep sums exact. */
static inline float *coll_bench_ones(size_t elems)
{
    size_t n = elems ? elems : 1;
    float *b = (float *)malloc(n * sizeof(float));
    for (size_t i = 0; b && i < n; i++)
        b[i] = 1.0f;
    return b;
}

static inline double coll_bench_bus_factor(coll_kind k, int n)
{
    switch (coll_bench_plain(k)) {
    case ALLREDUCE: return 2.0 * (n - 1) / n;
    case ALLGATHER:
    case REDUCESCATTER:
    case SCATTER:
    case ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

static inline void coll_bench_print_header(const char *prog, const coll_bench_args *a, int n)
{
    printf("# %s %s%s nranks %d iters %ld warmup %ld: host clock, %s\n"
           "#%11s %12s %10s %8s %8s\n", prog, coll_names[a->coll], a->in_place ? " in place" : "", n, a->iters,
           a->warmup, a->span ? "span (first start to last end, -a 4)" : "slowest rank", "size(B)", "count",
           "time(us)", "algbw", "busbw");
}

/* The host clock every rank of a machine shares (a span compares starts and ends across ranks). */
static inline double coll_bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The bytes algbw counts (nccl-tests): the count's for the calls of one whole-size buffer (AllReduce,
 * Broadcast, Reduce, the ring of SendRecv), N blocks' for the others. */
static inline double coll_bench_alg_bytes(coll_kind k, int n, size_t count)
{
    k = coll_bench_plain(k);
    bool whole = k == ALLREDUCE || k == BROADCAST || k == REDUCE || k == SENDRECV;
    return (double)(whole ? count : count * (size_t)n) * 4.0;
}

/* One row: "size count time_us algbw busbw" (size: the larger buffer, as nccl-tests prints it). */
static inline void coll_bench_print_row(coll_kind k, int n, size_t count, size_t send, size_t recv, double us)
{
    size_t big = send > recv ? send : recv;
    double alg_bytes = coll_bench_alg_bytes(k, n, count);
    double algbw = alg_bytes / 1e9 / (us * 1e-6);
    printf("%12zu %12zu %10.2f %8.2f %8.2f\n", big * sizeof(float), count, us, algbw,
           algbw * coll_bench_bus_factor(k, n));
}

#endif
