/* hal/net registration cache, against a fake registrar that records every call. Also the pieces
 * of hal/net that need no network: CANN's port range syntax, HCCL_NET, the verbs variables, GID
 * choice and completion status mapping. */
#include <criterion/criterion.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hal/net/net.h"
#include "hal/net/net_internal.h"
#include "hal/net/verbs_internal.h"

typedef struct fake {
    int live;        /* registrations not deregistered */
    int regs, deregs;
    int fail_next;
} fake;

static hal_result freg(void *ctx, void *addr, size_t len, void **h, uint32_t *lkey, uint32_t *rkey)
{
    fake *f = ctx;
    (void)addr, (void)len;
    if (f->fail_next) {
        f->fail_next = 0;
        return HAL_E_NOMEM;
    }
    f->live++;
    f->regs++;
    *h = f;
    *lkey = *rkey = (uint32_t)f->regs;
    return HAL_OK;
}

static void fdereg(void *ctx, void *h)
{
    fake *f = ctx;
    cr_assert_eq(h, f);
    f->live--;
    f->deregs++;
}

static const net_rc_ops fops = {freg, fdereg};
static char mem[1 << 20];

Test(net_regcache, registered_once_per_range)
{
    fake f = {0};
    net_regcache rc;
    net_rc_init(&rc, &fops, &f);
    net_rc_entry *a, *b, *c;
    cr_assert_eq(net_rc_get(&rc, mem + 4096, 8192, &a), HAL_OK);
    cr_assert_eq(net_rc_get(&rc, mem + 4096, 8192, &b), HAL_OK);
    cr_assert_eq(net_rc_get(&rc, mem + 5000, 100, &c), HAL_OK); /* inside */
    cr_assert_eq(a, b);
    cr_assert_eq(a, c);
    cr_assert_eq(f.regs, 1);
    cr_assert_eq(a->refs, 3);
    net_rc_put(&rc, a);
    net_rc_put(&rc, b);
    net_rc_put(&rc, c);
    cr_assert_eq(f.live, 1, "released entries stay registered until invalidated");
    net_rc_fini(&rc);
    cr_assert_eq(f.live, 0);
}

Test(net_regcache, overlap_registers_union_and_retires)
{
    fake f = {0};
    net_regcache rc;
    net_rc_init(&rc, &fops, &f);
    net_rc_entry *a, *b, *u;
    cr_assert_eq(net_rc_get(&rc, mem + 0, 4096, &a), HAL_OK);
    cr_assert_eq(net_rc_get(&rc, mem + 8192, 4096, &b), HAL_OK);
    net_rc_put(&rc, b); /* b unused: freed when retired; a still held */
    cr_assert_eq(net_rc_count(&rc), 2);
    cr_assert_eq(net_rc_get(&rc, mem + 2048, 8192, &u), HAL_OK); /* overlaps both */
    cr_assert_eq(u->start, (uintptr_t)mem);
    cr_assert_eq(u->end, (uintptr_t)mem + 12288);
    cr_assert_eq(net_rc_count(&rc), 1);
    cr_assert_eq(f.live, 2, "a is held: retired but still registered; b gone; u new");
    cr_assert_eq(a->live, 0);
    net_rc_put(&rc, a);
    cr_assert_eq(f.live, 1);
    net_rc_entry *x;
    cr_assert_eq(net_rc_find(&rc, mem + 100, 10000, &x), HAL_OK);
    cr_assert_eq(x, u);
    net_rc_put(&rc, x);
    net_rc_put(&rc, u);
    net_rc_fini(&rc);
    cr_assert_eq(f.live, 0);
}

