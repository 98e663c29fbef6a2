/* hal/net TCP link benchmark (docs/perf.md "Network links"): throughput of the link against a
 * plain socket stream between the same pair in the same run, and the one-way latency of an 8 B
 * write + notify (half the ping-pong round trip). Between two threads over loopback, or with
 * --netns (root) between two processes in two network namespaces joined by a veth pair.
 *
 *   net_bench [--netns] [--mib TOTAL] [--chunk-kib C] [--nsocks N] [--trials T] [--iters I] [--zc 0|1]
 *
 * Timing: the writer's clock from the first post until the target has every byte and wrote an
 * 8 B acknowledgement back; median of the trials. No assertions: numbers only. */
#define _GNU_SOURCE /* setns */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hal/net/net.h"
#include "common/oh_clock.h"

static size_t total = 256u << 20, chunk = 4u << 20;
static int trials = 5, iters = 2000, zc = -1;
static uint32_t nsocks;
static unsigned char *dst, *pong;         /* target's and writer's buffers: same address in both */
static uint64_t t_count, w_count;         /* notify 0 of each side */
static const char *ip_t = "127.0.0.1";

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what)
{
    fprintf(stderr, "net_bench: %s failed\n", what);
    exit(1);
}

static socklen_t mkaddr(const char *ip, uint16_t port, struct sockaddr_in *a)
{
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, ip, &a->sin_addr);
    return sizeof *a;
}

/* The target: answers every latency ping, acknowledges every throughput round, and serves the
 * plain socket stream. Ports go to the writer over pfd. */
static void run_target(int pfd)
{
    net_config c = {.kind = NET_KIND_TCP, .name = "bench target", .nsocks = nsocks, .zerocopy = zc};
    net_transport *t;
    net_link *l;
    net_mr *mr;
    uint32_t nid;
    struct sockaddr_in a;
    struct sockaddr_storage bound;
    if (net_create(&c, &t) || net_listen(t, (struct sockaddr *)&a, mkaddr(ip_t, 0, &a), &bound) ||
        net_mr_reg(t, dst, total, &mr) || net_notify_add_counter(t, &t_count, &nid))
        die("target setup");
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t al = mkaddr(ip_t, 0, &a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, al) || listen(lfd, 1) || getsockname(lfd, (struct sockaddr *)&a, &al))
        die("plain listen");
    uint16_t ports[2] = {ntohs(((struct sockaddr_in *)&bound)->sin_port), ntohs(a.sin_port)};
    if (write(pfd, ports, sizeof ports) != sizeof ports || net_accept(t, 30000, &l))
        die("target accept");
    uint64_t seen = 0;
    for (int i = 0; i < iters; i++) { /* latency */
        net_counter_wait(&t_count, ++seen, -1);
        net_write(l, dst, 8, (uintptr_t)pong, 0, 0, 0);
    }
    size_t nw = (total + chunk - 1) / chunk;
    for (int r = 0; r < trials; r++) { /* link throughput rounds */
        seen += nw;
        net_counter_wait(&t_count, seen, -1);
        net_write(l, dst, 8, (uintptr_t)pong, 0, 0, 0);
    }
    int fd = accept(lfd, NULL, NULL);
    for (int r = 0; r < trials && fd >= 0; r++) { /* plain stream rounds */
        size_t got = 0;
        while (got < total) {
            ssize_t k = recv(fd, dst + got, total - got, 0);
            if (k <= 0)
                die("plain recv");
            got += (size_t)k;
        }
        char ack = 1;
        if (send(fd, &ack, 1, 0) != 1)
            die("plain ack");
    }
    net_link_drain(l, 10000);
    sleep(1); /* let the writer read the last acknowledgement before the link goes */
    net_destroy(t);
}

