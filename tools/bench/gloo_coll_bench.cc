/* gloo_coll_bench: the Gloo twin of tools/bench/mpi_coll_bench.c. Times one Gloo collective the
 * same way: after a barrier, `iters` back-to-back calls, host clock, the slowest rank; sizes,
 * per-rank counts (rounded down to 16 bytes) and bus-bandwidth factors as nccl-tests
 * (docs/perf.md). fp32, sum, root 0, out of place (broadcast: its one buffer). Gloo's algorithms:
 * allreduce ring (gloo::allreduce, the default), allgather ring, broadcast binomial tree,
 * alltoall direct (N-1 sends and receives), reducescatter recursive halving
 * (gloo::ReduceScatterHalvingDoubling, the only reduce-scatter this Gloo has), reduce
 * (gloo::reduce), scatter (gloo::scatter: the root sends every block), sendrecv (nccl-tests' ring:
 * a send to the next rank and a receive from the one before, through unbound buffers). TCP transport on
 * the loopback interface, rendezvous through a gloo::rendezvous::FileStore. Not part of the CMake
 * build (Gloo is optional); Debian 12: apt-get install libgloo-dev, then from the repository root
 *
 *   g++ -O2 -std=c++17 -Wall -Wextra -Werror -o gloo_coll_bench tools/bench/gloo_coll_bench.cc \
 *       -lgloo -lpthread
 *
 * Each rank reads GLOO_RANK, GLOO_SIZE and GLOO_STORE_DIR (an empty directory, shared by all
 * ranks) from the environment; tools/bench/gloo_run.sh sets them and starts the ranks:
 *
 *   tools/bench/gloo_run.sh -n N gloo_coll_bench -c allreduce|allgather|reducescatter|broadcast|alltoall|
 *                                                  reduce|scatter|sendrecv
 *          [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup] [-a 3|4] [-v]
 *
 * -a 3 (default): the slowest rank's loop; -a 4: the span from the first rank's start to the last
 * rank's end (tools/common/coll_bench.h, as the perf tools' -a).
 * -v checks every size's results on every rank after the warm-up (inputs rank- and index-dependent
 * instead of zeros); a wrong value is printed and all ranks exit 1.
 * Output (rank 0): one row per size, "size count time_us algbw busbw", '#' lines are comments.
 * Errors: "gloo_coll_bench: rank R: <what> failed: <why>" on stderr, exit 2. */
#include "../common/coll_bench.h"
#include "../common/out_settle.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include <climits>
#include <cstring>
#include <errno.h>
#include <exception>
#include <functional>
#include <memory>
#include <stdio.h>
#include <stdlib.h>
#include <string>
#include <unistd.h>
#include <vector>

struct bench_point {
    size_t count = 0;          /* per-call count as nccl-tests prints it */
    size_t send_elems = 0, recv_elems = 0;
    std::vector<float> send, recv;
    std::function<void()> run;     /* one call of the collective, buffers bound once per size */
    const char *not_run = nullptr; /* why this size is not timed (a call Gloo cannot make), or NULL */
};

static int g_rank, g_n;
static std::shared_ptr<gloo::Context> g_ctx;

static void fail(const char *what, const char *val)
{
    if (g_rank == 0)
        fprintf(stderr, "gloo_coll_bench: bad value '%s' for %s\n", val, what);
    exit(2);
}

/* _exit: Gloo's transport threads are still running, static destructors must not race them. */
[[noreturn]] static void die(const char *what, const char *why)
{
    fflush(stdout);
    fprintf(stderr, "gloo_coll_bench: rank %d: %s failed: %s\n", g_rank, what, why);
    fflush(stderr);
    _exit(2);
}

/* Gloo reports every error (timeouts, lost peers, bad arguments) by throwing. */
template <typename F> static void checked(const char *what, F &&f)
{
    try {
        f();
    } catch (const std::exception &e) {
        die(what, e.what());
    }
}

static long env_long(const char *name, long lo, long hi)
{
    const char *s = getenv(name);
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "gloo_coll_bench: %s is '%s', want a number in [%ld, %ld] (tools/bench/gloo_run.sh sets it)\n",
                name, s ? s : "(unset)", lo, hi);
        exit(2);
    }
    return v;
}

