/* emu_bench: the emulator's performance numbers (not a test; nothing is asserted).
 *   DMA copy into a peer device's memory (two devices, two processes) vs memcpy of the same
 *   buffers; DMA reduce-copy fp32/bf16 sum vs memcpy; then the per-op overhead table: enqueue cost
 *   of a host task and of a DMA, host -> idle worker hand-off, task to task on a busy worker,
 *   worker -> host wake-up in stream_sync, cross-process notify wake-up and round trip
 *   (docs/perf.md "Per-op overhead"). Usage: emu_bench [round_trips]   (env as for the emulator) */
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/oh_clock.h"
#include "hal/hal.h"

#define MAXB (64u << 20)
#define DIE(...) (fprintf(stderr, "emu_bench: " __VA_ARGS__), fprintf(stderr, "\n"), exit(1))
#define OK(expr)                                                                                    \
    do {                                                                                            \
        hal_result rc_ = (expr);                                                                    \
        if (rc_ != HAL_OK)                                                                          \
            DIE("%s -> %s", #expr, hal_result_name(rc_));                                           \
    } while (0)

typedef struct hello {
    hal_device_handle dev;
    hal_notify_handle notify;
    void *buf;
} hello;

static const hal_ops *H;
static int g_trips = 10000;
enum { PACED_TRIPS = 1000 }; /* trips after 200 us idle: the waiter has gone to sleep */
static int g_from_child = -1; /* pipe the child sends its wake-up stamps on */

static void xfer(int fd, void *p, size_t n, int wr)
{
    for (char *c = p; n;) {
        ssize_t k = wr ? write(fd, c, n) : read(fd, c, n);
        if (k <= 0)
            DIE("pipe");
        c += k;
        n -= (size_t)k;
    }
}

/* Opens device id, exchanges handles with the other process, imports its memory and notify. */
static hal_device *meet(int id, int rfd, int wfd, hello *peer, hal_notify **mine, hal_notify **theirs, void **buf)
{
    hal_device *d;
    hal_device_info info;
    OK(H->device_open(id, &d));
    OK(H->device_info(d, &info));
    OK(H->mem_alloc(d, MAXB, buf));
    memset(*buf, 0, MAXB); /* warm: page faults are not what we measure */
    OK(H->notify_create(d, mine));
    hello me = {.dev = info.handle, .buf = *buf};
    OK(H->notify_export(*mine, &me.notify));
    xfer(wfd, &me, sizeof me, 1);
    xfer(rfd, peer, sizeof *peer, 0);
    OK(H->mem_import(d, &peer->dev));
    OK(H->notify_import(d, &peer->notify, theirs));
    return d;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double *g_ts;
static int g_ts_n;

static void stamp(void *arg)
{
    (void)arg;
    g_ts[g_ts_n++] = oh_now_s();
}

static void child(int rfd, int wfd)
{
    hello peer;
    hal_notify *mine, *theirs;
    void *buf;
    hal_device *d = meet(1, rfd, wfd, &peer, &mine, &theirs, &buf);
    hal_stream *s;
    OK(H->stream_create(d, &s));
    int trips = g_trips + PACED_TRIPS;
    g_ts = calloc((size_t)trips, sizeof *g_ts);
    for (int i = 0; i < trips; i++) { /* stamp: when this stream woke from the parent's record */
        OK(H->notify_wait(mine, s, 0, NULL));
        OK(H->host_func_async(s, stamp, NULL));
        OK(H->notify_record(theirs, s));
    }
    OK(H->stream_sync(s, -1));
    xfer(wfd, g_ts, (size_t)trips * sizeof *g_ts, 1);
    char b;
    xfer(rfd, &b, 1, 0); /* parent done with our memory */
    OK(H->device_close(d));
    exit(0);
}

/* Seconds per DMA task of `bytes` (n tasks enqueued back to back, then one sync). */
static double time_dma(hal_stream *s, hal_dma_desc *desc, int n)
{
    OK(H->dma_batch(s, desc, 1)); /* warm */
    OK(H->stream_sync(s, -1));
    double t0 = oh_now_s();
    for (int i = 0; i < n; i++)
        OK(H->dma_batch(s, desc, 1));
    OK(H->stream_sync(s, -1));
    return (oh_now_s() - t0) / n;
}

static double time_memcpy(void *dst, const void *src, size_t bytes, int n)
{
    memcpy(dst, src, bytes);
    double t0 = oh_now_s();
    for (int i = 0; i < n; i++) {
        memcpy(dst, src, bytes);
        __asm__ __volatile__("" ::: "memory");
    }
    return (oh_now_s() - t0) / n;
}

static void bench_copy(hal_stream *s, void *src, void *peer_buf)
{
    static const size_t sizes[] = {4096, 1u << 20, 64u << 20};
    static const int iters[] = {20000, 500, 20};
    printf("DMA copy into the peer's memory (other process) vs memcpy of the same buffers\n");
    printf("  %10s %12s %12s %7s\n", "bytes", "dma GB/s", "memcpy GB/s", "ratio");
    for (int i = 0; i < 3; i++) {
        hal_dma_desc d = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(peer_buf), .src = hal_ref_ptr(src), .bytes = sizes[i]};
        double td = time_dma(s, &d, iters[i]);
        double tm = time_memcpy(peer_buf, src, sizes[i], iters[i]);
        printf("  %10zu %12.2f %12.2f %7.2f\n", sizes[i], sizes[i] / td / 1e9, sizes[i] / tm / 1e9, tm / td);
    }
}

static void bench_reduce(hal_stream *s, void *src, void *peer_buf)
{
    size_t bytes = 64u << 20;
    printf("DMA reduce-copy into the peer's memory, %zu MiB (dst bytes per second) vs memcpy\n", bytes >> 20);
    double tm = time_memcpy(peer_buf, src, bytes, 10);
    memset(src, 0, bytes); /* zeros: sums stay finite however often we run */
    static const hal_dtype dts[] = {HAL_DT_FP32, HAL_DT_BF16};
    for (int i = 0; i < 2; i++) {
        size_t es = dts[i] == HAL_DT_FP32 ? 4 : 2;
        hal_dma_desc d = {.kind = HAL_DMA_REDUCE, .dst = hal_ref_ptr(peer_buf), .src = hal_ref_ptr(src),
                          .count = bytes / es, .dtype = dts[i], .op = HAL_OP_SUM};
        double td = time_dma(s, &d, 10);
        printf("  %-5s sum %8.2f GB/s   memcpy %8.2f GB/s   ratio %.2f\n", hal_dtype_name(dts[i]), bytes / td / 1e9,
               bytes / tm / 1e9, tm / td);
    }
}

/* ---- per-op overhead ------------------------------------------------------------------------ */

static void nop(void *arg)
{
    (void)arg;
}

/* Sorts v and prints one table row: median, p99 and mean in microseconds. */
static void row(const char *what, double *v, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    printf("  %-58s %9.2f %9.2f %9.2f\n", what, v[n / 2] * 1e6, v[(int)(n * 0.99)] * 1e6, sum / n * 1e6);
}

static void gate_fn(void *arg)
{
    sem_wait(arg);
}

/* Seconds per enqueue call (each call timed alone) while a gate task holds the stream. */
static void enqueue_costs(hal_stream *s, double *v, int n)
{
    sem_t gate;
    sem_init(&gate, 0, 0);
    OK(H->host_func_async(s, gate_fn, &gate));
    for (int i = 0; i < n; i++) {
        double t0 = oh_now_s();
        OK(H->host_func_async(s, nop, NULL));
        v[i] = oh_now_s() - t0;
    }
    sem_post(&gate);
    OK(H->stream_sync(s, -1));
    row("enqueue a host task (stream held back)", v, n);
    static char a[64], b[64];
    hal_dma_desc desc = {.kind = HAL_DMA_COPY, .dst = hal_ref_ptr(a), .src = hal_ref_ptr(b), .bytes = 64};
    OK(H->host_func_async(s, gate_fn, &gate));
    for (int i = 0; i < n; i++) {
        double t0 = oh_now_s();
        OK(H->dma_batch(s, &desc, 1));
        v[i] = oh_now_s() - t0;
    }
    sem_post(&gate);
    OK(H->stream_sync(s, -1));
    row("enqueue a 64 B 1-descriptor DMA (stream held back)", v, n);
    sem_destroy(&gate);
}

/* Host -> idle worker: from before the enqueue to the task's start; worker -> host: from the
 * task's start to stream_sync's return. The worker is parked (100 us idle) before each op. A
 * timed sync waits for the worker; a sync without deadline lets the host run the task itself
 * when the worker has not taken it yet (docs/emulator.md): then the whole op is one row. */
static void handoff_costs(hal_stream *s, double *v, double *w, int n)
{
    g_ts = calloc((size_t)n, sizeof *g_ts);
    g_ts_n = 0;
    for (int i = 0; i < n; i++) {
        nanosleep(&(struct timespec){0, 100000}, NULL);
        double t0 = oh_now_s();
        OK(H->host_func_async(s, stamp, NULL));
        OK(H->stream_sync(s, 10000));
        double t1 = oh_now_s();
        v[i] = g_ts[i] - t0;
        w[i] = t1 - g_ts[i];
    }
    row("hand-off host -> idle worker (enqueue to task start)", v, n);
    row("wake-up worker -> host, timed stream_sync (task to return)", w, n);
    g_ts_n = 0;
    for (int i = 0; i < n; i++) {
        nanosleep(&(struct timespec){0, 100000}, NULL);
        double t0 = oh_now_s();
        OK(H->host_func_async(s, nop, NULL));
        OK(H->stream_sync(s, -1));
        v[i] = oh_now_s() - t0;
    }
    row("enqueue + stream_sync(-1) of one task, worker idle (total)", v, n);
    free(g_ts);
}

/* Task to task on a running worker: n stamp tasks queued behind a gate, then released. */
static void worker_costs(hal_stream *s, double *v, int n)
{
    sem_t gate;
    sem_init(&gate, 0, 0);
    g_ts = calloc((size_t)n + 1, sizeof *g_ts);
    g_ts_n = 0;
    OK(H->host_func_async(s, gate_fn, &gate));
    for (int i = 0; i <= n; i++)
        OK(H->host_func_async(s, stamp, NULL));
    sem_post(&gate);
    OK(H->stream_sync(s, -1));
    for (int i = 0; i < n; i++)
        v[i] = g_ts[i + 1] - g_ts[i];
    row("task to task on a busy worker (queued host tasks)", v, n);
    free(g_ts);
    sem_destroy(&gate);
}

/* Ping-pong with the child: our stamp, record its notify, wait for ours. One way: our stamp to
 * the child's stamp right after its wait returned (CLOCK_MONOTONIC is system wide). First
 * back to back (the waiter is still polling), then PACED_TRIPS trips 200 us apart (it sleeps). */
static void notify_costs(hal_stream *s, hal_notify *mine, hal_notify *theirs, double *v)
{
    int trips = g_trips + PACED_TRIPS;
    g_ts = calloc((size_t)trips + 1, sizeof *g_ts);
    g_ts_n = 0;
    double *peer = calloc((size_t)trips, sizeof *peer);
    OK(H->host_func_async(s, stamp, NULL));
    for (int i = 0; i < g_trips; i++) {
        OK(H->notify_record(theirs, s));
        OK(H->notify_wait(mine, s, 0, NULL));
        OK(H->host_func_async(s, stamp, NULL));
    }
    OK(H->stream_sync(s, -1));
    for (int i = 0; i < PACED_TRIPS; i++) {
        nanosleep(&(struct timespec){0, 200000}, NULL);
        OK(H->host_func_async(s, stamp, NULL));
        OK(H->notify_record(theirs, s));
        OK(H->notify_wait(mine, s, 0, NULL));
        OK(H->stream_sync(s, -1));
    }
    xfer(g_from_child, peer, (size_t)trips * sizeof *peer, 0);
    for (int i = 0; i < g_trips; i++)
        v[i] = peer[i] - g_ts[i];
    row("cross-process notify wake-up, waiter polling (back to back)", v, g_trips);
    for (int i = 0; i < g_trips; i++)
        v[i] = g_ts[i + 1] - g_ts[i];
    row("cross-process notify round trip (back to back)", v, g_trips);
    for (int i = 0; i < PACED_TRIPS; i++) /* our stamps g_trips+1.. pair with the child's g_trips.. */
        v[i] = peer[g_trips + i] - g_ts[g_trips + 1 + i];
    row("cross-process notify wake-up, waiter asleep (200 us idle)", v, PACED_TRIPS);
    free(peer);
    free(g_ts);
}

static void bench_overhead(hal_device *d, hal_stream *xs, hal_notify *mine, hal_notify *theirs)
{
    enum { N = 20000, K = 2000 };
    int most = g_trips > N ? g_trips : N;
    double *v = calloc((size_t)most, sizeof *v), *w = calloc((size_t)K, sizeof *w);
    hal_stream *s;
    OK(H->stream_create(d, &s));
    printf("per-op overhead (%d enqueues, %d hand-offs, %d + %d notify trips; clock reads included)\n", N, K,
           g_trips, (int)PACED_TRIPS);
    printf("  %-58s %9s %9s %9s\n", "op", "median us", "p99 us", "mean us");
    enqueue_costs(s, v, N);
    handoff_costs(s, v, w, K);
    worker_costs(s, v, N);
    notify_costs(xs, mine, theirs, v);
    OK(H->stream_destroy(s));
    free(v);
    free(w);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_trips = atoi(argv[1]) > 0 ? atoi(argv[1]) : g_trips;
    if (!getenv("HCCL_EMU_NAMESPACE")) {
        char ns[64];
        snprintf(ns, sizeof ns, "emu-bench-%d", (int)getpid());
        setenv("HCCL_EMU_NAMESPACE", ns, 1);
    }
    H = hal_get();
    if (!H)
        DIE("no HAL backend");
    int p2c[2], c2p[2];
    if (pipe(p2c) || pipe(c2p))
        DIE("pipe");
    pid_t pid = fork();
    if (pid == 0)
        child(p2c[0], c2p[1]);
    hello peer;
    hal_notify *mine, *theirs;
    void *buf;
    hal_device *d = meet(0, c2p[0], p2c[1], &peer, &mine, &theirs, &buf);
    hal_stream *s;
    OK(H->stream_create(d, &s));
    hal_device_info info;
    OK(H->device_info(d, &info));
    printf("emu_bench: %u DMA engines per device, %ld online CPUs\n", info.dma_engines, sysconf(_SC_NPROCESSORS_ONLN));
    bench_copy(s, buf, peer.buf);
    bench_reduce(s, buf, peer.buf);
    g_from_child = c2p[0];
    bench_overhead(d, s, mine, theirs);
    char b = 1;
    xfer(p2c[1], &b, 1, 1);
    int st;
    waitpid(pid, &st, 0);
    OK(H->device_close(d));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