static void run_writer(int pfd)
{
    uint16_t ports[2];
    if (read(pfd, ports, sizeof ports) != sizeof ports)
        die("reading the target's ports");
    net_config c = {.kind = NET_KIND_TCP, .name = "bench writer", .nsocks = nsocks, .zerocopy = zc};
    net_transport *t;
    net_link *l;
    net_mr *mr;
    uint32_t nid;
    struct sockaddr_in a;
    unsigned char *src = malloc(total);
    memset(src, 0x5a, total);
    if (net_create(&c, &t) || net_mr_reg(t, pong, 64, &mr) || net_notify_add_counter(t, &w_count, &nid) ||
        net_connect(t, (struct sockaddr *)&a, mkaddr(ip_t, ports[0], &a), 30000, &l))
        die("writer setup");
    double *lat = malloc(sizeof(double) * iters), tp[64], ps[64];
    uint64_t seen = 0;
    for (int i = 0; i < iters; i++) {
        double t0 = oh_now_s();
        net_write(l, src, 8, (uintptr_t)dst, 0, 0, 0);
        net_counter_wait(&w_count, ++seen, -1);
        lat[i] = (oh_now_s() - t0) / 2;
    }
    size_t nw = (total + chunk - 1) / chunk;
    for (int r = 0; r < trials; r++) {
        double t0 = oh_now_s();
        for (size_t i = 0; i < nw; i++) {
            size_t n = i == nw - 1 ? total - i * chunk : chunk;
            net_write(l, src + i * chunk, n, (uintptr_t)(dst + i * chunk), 0, 0, 0);
        }
        net_counter_wait(&w_count, ++seen, -1);
        tp[r] = total / (oh_now_s() - t0) / 1e9;
        net_link_drain(l, -1);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, mkaddr(ip_t, ports[1], &a)))
        die("plain connect");
    for (int r = 0; r < trials; r++) {
        double t0 = oh_now_s();
        size_t sent = 0;
        while (sent < total) {
            ssize_t k = send(fd, src + sent, total - sent, 0);
            if (k <= 0)
                die("plain send");
            sent += (size_t)k;
        }
        char ack;
        if (recv(fd, &ack, 1, MSG_WAITALL) != 1)
            die("plain ack");
        ps[r] = total / (oh_now_s() - t0) / 1e9;
    }
    qsort(lat, iters, sizeof *lat, cmp_d);
    qsort(tp, trials, sizeof *tp, cmp_d);
    qsort(ps, trials, sizeof *ps, cmp_d);
    printf("net_bench: %zu MiB in %zu KiB writes, %u socket(s) per link, median of %d trials\n", total >> 20,
           chunk >> 10, nsocks ? nsocks : 2, trials);
    printf("  link throughput   %8.2f GB/s\n", tp[trials / 2]);
    printf("  plain socket      %8.2f GB/s   (one TCP stream, send/recv)\n", ps[trials / 2]);
    printf("  ratio link/plain  %8.2f\n", tp[trials / 2] / ps[trials / 2]);
    printf("  8 B write+notify  %8.1f us one way (median of %d ping-pongs / 2; p90 %.1f us)\n", lat[iters / 2] * 1e6,
           iters, lat[iters * 9 / 10] * 1e6);
    fflush(stdout); /* the netns children leave with _exit */
    close(fd);
    net_link_close(l);
    net_destroy(t);
}

static void *target_thread(void *arg)
{
    run_target((int)(intptr_t)arg);
    return NULL;
}

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void enter_ns(const char *name)
{
    char path[96];
    snprintf(path, sizeof path, "/var/run/netns/%s", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || setns(fd, CLONE_NEWNET))
        die("setns");
    close(fd);
}

/* Two namespaces joined by a veth pair; both are deleted at the end, whatever happened. */
static int run_netns(int pfd[2])
{
    char a[32], b[32], cmd[1024];
    snprintf(a, sizeof a, "ohbench-%d-a", (int)getpid());
    snprintf(b, sizeof b, "ohbench-%d-b", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "ip netns add %s && ip netns add %s && ip link add ohbv0 netns %s type veth peer name ohbv1 netns %s && "
             "ip -n %s addr add 10.232.0.1/24 dev ohbv0 && ip -n %s link set ohbv0 up && ip -n %s link set lo up && "
             "ip -n %s addr add 10.232.0.2/24 dev ohbv1 && ip -n %s link set ohbv1 up && ip -n %s link set lo up",
             a, b, a, b, a, a, a, b, b, b);
    int rc = sh(cmd);
    ip_t = "10.232.0.1";
    pid_t pt = -1, pw = -1;
    if (rc == 0 && (pt = fork()) == 0) {
        enter_ns(a);
        run_target(pfd[1]);
        _exit(0);
    }
    if (rc == 0 && pt > 0 && (pw = fork()) == 0) {
        enter_ns(b);
        run_writer(pfd[0]);
        _exit(0);
    }
    int st = 0;
    if (pw > 0)
        waitpid(pw, &st, 0);
    if (pt > 0)
        waitpid(pt, NULL, 0);
    snprintf(cmd, sizeof cmd, "ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", a, b);
    sh(cmd);
    if (rc)
        fprintf(stderr, "net_bench: creating the namespaces failed (needs root)\n");
    return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
    int netns = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(argv[i], "--netns"))
            netns = 1;
        else if (!strcmp(argv[i], "--mib") && ++i)
            total = strtoull(v, NULL, 10) << 20;
        else if (!strcmp(argv[i], "--chunk-kib") && ++i)
            chunk = strtoull(v, NULL, 10) << 10;
        else if (!strcmp(argv[i], "--nsocks") && ++i)
            nsocks = (uint32_t)atoi(v);
        else if (!strcmp(argv[i], "--trials") && ++i)
            trials = atoi(v);
        else if (!strcmp(argv[i], "--iters") && ++i)
            iters = atoi(v);
        else if (!strcmp(argv[i], "--zc") && ++i)
            zc = atoi(v);
        else {
            fprintf(stderr, "usage: net_bench [--netns] [--mib N] [--chunk-kib N] [--nsocks N] [--trials N] "
                            "[--iters N] [--zc 0|1]\n");
            return 2;
        }
    }
    if (trials < 1 || trials > 64 || iters < 1 || !total || !chunk)
        return 2;
    dst = malloc(total);
    pong = calloc(1, 64);
    memset(dst, 0, total);
    int pfd[2];
    if (pipe(pfd))
        die("pipe");
    if (netns)
        return run_netns(pfd);
    pthread_t th;
    pthread_create(&th, NULL, target_thread, (void *)(intptr_t)pfd[1]);
    run_writer(pfd[0]);
    pthread_join(th, NULL);
    return 0;
}