Test(net_regcache, invalidate_on_free)
{
    fake f = {0};
    net_regcache rc;
    net_rc_init(&rc, &fops, &f);
    net_rc_entry *e[8];
    for (int i = 0; i < 8; i++) { /* eight disjoint ranges, inserted out of order */
        int k = (i * 5) % 8;
        cr_assert_eq(net_rc_get(&rc, mem + k * 65536, 4096, &e[k]), HAL_OK);
    }
    for (int i = 0; i < 7; i++)
        cr_assert_lt(e[i]->start, e[i + 1]->start);
    for (int i = 0; i < 8; i++)
        if (i != 3)
            net_rc_put(&rc, e[i]);
    /* Free the memory of ranges 2..4 (partly 2, all of 3, partly 4). */
    cr_assert_eq(net_rc_invalidate(&rc, mem + 2 * 65536 + 100, 2 * 65536), 3);
    cr_assert_eq(net_rc_count(&rc), 5);
    cr_assert_eq(f.live, 6, "entry 3 is in use: deregistered only when released");
    net_rc_entry *x;
    cr_assert_eq(net_rc_find(&rc, mem + 3 * 65536, 16, &x), HAL_E_FOREIGN, "freed memory is not writable");
    net_rc_put(&rc, e[3]);
    cr_assert_eq(f.live, 5);
    cr_assert_eq(net_rc_invalidate(&rc, mem + 3 * 65536, 4096), 0);
    /* Registering the range again after the free is a new registration. */
    cr_assert_eq(net_rc_get(&rc, mem + 3 * 65536, 4096, &x), HAL_OK);
    cr_assert_eq(f.regs, 9);
    net_rc_put(&rc, x);
    net_rc_fini(&rc);
    cr_assert_eq(f.live, 0);
    cr_assert_eq(f.deregs, 9);
}

Test(net_regcache, registrar_failure_leaves_cache_unchanged)
{
    fake f = {.fail_next = 1};
    net_regcache rc;
    net_rc_init(&rc, &fops, &f);
    net_rc_entry *e;
    cr_assert_eq(net_rc_get(&rc, mem, 64, &e), HAL_E_NOMEM);
    cr_assert_eq(net_rc_count(&rc), 0);
    cr_assert_eq(net_rc_get(&rc, NULL, 64, &e), HAL_E_PARAM);
    cr_assert_eq(net_rc_get(&rc, mem, 64, &e), HAL_OK);
    net_rc_put(&rc, e);
    net_rc_fini(&rc);
}

