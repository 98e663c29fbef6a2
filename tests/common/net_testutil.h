/* Helpers for the hal/net suites: a transport pair joined by one link over an address, and
 * patterned buffers. Connect returns once the kernel queued the connections, so one thread can
 * connect and then accept. */
#ifndef NET_TESTUTIL_H
#define NET_TESTUTIL_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"
#include "hal/net/net.h"

#define NT_TIMEOUT_MS 30000

typedef struct nt_pair {
    net_transport *a, *b; /* a connects (writer), b accepts (target) */
    net_link *ab, *ba;
} nt_pair;

static inline socklen_t nt_addr(const char *ip, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        inet_pton(AF_INET6, ip, &a->sin6_addr);
        return sizeof *a;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a->sin_addr);
    return sizeof *a;
}

static inline void nt_pair_open(nt_pair *p, net_kind kind, uint32_t nsocks, const char *ip)
{
    net_config ca = {.kind = kind, .name = "writer", .nsocks = nsocks, .zerocopy = -1};
    net_config cb = {.kind = kind, .name = "target", .nsocks = nsocks, .zerocopy = -1};
    cr_assert_eq(net_create(&ca, &p->a), HAL_OK);
    cr_assert_eq(net_create(&cb, &p->b), HAL_OK);
    struct sockaddr_storage ss, bound;
    socklen_t len = nt_addr(ip, &ss);
    cr_assert_eq(net_listen(p->b, (struct sockaddr *)&ss, len, &bound), HAL_OK);
    cr_assert_eq(net_connect(p->a, (struct sockaddr *)&bound, len, NT_TIMEOUT_MS, &p->ab), HAL_OK);
    cr_assert_eq(net_accept(p->b, NT_TIMEOUT_MS, &p->ba), HAL_OK);
}

static inline void nt_pair_close(nt_pair *p)
{
    net_link_close(p->ab);
    net_link_close(p->ba);
    net_destroy(p->a);
    net_destroy(p->b);
}

static inline void nt_fill(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

/* Writes of 0, 1, 4 KiB, odd sizes and 64 MiB from a's memory to registered memory of b, each with
 * a notify: every byte lands where it should, nothing outside, and the notify counts each write once. */
static inline void nt_check_sizes(net_kind kind, uint32_t nsocks, const char *ip)
{
    nt_pair p;
    nt_pair_open(&p, kind, nsocks, ip);
    static const size_t sizes[] = {0, 1, 4096, 7, 4097, 65537, 1000003, 64u << 20};
    enum { N = sizeof sizes / sizeof sizes[0] };
    size_t total = 0, off[N];
    for (int i = 0; i < N; i++) {
        off[i] = total;
        total += sizes[i] + 4096 + 13; /* gaps: nothing may land there */
    }
    unsigned char *src = malloc(total), *dst = malloc(total), *want = malloc(total);
    cr_assert(src && dst && want);
    nt_fill(src, total, 7);
    memset(dst, 0xee, total);
    memset(want, 0xee, total);
    net_mr *smr, *dmr;
    cr_assert_eq(net_mr_reg(p.a, src, total, &smr), HAL_OK);
    cr_assert_eq(net_mr_reg(p.b, dst, total, &dmr), HAL_OK);
    uint64_t counter = 0;
    uint32_t nid;
    cr_assert_eq(net_notify_add_counter(p.b, &counter, &nid), HAL_OK);
    for (int i = 0; i < N; i++) {
        /* the source comes from a different offset than the target: misplacement shows */
        size_t so = (off[i] + 4096) % (total - sizes[i]);
        memcpy(want + off[i], src + so, sizes[i]);
        cr_assert_eq(net_write(p.ab, src + so, sizes[i], (uintptr_t)(dst + off[i]), net_mr_rkey(dmr), nid, i + 1),
                     HAL_OK);
    }
    int seen = 0;
    for (int i = 0; i < N; i++) {
        net_completion c;
        cr_assert_eq(net_wait(p.a, &c, NT_TIMEOUT_MS), HAL_OK);
        cr_assert_eq(c.status, HAL_OK, "write tag %llu failed: %s", (unsigned long long)c.tag,
                     hal_result_name(c.status));
        cr_assert(c.tag >= 1 && c.tag <= N && !(seen & (1 << (c.tag - 1))), "tag %llu", (unsigned long long)c.tag);
        seen |= 1 << (c.tag - 1);
    }
    cr_assert_eq(net_link_drain(p.ab, NT_TIMEOUT_MS), HAL_OK);
    cr_assert_eq(net_counter_wait(&counter, N, NT_TIMEOUT_MS), HAL_OK, "notify count %llu of %d",
                 (unsigned long long)counter, N);
    for (size_t i = 0; i < total; i++)
        if (dst[i] != want[i])
            cr_assert_fail("byte %zu: got 0x%02x want 0x%02x", i, dst[i], want[i]);
    cr_assert_eq(__atomic_load_n(&counter, __ATOMIC_ACQUIRE), N);
    net_mr_release(smr);
    net_mr_release(dmr);
    nt_pair_close(&p);
    free(src);
    free(dst);
    free(want);
}

#endif
