/* The TCP transport: creation (ring, progress thread, zero-copy probe), posting writes (split
 * over the link's sockets), closing links, destruction. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/oh_log.h"
#include "hal/net/tcp_internal.h"

#define TCP_RING_ENTRIES 1024
#define TCP_FRAG_MAX (256u << 20) /* bytes per fragment (a recv's length is an int) */

/* TCP needs no registration: the cache only records what peers may write into. */
static hal_result tcp_reg(void *ctx, void *addr, size_t len, void **handle, uint32_t *lkey, uint32_t *rkey)
{
    (void)ctx, (void)addr, (void)len;
    *handle = NULL;
    *lkey = *rkey = 0;
    return HAL_OK;
}

static void tcp_dereg(void *ctx, void *handle)
{
    (void)ctx, (void)handle;
}

static uint32_t frag_count(const tcp_link *l, size_t len)
{
    uint64_t n = 1;
    if (l->nsocks > 1 && len >= 2 * (size_t)TCP_FRAG_MIN) {
        n = len / TCP_FRAG_MIN;
        if (n > l->nsocks)
            n = l->nsocks;
    }
    uint64_t by_size = (len + TCP_FRAG_MAX - 1) / TCP_FRAG_MAX;
    return (uint32_t)(by_size > n ? by_size : n);
}

static hal_result tcp_write_post(net_link *nl, const void *src, size_t len, uint64_t raddr, uint32_t rkey,
                                 uint32_t notify, uint64_t tag)
{
    tcp_link *l = (tcp_link *)nl;
    (void)rkey; /* TCP checks the target range against the peer's registrations instead */
    uint32_t nf = frag_count(l, len);
    tcp_write *w = malloc(sizeof *w + nf * sizeof(tcp_op));
    if (!w)
        return HAL_E_NOMEM;
    tcp_req *r = &w->req;
    w->link = l;
    w->tag = tag;
    w->nfrags = w->left = nf;
    w->status = HAL_OK;
    uint64_t seq = atomic_fetch_add(&l->seq, 1);
    size_t per = (len / nf + 4095) & ~(size_t)4095, off = 0;
    for (uint32_t i = 0; i < nf; i++) {
        size_t n = i == nf - 1 ? len - off : (per < len - off ? per : len - off);
        w->frags[i] = (tcp_op){.w = w, .src = (const char *)src + off,
                               .hdr = {TCP_MAGIC, notify, raddr + off, n, seq, nf, 0}};
        off += n;
    }
    *r = (tcp_req){.kind = 0, .w = w};
    net_posted(nl, 1);
    hal_result rc = tcp_post(l->tt, r);
    if (rc != HAL_OK)
        OH_ERR("net", "%s: cannot wake the tcp progress thread for a write to %s", l->tt->base.name, nl->peer);
    return rc;
}

static void tcp_link_close(net_link *nl)
{
    tcp_link *l = (tcp_link *)nl;
    tcp_transport *tt = l->tt;
    tcp_req *r = calloc(1, sizeof *r);
    while (!r) { /* closing must not fail: wait for memory rather than leak a link in the ring */
        usleep(1000);
        r = calloc(1, sizeof *r);
    }
    r->kind = 2;
    r->l = l;
    tcp_post(tt, r);
    pthread_mutex_lock(&tt->qmu);
    while (!l->released)
        pthread_cond_wait(&tt->qcv, &tt->qmu);
    for (tcp_link **pp = &tt->ulinks; *pp; pp = &(*pp)->unext)
        if (*pp == l) {
            *pp = l->unext;
            break;
        }
    pthread_mutex_unlock(&tt->qmu);
    tcp_seqtab_free(&l->asm_tab);
    tcp_seqtab_free(&l->ord);
    free(l);
}

