/* Device-independent parts of the verbs transport: CANN's RDMA variables, the RoCE v2 GID
 * choice, completion status mapping and device discovery. Unit-tested without a device. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/oh_log.h"
#include "hal/net/verbs_internal.h"

static const char *sys_getenv(const char *name)
{
    return getenv(name);
}

static hal_result read_one(const char *(*get)(const char *), const char *name, uint32_t lo, uint32_t hi,
                           uint32_t def, uint32_t mult, uint32_t *out)
{
    const char *v = get(name);
    *out = def;
    if (!v || !*v)
        return HAL_OK;
    char *e;
    errno = 0;
    long x = strtol(v, &e, 10);
    if (*e || errno || x < (long)lo || x > (long)hi || (mult > 1 && x % (long)mult)) {
        OH_ERR("net", "%s=%s is invalid: it must be an integer in [%u, %u]%s (default %u)", name, v, lo, hi,
               mult > 1 ? ", a multiple of 4" : "", def);
        return HAL_E_PARAM;
    }
    *out = (uint32_t)x;
    return HAL_OK;
}

hal_result verbs_env_read(verbs_env *e, const char *(*getenv_fn)(const char *))
{
    const char *(*get)(const char *) = getenv_fn ? getenv_fn : sys_getenv;
    hal_result rc = HAL_OK, r;
    if ((r = read_one(get, "HCCL_RDMA_TC", 0, 255, 132, 4, &e->tc)) != HAL_OK)
        rc = r;
    if ((r = read_one(get, "HCCL_RDMA_SL", 0, 7, 4, 1, &e->sl)) != HAL_OK)
        rc = r;
    if ((r = read_one(get, "HCCL_RDMA_TIMEOUT", 5, 24, 20, 1, &e->timeout)) != HAL_OK)
        rc = r;
    if ((r = read_one(get, "HCCL_RDMA_RETRY_CNT", 1, 7, 7, 1, &e->retry_cnt)) != HAL_OK)
        rc = r;
    if ((r = read_one(get, "HCCL_RDMA_QPS_PER_CONNECTION", 1, 32, 1, 1, &e->nqps)) != HAL_OK)
        rc = r;
    return rc;
}

static int is_v4_mapped(const uint8_t *g)
{
    static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(g, pfx, 12);
}

static int is_zero(const uint8_t *g)
{
    for (int i = 0; i < 16; i++)
        if (g[i])
            return 0;
    return 1;
}

/* Higher is better; -1 = unusable. */
static int gid_score(const verbs_gid_info *g, int family)
{
    if (!g->roce_v2 || is_zero(g->raw))
        return -1;
    int v4 = is_v4_mapped(g->raw);
    int ll = g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
    if (family == AF_INET6)
        return v4 ? 1 : ll ? 0 : 2;
    return v4 ? 2 : ll ? 0 : 1;
}

int verbs_pick_gid(const verbs_gid_info *g, int n, int family)
{
    int best = -1, best_score = -1;
    for (int i = 0; i < n; i++) {
        int s = gid_score(&g[i], family);
        if (s > best_score) {
            best = i;
            best_score = s;
        }
    }
    return best;
}

hal_result verbs_wc_result(int status, const char **reason)
{
    const char *why = ibv_wc_status_str((enum ibv_wc_status)status);
    hal_result rc;
    switch (status) {
    case IBV_WC_SUCCESS:
        rc = HAL_OK;
        break;
    case IBV_WC_RETRY_EXC_ERR:      /* the peer stopped acknowledging: gone or unreachable */
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_REM_OP_ERR:
        rc = HAL_E_PEER;
        break;
    case IBV_WC_REM_ACCESS_ERR:     /* target range not registered there, or a wrong rkey */
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
        rc = HAL_E_FOREIGN;
        break;
    case IBV_WC_LOC_LEN_ERR:
        rc = HAL_E_PARAM;
        break;
    case IBV_WC_WR_FLUSH_ERR:       /* the QP went to error earlier: a consequence, not a cause */
        rc = HAL_E_ABORTED;
        break;
    default:
        rc = HAL_E_INTERNAL;
        break;
    }
    if (reason)
        *reason = why;
    return rc;
}

static int has_active_port(struct ibv_device *d)
{
    struct ibv_context *ctx = ibv_open_device(d);
    struct ibv_device_attr da;
    int active = 0;
    if (!ctx)
        return 0;
    if (ibv_query_device(ctx, &da) == 0)
        for (uint8_t p = 1; p <= da.phys_port_cnt && !active; p++) {
            struct ibv_port_attr pa;
            active = ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE;
        }
    ibv_close_device(ctx);
    return active;
}

/* Devices with an active port: a device whose links are all down cannot carry a link. */
int verbs_device_count(char *why, size_t len)
{
    int n = 0, active = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    if (!l) {
        snprintf(why, len, "ibv_get_device_list failed: %s", strerror(errno));
        return 0;
    }
    for (int i = 0; i < n; i++)
        active += has_active_port(l[i]);
    ibv_free_device_list(l);
    if (n == 0)
        snprintf(why, len, "ibv_get_device_list found no RDMA device");
    else if (active == 0)
        snprintf(why, len, "ibv_get_device_list found %d RDMA device(s), none with an active port", n);
    return active;
}
