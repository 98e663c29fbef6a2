/* The verbs transport: opening the device (first active port, RoCE v2 GID chosen automatically),
 * memory registration through the cache, and the progress thread that turns completions into
 * write completions and notifies. */
#define _GNU_SOURCE /* POLLRDHUP */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/hal.h"
#include "hal/net/verbs_priv.h"

const char *verbs_where(const verbs_link *l, uint32_t qpn, char *buf, size_t len)
{
    char gid[INET6_ADDRSTRLEN], rgid[INET6_ADDRSTRLEN];
    uint32_t rqpn = 0;
    for (uint32_t i = 0; i < l->nqps; i++)
        if (l->qp[i] && l->qp[i]->qp_num == qpn)
            rqpn = l->remote_qpn[i];
    inet_ntop(AF_INET6, l->vt->gid, gid, sizeof gid);
    inet_ntop(AF_INET6, l->remote_gid, rgid, sizeof rgid);
    snprintf(buf, len, "device %s port %u GID %s (index %d) QP 0x%x -> GID %s QP 0x%x", l->vt->dev_name,
             l->vt->port, gid, l->vt->gid_index, qpn, rgid, rqpn);
    return buf;
}

void verbs_post_recvs(struct ibv_qp *qp, int n)
{
    /* Write-with-imm consumes a receive but places no data: zero scatter entries. */
    for (int i = 0; i < n; i++) {
        struct ibv_recv_wr wr = {.wr_id = 0, .sg_list = NULL, .num_sge = 0}, *bad;
        if (ibv_post_recv(qp, &wr, &bad))
            break;
    }
}

static hal_result vreg(void *ctx, void *addr, size_t len, void **handle, uint32_t *lkey, uint32_t *rkey)
{
    verbs_transport *vt = ctx;
    struct ibv_mr *mr = ibv_reg_mr(vt->pd, addr, len,
                                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!mr) {
        OH_ERR("net", "%s: ibv_reg_mr of %zu bytes at %p on %s failed: %s (errno %d)", vt->base.name, len, addr,
               vt->dev_name, strerror(errno), errno);
        return errno == ENOMEM ? HAL_E_NOMEM : HAL_E_SYSCALL;
    }
    *handle = mr;
    *lkey = mr->lkey;
    *rkey = mr->rkey;
    return HAL_OK;
}

static void vdereg(void *ctx, void *handle)
{
    (void)ctx;
    ibv_dereg_mr(handle);
}

static verbs_link *link_of_qp(verbs_transport *vt, uint32_t qpn)
{
    for (verbs_link *l = vt->links; l; l = l->next)
        for (uint32_t i = 0; i < l->nqps; i++)
            if (l->qp[i]->qp_num == qpn)
                return l;
    return NULL;
}

static void on_wc(verbs_transport *vt, const struct ibv_wc *wc)
{
    char where[320];
    /* Receives have wr_id 0 (an error completion's opcode is undefined, its wr_id is not). */
    if (wc->wr_id == 0) { /* a write with imm landed here, or a receive was flushed */
        pthread_mutex_lock(&vt->lmu);
        verbs_link *l = link_of_qp(vt, wc->qp_num);
        if (l && wc->status == IBV_WC_SUCCESS) {
            if ((wc->wc_flags & IBV_WC_WITH_IMM) && net_notify_fire(&vt->base, ntohl(wc->imm_data)) != HAL_OK)
                OH_ERR("net", "%s: roce write from %s names notify %u, which was never added", vt->base.name,
                       l->base.peer, ntohl(wc->imm_data));
            for (uint32_t i = 0; i < l->nqps; i++)
                if (l->qp[i]->qp_num == wc->qp_num)
                    verbs_post_recvs(l->qp[i], 1);
        } else if (l && wc->status != IBV_WC_WR_FLUSH_ERR && net_link_fail(&l->base, HAL_E_PEER)) {
            OH_ERR("net", "%s: roce link to %s: receive failed on %s: %s", vt->base.name, l->base.peer,
                   verbs_where(l, wc->qp_num, where, sizeof where), ibv_wc_status_str(wc->status));
        }
        pthread_mutex_unlock(&vt->lmu);
        return;
    }
    verbs_op *op = (verbs_op *)(uintptr_t)wc->wr_id;
    const char *why;
    hal_result rc = verbs_wc_result(wc->status, &why);
    if (rc != HAL_OK && rc != HAL_E_ABORTED && net_link_error(&op->l->base) == HAL_OK)
        OH_ERR("net", "%s: roce write to %s failed on %s: %s (vendor error 0x%x) -> %s", vt->base.name,
               op->l->base.peer, verbs_where(op->l, wc->qp_num, where, sizeof where), why, wc->vendor_err,
               hal_result_name(rc));
    if (op->src)
        net_rc_put(&vt->base.rc, op->src);
    net_complete(&op->l->base, op->tag, rc);
    free(op);
}

