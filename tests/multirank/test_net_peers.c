/* hal/net TCP links between processes: a peer process killed with writes pending fails them with
 * HAL_E_PEER (bounded wait, no hang), and a link between two network namespaces joined by a veth
 * pair (separate network stacks, as separate hosts; needs root, skips otherwise, always removes
 * the namespaces it made). */
#define _GNU_SOURCE /* setns */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/net_testutil.h"
#include "multirank/mr_run.h"

TestSuite(net_peers, .timeout = 180);

/* Waits for pid until deadline_ms; kills it (and fails) if it does not exit. Returns its status. */
static int wait_child(pid_t pid, int timeout_ms)
{
    for (int waited = 0;; waited += 50) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (waited >= timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("child %d still running after %d ms: killed", (int)pid, timeout_ms);
        }
        usleep(50000);
    }
}

Test(net_peers, killed_peer_fails_pending_writes)
{
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) { /* the target: listens, never accepts, so the writer's data stays queued */
        net_config c = {.kind = NET_KIND_TCP, .name = "target", .nsocks = 2};
        net_transport *t;
        struct sockaddr_storage ss, bound;
        socklen_t len = nt_addr("127.0.0.1", &ss);
        if (net_create(&c, &t) != HAL_OK || net_listen(t, (struct sockaddr *)&ss, len, &bound) != HAL_OK)
            _exit(1);
        if (write(pfd[1], &bound, sizeof bound) != sizeof bound)
            _exit(1);
        for (;;)
            pause();
    }
    close(pfd[1]);
    struct sockaddr_storage bound;
    cr_assert_eq(read(pfd[0], &bound, sizeof bound), (ssize_t)sizeof bound);
    net_config c = {.kind = NET_KIND_TCP, .name = "writer", .nsocks = 2};
    net_transport *t;
    net_link *l;
    cr_assert_eq(net_create(&c, &t), HAL_OK);
    cr_assert_eq(net_connect(t, (struct sockaddr *)&bound, sizeof(struct sockaddr_in), NT_TIMEOUT_MS, &l), HAL_OK);
    size_t len = 32u << 20;
    char *src = calloc(1, len);
    for (int i = 0; i < 8; i++) /* 256 MiB: far more than the socket buffers hold */
        cr_assert_eq(net_write(l, src, len, 0x10000, 0, NET_NOTIFY_NONE, i + 1), HAL_OK);
    cr_assert_eq(net_link_error(l), HAL_OK);
    kill(pid, SIGKILL);
    wait_child(pid, 10000);
    /* The bound is the test's timeout, not a speed claim: a dropped peer must not hang writes. */
    hal_result rc = net_link_drain(l, 20000);
    cr_assert_eq(rc, HAL_E_PEER, "drain gave %s, want HAL_E_PEER", hal_result_name(rc));
    int failed = 0;
    net_completion cq;
    while (net_poll(t, &cq, 1) == 1)
        failed += cq.status == HAL_E_PEER;
    cr_assert_gt(failed, 0);
    net_link_close(l);
    net_destroy(t);
    free(src);
}

/* ---- two network namespaces joined by a veth pair ---- */

static char ns_a[32], ns_b[32];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Namespaces of earlier runs killed before their fini (a Criterion timeout kills the test's
 * process): "ohnt-<pid>-a|b" whose pid is gone. */
static void remove_stale(void)
{
    FILE *f = popen("ip netns list 2>/dev/null", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        int pid;
        char side;
        if (sscanf(line, "ohnt-%d-%c", &pid, &side) == 2 && kill(pid, 0) != 0)
            sh("ip netns del ohnt-%d-%c 2>/dev/null", pid, side);
    }
    if (f)
        pclose(f);
}

/* Runs after the test even when an assertion failed: the namespaces never outlive the test
 * (deleting a namespace deletes the veth end inside it, and with it the pair). */
static void ns_cleanup(void)
{
    if (ns_a[0])
        sh("ip netns del %s 2>/dev/null", ns_a);
    if (ns_b[0])
        sh("ip netns del %s 2>/dev/null", ns_b);
}