static void tcp_destroy(net_transport *t)
{
    tcp_transport *tt = (tcp_transport *)t;
    for (;;) { /* links the caller did not close */
        pthread_mutex_lock(&tt->qmu);
        tcp_link *l = tt->ulinks;
        pthread_mutex_unlock(&tt->qmu);
        if (!l)
            break;
        tcp_link_close(&l->base);
    }
    __atomic_store_n(&tt->stop, 1, __ATOMIC_RELEASE);
    uint64_t one = 1;
    if (write(tt->efd, &one, sizeof one) != sizeof one)
        OH_WARN("net", "%s: waking the progress thread failed: %s", t->name, strerror(errno));
    pthread_join(tt->thr, NULL);
    io_uring_queue_exit(&tt->ring);
    close(tt->efd);
    if (tt->lfd >= 0)
        close(tt->lfd);
    for (uint32_t i = 0; i < tt->npend; i++)
        for (uint32_t k = 0; k < NET_MAX_SOCKS; k++)
            if (tt->pend[i].fds[k] >= 0)
                close(tt->pend[i].fds[k]);
    free(tt->pend);
    pthread_mutex_destroy(&tt->qmu);
    pthread_cond_destroy(&tt->qcv);
    net_base_fini(t);
    free(tt);
}

static const net_ops tcp_ops = {
    .listen = tcp_listen,
    .accept = tcp_accept,
    .connect = tcp_connect,
    .write = tcp_write_post,
    .link_close = tcp_link_close,
    .destroy = tcp_destroy,
};

/* send_zc needs the opcode (kernel 6.0+); loopback gains nothing from it, but it is harmless. */
static int probe_zc(struct io_uring *ring)
{
    struct io_uring_probe *p = io_uring_get_probe_ring(ring);
    if (!p)
        return 0;
    int ok = io_uring_opcode_supported(p, IORING_OP_SENDMSG_ZC);
    io_uring_free_probe(p);
    return ok;
}

hal_result tcp_create(const net_config *cfg, net_transport **out)
{
    tcp_transport *tt = calloc(1, sizeof *tt);
    if (!tt)
        return HAL_E_NOMEM;
    static const net_rc_ops rcops = {tcp_reg, tcp_dereg};
    hal_result rc = net_base_init(&tt->base, &tcp_ops, NET_KIND_TCP, cfg, &rcops, NULL);
    if (rc != HAL_OK) {
        free(tt);
        return rc;
    }
    tt->lfd = -1;
    tt->wake_kind = TCP_EV_WAKE;
    tt->nsocks = cfg->nsocks ? cfg->nsocks : net_env_nsocks();
    if (tt->nsocks > NET_MAX_SOCKS)
        tt->nsocks = NET_MAX_SOCKS;
    pthread_mutex_init(&tt->qmu, NULL);
    pthread_cond_init(&tt->qcv, NULL);
    int r = io_uring_queue_init(TCP_RING_ENTRIES, &tt->ring, 0);
    if (r < 0) {
        OH_ERR("net", "%s: io_uring_queue_init failed: %s (errno %d); is io_uring disabled "
               "(sysctl kernel.io_uring_disabled)?", tt->base.name, strerror(-r), -r);
        goto fail;
    }
    tt->zc = cfg->zerocopy != 0 && probe_zc(&tt->ring);
    /* auto: let the kernel tell us when zero copy is a copy (then that socket stops using it);
     * 1: zero copy whatever it costs (benchmarks) */
    tt->zc_report = cfg->zerocopy < 0;
    tt->efd = eventfd(0, EFD_CLOEXEC);
    if (tt->efd < 0 || pthread_create(&tt->thr, NULL, tcp_progress, tt) != 0) {
        OH_ERR("net", "%s: cannot start the tcp progress thread: %s", tt->base.name, strerror(errno));
        if (tt->efd >= 0)
            close(tt->efd);
        io_uring_queue_exit(&tt->ring);
        goto fail;
    }
    OH_DBG("net", "%s: tcp transport, %u socket(s) per peer, zero copy %s", tt->base.name, tt->nsocks,
           tt->zc ? "on" : "off");
    *out = &tt->base;
    return HAL_OK;
fail:
    pthread_mutex_destroy(&tt->qmu);
    pthread_cond_destroy(&tt->qcv);
    net_base_fini(&tt->base);
    free(tt);
    return HAL_E_SYSCALL;
}
