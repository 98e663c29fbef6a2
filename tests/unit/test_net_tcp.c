/* hal/net TCP links over loopback, both ends in this process (no other process needed): sizes,
 * notifies, many outstanding writes, several sockets per peer, a peer that closes, refused
 * writes, IPv6. The verbs links run the same checks where an RDMA device exists. */
#include <errno.h>
#include <netinet/in.h>
#include <unistd.h>

#include "common/net_testutil.h"
#include "hal/net/tcp_internal.h"
#include "hal/net/verbs_internal.h"

TestSuite(net_tcp, .timeout = 120);

Test(net_tcp, sizes_land_at_their_addresses)
{
    nt_check_sizes(NET_KIND_TCP, 1, "127.0.0.1");
}

Test(net_tcp, sizes_with_four_sockets)
{
    nt_check_sizes(NET_KIND_TCP, 4, "127.0.0.1");
}

Test(net_tcp, ipv6_loopback)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_storage ss;
    socklen_t len = nt_addr("::1", &ss);
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&ss, len) == 0;
    int err = errno;
    if (fd >= 0)
        close(fd);
    if (!ok)
        cr_skip_test("::1 is not available here (bind: %s)", strerror(err));
    nt_check_sizes(NET_KIND_TCP, 2, "::1");
}

/* 4,000 writes outstanding at once, with and without tags, to distinct slots: all complete, all
 * land, and the notify counts every one. */
static void many_outstanding(net_kind kind)
{
    nt_pair p;
    nt_pair_open(&p, kind, 3, "127.0.0.1");
    enum { W = 4000, SZ = 1000 };
    unsigned char *src = malloc((size_t)W * SZ), *dst = calloc(W, SZ);
    nt_fill(src, (size_t)W * SZ, 3);
    net_mr *mr;
    cr_assert_eq(net_mr_reg(p.b, dst, (size_t)W * SZ, &mr), HAL_OK);
    uint64_t counter = 0;
    uint32_t nid;
    cr_assert_eq(net_notify_add_counter(p.b, &counter, &nid), HAL_OK);
    for (int i = 0; i < W; i++)
        cr_assert_eq(net_write(p.ab, src + (size_t)i * SZ, SZ, (uintptr_t)(dst + (size_t)i * SZ), net_mr_rkey(mr),
                               nid, i % 2 ? (uint64_t)i : 0), HAL_OK);
    cr_assert_eq(net_link_drain(p.ab, NT_TIMEOUT_MS), HAL_OK);
    net_completion c[64];
    int tagged = 0, n;
    while ((n = net_poll(p.a, c, 64)) > 0)
        for (int i = 0; i < n; i++) {
            cr_assert_eq(c[i].status, HAL_OK);
            cr_assert_eq(c[i].tag % 2, 1);
            tagged++;
        }
    cr_assert_eq(tagged, W / 2, "only tagged writes queue completions");
    cr_assert_eq(net_counter_wait(&counter, W, NT_TIMEOUT_MS), HAL_OK);
    cr_assert_eq(memcmp(src, dst, (size_t)W * SZ), 0);
    net_mr_release(mr);
    nt_pair_close(&p);
    free(src);
    free(dst);
}

Test(net_tcp, many_outstanding_writes)
{
    many_outstanding(NET_KIND_TCP);
}

typedef struct watch {
    uint64_t count;
    const unsigned char *dst, *src;
    size_t len;
    int complete_at_notify;
} watch;

static void watch_fn(void *arg)
{
    watch *w = arg;
    w->complete_at_notify = memcmp(w->dst, w->src, w->len) == 0;
    net_counter_bump(&w->count);
}

