/* verbs links: RC QPs created per link, their numbers, PSN and GID exchanged over a TCP socket
 * (our listener, in HCCL_HOST_SOCKET_PORT_RANGE), moved to RTS with CANN's RDMA settings; writes
 * as RDMA WRITE WITH IMM (imm = the target's notify id). */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/net/verbs_priv.h"

#define VERBS_MAGIC 0x4f485242u /* "OHRB" */

hal_result verbs_listen(net_transport *t, const struct sockaddr *addr, socklen_t alen, struct sockaddr_storage *bound)
{
    verbs_transport *vt = (verbs_transport *)t;
    if (vt->lfd >= 0)
        return HAL_E_PARAM;
    int fd = net_bind_listen(addr, alen, bound, t->name);
    if (fd < 0)
        return fd == -EINVAL ? HAL_E_PARAM : HAL_E_SYSCALL;
    vt->lfd = fd;
    return HAL_OK;
}

static struct ibv_qp *make_qp(verbs_transport *vt)
{
    struct ibv_qp_init_attr a = {
        .send_cq = vt->cq, .recv_cq = vt->cq, .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = VERBS_SEND_DEPTH, .max_recv_wr = VERBS_RECV_DEPTH, .max_send_sge = 1, .max_recv_sge = 1},
    };
    struct ibv_qp *qp = ibv_create_qp(vt->pd, &a);
    if (!qp)
        return NULL;
    struct ibv_qp_attr m = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = vt->port,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        ibv_destroy_qp(qp);
        return NULL;
    }
    verbs_post_recvs(qp, VERBS_RECV_DEPTH);
    return qp;
}

/* INIT -> RTR -> RTS toward the peer's QP, with HCCL_RDMA_TC/SL/TIMEOUT/RETRY_CNT. */
static int qp_connect(verbs_transport *vt, struct ibv_qp *qp, const verbs_wire *peer, uint32_t i, uint32_t my_psn)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR, .path_mtu = vt->mtu < (enum ibv_mtu)peer->mtu ? vt->mtu : (enum ibv_mtu)peer->mtu,
        .dest_qp_num = peer->qpn[i], .rq_psn = peer->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
        .ah_attr = {.is_global = 1, .sl = (uint8_t)vt->env.sl, .port_num = vt->port,
                    .grh = {.sgid_index = (uint8_t)vt->gid_index, .hop_limit = 64,
                            .traffic_class = (uint8_t)vt->env.tc}},
    };
    memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return errno ? errno : EINVAL;
    struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTS, .timeout = (uint8_t)vt->env.timeout,
                            .retry_cnt = (uint8_t)vt->env.retry_cnt, .rnr_retry = 7, .sq_psn = my_psn,
                            .max_rd_atomic = 1};
    if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC))
        return errno ? errno : EINVAL;
    return 0;
}

static void free_link(verbs_link *l)
{
    for (uint32_t i = 0; i < l->nqps; i++)
        if (l->qp[i])
            ibv_destroy_qp(l->qp[i]);
    if (l->fd >= 0)
        close(l->fd);
    if (l->hup_fd >= 0)
        close(l->hup_fd);
    free(l);
}

/* Adds l to (add = 1) or removes it from the links the progress thread looks QPs up in. */
static void link_list(verbs_transport *vt, verbs_link *l, int add)
{
    pthread_mutex_lock(&vt->lmu);
    if (add) {
        l->next = vt->links;
        vt->links = l;
    } else {
        for (verbs_link **pp = &vt->links; *pp; pp = &(*pp)->next)
            if (*pp == l) {
                *pp = l->next;
                break;
            }
    }
    pthread_mutex_unlock(&vt->lmu);
}

/* Both sides: create QPs, swap wire records over fd, connect. */
static hal_result link_setup(verbs_transport *vt, int fd, const struct sockaddr *peer, int64_t deadline,
                             net_link **out)
{
    char buf[NET_ADDR_LEN];
    verbs_link *l = calloc(1, sizeof *l);
    if (!l)
        return HAL_E_NOMEM;
    net_link_init(&l->base, &vt->base, peer);
    l->vt = vt;
    l->fd = l->hup_fd = -1;
    l->nqps = vt->env.nqps;
    verbs_wire me = {.magic = VERBS_MAGIC, .nqps = l->nqps, .mtu = vt->mtu}, them;
    memcpy(me.gid, vt->gid, 16);
    if (getrandom(&me.psn, sizeof me.psn, 0) != sizeof me.psn)
        me.psn = (uint32_t)net_now_ms();
    me.psn &= 0xffffff;
    for (uint32_t i = 0; i < l->nqps; i++) {
        l->qp[i] = make_qp(vt);
        if (!l->qp[i]) {
            OH_ERR("net", "%s: creating QP %u of %u for %s on %s failed: %s", vt->base.name, i, l->nqps,
                   l->base.peer, vt->dev_name, strerror(errno));
            free_link(l);
            return HAL_E_SYSCALL;
        }
        me.qpn[i] = l->qp[i]->qp_num;
    }
    int r = net_send_all(fd, &me, sizeof me, deadline);
    if (!r)
        r = net_recv_all(fd, &them, sizeof them, deadline);
    if (!r && (them.magic != VERBS_MAGIC || them.nqps != l->nqps))
        r = -EPROTO;
    for (uint32_t i = 0; !r && i < l->nqps; i++)
        r = -qp_connect(vt, l->qp[i], &them, i, me.psn);
    if (!r) {
        memcpy(l->remote_gid, them.gid, 16);
        memcpy(l->remote_qpn, them.qpn, sizeof them.qpn);
        /* Listed before the peer may write: its first write-with-imm must find the link. */
        link_list(vt, l, 1);
        char ok = 1; /* both sides are in RTS before either writes */
        r = net_send_all(fd, &ok, 1, deadline);
        if (!r)
            r = net_recv_all(fd, &ok, 1, deadline);
        if (r)
            link_list(vt, l, 0);
    }
    if (!r) { /* the link owns the socket now: an idle RC QP says nothing, the socket's end does */
        pthread_mutex_lock(&vt->lmu);
        l->fd = fd;
        pthread_mutex_unlock(&vt->lmu);
    }
    if (r) {
        char where[320];
        OH_ERR("net", "%s: roce link setup with %s failed on %s: %s (errno %d)%s", vt->base.name,
               net_addr_str(peer, buf, sizeof buf), verbs_where(l, me.qpn[0], where, sizeof where), strerror(-r), -r,
               r == -EPROTO ? "; do both sides set the same HCCL_RDMA_QPS_PER_CONNECTION?" : "");
        free_link(l);
        return r == -ETIMEDOUT ? HAL_E_TIMEOUT : HAL_E_PEER;
    }
    *out = &l->base;
    return HAL_OK;
}

