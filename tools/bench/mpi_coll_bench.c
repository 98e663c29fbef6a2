/* mpi_coll_bench: the MPI side of tools/bench/compare.sh. Times one MPI collective the way the
 * perf tools and nccl-tests do: after a barrier, `iters` back-to-back calls, host clock, the
 * slowest rank; sizes, per-rank counts (rounded down to 16 bytes) and bus-bandwidth factors as
 * nccl-tests (docs/perf.md). fp32 buffers of ones, sum, root 0, out of place (broadcast: its one
 * buffer; with -I, AllReduce and AllGather in place: MPI_IN_PLACE, the data in the receive buffer,
 * as the perf tools' in-place column); sendrecv is nccl-tests' ring, one MPI_Sendrecv to the next
 * rank and from the one before. The V forms with equal blocks: MPI_Allgatherv, MPI_Reduce_scatter,
 * MPI_Alltoallv (also for alltoallvc, which MPI does not have: the same call with the counts every
 * rank could derive).
 * Built by compare.sh (compare_peers.sh) with mpicc.openmpi and mpicc.mpich; not part of the CMake
 * build (MPI is optional).
 *
 *   mpirun -n N mpi_coll_bench -c allreduce|allgather|reducescatter|broadcast|alltoall|reduce|scatter|
 *                               sendrecv|allgatherv|reducescatterv|alltoallv|alltoallvc
 *          [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup] [-a 3|4] [-I]
 *
 * -a 3 (default): the slowest rank's loop; -a 4: the span from the first rank's start to the last
 * rank's end (tools/common/coll_bench.h, as the perf tools' -a).
 * Output (rank 0): one row per size, "size count time_us algbw busbw", '#' lines are comments. */
#include "../common/coll_bench.h"
#include "../common/out_settle.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct bench_point {
    size_t count;            /* per-call count as nccl-tests prints it */
    size_t send_elems, recv_elems;
    float *send, *recv;
    int *counts, *displs;    /* the V forms: count blocks to / from every rank, back to back */
} bench_point;

static int g_rank, g_n;

static void fail(const char *what, const char *val)
{
    if (g_rank == 0)
        fprintf(stderr, "mpi_coll_bench: bad value '%s' for %s\n", val, what);
    MPI_Finalize();
    exit(2);
}

static bench_point make_point(coll_kind k, size_t bytes)
{
    bench_point p = {0, 0, 0, NULL, NULL, NULL, NULL};
    coll_bench_shape(k, bytes, g_n, &p.count, &p.send_elems, &p.recv_elems);
    p.send = coll_bench_ones(p.send_elems);
    p.recv = coll_bench_ones(p.recv_elems);
    p.counts = calloc((size_t)g_n, sizeof(int));
    p.displs = calloc((size_t)g_n, sizeof(int));
    for (int j = 0; p.counts && p.displs && j < g_n; j++)
        p.counts[j] = (int)p.count, p.displs[j] = j * (int)p.count;
    if (!p.send || !p.recv || !p.counts || !p.displs) {
        fprintf(stderr, "mpi_coll_bench: rank %d: out of memory for %zu bytes\n", g_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void call(coll_kind k, bool in_place, const bench_point *p)
{
    int c = (int)p->count, rc = MPI_SUCCESS;
    const void *send = in_place ? MPI_IN_PLACE : p->send;
    switch (k) {
    case ALLREDUCE: rc = MPI_Allreduce(send, p->recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: rc = MPI_Allgather(send, c, MPI_FLOAT, p->recv, c, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCESCATTER:
        rc = MPI_Reduce_scatter_block(p->send, p->recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BROADCAST: rc = MPI_Bcast(p->recv, c, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case ALLTOALL: rc = MPI_Alltoall(p->send, c, MPI_FLOAT, p->recv, c, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCE: rc = MPI_Reduce(p->send, p->recv, c, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case SCATTER: rc = MPI_Scatter(p->send, c, MPI_FLOAT, p->recv, c, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case SENDRECV:
        rc = MPI_Sendrecv(p->send, c, MPI_FLOAT, (g_rank + 1) % g_n, 0, p->recv, c, MPI_FLOAT, (g_rank + g_n - 1) % g_n,
                          0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case ALLGATHERV:
        rc = MPI_Allgatherv(p->send, c, MPI_FLOAT, p->recv, p->counts, p->displs, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case REDUCESCATTERV:
        rc = MPI_Reduce_scatter(p->send, p->recv, p->counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALLV:
    case ALLTOALLVC:
        rc = MPI_Alltoallv(p->send, p->counts, p->displs, MPI_FLOAT, p->recv, p->counts, p->displs, MPI_FLOAT,
                           MPI_COMM_WORLD);
        break;
    default: break;
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "mpi_coll_bench: rank %d: %s of count %d failed: %d\n", g_rank, coll_names[k], c, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Microseconds per call of the slowest rank, or (-a 4) of the span from the first start to the
 * last end: the maximum of the ends and of the negated starts. */
static double time_point(const coll_bench_args *a, const bench_point *p)
{
    for (long i = 0; i < a->warmup; i++)
        call(a->coll, a->in_place, p);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = coll_bench_now_us();
    for (long i = 0; i < a->iters; i++)
        call(a->coll, a->in_place, p);
    double t1 = coll_bench_now_us();
    double mine[2] = {a->span ? t1 : t1 - t0, -t0}, most[2] = {0, 0};
    MPI_Reduce(mine, most, a->span ? 2 : 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return (a->span ? most[0] + most[1] : most[0]) / (double)a->iters;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_n);
    out_settle_init();
    coll_bench_args a;
    coll_bench_parse(argc, argv, COLL_BENCH_IN_PLACE, fail, &a);
    if (a.in_place && a.coll != ALLREDUCE && a.coll != ALLGATHER)
        fail("-I (allreduce and allgather only)", coll_names[a.coll]);
    if (g_rank == 0)
        coll_bench_print_header("mpi_coll_bench", &a, g_n);
    out_settle((unsigned)g_rank);
    for (size_t b = a.minb; b <= a.maxb; b = (size_t)((double)b * a.factor)) {
        bench_point p = make_point(a.coll, b);
        double us = time_point(&a, &p);
        if (g_rank == 0)
            coll_bench_print_row(a.coll, g_n, p.count, p.send_elems, p.recv_elems, us);
        out_settle((unsigned)g_rank);
        free(p.send);
        free(p.recv);
        free(p.counts);
        free(p.displs);
        if ((size_t)((double)b * a.factor) == b)
            break;
    }
    MPI_Finalize();
    return 0;
}