/* The peer's end of a link's setup socket (its process died or it closed the link): the QPs go to
 * error, which flushes every pending write at once instead of after the RC retries (seconds). */
static void on_hangup(verbs_transport *vt, int fd)
{
    pthread_mutex_lock(&vt->lmu);
    for (verbs_link *l = vt->links; l; l = l->next) {
        if (l->fd != fd)
            continue;
        if (net_link_fail(&l->base, HAL_E_PEER)) {
            char where[320];
            pthread_mutex_lock(&vt->base.mu);
            uint64_t pending = l->base.posted - l->base.done;
            pthread_mutex_unlock(&vt->base.mu);
            /* as tcp: an error only when writes are lost and we were not leaving ourselves */
            oh_log(pending && !atomic_load(&l->base.quiet) ? OH_LOG_ERROR : OH_LOG_INFO, "net",
                   "%s: roce link to %s failed: the peer's end of the link closed (process gone or leaving) on %s; "
                   "failing %llu pending write(s)", vt->base.name, l->base.peer,
                   verbs_where(l, l->qp[0]->qp_num, where, sizeof where), (unsigned long long)pending);
            for (uint32_t i = 0; i < l->nqps; i++) {
                struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
                ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE);
            }
        }
        l->fd = -1; /* reported once; verbs_link_close still closes it (kept in hup_fd) */
        l->hup_fd = fd;
    }
    pthread_mutex_unlock(&vt->lmu);
}

/* Blocks in poll on the completion channel and the links' setup sockets (non-blocking fd, 200 ms
 * slices to see stop and new links): no busy polling, and destroy never has to cancel the thread. */
static void *verbs_progress(void *arg)
{
    verbs_transport *vt = arg;
    struct pollfd p[1 + VERBS_POLL_LINKS];
    while (!__atomic_load_n(&vt->stop, __ATOMIC_ACQUIRE)) {
        if (ibv_req_notify_cq(vt->cq, 0))
            break;
        struct ibv_wc wc[32];
        int n;
        while ((n = ibv_poll_cq(vt->cq, 32, wc)) > 0) /* completions that came before the request */
            for (int i = 0; i < n; i++)
                on_wc(vt, &wc[i]);
        nfds_t np = 1;
        p[0] = (struct pollfd){vt->ch->fd, POLLIN, 0};
        pthread_mutex_lock(&vt->lmu);
        for (verbs_link *l = vt->links; l && np < 1 + VERBS_POLL_LINKS; l = l->next)
            if (l->fd >= 0)
                p[np++] = (struct pollfd){l->fd, POLLRDHUP, 0};
        pthread_mutex_unlock(&vt->lmu);
        if (poll(p, np, 200) <= 0)
            continue;
        for (nfds_t i = 1; i < np; i++)
            if (p[i].revents & (POLLRDHUP | POLLHUP | POLLERR))
                on_hangup(vt, p[i].fd);
        if (!p[0].revents)
            continue;
        struct ibv_cq *cq;
        void *cctx;
        if (ibv_get_cq_event(vt->ch, &cq, &cctx) == 0)
            ibv_ack_cq_events(cq, 1);
    }
    return NULL;
}

/* The first device (or cfg->device) with an active port; its best RoCE v2 GID. */
static hal_result open_device(verbs_transport *vt, const char *want)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n == 0) {
        if (list)
            ibv_free_device_list(list);
        OH_ERR("net", "%s: no RDMA device (ibv_get_device_list found none)", vt->base.name);
        return HAL_E_NOT_SUPPORTED;
    }
    hal_result rc = HAL_E_NOT_SUPPORTED;
    for (int d = 0; d < n && rc != HAL_OK; d++) {
        const char *name = ibv_get_device_name(list[d]);
        if (want && strcmp(want, name))
            continue;
        struct ibv_context *ctx = ibv_open_device(list[d]);
        struct ibv_device_attr da;
        if (!ctx || ibv_query_device(ctx, &da)) {
            if (ctx)
                ibv_close_device(ctx);
            continue;
        }
        for (uint8_t p = 1; p <= da.phys_port_cnt && rc != HAL_OK; p++) {
            struct ibv_port_attr pa;
            if (ibv_query_port(ctx, p, &pa) || pa.state != IBV_PORT_ACTIVE)
                continue;
            verbs_gid_info g[256];
            int ng = pa.gid_tbl_len < 256 ? pa.gid_tbl_len : 256;
            for (int i = 0; i < ng; i++) {
                struct ibv_gid_entry e;
                memset(&g[i], 0, sizeof g[i]);
                if (ibv_query_gid_ex(ctx, p, (uint32_t)i, &e, 0) == 0) {
                    memcpy(g[i].raw, e.gid.raw, 16);
                    g[i].roce_v2 = e.gid_type == IBV_GID_TYPE_ROCE_V2;
                }
            }
            int gi = verbs_pick_gid(g, ng, net_env_family());
            if (gi < 0)
                continue;
            vt->ctx = ctx;
            vt->port = p;
            vt->gid_index = gi;
            memcpy(vt->gid, g[gi].raw, 16);
            vt->mtu = pa.active_mtu;
            snprintf(vt->dev_name, sizeof vt->dev_name, "%s", name);
            rc = HAL_OK;
        }
        if (rc != HAL_OK)
            ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    if (rc != HAL_OK)
        OH_ERR("net", "%s: no RDMA device%s%s has an active port with a RoCE v2 GID", vt->base.name,
               want ? " named " : "", want ? want : "");
    return rc;
}