/* Every rank listens on 127.0.0.1 and publishes its address in the file store; a full mesh of
 * TCP connections, as Gloo's collectives expect. */
static void connect_ranks(void)
{
    g_n = (int)env_long("GLOO_SIZE", 1, 4096);
    g_rank = (int)env_long("GLOO_RANK", 0, g_n - 1);
    const char *dir = getenv("GLOO_STORE_DIR");
    if (!dir || !*dir)
        die("reading GLOO_STORE_DIR", "unset (tools/bench/gloo_run.sh sets it)");
    std::shared_ptr<gloo::transport::Device> dev;
    checked("gloo::transport::tcp::CreateDevice(127.0.0.1)",
            [&] { dev = gloo::transport::tcp::CreateDevice(gloo::transport::tcp::attr("127.0.0.1")); });
    checked("rendezvous (FileStore, connectFullMesh)", [&] {
        gloo::rendezvous::FileStore store(dir);
        auto ctx = std::make_shared<gloo::rendezvous::Context>(g_rank, g_n);
        ctx->connectFullMesh(store, dev);
        g_ctx = ctx;
    });
}

static void barrier(void)
{
    checked("gloo::barrier", [] {
        gloo::BarrierOptions o(g_ctx);
        gloo::barrier(o);
    });
}

/* The largest v of all ranks, on all ranks. */
static double max_over_ranks(double v)
{
    double out = 0;
    checked("gloo::allreduce (max over ranks)", [&] {
        gloo::AllreduceOptions o(g_ctx);
        o.setInput(&v, 1);
        o.setOutput(&out, 1);
        o.setReduceFunction(
            static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::max<double>));
        gloo::allreduce(o);
    });
    return out;
}

/* Gloo's options objects hold their buffers' registrations: made once per size, as Gloo's own
 * benchmark does, so a timed call is the collective only. */
static void bind_allreduce(bench_point *p)
{
    auto o = std::make_shared<gloo::AllreduceOptions>(g_ctx);
    o->setInput(p->send.data(), p->count);
    o->setOutput(p->recv.data(), p->count);
    o->setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>));
    p->run = [o] { gloo::allreduce(*o); };
}

/* gloo::allgather of 0 bytes divides by zero (offsets modulo the output size): SIGFPE. */
static void bind_allgather(bench_point *p)
{
    if (p->send_elems == 0) {
        p->not_run = "not run: gloo::allgather of 0 bytes divides by zero";
        return;
    }
    auto o = std::make_shared<gloo::AllgatherOptions>(g_ctx);
    o->setInput(p->send.data(), p->send_elems);
    o->setOutput(p->recv.data(), p->recv_elems);
    p->run = [o] { gloo::allgather(*o); };
}

/* ReduceScatterHalvingDoubling (recursive halving within the largest power-of-two block of ranks,
 * then a hand-over to the ranks outside it, then a redistribution to each rank's block) reduces in
 * place in its one buffer of all N blocks, leaving this rank's block at its start. To be out of
 * place as MPI_Reduce_scatter_block, recv is that buffer (N blocks long) and every call first
 * copies send into it; the copy is part of the timed call. */
static void bind_reducescatter(bench_point *p)
{
    std::vector<int> blocks((size_t)g_n, (int)p->count);
    auto rs = std::make_shared<gloo::ReduceScatterHalvingDoubling<float>>(
        g_ctx, std::vector<float *>{p->recv.data()}, (int)p->send_elems, blocks);
    float *work = p->recv.data();
    const float *in = p->send.data();
    size_t bytes = p->send_elems * sizeof(float);
    p->run = [rs, work, in, bytes] {
        memcpy(work, in, bytes);
        rs->run();
    };
}

static void bind_broadcast(bench_point *p)
{
    auto o = std::make_shared<gloo::BroadcastOptions>(g_ctx);
    o->setOutput(p->recv.data(), p->count);
    o->setRoot(0);
    p->run = [o] { gloo::broadcast(*o); };
}

static void bind_alltoall(bench_point *p)
{
    auto o = std::make_shared<gloo::AlltoallOptions>(g_ctx);
    o->setInput(p->send.data(), p->send_elems);
    o->setOutput(p->recv.data(), p->recv_elems);
    p->run = [o] { gloo::alltoall(*o); };
}

