/* mpi_coll_bench: the MPI side of tools/bench/compare.sh. Times one MPI collective the way the
 * perf tools and nccl-tests do: after a barrier, `iters` back-to-back calls, host clock, the
 * slowest rank; sizes, per-rank counts (rounded down to 16 bytes) and bus-bandwidth factors as
 * nccl-tests (docs/perf.md). fp32, sum, root 0, out of place (broadcast: its one buffer).
 * Built by compare.sh (compare_peers.sh) with mpicc.openmpi and mpicc.mpich; not part of the CMake
 * build (MPI is optional).
 *
 *   mpirun -n N mpi_coll_bench -c allreduce|allgather|reducescatter|broadcast|alltoall
 *          [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup]
 *
 * Output (rank 0): one row per size, "size count time_us algbw busbw", '#' lines are comments. */
#include "../common/out_settle.h"
#include "../common/size_arg.h"
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, ALLTOALL, NCOLL } coll_kind;
static const char *const coll_names[NCOLL] = {"allreduce", "allgather", "reducescatter", "broadcast", "alltoall"};

typedef struct bench_args {
    coll_kind coll;
    size_t minb, maxb;
    double factor;
    long iters, warmup;
} bench_args;

typedef struct bench_point {
    size_t count;            /* per-call count as nccl-tests prints it */
    size_t send_elems, recv_elems;
    float *send, *recv;
} bench_point;

static int g_rank, g_n;

static void fail(const char *what, const char *val)
{
    if (g_rank == 0)
        fprintf(stderr, "mpi_coll_bench: bad value '%s' for %s\n", val, what);
    MPI_Finalize();
    exit(2);
}

static size_t parse_size(const char *what, const char *s)
{
    double v;
    if (!size_arg_parse(s, 0, 1e15, &v))
        fail(what, s);
    return (size_t)v;
}

static long parse_long(const char *what, const char *s, long lo)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo)
        fail(what, s);
    return v;
}

static void parse(int argc, char **argv, bench_args *a)
{
    *a = (bench_args){NCOLL, 8, 64u << 20, 2.0, 20, 5};
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, "c:b:e:f:n:w:")) != -1) {
        switch (c) {
        case 'c':
            for (int k = 0; k < NCOLL; k++)
                if (!strcmp(optarg, coll_names[k]))
                    a->coll = (coll_kind)k;
            if (a->coll == NCOLL)
                fail("-c (allreduce, allgather, reducescatter, broadcast, alltoall)", optarg);
            break;
        case 'b': a->minb = parse_size("-b", optarg); break;
        case 'e': a->maxb = parse_size("-e", optarg); break;
        case 'f':
            a->factor = strtod(optarg, NULL);
            if (!(a->factor > 1.0))
                fail("-f (a factor > 1)", optarg);
            break;
        case 'n': a->iters = parse_long("-n (>= 1)", optarg, 1); break;
        case 'w': a->warmup = parse_long("-w (>= 0)", optarg, 0); break;
        default: fail("a flag (-c -b -e -f -n -w)", argv[optind - 1]);
        }
    }
    if (a->coll == NCOLL)
        fail("-c (required)", "");
    if (a->minb > a->maxb)
        fail("-b (larger than -e)", "");
}

static double bus_factor(coll_kind k)
{
    switch (k) {
    case ALLREDUCE: return 2.0 * (g_n - 1) / g_n;
    case ALLGATHER:
    case REDUCESCATTER:
    case ALLTOALL: return (double)(g_n - 1) / g_n;
    default: return 1.0;
    }
}

/* nccl-tests' sizes: count = bytes / 4; per-rank blocks rounded down to 16 bytes. */
static bench_point make_point(coll_kind k, size_t bytes)
{
    size_t c = bytes / sizeof(float), blk = (c / (size_t)g_n) & ~(size_t)3;
    bench_point p = {c, c, c, NULL, NULL};
    if (k == ALLGATHER)
        p = (bench_point){blk, blk, blk * g_n, NULL, NULL};
    else if (k == REDUCESCATTER)
        p = (bench_point){blk, blk * g_n, blk, NULL, NULL};
    else if (k == ALLTOALL)
        p = (bench_point){blk, blk * g_n, blk * g_n, NULL, NULL};
    p.send = calloc(p.send_elems ? p.send_elems : 1, sizeof(float)); /* zeros: sums stay exact */
    p.recv = calloc(p.recv_elems ? p.recv_elems : 1, sizeof(float));
    if (!p.send || !p.recv) {
        fprintf(stderr, "mpi_coll_bench: rank %d: out of memory for %zu bytes\n", g_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void call(coll_kind k, const bench_point *p)
{
    int c = (int)p->count, rc = MPI_SUCCESS;
    switch (k) {
    case ALLREDUCE: rc = MPI_Allreduce(p->send, p->recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: rc = MPI_Allgather(p->send, c, MPI_FLOAT, p->recv, c, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCESCATTER:
        rc = MPI_Reduce_scatter_block(p->send, p->recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BROADCAST: rc = MPI_Bcast(p->recv, c, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case ALLTOALL: rc = MPI_Alltoall(p->send, c, MPI_FLOAT, p->recv, c, MPI_FLOAT, MPI_COMM_WORLD); break;
    default: break;
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "mpi_coll_bench: rank %d: %s of count %d failed: %d\n", g_rank, coll_names[k], c, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Microseconds per call of the slowest rank. */
static double time_point(const bench_args *a, const bench_point *p)
{
    for (long i = 0; i < a->warmup; i++)
        call(a->coll, p);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < a->iters; i++)
        call(a->coll, p);
    double us = (MPI_Wtime() - t0) * 1e6 / (double)a->iters, slowest = 0;
    MPI_Reduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_n);
    out_settle_init();
    bench_args a;
    parse(argc, argv, &a);
    if (g_rank == 0)
        printf("# mpi_coll_bench %s nranks %d iters %ld warmup %ld: host clock, slowest rank\n"
               "#%11s %12s %10s %8s %8s\n", coll_names[a.coll], g_n, a.iters, a.warmup, "size(B)", "count",
               "time(us)", "algbw", "busbw");
    out_settle((unsigned)g_rank);
    for (size_t b = a.minb; b <= a.maxb; b = (size_t)((double)b * a.factor)) {
        bench_point p = make_point(a.coll, b);
        double us = time_point(&a, &p);
        size_t big = p.send_elems > p.recv_elems ? p.send_elems : p.recv_elems;
        double alg_bytes = (double)(a.coll == ALLREDUCE || a.coll == BROADCAST ? p.count : p.count * g_n) * 4.0;
        double algbw = alg_bytes / 1e9 / (us * 1e-6);
        if (g_rank == 0)
            printf("%12zu %12zu %10.2f %8.2f %8.2f\n", big * sizeof(float), p.count, us, algbw,
                   algbw * bus_factor(a.coll));
        out_settle((unsigned)g_rank);
        free(p.send);
        free(p.recv);
        if ((size_t)((double)b * a.factor) == b)
            break;
    }
    MPI_Finalize();
    return 0;
}