static void enter_ns(const char *name)
{
    char path[96];
    snprintf(path, sizeof path, "/var/run/netns/%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
        _exit(2);
    close(fd);
}

enum { NS_W = 64, NS_SZ = 1u << 20 };

static void ns_target(const char *ns, unsigned char *dst, int pfd)
{
    enter_ns(ns);
    net_config c = {.kind = NET_KIND_TCP, .name = "ns target", .nsocks = 2};
    net_transport *t;
    net_link *l;
    net_mr *mr;
    uint64_t counter = 0;
    uint32_t nid;
    struct sockaddr_storage ss, bound;
    socklen_t len = nt_addr("10.231.0.1", &ss);
    if (net_create(&c, &t) || net_listen(t, (struct sockaddr *)&ss, len, &bound) ||
        net_mr_reg(t, dst, (size_t)NS_W * NS_SZ, &mr) || net_notify_add_counter(t, &counter, &nid))
        _exit(3);
    if (write(pfd, &bound, sizeof bound) != sizeof bound || net_accept(t, NT_TIMEOUT_MS, &l))
        _exit(4);
    if (net_counter_wait(&counter, NS_W, NT_TIMEOUT_MS)) {
        fprintf(stderr, "target: %llu of %d notifies; link %s\n", (unsigned long long)counter, NS_W,
                hal_result_name(net_link_error(l)));
        _exit(5);
    }
    unsigned char *want = malloc((size_t)NS_W * NS_SZ);
    nt_fill(want, (size_t)NS_W * NS_SZ, 5);
    _exit(memcmp(want, dst, (size_t)NS_W * NS_SZ) ? 6 : 0);
}

static void ns_writer(const char *ns, unsigned char *dst, const struct sockaddr_storage *to)
{
    enter_ns(ns);
    net_config c = {.kind = NET_KIND_TCP, .name = "ns writer", .nsocks = 2};
    net_transport *t;
    net_link *l;
    unsigned char *src = malloc((size_t)NS_W * NS_SZ);
    nt_fill(src, (size_t)NS_W * NS_SZ, 5);
    if (net_create(&c, &t) || net_connect(t, (const struct sockaddr *)to, sizeof(struct sockaddr_in), NT_TIMEOUT_MS, &l))
        _exit(3);
    /* notify id 0: the target's first (and only) notify */
    for (int i = 0; i < NS_W; i++)
        if (net_write(l, src + (size_t)i * NS_SZ, NS_SZ, (uintptr_t)(dst + (size_t)i * NS_SZ), 0, 0, 0))
            _exit(4);
    _exit(net_link_drain(l, NT_TIMEOUT_MS) ? 5 : 0);
}

/* Makes ns_a (10.231.0.1 on veth va) and ns_b (10.231.0.2 on veth vb) joined by a veth pair, or
 * skips the test saying why. */
static void make_ns_pair(char va[16], char vb[16])
{
    if (geteuid() != 0)
        cr_skip_test("needs root to create network namespaces (ip netns add)");
    remove_stale();
    snprintf(ns_a, sizeof ns_a, "ohnt-%d-a", (int)getpid());
    snprintf(ns_b, sizeof ns_b, "ohnt-%d-b", (int)getpid());
    if (sh("ip netns add %s 2>/dev/null", ns_a) != 0) {
        ns_a[0] = '\0';
        cr_skip_test("ip netns add failed: no privilege for network namespaces here");
    }
    cr_assert_eq(sh("ip netns add %s", ns_b), 0);
    snprintf(va, 16, "ohv%da", (int)getpid() % 100000);
    snprintf(vb, 16, "ohv%db", (int)getpid() % 100000);
    cr_assert_eq(sh("ip link add %s netns %s type veth peer name %s netns %s", va, ns_a, vb, ns_b), 0);
    cr_assert_eq(sh("ip -n %s addr add 10.231.0.1/24 dev %s && ip -n %s link set %s up && ip -n %s link set lo up",
                    ns_a, va, ns_a, va, ns_a), 0);
    cr_assert_eq(sh("ip -n %s addr add 10.231.0.2/24 dev %s && ip -n %s link set %s up && ip -n %s link set lo up",
                    ns_b, vb, ns_b, vb, ns_b), 0);
}

Test(net_peers, link_between_network_namespaces, .fini = ns_cleanup)
{
    char va[16], vb[16];
    make_ns_pair(va, vb);
    unsigned char *dst = calloc(NS_W, NS_SZ); /* same address in both children (fork) */
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t ta = fork();
    cr_assert_geq(ta, 0);
    if (ta == 0)
        ns_target(ns_a, dst, pfd[1]);
    close(pfd[1]); /* a target that dies early gives EOF instead of a hang */
    struct sockaddr_storage bound;
    cr_assert_eq(read(pfd[0], &bound, sizeof bound), (ssize_t)sizeof bound, "the target did not start");
    pid_t wb = fork();
    cr_assert_geq(wb, 0);
    if (wb == 0)
        ns_writer(ns_b, dst, &bound);
    int sw = wait_child(wb, 60000), st = wait_child(ta, 60000);
    cr_assert(WIFEXITED(sw) && WEXITSTATUS(sw) == 0, "writer in %s: status 0x%x", ns_b, sw);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target in %s: status 0x%x (6: data wrong)", ns_a, st);
    free(dst);
}

/* ---- 2+2 ranks in two network namespaces (each an emulated server) ---- */

static unsigned long long veth_rx_bytes(const char *ns, const char *dev)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ip netns exec %s cat /sys/class/net/%s/statistics/rx_bytes", ns, dev);
    FILE *f = popen(cmd, "r");
    unsigned long long v = 0;
    int got = f ? fscanf(f, "%llu", &v) : 0;
    if (f)
        pclose(f);
    cr_assert_eq(got, 1, "cannot read %s's rx_bytes in %s", dev, ns);
    return v;
}

