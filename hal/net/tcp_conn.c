/* TCP links: listening, connecting, and the handshake that groups a link's sockets. The
 * handshake is blocking (poll against a deadline) in the caller's thread; afterwards the sockets
 * belong to the progress thread. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <stdint.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/net/tcp_internal.h"

void tcp_sock_opts(int fd)
{
    int one = 1, idle = 2, intvl = 1, cnt = 3;
    unsigned user_to = 5000; /* ms: unacknowledged data fails the socket after 5 s */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_to, sizeof user_to);
}

hal_result tcp_listen(net_transport *t, const struct sockaddr *addr, socklen_t alen, struct sockaddr_storage *bound)
{
    tcp_transport *tt = (tcp_transport *)t;
    if (tt->lfd >= 0) {
        OH_ERR("net", "%s: already listening", t->name);
        return HAL_E_PARAM;
    }
    int fd = net_bind_listen(addr, alen, bound, t->name);
    if (fd < 0)
        return fd == -EINVAL || fd == -EAFNOSUPPORT ? HAL_E_PARAM : HAL_E_SYSCALL;
    tt->lfd = fd;
    return HAL_OK;
}

static hal_result link_new(tcp_transport *tt, const int *fds, uint32_t n, const struct sockaddr *peer, net_link **out)
{
    tcp_link *l = calloc(1, sizeof *l);
    if (!l)
        return HAL_E_NOMEM;
    net_link_init(&l->base, &tt->base, peer);
    l->tt = tt;
    memcpy(&l->peer_addr, peer, peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    l->nsocks = n;
    for (uint32_t i = 0; i < n; i++) {
        l->socks[i].fd = fds[i];
        l->socks[i].idx = i;
        l->socks[i].link = l;
        l->socks[i].rev = (tcp_recv_ev){TCP_EV_RECV, &l->socks[i]};
        tcp_sock_opts(fds[i]);
    }
    tcp_req *r = calloc(1, sizeof *r);
    if (!r) {
        free(l);
        return HAL_E_NOMEM;
    }
    r->kind = 1;
    r->l = l;
    pthread_mutex_lock(&tt->qmu);
    l->unext = tt->ulinks;
    tt->ulinks = l;
    pthread_mutex_unlock(&tt->qmu);
    /* Queued even if the wake-up fails (logged there): the link belongs to the thread now. */
    (void)tcp_post(tt, r);
    *out = &l->base;
    return HAL_OK;
}

static void close_fds(const int *fds, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

hal_result tcp_connect(net_transport *t, const struct sockaddr *addr, socklen_t alen, int timeout_ms, net_link **out)
{
    tcp_transport *tt = (tcp_transport *)t;
    int64_t deadline = net_now_ms() + (timeout_ms < 0 ? 3600000 : timeout_ms);
    char buf[NET_ADDR_LEN];
    tcp_hello h = {TCP_MAGIC, TCP_VERSION, 0, tt->nsocks, 0};
    if (getrandom(&h.link_id, sizeof h.link_id, 0) != sizeof h.link_id)
        h.link_id = (uint64_t)net_now_ms() ^ ((uint64_t)getpid() << 32);
    int fds[NET_MAX_SOCKS] = {0};
    uint32_t n = 0;
    int err = 0;
    for (; n < tt->nsocks; n++) {
        int fd = net_tcp_connect(addr, alen, deadline);
        if (fd < 0) {
            err = -fd;
            break;
        }
        fds[n] = fd;
        h.idx = n;
        int r = net_send_all(fd, &h, sizeof h, deadline);
        if (r < 0) {
            err = -r;
            n++;
            break;
        }
    }
    if (err) {
        close_fds(fds, n);
        OH_ERR("net", "%s: tcp connect to %s failed: %s (errno %d)", t->name, net_addr_str(addr, buf, sizeof buf),
               strerror(err), err);
        return err == ETIMEDOUT ? HAL_E_TIMEOUT : HAL_E_PEER;
    }
    hal_result rc = link_new(tt, fds, n, addr, out);
    if (rc != HAL_OK)
        close_fds(fds, n);
    return rc;
}

/* Adds an accepted socket to its link's group; returns the group's index when complete, else -1. */
static int group_add(tcp_transport *tt, const tcp_hello *h, int fd, const struct sockaddr_storage *peer)
{
    uint32_t i = 0;
    while (i < tt->npend && tt->pend[i].link_id != h->link_id)
        i++;
    if (i == tt->npend) {
        if (tt->npend == tt->pend_cap) {
            uint32_t cap = tt->pend_cap ? 2 * tt->pend_cap : 16;
            struct tcp_pending *p = realloc(tt->pend, cap * sizeof *p);
            if (!p)
                return -2;
            tt->pend = p;
            tt->pend_cap = cap;
        }
        tt->npend++;
        memset(&tt->pend[i], 0, sizeof tt->pend[i]);
        tt->pend[i].link_id = h->link_id;
        tt->pend[i].nsocks = h->nsocks;
        for (uint32_t k = 0; k < NET_MAX_SOCKS; k++)
            tt->pend[i].fds[k] = -1;
        tt->pend[i].peer = *peer;
    }
    if (h->nsocks != tt->pend[i].nsocks || tt->pend[i].fds[h->idx] >= 0)
        return -2;
    tt->pend[i].fds[h->idx] = fd;
    return ++tt->pend[i].got == tt->pend[i].nsocks ? (int)i : -1;
}

static hal_result accept_one(tcp_transport *tt, int64_t deadline, int *group)
{
    char buf[NET_ADDR_LEN];
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    int fd = accept4(tt->lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
    if (fd < 0)
        return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED ? HAL_OK : HAL_E_SYSCALL;
    tcp_hello h;
    int r = net_recv_all(fd, &h, sizeof h, deadline);
    if (r < 0 || h.magic != TCP_MAGIC || h.version != TCP_VERSION || h.nsocks < 1 || h.nsocks > NET_MAX_SOCKS ||
        h.idx >= h.nsocks) {
        OH_WARN("net", "%s: dropped a connection from %s: %s", tt->base.name,
                net_addr_str((struct sockaddr *)&peer, buf, sizeof buf),
                r < 0 ? strerror(-r) : "not an OpenHCCL link handshake");
        close(fd);
        return HAL_OK;
    }
    int g = group_add(tt, &h, fd, &peer);
    if (g == -2) {
        OH_WARN("net", "%s: dropped a connection from %s: inconsistent handshake or no memory", tt->base.name,
                net_addr_str((struct sockaddr *)&peer, buf, sizeof buf));
        close(fd);
        return HAL_OK;
    }
    *group = g;
    return HAL_OK;
}

hal_result tcp_accept(net_transport *t, int timeout_ms, net_link **out)
{
    tcp_transport *tt = (tcp_transport *)t;
    if (tt->lfd < 0) {
        OH_ERR("net", "%s: accept without listen", t->name);
        return HAL_E_PARAM;
    }
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : net_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - net_now_ms();
        if (left <= 0)
            return HAL_E_TIMEOUT;
        struct pollfd p = {tt->lfd, POLLIN, 0};
        int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (r <= 0)
            continue;
        int g = -1;
        /* A peer that connected must finish its hello within 10 s (or our deadline). */
        int64_t hd = net_now_ms() + 10000;
        hal_result rc = accept_one(tt, hd < deadline ? hd : deadline, &g);
        if (rc != HAL_OK)
            return rc;
        if (g < 0)
            continue;
        struct tcp_pending pg = tt->pend[g];
        tt->pend[g] = tt->pend[--tt->npend];
        /* Name the peer by its address with the port it connected from. */
        rc = link_new(tt, pg.fds, pg.nsocks, (struct sockaddr *)&pg.peer, out);
        if (rc != HAL_OK)
            close_fds(pg.fds, pg.nsocks);
        return rc;
    }
}