static void bind_reduce(bench_point *p)
{
    auto o = std::make_shared<gloo::ReduceOptions>(g_ctx);
    o->setInput(p->send.data(), p->count);
    o->setOutput(p->recv.data(), p->count);
    o->setRoot(0);
    o->setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>));
    p->run = [o] { gloo::reduce(*o); };
}

/* Only the root has inputs: its N blocks, back to back in send. */
static void bind_scatter(bench_point *p)
{
    auto o = std::make_shared<gloo::ScatterOptions>(g_ctx);
    if (g_rank == 0) {
        std::vector<float *> blocks;
        for (int j = 0; j < g_n; j++)
            blocks.push_back(p->send.data() + (size_t)j * p->count);
        o->setInputs(blocks, p->count);
    }
    o->setOutput(p->recv.data(), p->count);
    o->setRoot(0);
    p->run = [o] { gloo::scatter(*o); };
}

/* The receive is posted before the send, as MPI_Sendrecv may: no rank's send waits on a receive
 * that its peer posts only after its own send. */
static void bind_sendrecv(bench_point *p)
{
    size_t bytes = p->count * sizeof(float);
    std::shared_ptr<gloo::transport::UnboundBuffer> out = g_ctx->createUnboundBuffer(p->send.data(), bytes);
    std::shared_ptr<gloo::transport::UnboundBuffer> in = g_ctx->createUnboundBuffer(p->recv.data(), bytes);
    int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
    uint64_t slot = (uint64_t)g_ctx->nextSlot();
    p->run = [out, in, next, prev, slot] {
        in->recv(prev, slot);
        out->send(next, slot);
        out->waitSend();
        in->waitRecv();
    };
}

/* Zeros: sums stay exact (unless -v fills them). */
static void make_point(coll_kind k, size_t bytes, bench_point *p)
{
    coll_bench_shape(k, bytes, g_n, &p->count, &p->send_elems, &p->recv_elems);
    size_t recv_alloc = k == REDUCESCATTER ? p->send_elems : p->recv_elems;
    try {
        p->send.assign(p->send_elems ? p->send_elems : 1, 0.0f);
        p->recv.assign(recv_alloc ? recv_alloc : 1, 0.0f);
    } catch (const std::bad_alloc &) {
        die("allocating the buffers", (std::to_string(bytes) + " bytes: out of memory").c_str());
    }
    static void (*const bind[NCOLL])(bench_point *) = {bind_allreduce, bind_allgather, bind_reducescatter,
                                                        bind_broadcast, bind_alltoall, bind_reduce,
                                                        bind_scatter,   bind_sendrecv};
    checked("setting up the collective", [&] { bind[k](p); });
}

static void call(coll_kind k, const bench_point *p)
{
    try {
        p->run();
    } catch (const std::exception &e) {
        std::string what = std::string(coll_names[k]) + " of count " + std::to_string(p->count);
        die(what.c_str(), e.what());
    }
}

/* -v's inputs: whole numbers, so they and their sums over up to 64 ranks (< 2^24) are exact in
 * fp32 whatever the order of the additions; they tell rank and position apart (4093 is prime, so
 * a block landing at a wrong offset shows). */
static float value(int rank, size_t i)
{
    return (float)(rank * 4096 + (int)(i % 4093) + 1);
}

static void fill(coll_kind k, bench_point *p)
{
    for (size_t i = 0; i < p->send_elems; i++)
        p->send[i] = value(g_rank, i);
    for (size_t i = 0; i < p->recv.size(); i++) /* not-yet-written output shows as -1 */
        p->recv[i] = k == BROADCAST && g_rank == 0 ? value(0, i) : -1.0f;
}

static float sum_over_ranks(size_t i)
{
    float s = 0;
    for (int r = 0; r < g_n; r++)
        s += value(r, i);
    return s;
}

/* What output element i of this rank must hold. */
static float expected(coll_kind k, size_t blk, size_t i)
{
    switch (k) {
    case ALLREDUCE: return sum_over_ranks(i);
    case ALLGATHER: return value((int)(i / blk), i % blk);
    case REDUCESCATTER: return sum_over_ranks((size_t)g_rank * blk + i);
    case BROADCAST: return value(0, i);
    case ALLTOALL: return value((int)(i / blk), (size_t)g_rank * blk + i % blk);
    case REDUCE: return sum_over_ranks(i);
    case SCATTER: return value(0, (size_t)g_rank * blk + i);
    case SENDRECV: return value((g_rank + g_n - 1) % g_n, i);
    default: return 0;
    }
}