/* hcclrun runs in ns_a with its store on ns_a's veth address; ranks of server 1 re-exec themselves
 * into ns_b (ip netns exec keeps the pid, so hcclrun still stops them). HCCL_SOCKET_IFNAME names
 * the veths (prefix "ohv<pid>": each namespace has one of them), so the bootstrap root and every
 * link listen there; both namespaces share /dev/shm, but server 1's ranks never map server 0's
 * memory, so every byte between them crosses the veth pair. */
Test(net_peers, collectives_across_network_namespaces, .fini = ns_cleanup, .timeout = 240)
{
    char va[16], vb[16];
    make_ns_pair(va, vb);
    unsigned long long rx0 = veth_rx_bytes(ns_a, va);
    char env[128], prog[512];
    snprintf(env, sizeof env, "HCCL_SOCKET_IFNAME=ohv%d ip netns exec %s", (int)getpid() % 100000, ns_a);
    snprintf(prog, sizeof prog,
             "--store-addr 10.231.0.1 --servers 2 /bin/sh -c 'if [ \"$HCCL_EMU_SERVER_INDEX\" = 1 ]; then exec ip "
             "netns exec %s \"$0\" \"$@\"; fi; exec \"$0\" \"$@\"' %s", ns_b, MR_COLL_CHECK);
    mr_expect_ok(mr_run_t(env, 4, 200, prog,
                          "--colls allreduce,broadcast,allgather,reducescatter,reduce,scatter,alltoall,alltoallv,"
                          "alltoallvc,allgatherv,reducescatterv,barrier,sendrecv,batchsendrecv,group "
                          "--dtypes fp32,bf16,int8,int64 --counts 0,1,7,1048579 --quiet"),
                 "coll_check on 2+2 ranks in two network namespaces", " 0 failed");
    /* The 4 MiB AllReduces alone bring server 0 at least 4 MiB from server 1 over the veth. */
    unsigned long long rx = veth_rx_bytes(ns_a, va) - rx0;
    cr_expect_geq(rx, 4ull << 20, "only %llu bytes arrived on %s: the ranks did not talk over the veth pair", rx, va);
}