static void verbs_destroy(net_transport *t)
{
    verbs_transport *vt = (verbs_transport *)t;
    for (;;) {
        pthread_mutex_lock(&vt->lmu);
        verbs_link *l = vt->links;
        pthread_mutex_unlock(&vt->lmu);
        if (!l)
            break;
        verbs_link_close(&l->base);
    }
    if (vt->thr) {
        __atomic_store_n(&vt->stop, 1, __ATOMIC_RELEASE);
        pthread_join(vt->thr, NULL);
    }
    if (vt->lfd >= 0)
        close(vt->lfd);
    /* MRs go before their PD: empty the cache now (net_base_fini finalizes the empty one). */
    net_rc_fini(&t->rc);
    net_rc_init(&t->rc, &(net_rc_ops){vreg, vdereg}, vt);
    if (vt->cq)
        ibv_destroy_cq(vt->cq);
    if (vt->ch)
        ibv_destroy_comp_channel(vt->ch);
    if (vt->pd)
        ibv_dealloc_pd(vt->pd);
    if (vt->ctx)
        ibv_close_device(vt->ctx);
    pthread_mutex_destroy(&vt->lmu);
    net_base_fini(t);
    free(vt);
}

static const net_ops verbs_ops = {
    .listen = verbs_listen,
    .accept = verbs_accept,
    .connect = verbs_connect,
    .write = verbs_write,
    .link_close = verbs_link_close,
    .destroy = verbs_destroy,
};

hal_result verbs_create(const net_config *cfg, net_transport **out)
{
    verbs_transport *vt = calloc(1, sizeof *vt);
    if (!vt)
        return HAL_E_NOMEM;
    static const net_rc_ops rcops = {vreg, vdereg};
    hal_result rc = net_base_init(&vt->base, &verbs_ops, NET_KIND_ROCE, cfg, &rcops, vt);
    if (rc != HAL_OK) {
        free(vt);
        return rc;
    }
    vt->lfd = -1;
    pthread_mutex_init(&vt->lmu, NULL);
    rc = verbs_env_read(&vt->env, NULL);
    if (rc == HAL_OK && cfg->nqps)
        vt->env.nqps = cfg->nqps < VERBS_MAX_QPS ? cfg->nqps : VERBS_MAX_QPS;
    if (rc == HAL_OK)
        rc = open_device(vt, cfg->device);
    if (rc == HAL_OK) {
        vt->pd = ibv_alloc_pd(vt->ctx);
        vt->ch = vt->pd ? ibv_create_comp_channel(vt->ctx) : NULL;
        vt->cq = vt->ch ? ibv_create_cq(vt->ctx, 4 * VERBS_SEND_DEPTH, NULL, vt->ch, 0) : NULL;
        if (!vt->cq || fcntl(vt->ch->fd, F_SETFL, fcntl(vt->ch->fd, F_GETFL) | O_NONBLOCK) < 0 || pthread_create(&vt->thr, NULL, verbs_progress, vt)) {
            OH_ERR("net", "%s: setting up %s (PD, CQ, progress thread) failed: %s", vt->base.name, vt->dev_name,
                   strerror(errno));
            vt->thr = 0;
            rc = HAL_E_SYSCALL;
        }
    }
    if (rc != HAL_OK) {
        verbs_destroy(&vt->base);
        return rc;
    }
    char gid[INET6_ADDRSTRLEN];
    snprintf(vt->base.where, sizeof vt->base.where, "device %s port %u, RoCE v2 GID %s (index %d)", vt->dev_name,
             vt->port, inet_ntop(AF_INET6, vt->gid, gid, sizeof gid), vt->gid_index);
    OH_INFO("net", "%s: roce on %s port %u, RoCE v2 GID %s (index %d), TC %u SL %u timeout %u retry %u, %u QP(s) "
            "per peer", vt->base.name, vt->dev_name, vt->port, inet_ntop(AF_INET6, vt->gid, gid, sizeof gid),
            vt->gid_index, vt->env.tc, vt->env.sl, vt->env.timeout, vt->env.retry_cnt, vt->env.nqps);
    *out = &vt->base;
    return HAL_OK;
}