/* A 64 MiB write split over 4 sockets: the notify fires once, when every fragment landed. */
Test(net_tcp, split_write_notifies_once_after_all_bytes)
{
    nt_pair p;
    enum { NS = 4 };
    nt_pair_open(&p, NET_KIND_TCP, NS, "127.0.0.1");
    size_t len = 64u << 20;
    unsigned char *src = malloc(len), *dst = calloc(1, len + 64);
    nt_fill(src, len, 11);
    net_mr *mr;
    cr_assert_eq(net_mr_reg(p.b, dst, len + 64, &mr), HAL_OK);
    watch w = {.dst = dst, .src = src, .len = len};
    uint64_t after = 0;
    uint32_t wid, aid;
    cr_assert_eq(net_notify_add(p.b, watch_fn, &w, &wid), HAL_OK);
    cr_assert_eq(net_notify_add_counter(p.b, &after, &aid), HAL_OK);
    cr_assert_eq(net_write(p.ab, src, len, (uintptr_t)dst, 0, wid, 0), HAL_OK);
    /* One small write per socket behind it: once they landed, every fragment did (FIFO sockets). */
    for (int i = 0; i < NS; i++)
        cr_assert_eq(net_write(p.ab, src, 8, (uintptr_t)(dst + len + 8 * i), 0, aid, 0), HAL_OK);
    cr_assert_eq(net_counter_wait(&after, NS, NT_TIMEOUT_MS), HAL_OK);
    cr_assert_eq(net_counter_wait(&w.count, 1, NT_TIMEOUT_MS), HAL_OK);
    cr_assert_eq(w.complete_at_notify, 1, "the notify ran before all bytes landed");
    cr_assert_eq(__atomic_load_n(&w.count, __ATOMIC_ACQUIRE), 1, "one write, one notify");
    cr_assert_eq(net_link_drain(p.ab, NT_TIMEOUT_MS), HAL_OK);
    net_mr_release(mr);
    nt_pair_close(&p);
    free(src);
    free(dst);
}

/* Data then a zero-byte signal, 64 rounds over 4 sockets (a plan's copy then signal): the k-th
 * signal's notify finds round k's 1 MiB landed whole, though the signal may travel on another
 * socket than the data and overtake it: notifies keep the link's posting order. */
typedef struct order_watch {
    const unsigned char *src, *dst;
    size_t len;
    uint64_t count;
    int bad;          /* the first round whose data was incomplete at its notify, + 1 */
} order_watch;

static void order_fn(void *arg)
{
    order_watch *w = arg;
    uint64_t k = __atomic_load_n(&w->count, __ATOMIC_RELAXED);
    if (!w->bad && memcmp(w->dst + k * w->len, w->src + k * w->len, w->len))
        w->bad = (int)k + 1;
    net_counter_bump(&w->count);
}

Test(net_tcp, signal_after_data_on_other_sockets_keeps_order)
{
    nt_pair p;
    enum { NS = 4, ROUNDS = 64 };
    nt_pair_open(&p, NET_KIND_TCP, NS, "127.0.0.1");
    size_t len = 1u << 20, total = len * ROUNDS;
    unsigned char *src = malloc(total), *dst = calloc(1, total);
    cr_assert(src && dst);
    nt_fill(src, total, 5);
    net_mr *mr;
    cr_assert_eq(net_mr_reg(p.b, dst, total, &mr), HAL_OK);
    order_watch w = {.src = src, .dst = dst, .len = len};
    uint32_t id;
    cr_assert_eq(net_notify_add(p.b, order_fn, &w, &id), HAL_OK);
    for (size_t k = 0; k < ROUNDS; k++) {
        cr_assert_eq(net_write(p.ab, src + k * len, len, (uintptr_t)(dst + k * len), 0, NET_NOTIFY_NONE, 0), HAL_OK);
        cr_assert_eq(net_write(p.ab, NULL, 0, 0, 0, id, 0), HAL_OK);
    }
    cr_assert_eq(net_counter_wait(&w.count, ROUNDS, NT_TIMEOUT_MS), HAL_OK);
    cr_expect_eq(w.bad, 0, "round %d's signal fired before its data landed", w.bad - 1);
    cr_assert_eq(net_link_drain(p.ab, NT_TIMEOUT_MS), HAL_OK);
    net_mr_release(mr);
    nt_pair_close(&p);
    free(src);
    free(dst);
}