hal_result verbs_connect(net_transport *t, const struct sockaddr *addr, socklen_t alen, int timeout_ms, net_link **out)
{
    verbs_transport *vt = (verbs_transport *)t;
    int64_t deadline = net_now_ms() + (timeout_ms < 0 ? 3600000 : timeout_ms);
    char buf[NET_ADDR_LEN];
    int fd = net_tcp_connect(addr, alen, deadline);
    if (fd < 0) {
        OH_ERR("net", "%s: connecting to %s for a roce link failed: %s (errno %d)", t->name,
               net_addr_str(addr, buf, sizeof buf), strerror(-fd), -fd);
        return fd == -ETIMEDOUT ? HAL_E_TIMEOUT : HAL_E_PEER;
    }
    hal_result rc = link_setup(vt, fd, addr, deadline, out);
    if (rc != HAL_OK)
        close(fd);
    return rc;
}

hal_result verbs_accept(net_transport *t, int timeout_ms, net_link **out)
{
    verbs_transport *vt = (verbs_transport *)t;
    if (vt->lfd < 0)
        return HAL_E_PARAM;
    struct pollfd p = {vt->lfd, POLLIN, 0};
    int r = poll(&p, 1, timeout_ms);
    if (r == 0)
        return HAL_E_TIMEOUT;
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    int fd = r > 0 ? accept4(vt->lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC) : -1;
    if (fd < 0)
        return HAL_E_SYSCALL;
    hal_result rc = link_setup(vt, fd, (struct sockaddr *)&peer, net_now_ms() + 10000, out);
    if (rc != HAL_OK)
        close(fd);
    return rc;
}

/* A send queue holds VERBS_SEND_DEPTH requests: with that many writes of the link outstanding
 * the writer waits for completions (round robin spreads them, so no QP overflows). */
static hal_result send_slot(verbs_link *l)
{
    net_transport *t = &l->vt->base;
    hal_result rc = HAL_OK;
    pthread_mutex_lock(&t->mu);
    while (l->base.posted - l->base.done >= VERBS_SEND_DEPTH && (rc = net_link_error(&l->base)) == HAL_OK)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

hal_result verbs_write(net_link *nl, const void *src, size_t len, uint64_t raddr, uint32_t rkey, uint32_t notify,
                       uint64_t tag)
{
    verbs_link *l = (verbs_link *)nl;
    verbs_transport *vt = l->vt;
    hal_result rc = net_link_error(nl);
    if (rc != HAL_OK)
        return rc;
    if ((rc = send_slot(l)) != HAL_OK)
        return rc;
    verbs_op *op = calloc(1, sizeof *op);
    if (!op)
        return HAL_E_NOMEM;
    op->l = l;
    op->tag = tag;
    if (len && (rc = net_rc_get(&vt->base.rc, (void *)src, len, &op->src)) != HAL_OK) {
        free(op);
        return rc;
    }
    op->qp = atomic_fetch_add(&l->rr, 1) % l->nqps;
    struct ibv_sge sge = {.addr = (uintptr_t)src, .length = (uint32_t)len, .lkey = op->src ? op->src->lkey : 0};
    struct ibv_send_wr wr = {
        .wr_id = (uintptr_t)op, .sg_list = len ? &sge : NULL, .num_sge = len ? 1 : 0,
        .opcode = notify == NET_NOTIFY_NONE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM,
        .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(notify),
        .wr = {.rdma = {.remote_addr = raddr, .rkey = rkey}},
    }, *bad;
    net_posted(nl, 1);
    int e = len > UINT32_MAX ? EMSGSIZE : ibv_post_send(l->qp[op->qp], &wr, &bad);
    if (e) {
        char where[320];
        OH_ERR("net", "%s: posting a %zu-byte write to %s failed on %s: %s (errno %d)", vt->base.name, len, nl->peer,
               verbs_where(l, l->qp[op->qp]->qp_num, where, sizeof where), strerror(e), e);
        if (op->src)
            net_rc_put(&vt->base.rc, op->src);
        free(op);
        net_complete(nl, 0, HAL_E_SYSCALL);
        return e == EMSGSIZE ? HAL_E_PARAM : HAL_E_SYSCALL;
    }
    return HAL_OK;
}

void verbs_link_close(net_link *nl)
{
    verbs_link *l = (verbs_link *)nl;
    verbs_transport *vt = l->vt;
    net_link_fail(nl, HAL_E_ABORTED);
    /* Error state flushes every posted request (IBV_WC_WR_FLUSH_ERR -> HAL_E_ABORTED). */
    for (uint32_t i = 0; i < l->nqps; i++) {
        struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
        ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE);
    }
    net_link_drain(nl, 10000);
    link_list(vt, l, 0);
    free_link(l);
}