/* Checks this rank's output, then agrees with the others, so a wrong rank makes all exit 1. */
static void verify(coll_kind k, const bench_point *p)
{
    size_t wrong = 0;
    /* gloo::reduce leaves partial sums in the other ranks' outputs: only the root's is a result. */
    size_t outputs = k == REDUCE && g_rank != 0 ? 0 : p->recv_elems;
    for (size_t i = 0; i < outputs; i++) {
        float want = expected(k, p->count, i);
        if (p->recv[i] != want && wrong++ == 0)
            fprintf(stderr, "gloo_coll_bench: rank %d: %s count %zu: wrong result: element %zu is %g, expected %g\n",
                    g_rank, coll_names[k], p->count, i, (double)p->recv[i], (double)want);
    }
    if (wrong)
        fprintf(stderr, "gloo_coll_bench: rank %d: %s count %zu: %zu of %zu elements wrong\n", g_rank,
                coll_names[k], p->count, wrong, p->recv_elems);
    if (max_over_ranks((double)wrong) > 0) {
        fflush(stdout);
        _exit(1);
    }
    if (g_rank == 0)
        printf("# %s count %zu: results correct on all %d ranks\n", coll_names[k], p->count, g_n);
}

/* Microseconds per call of the slowest rank (-a 4: of the span from the first start to the last
 * end): a barrier, the warm-up calls (-v: and the check), a barrier, then the timed calls, so every
 * rank's window starts as the same barrier ends. */
static double time_point(const coll_bench_args *a, bench_point *p)
{
    if (p->not_run) /* the same on all ranks: sizes do not depend on the rank */
        return 0;
    if (a->verify)
        fill(a->coll, p);
    barrier();
    long warmup = a->verify && a->warmup == 0 ? 1 : a->warmup; /* -v checks a call's results */
    for (long i = 0; i < warmup; i++)
        call(a->coll, p);
    if (a->verify)
        verify(a->coll, p);
    barrier();
    double t0 = coll_bench_now_us();
    for (long i = 0; i < a->iters; i++)
        call(a->coll, p);
    double t1 = coll_bench_now_us();
    if (a->span) /* -a 4: the last end minus the first start */
        return (max_over_ranks(t1) + max_over_ranks(-t0)) / (double)a->iters;
    return max_over_ranks((t1 - t0) / (double)a->iters);
}

int main(int argc, char **argv)
{
    g_rank = (int)env_long("GLOO_RANK", 0, LONG_MAX); /* only rank 0 reports bad arguments */
    coll_bench_args a;
    coll_bench_parse(argc, argv, COLL_BENCH_VERIFY, fail, &a);
    if (coll_bench_plain(a.coll) != a.coll) /* compare.sh runs Gloo only for the plain forms */
        fail("-c (Gloo: allreduce, allgather, reducescatter, broadcast, alltoall, reduce, scatter, sendrecv)",
             coll_names[a.coll]);
    /* ReduceScatterHalvingDoubling counts elements and bytes in an int. */
    if (a.coll == REDUCESCATTER && a.maxb > (size_t)INT_MAX)
        fail("-e (reducescatter: at most 2 GiB - 1)", "");
    connect_ranks();
    out_settle_init();
    if (g_rank == 0)
        coll_bench_print_header("gloo_coll_bench", &a, g_n);
    out_settle((unsigned)g_rank);
    for (size_t b = a.minb; b <= a.maxb; b = (size_t)((double)b * a.factor)) {
        bench_point p;
        make_point(a.coll, b, &p);
        double us = time_point(&a, &p);
        if (g_rank == 0 && p.not_run)
            printf("#%11zu %12zu %s\n", (p.send_elems > p.recv_elems ? p.send_elems : p.recv_elems) * sizeof(float),
                   p.count, p.not_run);
        else if (g_rank == 0)
            coll_bench_print_row(a.coll, g_n, p.count, p.send_elems, p.recv_elems, us);
        out_settle((unsigned)g_rank);
        if ((size_t)((double)b * a.factor) == b)
            break;
    }
    /* No rank leaves while another may still be in the last reduction with it. */
    barrier();
    fflush(stdout);
    return 0;
}