/* 40 links of 2 sockets whose first sockets all arrive before any second one (every remote peer of
 * a communicator connecting at once): the acceptor holds 40 incomplete links and completes each. */
Test(net_tcp, many_links_connecting_interleaved)
{
    enum { NL = 40, NS = 2 };
    net_config cb = {.kind = NET_KIND_TCP, .name = "acceptor", .nsocks = NS, .zerocopy = -1};
    net_transport *t;
    cr_assert_eq(net_create(&cb, &t), HAL_OK);
    struct sockaddr_storage ss, bound;
    socklen_t len = nt_addr("127.0.0.1", &ss);
    cr_assert_eq(net_listen(t, (struct sockaddr *)&ss, len, &bound), HAL_OK);
    int fds[NL][NS];
    for (int k = 0; k < NS; k++) /* by hand, socket k of every link before socket k+1 of any */
        for (int i = 0; i < NL; i++) {
            fds[i][k] = socket(AF_INET, SOCK_STREAM, 0);
            cr_assert(fds[i][k] >= 0 && connect(fds[i][k], (struct sockaddr *)&bound, len) == 0);
            tcp_hello h = {TCP_MAGIC, TCP_VERSION, 0x1000u + (uint64_t)i, NS, (uint32_t)k};
            cr_assert_eq(write(fds[i][k], &h, sizeof h), (ssize_t)sizeof h);
        }
    net_link *in[NL];
    for (int i = 0; i < NL; i++)
        cr_assert_eq(net_accept(t, NT_TIMEOUT_MS, &in[i]), HAL_OK, "link %d of %d never completed", i, NL);
    for (int i = 0; i < NL; i++) {
        net_link_close(in[i]);
        for (int k = 0; k < NS; k++)
            close(fds[i][k]);
    }
    net_destroy(t);
}

/* The target closes its end while 256 MiB of writes are queued: they fail, nothing hangs. */
Test(net_tcp, peer_close_fails_pending_writes)
{
    nt_pair p;
    nt_pair_open(&p, NET_KIND_TCP, 2, "127.0.0.1");
    size_t len = 16u << 20;
    unsigned char *src = calloc(1, len), *dst = calloc(1, len);
    net_mr *mr;
    cr_assert_eq(net_mr_reg(p.b, dst, len, &mr), HAL_OK);
    net_link_close(p.ba);
    p.ba = NULL;
    for (int i = 0; i < 16; i++)
        cr_assert_eq(net_write(p.ab, src, len, (uintptr_t)dst, 0, NET_NOTIFY_NONE, i + 1), HAL_OK);
    hal_result rc = net_link_drain(p.ab, NT_TIMEOUT_MS);
    cr_assert(rc == HAL_E_PEER, "drain gave %s, want HAL_E_PEER", hal_result_name(rc));
    int failed = 0;
    for (int i = 0; i < 16; i++) {
        net_completion c;
        cr_assert_eq(net_wait(p.a, &c, NT_TIMEOUT_MS), HAL_OK);
        failed += c.status != HAL_OK;
    }
    cr_assert_gt(failed, 0);
    /* Writes after the failure fail at once too. */
    cr_assert_eq(net_write(p.ab, src, 1, (uintptr_t)dst, 0, NET_NOTIFY_NONE, 99), HAL_OK);
    net_completion c;
    cr_assert_eq(net_wait(p.a, &c, NT_TIMEOUT_MS), HAL_OK);
    cr_assert_eq(c.tag, 99);
    cr_assert_eq(c.status, HAL_E_PEER);
    net_mr_release(mr);
    net_link_close(p.ab);
    net_destroy(p.a);
    net_destroy(p.b);
    free(src);
    free(dst);
}