Test(net_env, port_range_syntax)
{
    uint16_t p[256];
    size_t n;
    cr_assert_eq(net_port_list("auto", p, 256, &n), HAL_OK);
    cr_assert_eq(n, 0);
    cr_assert_eq(net_port_list(NULL, p, 256, &n), HAL_OK);
    cr_assert_eq(n, 0);
    cr_assert_eq(net_port_list("60050-60100", p, 256, &n), HAL_OK);
    cr_assert_eq(n, 51);
    cr_assert_eq(p[0], 60050);
    cr_assert_eq(p[50], 60100);
    cr_assert_eq(net_port_list("60000,60050-60052,60150", p, 256, &n), HAL_OK);
    cr_assert_eq(n, 5);
    cr_assert_eq(p[0], 60000);
    cr_assert_eq(p[3], 60052);
    cr_assert_eq(p[4], 60150);
    const char *bad[] = {"0", "65536", "60100-60050", "60000-60010,60005", "abc", "60000,", "-5", "1-2-3", "60000 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(net_port_list(bad[i], p, 256, &n), HAL_E_PARAM, "%s should be refused", bad[i]);
}

Test(net_env, hccl_net_choice)
{
    net_kind k;
    cr_assert_eq(net_choose_from(NULL, 0, &k), HAL_OK);
    cr_assert_eq(k, NET_KIND_TCP);
    cr_assert_eq(net_choose_from("auto", 1, &k), HAL_OK);
    cr_assert_eq(k, NET_KIND_ROCE);
    cr_assert_eq(net_choose_from("tcp", 1, &k), HAL_OK);
    cr_assert_eq(k, NET_KIND_TCP);
    cr_assert_eq(net_choose_from("roce", 1, &k), HAL_OK);
    cr_assert_eq(k, NET_KIND_ROCE);
    cr_assert_eq(net_choose_from("roce", 0, &k), HAL_E_NOT_SUPPORTED);
    cr_assert_eq(net_choose_from("ib", 0, &k), HAL_E_PARAM);
}

static const char *const *fake_env;
static const char *fenv(const char *name)
{
    for (int i = 0; fake_env[i]; i += 2)
        if (!strcmp(fake_env[i], name))
            return fake_env[i + 1];
    return NULL;
}

Test(net_verbs, cann_rdma_variables)
{
    verbs_env e;
    static const char *const none[] = {NULL};
    fake_env = none;
    cr_assert_eq(verbs_env_read(&e, fenv), HAL_OK);
    cr_assert_eq(e.tc, 132);
    cr_assert_eq(e.sl, 4);
    cr_assert_eq(e.timeout, 20);
    cr_assert_eq(e.retry_cnt, 7);
    cr_assert_eq(e.nqps, 1);
    static const char *const good[] = {"HCCL_RDMA_TC", "100", "HCCL_RDMA_SL", "3", "HCCL_RDMA_TIMEOUT", "6",
                                       "HCCL_RDMA_RETRY_CNT", "5", "HCCL_RDMA_QPS_PER_CONNECTION", "4", NULL};
    fake_env = good;
    cr_assert_eq(verbs_env_read(&e, fenv), HAL_OK);
    cr_assert(e.tc == 100 && e.sl == 3 && e.timeout == 6 && e.retry_cnt == 5 && e.nqps == 4);
    static const char *const bad[][3] = {{"HCCL_RDMA_TC", "101", NULL}, {"HCCL_RDMA_TC", "256", NULL},
                                         {"HCCL_RDMA_SL", "8", NULL},   {"HCCL_RDMA_TIMEOUT", "4", NULL},
                                         {"HCCL_RDMA_TIMEOUT", "25", NULL}, {"HCCL_RDMA_RETRY_CNT", "0", NULL},
                                         {"HCCL_RDMA_QPS_PER_CONNECTION", "33", NULL}, {"HCCL_RDMA_SL", "x", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fake_env = bad[i];
        cr_assert_eq(verbs_env_read(&e, fenv), HAL_E_PARAM, "%s=%s should be refused", bad[i][0], bad[i][1]);
    }
}

static verbs_gid_info gid(const char *hex16, int v2)
{
    verbs_gid_info g = {.roce_v2 = v2};
    for (int i = 0; i < 16; i++) {
        unsigned b;
        sscanf(hex16 + 2 * i, "%2x", &b);
        g.raw[i] = (uint8_t)b;
    }
    return g;
}

Test(net_verbs, roce_v2_gid_choice)
{
    verbs_gid_info t[] = {
        gid("fe800000000000000000000000000001", 0), /* RoCE v1 link-local */
        gid("fe800000000000000000000000000001", 1), /* RoCE v2 link-local */
        gid("00000000000000000000ffff0a000001", 0), /* v1 IPv4-mapped */
        gid("00000000000000000000ffff0a000001", 1), /* v2 IPv4-mapped */
        gid("20010db8000000000000000000000001", 1), /* v2 global IPv6 */
        gid("00000000000000000000000000000000", 1), /* empty slot */
    };
    cr_assert_eq(verbs_pick_gid(t, 6, AF_INET), 3);
    cr_assert_eq(verbs_pick_gid(t, 6, AF_INET6), 4);
    cr_assert_eq(verbs_pick_gid(t, 2, AF_INET), 1, "link-local v2 beats any v1");
    cr_assert_eq(verbs_pick_gid(t, 1, AF_INET), -1, "no RoCE v2 entry");
}

Test(net_verbs, completion_errors_map_to_hal_codes)
{
    const char *why;
    cr_assert_eq(verbs_wc_result(IBV_WC_SUCCESS, &why), HAL_OK);
    cr_assert_eq(verbs_wc_result(IBV_WC_RETRY_EXC_ERR, &why), HAL_E_PEER);
    cr_assert_str_not_empty(why);
    cr_assert_eq(verbs_wc_result(IBV_WC_RNR_RETRY_EXC_ERR, &why), HAL_E_PEER);
    cr_assert_eq(verbs_wc_result(IBV_WC_REM_ACCESS_ERR, &why), HAL_E_FOREIGN);
    cr_assert_eq(verbs_wc_result(IBV_WC_LOC_PROT_ERR, &why), HAL_E_FOREIGN);
    cr_assert_eq(verbs_wc_result(IBV_WC_WR_FLUSH_ERR, &why), HAL_E_ABORTED);
    cr_assert_eq(verbs_wc_result(IBV_WC_LOC_LEN_ERR, &why), HAL_E_PARAM);
    cr_assert_eq(verbs_wc_result(IBV_WC_FATAL_ERR, &why), HAL_E_INTERNAL);
}