/* The writer closes its link right after its writes completed (handed to the kernel): the data
 * still in flight on the other sockets lands, and the target's link ends without an error line. */
Test(net_tcp, writer_close_after_last_write_loses_nothing)
{
    nt_pair p;
    nt_pair_open(&p, NET_KIND_TCP, 4, "127.0.0.1");
    enum { W = 64, SZ = 1u << 20 };
    unsigned char *src = malloc((size_t)W * SZ), *dst = calloc(W, SZ);
    nt_fill(src, (size_t)W * SZ, 9);
    net_mr *mr;
    cr_assert_eq(net_mr_reg(p.b, dst, (size_t)W * SZ, &mr), HAL_OK);
    uint64_t counter = 0;
    uint32_t nid;
    cr_assert_eq(net_notify_add_counter(p.b, &counter, &nid), HAL_OK);
    for (int i = 0; i < W; i++)
        cr_assert_eq(net_write(p.ab, src + (size_t)i * SZ, SZ, (uintptr_t)(dst + (size_t)i * SZ), 0, nid, 0), HAL_OK);
    cr_assert_eq(net_link_drain(p.ab, NT_TIMEOUT_MS), HAL_OK);
    net_link_close(p.ab);
    p.ab = NULL;
    cr_assert_eq(net_counter_wait(&counter, W, NT_TIMEOUT_MS), HAL_OK, "%llu of %d writes landed",
                 (unsigned long long)counter, W);
    cr_assert_eq(memcmp(src, dst, (size_t)W * SZ), 0);
    net_mr_release(mr);
    nt_pair_close(&p);
    free(src);
    free(dst);
}

/* A write outside the target's registrations (or into memory it freed) fails the link instead of
 * landing; so does an unknown notify. */
Test(net_tcp, writes_outside_registered_memory_are_refused)
{
    nt_pair p;
    nt_pair_open(&p, NET_KIND_TCP, 1, "127.0.0.1");
    static unsigned char dst[8192], src[64];
    net_mr *mr;
    cr_assert_eq(net_mr_reg(p.b, dst, 4096, &mr), HAL_OK);
    uint64_t counter = 0;
    uint32_t nid;
    cr_assert_eq(net_notify_add_counter(p.b, &counter, &nid), HAL_OK);
    cr_assert_eq(net_write(p.ab, src, 64, (uintptr_t)dst, 0, nid, 0), HAL_OK);
    cr_assert_eq(net_counter_wait(&counter, 1, NT_TIMEOUT_MS), HAL_OK);
    net_mem_invalidate(p.b, dst, 4096); /* the target frees it */
    memset(src, 0x5a, sizeof src);
    cr_assert_eq(net_write(p.ab, src, 64, (uintptr_t)dst, 0, nid, 0), HAL_OK);
    /* The target drops the link: the writer sees its end closed. */
    for (int i = 0; i < 600 && net_link_error(p.ba) == HAL_OK; i++)
        usleep(50000);
    cr_assert_eq(net_link_error(p.ba), HAL_E_PEER);
    cr_assert_eq(dst[0], 0, "a write into freed memory landed");
    net_mr_release(mr);
    nt_pair_close(&p);
}

/* The verbs links: same checks where a device exists; here they say why they cannot run. */
static void need_device(void)
{
    char why[160] = "";
    if (verbs_device_count(why, sizeof why) == 0)
        cr_skip_test("no RDMA device: %s (see hal/net/README.md for Soft-RoCE)", why);
}

Test(net_verbs, sizes_over_roce)
{
    need_device();
    nt_check_sizes(NET_KIND_ROCE, 1, "127.0.0.1");
}

Test(net_verbs, many_outstanding_over_roce)
{
    need_device();
    setenv("HCCL_RDMA_QPS_PER_CONNECTION", "3", 1);
    many_outstanding(NET_KIND_ROCE);
}
